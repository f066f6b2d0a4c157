# Copyright 2026 sapiens_ros contributors
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
Build a TensorRT engine from an exported ONNX graph, as a :class:`~.precision.PrecisionPlan` says.

The builder only executes the plan: network typing, builder flags and, for weakly typed FP16,
the norm and RoPE layers pinned to FP32 (found from the exporter's metadata, under the names
TensorRT's ONNX parser gives layers). It checks that the graph is the one the plan was made for
(dtype and opset from its metadata) and builds on the requested GPU, with a persisted timing
cache and a progress monitor. Everything but :func:`build_engine` is importable without
TensorRT.
"""

from __future__ import annotations

import logging
from pathlib import Path
import re
import sys
import time

from .artifacts import atomic_write
from .errors import BackendUnavailableError, EngineError
from .precision import INSTALL_HINT, PrecisionPlan

LOG = logging.getLogger(__name__)

#: ONNX op types that are norms, or that compute RoPE tables.
_NORM_OPS = {'LayerNormalization', 'InstanceNormalization', 'GroupNormalization',
             'RMSNormalization', 'BatchNormalization'}
_ROPE_OPS = {'Sin', 'Cos'}
_SCOPE_NORM = re.compile(r'(^|\.)(\w*norm\w*)$', re.IGNORECASE)
_ROPE_TRACE = re.compile(r'rotary|rotate_half|\brope', re.IGNORECASE)


def import_tensorrt():
    """Import tensorrt or raise :class:`BackendUnavailableError` naming the fix."""
    try:
        import tensorrt
    except ImportError:
        raise BackendUnavailableError(
            f'backend tensorrt needs the TensorRT Python package, which is not installed: '
            f'{INSTALL_HINT}. Or choose backend torch or onnxruntime.') from None
    return tensorrt


def require_cuda():
    """Return torch after checking that CUDA is usable; raise naming the fix otherwise."""
    import torch

    if not torch.cuda.is_available():
        raise BackendUnavailableError(
            f'backend tensorrt needs an NVIDIA GPU with CUDA, but this torch '
            f'({torch.__version__}) sees none: install a CUDA build of torch (Jetson: the NVIDIA '
            f'JetPack wheels), check nvidia-smi / the driver, or use backend onnxruntime or '
            f'torch on device=cpu')
    return torch


def installed_tensorrt_version() -> str | None:
    """Return the installed TensorRT's version without building anything, or None if unknown."""
    from importlib import metadata

    for dist in ('tensorrt', 'tensorrt-cu13', 'tensorrt-cu12', 'tensorrt-cu13-libs',
                 'tensorrt-cu12-libs', 'tensorrt-libs'):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    try:  # JetPack's apt bindings have no pip metadata
        import tensorrt
    except ImportError:
        return None
    return str(tensorrt.__version__)


def gpu_identity(device_index: int = 0) -> tuple[str, tuple[int, int]]:
    """GPU name and compute capability from torch."""
    torch = require_cuda()
    props = torch.cuda.get_device_properties(device_index)
    return props.name, (props.major, props.minor)


def builder_flag_names(trt) -> set[str]:
    """Return the names in this TensorRT's ``BuilderFlag`` (11 removed the weak-typing ones)."""
    return {n for n in dir(trt.BuilderFlag) if n.isupper()}


def fp32_node_names(onnx_path: str | Path) -> set[str]:
    """
    ONNX nodes that must stay FP32 in an FP16 engine: norms and RoPE.

    Uses the exporter's metadata (module name scopes, Python stack traces: Sapiens2's RMSNorm
    decomposes into Pow/ReduceMean/Sqrt/... under ``*.norm*`` modules, and RoPE runs in
    ``apply_rotary_pos_emb``), plus op types and the nodes that read the ``cos``/``sin`` tables.
    """
    import onnx

    model = onnx.load(str(onnx_path), load_external_data=False)
    names = set()
    for node in model.graph.node:
        meta = {p.key: p.value for p in node.metadata_props}
        scopes = meta.get('pkg.torch.onnx.name_scopes', '')
        module = _innermost_module(scopes)
        if (node.op_type in _NORM_OPS or node.op_type in _ROPE_OPS
                or _SCOPE_NORM.search(module)
                or _ROPE_TRACE.search(meta.get('pkg.torch.onnx.stack_trace', '').split('\n')[-1])
                or {'cos', 'sin'} & set(node.input)):
            names.add(parser_layer_base(node))
    return names


def _innermost_module(scopes: str) -> str:
    """Return the deepest module path in the exporter's ``name_scopes`` list (as text)."""
    items = re.findall(r"'([^']*)'", scopes)
    mods = [s for s in items if s and ('.' in s or s.isidentifier())]
    # The last entry is the op name; the one before it is the innermost module.
    return mods[-2] if len(mods) >= 2 else ''


def parser_layer_base(node) -> str:
    """Name TensorRT's ONNX parser gives a node's layers: the node's, else ``node_of_<out>``."""
    return node.name or f'node_of_{node.output[0]}'


def layer_matches(layer_name: str, node_names: set[str]) -> bool:
    """
    Tell whether a TensorRT layer came from one of ``node_names``.

    The ONNX parser names a node's first layer after the node (:func:`parser_layer_base`) and
    any further layer of the same node ``<name>_<counter>``.
    """
    if layer_name in node_names:
        return True
    base, sep, tail = layer_name.rpartition('_')
    return bool(sep) and tail.isdigit() and base in node_names


def graph_info(onnx_path: str | Path, model=None) -> tuple[str, int]:
    """
    Return the dtype the exporter recorded (``fp32`` for graphs from elsewhere) and opset.

    ``model``: the graph already loaded from ``onnx_path`` (without external data), so it is not
    read again; by default it is loaded here.
    """
    import onnx

    from .export import proto_metadata

    if model is None:
        try:
            model = onnx.load(str(onnx_path), load_external_data=False)
        except Exception as exc:  # noqa: BLE001 - protobuf/onnx raise many kinds on a bad file
            raise EngineError(f'TensorRT cannot parse {Path(onnx_path).name}: not a readable '
                              f'ONNX graph ({type(exc).__name__}: {exc}); delete it to export it '
                              f'again') from None
    opset = next((o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')), 0)
    return proto_metadata(model).get('dtype', 'fp32'), int(opset)


def _progress_monitor(trt):
    """Make an ``IProgressMonitor`` printing build phases to stderr (None before TensorRT 10)."""
    base = getattr(trt, 'IProgressMonitor', None)
    if base is None:
        return None

    class Progress(base):

        def __init__(self) -> None:
            base.__init__(self)
            self._phases: dict[str, tuple[int, int]] = {}
            self._last = 0.0

        def phase_start(self, phase_name, parent_phase, num_steps):
            self._phases[phase_name] = (0, num_steps)
            self._draw(phase_name, force=True)

        def step_complete(self, phase_name, step):
            total = self._phases.get(phase_name, (0, 0))[1]
            self._phases[phase_name] = (step + 1, total)
            self._draw(phase_name)
            return True  # False would cancel the build

        def phase_finish(self, phase_name):
            self._draw(phase_name, force=True)
            self._phases.pop(phase_name, None)

        def _draw(self, phase, force=False):
            now = time.monotonic()
            if not force and now - self._last < 0.5:
                return
            self._last = now
            line = ' | '.join(f'{name} {done}/{total}' for name, (done, total)
                              in self._phases.items())
            sys.stderr.write(f'\r[tensorrt build] {line[-150:]:<150}')
            sys.stderr.flush()
            if not self._phases or phase not in self._phases:
                sys.stderr.write('\n')

    return Progress()


class _Logger:
    """Factory of a TensorRT logger forwarding to Python logging."""

    @staticmethod
    def make(trt):
        class Logger(trt.ILogger):

            def __init__(self) -> None:
                trt.ILogger.__init__(self)

            def log(self, severity, msg):
                level = {trt.ILogger.Severity.INTERNAL_ERROR: logging.ERROR,
                         trt.ILogger.Severity.ERROR: logging.ERROR,
                         trt.ILogger.Severity.WARNING: logging.WARNING,
                         trt.ILogger.Severity.INFO: logging.DEBUG}.get(severity, logging.DEBUG)
                LOG.log(level, 'TensorRT: %s', msg)

        return Logger()


_LOGGER = None


def trt_logger(trt):
    """One process-wide TensorRT logger (TensorRT wants a single instance)."""
    global _LOGGER
    if _LOGGER is None:
        _LOGGER = _Logger.make(trt)
    return _LOGGER


def build_engine(onnx_path: str | Path, *, plan: PrecisionPlan, batch: tuple[int, int, int],
                 timing_cache: str | Path | None = None, workspace_gb: float = 0.0,
                 progress: bool = True, device_index: int = 0) -> bytes:
    """Build a serialized engine from ``onnx_path`` on GPU ``device_index`` (needs TensorRT)."""
    import torch

    trt = import_tensorrt()
    require_cuda()
    if str(trt.__version__) != plan.trt_version:
        raise EngineError(f'the precision plan is for TensorRT {plan.trt_version}, this is '
                          f'{trt.__version__}')
    with torch.cuda.device(device_index):  # TensorRT builds on the thread's current device
        return _build_engine(trt, Path(onnx_path), plan=plan, batch=batch,
                             timing_cache=timing_cache, workspace_gb=workspace_gb,
                             progress=progress)


def _build_engine(trt, onnx_path: Path, *, plan, batch, timing_cache, workspace_gb,
                  progress) -> bytes:
    dtype, opset = graph_info(onnx_path)
    if (dtype, opset) != (plan.graph_dtype, plan.opset):
        raise EngineError(f'{onnx_path.name} is a {dtype} graph at opset {opset}, but the plan '
                          f'needs {plan.graph_dtype} at opset {plan.opset} ({plan.describe()}); '
                          f'delete it to export it again')
    for w in plan.warnings:
        LOG.warning(w)
    LOG.info('%s', plan.describe())
    logger = trt_logger(trt)
    builder = trt.Builder(logger)
    net_flags = 0
    if plan.strongly_typed:
        net_flags |= 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    network = builder.create_network(net_flags)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_path)):
        errors = '; '.join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise EngineError(f'TensorRT cannot parse {onnx_path.name}: {errors}')
    config = builder.create_builder_config()
    if workspace_gb:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_gb * 2 ** 30))
    for flag in plan.builder_flags:
        config.set_flag(getattr(trt.BuilderFlag, flag))
    for flag in plan.clear_flags:
        config.clear_flag(getattr(trt.BuilderFlag, flag))
    if plan.pin_fp32:
        pinned = pin_fp32(trt, network, fp32_node_names(onnx_path))
        LOG.info('fp16 engine: %d norm/RoPE layers pinned to FP32', pinned)
    inp = network.get_input(0)
    _, c, h, w = inp.shape
    profile = builder.create_optimization_profile()
    profile.set_shape(inp.name, *[(b, c, h, w) for b in batch])
    config.add_optimization_profile(profile)
    cache = _load_timing_cache(config, timing_cache)
    monitor = _progress_monitor(trt) if progress else None
    if monitor is not None:
        config.progress_monitor = monitor
    started = time.perf_counter()
    LOG.info('building %s TensorRT engine from %s (batch %s); this takes minutes',
             plan.precision, onnx_path.name, ':'.join(map(str, batch)))
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise EngineError(f'TensorRT failed to build {onnx_path.name} ({plan.precision}); rerun '
                          f'with log level DEBUG for the TensorRT log')
    LOG.info('built in %.0f s', time.perf_counter() - started)
    if cache is not None and timing_cache:
        _save_timing_cache(config, timing_cache)
    return bytes(serialized)


