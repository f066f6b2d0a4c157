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
Build TensorRT engines from exported ONNX graphs, and find or build them through the cache.

Precision is chosen per TensorRT version, never by trusting a flag whose meaning changed:

* TensorRT < 10: unsupported (no ``IProgressMonitor``, ``STRICT_TYPES`` meant something else
  before 8.2, opset 18 parsing is incomplete). JetPack 6.1+ ships TensorRT 10.3.
* 10.0 <= TensorRT < 10.12 with an fp32 graph: weak typing, ``BuilderFlag.BF16`` / ``FP16``.
  For FP16, the RMSNorm/instance-norm and RoPE layers are pinned to FP32 with
  ``OBEY_PRECISION_CONSTRAINTS`` (FP16 overflows there; BF16 has FP32's range and needs no pins).
* TensorRT >= 10.12 deprecated weak typing and 11 removed those flags: a graph exported in the
  target dtype (``--dtype bf16`` on CUDA) is built strongly typed, so precision follows the
  graph, which mirrors torch (RMSNorm and RoPE tables compute in FP32 inside the model). An fp32
  graph on 10.12-10.x still builds weakly typed with a warning; on 11+ it is an error that names
  the export command.

Everything here except :func:`build_engine` and :func:`get_engine` is pure Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
import logging
from pathlib import Path
import re
import sys
import time

from .artifacts import atomic_write, entry_lock
from .engine_cache import EngineCache, EngineKey, export_command, PRECISIONS
from .errors import BackendUnavailableError, EngineError, EngineNotBuiltError

LOG = logging.getLogger(__name__)

MIN_VERSION = (10, 0)
STRONG_TYPING_VERSION = (10, 12)  # weak typing deprecated here, removed in 11
BF16_MIN_CC = (8, 0)  # Ampere, Ada, Hopper, Blackwell, Jetson Orin (8.7)

INSTALL_HINT = ('pip install tensorrt (x86_64/SBSA, CUDA 12) or, on Jetson, install JetPack 6.1+ '
                '(TensorRT 10.x: sudo apt install nvidia-jetpack python3-libnvinfer) and use the '
                'system Python 3.10')

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


def parse_version(text: str) -> tuple[int, ...]:
    """``'10.3.0.30'`` -> ``(10, 3, 0, 30)`` (non-numeric suffixes ignored)."""
    parts = []
    for piece in str(text).split('.'):
        m = re.match(r'\d+', piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def default_precision(compute_capability: tuple[int, int]) -> str:
    """BF16 on GPUs that have it (compute capability >= 8.0, incl. Jetson Orin), else FP16."""
    return 'bf16' if tuple(compute_capability) >= BF16_MIN_CC else 'fp16'


@dataclass
class PrecisionPlan:
    """How to build for a precision on a given TensorRT: network flags, builder flags, pins."""

    precision: str
    strongly_typed: bool = False
    builder_flags: list[str] = field(default_factory=list)
    clear_flags: list[str] = field(default_factory=list)
    pin_fp32: bool = False  # pin norm/RoPE layers to FP32 (weakly typed FP16 only)
    warnings: list[str] = field(default_factory=list)


def precision_plan(precision: str, trt_version: str, *, graph_dtype: str = 'fp32',
                   compute_capability: tuple[int, int] = (8, 0),
                   builder_flags: Iterable[str] | None = None) -> PrecisionPlan:
    """
    Decide the build mode for ``precision``; pure, so every TensorRT version is testable.

    ``graph_dtype`` is the dtype the ONNX graph was exported in; ``builder_flags`` the names in
    this TensorRT's ``BuilderFlag`` (None: assume what the version documents).
    """
    if precision not in PRECISIONS:
        raise EngineError(f'precision must be one of {PRECISIONS}, got {precision!r}')
    version = parse_version(trt_version)
    if version[:2] < MIN_VERSION:
        raise BackendUnavailableError(
            f'TensorRT {trt_version} is too old: sapiens_ros needs TensorRT >= 10.0 '
            f'({INSTALL_HINT})')
    if precision == 'bf16' and tuple(compute_capability) < BF16_MIN_CC:
        raise EngineError(
            f'bf16 needs compute capability >= 8.0 (Ampere or newer, Jetson Orin); this GPU is '
            f'{compute_capability[0]}.{compute_capability[1]}: use --dtype fp16 (norms and RoPE '
            f'stay FP32) or fp32')
    flags = set(builder_flags) if builder_flags is not None else None
    weak_removed = version[0] >= 11 or (flags is not None and 'FP16' not in flags)
    strong_preferred = version[:2] >= STRONG_TYPING_VERSION
    plan = PrecisionPlan(precision)
    if precision == 'fp32':
        if graph_dtype != 'fp32':
            raise EngineError(f'an fp32 engine needs an fp32 graph, not {graph_dtype}')
        plan.strongly_typed = strong_preferred
        if flags is None or 'TF32' in flags:  # strongly typed builds keep TF32 on too
            plan.clear_flags.append('TF32')  # exact fp32 (TF32 matmuls are on by default)
        return plan
    if graph_dtype == precision:
        plan.strongly_typed = True
        return plan
    if graph_dtype != 'fp32':
        raise EngineError(f'cannot build a {precision} engine from a {graph_dtype} graph; '
                          f'export with --dtype {precision} or fp32')
    if weak_removed:
        raise EngineError(
            f'TensorRT {trt_version} only builds strongly typed networks, so a {precision} '
            f'engine needs a graph exported in {precision}: run the export on a CUDA machine '
            f'with --dtype {precision}')
    if strong_preferred:
        plan.warnings.append(
            f'TensorRT {trt_version} deprecates the weakly typed {precision.upper()} flag; '
            f'export with --dtype {precision} on CUDA for a strongly typed build')
    plan.builder_flags.append(precision.upper())
    if precision == 'fp16':
        plan.builder_flags.append('OBEY_PRECISION_CONSTRAINTS')
        plan.pin_fp32 = True
    return plan


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


def graph_dtype(onnx_path: str | Path) -> str:
    """Return the dtype recorded by the exporter (``fp32`` for graphs from elsewhere)."""
    from .export import onnx_metadata

    try:
        return onnx_metadata(onnx_path).get('dtype', 'fp32')
    except Exception as exc:  # noqa: BLE001 - protobuf/onnx raise many kinds on a bad file
        raise EngineError(f'TensorRT cannot parse {Path(onnx_path).name}: not a readable ONNX '
                          f'graph ({type(exc).__name__}: {exc}); delete it to export it again'
                          ) from None


def gpu_identity(device_index: int = 0) -> tuple[str, tuple[int, int]]:
    """GPU name and compute capability from torch."""
    torch = require_cuda()
    props = torch.cuda.get_device_properties(device_index)
    return props.name, (props.major, props.minor)


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


def build_engine(onnx_path: str | Path, *, precision: str, batch: tuple[int, int, int],
                 timing_cache: str | Path | None = None, workspace_gb: float = 0.0,
                 progress: bool = True, device_index: int = 0) -> bytes:
    """Build a serialized engine from ``onnx_path`` on GPU ``device_index`` (needs TensorRT)."""
    import torch

    trt = import_tensorrt()
    require_cuda()
    with torch.cuda.device(device_index):  # TensorRT builds on the thread's current device
        return _build_engine(trt, onnx_path, precision=precision, batch=batch,
                             timing_cache=timing_cache, workspace_gb=workspace_gb,
                             progress=progress, device_index=device_index)


def _build_engine(trt, onnx_path, *, precision, batch, timing_cache, workspace_gb, progress,
                  device_index) -> bytes:
    onnx_path = Path(onnx_path)
    _, cc = gpu_identity(device_index)
    names = {n for n in dir(trt.BuilderFlag) if n.isupper()}
    plan = precision_plan(precision, trt.__version__, graph_dtype=graph_dtype(onnx_path),
                          compute_capability=cc, builder_flags=names)
    for w in plan.warnings:
        LOG.warning(w)
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
        pinned = _pin_fp32(trt, network, fp32_node_names(onnx_path))
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
    LOG.info('building %s TensorRT engine from %s (batch %s); this takes minutes', precision,
             onnx_path.name, ':'.join(map(str, batch)))
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise EngineError(f'TensorRT failed to build {onnx_path.name} ({precision}); rerun with '
                          f'log level DEBUG for the TensorRT log')
    LOG.info('built in %.0f s', time.perf_counter() - started)
    if cache is not None and timing_cache:
        _save_timing_cache(config, timing_cache)
    return bytes(serialized)


def _pin_fp32(trt, network, node_names: set[str]) -> int:
    count = 0
    floats = (trt.float32, trt.float16)
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        if layer.type == trt.LayerType.NORMALIZATION or layer_matches(layer.name, node_names):
            outputs = [layer.get_output(j) for j in range(layer.num_outputs)]
            if layer.type in (trt.LayerType.CONSTANT, trt.LayerType.SHAPE) or \
                    not outputs or any(t.dtype not in floats for t in outputs):
                continue  # integer shape arithmetic (RoPE positions, reshapes) stays as it is
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


def get_engine(onnx_path: str | Path, key: EngineKey, *, cache: EngineCache | None = None,
               engine_path: str | Path | None = None, allow_build: bool = True,
               source: str = '<model>', progress: bool = True, build=build_engine,
               device_index: int = 0) -> Path:
    """
    Return a valid engine for ``key``: the cached one, or a fresh build.

    A cached engine that does not match the key (another GPU or TensorRT, other weights, a
    corrupt file) is logged and rebuilt. With ``allow_build=False`` a missing or stale engine
    raises :class:`EngineNotBuiltError` naming the export command. ``build`` is injectable so
    the cache logic is testable without TensorRT.
    """
    cache = cache or EngineCache()
    target = Path(engine_path).expanduser() if engine_path else cache.engine_path(key)
    with entry_lock(target):  # N processes starting together build once
        return _get_engine(onnx_path, key, cache, engine_path, allow_build, source, progress,
                           build, device_index)


def _get_engine(onnx_path, key, cache, engine_path, allow_build, source, progress, build,
                device_index) -> Path:
    found = cache.lookup(key, engine_path)
    if found.hit:
        LOG.info('using %s', found.reason)
        return found.path
    command = export_command(key, source=source, out=str(onnx_path))
    if not allow_build:
        raise EngineNotBuiltError(
            f'no usable TensorRT engine for {key.task} ({found.reason}) and building on start '
            f'is disabled. Build it with:\n  {command}')
    if found.path.exists():
        LOG.warning('rebuilding the TensorRT engine: %s', found.reason)
    else:
        LOG.info('%s: building it', found.reason)
    if not Path(onnx_path).is_file():
        raise EngineNotBuiltError(f'the ONNX graph {onnx_path} to build from is missing; '
                                  f'create it with:\n  {command}')
    timing = cache.timing_cache_path(key.trt_version, key.gpu_name, key.compute_capability)
    data = build(onnx_path, precision=key.precision, batch=key.batch, timing_cache=timing,
                 progress=progress, device_index=device_index)
    path = cache.store(key, data, engine_path, extra={'onnx': str(onnx_path)})
    LOG.info('cached the TensorRT engine at %s', path)
    return path