def pin_fp32(trt, network, node_names: set[str]) -> int:
    """
    Pin the float layers of ``node_names`` to FP32; return how many were pinned.

    Only layers whose every input and output is a float tensor are pinned: a Cast of integer
    RoPE positions, shape arithmetic and constants keep the types the parser gave them (a
    precision constraint on an integer input cannot be obeyed).
    """
    floats = {trt.float32, trt.float16}
    if hasattr(trt, 'bfloat16'):
        floats.add(trt.bfloat16)
    count = 0
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if layer.type != trt.LayerType.NORMALIZATION and not layer_matches(layer.name,
                                                                           node_names):
            continue
        if layer.type in (trt.LayerType.CONSTANT, trt.LayerType.SHAPE, trt.LayerType.CAST):
            continue
        inputs = [layer.get_input(j) for j in range(layer.num_inputs)]
        outputs = [layer.get_output(j) for j in range(layer.num_outputs)]
        if not outputs or any(t is not None and t.dtype not in floats
                              for t in inputs + outputs):
            continue
        layer.precision = trt.float32
        for j in range(len(outputs)):
            layer.set_output_type(j, trt.float32)
        count += 1
    return count


def _load_timing_cache(config, path: str | Path | None):
    data = b''
    if path and Path(path).is_file():
        data = Path(path).read_bytes()
    cache = config.create_timing_cache(data)
    if not config.set_timing_cache(cache, ignore_mismatch=False):
        LOG.warning('timing cache %s does not fit this TensorRT/GPU; starting a new one', path)
        cache = config.create_timing_cache(b'')
        config.set_timing_cache(cache, ignore_mismatch=True)
    return cache


def _save_timing_cache(config, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, bytes(config.get_timing_cache().serialize()))
