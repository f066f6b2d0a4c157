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
Export a Sapiens2 head to ONNX (torch dynamo exporter) and check it against torch.

The exported graph takes ``pixel_values`` float32 ``(batch, 3, H, W)`` with a dynamic batch and a
static ``H x W``, and returns the head's raw outputs in float32 under the names of
:data:`~sapiens_ros.core.models.runners.OUTPUT_NAMES` (pose: ``heatmaps``; seg: ``logits``; normal:
``normals``; pointmap: ``pointmaps`` and ``scales``), so every backend plugs into the same
pipeline. Inside, it computes in its dtype (fp32, bf16 or fp16), at the opset that dtype needs
(:func:`~.precision.graph_opset`: bf16 Conv is valid ONNX only from opset 22). A graph is the same
whichever device exports it; only the parity check of a reduced-precision graph needs CUDA, and
is skipped with a note without it. Every graph passes ``onnx.checker.check_model(full_check=True)``
before it is returned, and records its dtype and opset in its ``sapiens_ros.*`` metadata. The
caller's model is never cast or moved: the export works on a converted copy when it must.

Workaround for the dynamo exporter: transformers models return a ``ModelOutput`` (a dict with
optional ``None`` fields) that the ONNX graph cannot express, so :class:`ExportWrapper` returns a
plain tuple of the present outputs. The wrapper also casts the float32 input to the model's dtype
and the outputs back to float32, keeping the graph's I/O float32 whatever the weights' dtype.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
import json
import logging
from pathlib import Path
import re
import time

import numpy as np
import torch

from .errors import BackendUnavailableError, ExportError, ParityError
from .fingerprint import weights_hash
from .numerics import converted, fp16_unsafe_norms
from .precision import graph_opset
from ..core.models.input_size import check_input_size, Size
from ..core.models.loading import parse_dtype
from ..core.models.runners import OUTPUT_NAMES

LOG = logging.getLogger(__name__)

INPUT_NAME = 'pixel_values'
#: Models above this many bytes of weights are saved with ONNX external data (protobuf: 2 GiB).
EXTERNAL_DATA_BYTES = 2 * 1024 ** 3 - 64 * 1024 ** 2
#: Parity tolerance per exported dtype: pass when max|onnx - torch| <= atol + rtol * max|torch|.
TOLERANCES = {torch.float32: (1e-4, 1e-3), torch.float16: (1e-3, 2e-2),
              torch.bfloat16: (1e-2, 5e-2)}
_DTYPE_NAMES = {torch.float32: 'fp32', torch.float16: 'fp16', torch.bfloat16: 'bf16'}
#: Largest batch the ONNX graph declares; the TensorRT profile narrows it.
MAX_ONNX_BATCH = 1024


def dtype_name(dtype: torch.dtype) -> str:
    """``fp32``/``fp16``/``bf16`` for a torch dtype."""
    return _DTYPE_NAMES[dtype]


def parse_batch(text: str | int | tuple[int, ...]) -> tuple[int, int, int]:
    """Parse a batch profile ``min:opt:max`` (or one number) into ``(min, opt, max)``."""
    if isinstance(text, int):
        parts = [text]
    elif isinstance(text, (tuple, list)):
        parts = list(text)
    else:
        try:
            parts = [int(p) for p in str(text).split(':')]
        except ValueError:
            parts = []
    if len(parts) == 1:
        parts = parts * 3
    if len(parts) != 3 or not 1 <= parts[0] <= parts[1] <= parts[2]:
        raise ExportError(f'invalid batch profile {text!r}: use min:opt:max with '
                          f'1 <= min <= opt <= max, e.g. 1:1:8')
    return int(parts[0]), int(parts[1]), int(parts[2])


class ExportWrapper(torch.nn.Module):
    """A Sapiens2 model as ``pixel_values (float32) -> tuple of float32 outputs``."""

    def __init__(self, model: torch.nn.Module, output_names: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self.output_names = output_names
        self.dtype = next(model.parameters()).dtype

    def forward(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Run the model and return its outputs in ``output_names`` order."""
        out = self.model(pixel_values=pixel_values.to(self.dtype))
        return tuple(out[name].float() for name in self.output_names)


def present_outputs(task: str, model: torch.nn.Module, input_size: tuple[int, int]) -> tuple:
    """Return the names in ``OUTPUT_NAMES[task]`` the model outputs (pointmap may lack scales)."""
    first = next(model.parameters())
    x = torch.zeros(1, 3, *input_size, dtype=first.dtype, device=first.device)
    with torch.inference_mode():
        out = model(pixel_values=x)
    names = tuple(n for n in OUTPUT_NAMES[task] if out.get(n) is not None)
    if not names:
        raise ExportError(f'the {task} model returned none of {OUTPUT_NAMES[task]}')
    return names


@dataclass
class ParityReport:
    """How far the ONNX Runtime outputs are from torch, per output."""

    batch: int
    provider: str
    max_abs: dict[str, float] = field(default_factory=dict)
    max_rel: dict[str, float] = field(default_factory=dict)  # max_abs / max|torch|
    tolerance: tuple[float, float] = (0.0, 0.0)  # atol, rtol

    def summary(self) -> str:
        """One line per output for logs."""
        return '; '.join(f'{n}: max abs {self.max_abs[n]:.3g}, rel {self.max_rel[n]:.3g}'
                         for n in self.max_abs)


@dataclass
class ExportResult:
    """What :func:`export_onnx` wrote."""

    path: Path
    task: str
    input_size: Size
    batch: tuple[int, int, int]
    output_names: tuple[str, ...]
    requested_dtype: str
    exported_dtype: str
    weights_hash: str
    external_data: bool
    seconds: float
    parity: ParityReport | None = None
    notes: list[str] = field(default_factory=list)
    opset: int = 18


@contextlib.contextmanager
def _quiet_exporter_logs():
    """Silence the exporter's per-pass INFO logs (hundreds of lines) unless DEBUG is on."""
    loggers = [logging.getLogger(n) for n in ('onnxscript', 'onnx_ir')]
    levels = [lg.level for lg in loggers]
    if not LOG.isEnabledFor(logging.DEBUG):
        for lg in loggers:
            lg.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _param_bytes(model: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def export_onnx(model: torch.nn.Module, task: str, out: str | Path, *,
                input_size: tuple[int, int] = (1024, 768),
                batch: tuple[int, int, int] | str = (1, 1, 8), dtype: str = 'fp32',
                device: torch.device | str | None = None, check: bool = True,
                model_id: str = '', seed: int = 0,
                extra_metadata: dict[str, str] | None = None) -> ExportResult:
    """
    Export ``model`` (a ``Sapiens2For*`` for ``task``) to ``out`` in ``dtype`` and check it.

    ``device``: where the export and the parity check run (default: the model's). The graph is
    the same on any device; the parity check of a bf16/fp16 graph needs CUDA and ONNX Runtime's
    CUDA provider and is skipped with a note (``ExportResult.notes``) without them. Raises
    :class:`ExportError` when the graph is not valid ONNX and :class:`ParityError` when ONNX
    Runtime differs from torch beyond :data:`TOLERANCES`. The caller's model is not changed.
    """
    started = time.perf_counter()
    input_size = check_input_size(task, model.config, input_size)
    batch = parse_batch(batch)
    torch_dtype = parse_dtype(dtype)
    graph_dtype = dtype_name(torch_dtype)
    opset = graph_opset(graph_dtype)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    notes: list[str] = []
    names = present_outputs(task, model, input_size)
    if graph_dtype == 'fp16':
        check_fp16_norms(model, task)
    model = converted(model, device, torch_dtype)
    wrapper = ExportWrapper(model, names).eval()
    out = Path(out).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)
    external = _param_bytes(model) > EXTERNAL_DATA_BYTES
    example = torch.randn(max(2, batch[1]), 3, *input_size, device=device)
    dim = torch.export.Dim('batch', min=1, max=MAX_ONNX_BATCH)
    for stale in (out, out.with_name(out.name + '.data')):
        stale.unlink(missing_ok=True)
    try:
        with torch.no_grad(), _quiet_exporter_logs():
            program = torch.onnx.export(
                wrapper, (example,), dynamo=True, opset_version=opset,
                input_names=[INPUT_NAME], output_names=list(names),
                dynamic_shapes=({0: dim},), external_data=external, verbose=False)
    except Exception as exc:  # noqa: B902 - the exporter raises many types; re-raise as one
        raise ExportError(f'ONNX export of {task} failed: {type(exc).__name__}: {exc}') from exc
    w_hash = weights_hash(model)
    meta = {'task': task, 'input_size': str(input_size),
            'batch': ':'.join(map(str, batch)), 'dtype': graph_dtype, 'io_dtype': 'fp32',
            'opset': str(opset), 'outputs': ','.join(names), 'weights_hash': w_hash,
            'model_id': model_id or '', 'producer': 'sapiens_ros', **(extra_metadata or {})}
    program.model.metadata_props.update({f'sapiens_ros.{k}': str(v) for k, v in meta.items()})
    program.save(str(out), external_data=external)
    external = out.with_name(out.name + '.data').exists()  # what was written, not what was asked
    check_graph(out)
    result = ExportResult(out, task, input_size, batch, names, graph_dtype, graph_dtype, w_hash,
                          external, time.perf_counter() - started, notes=notes, opset=opset)
    LOG.info('exported %s to %s (%s, opset %d, batch %s, %.1f s)', task, out, graph_dtype, opset,
             meta['batch'], result.seconds)
    if check and graph_dtype != 'fp32' and not _can_check_reduced(device):
        where = 'ONNX Runtime has no CUDA provider' if device.type == 'cuda' else \
            f'the export ran on {device}'
        msg = (f'parity check skipped: {where}, and ONNX Runtime runs {graph_dtype} graphs only '
               f'on CUDA (export with --device cuda and onnxruntime-gpu installed to check it); '
               f'the graph is the same as a CUDA export')
        LOG.warning(msg)
        notes.append(msg)
        check = False
    if check:
        LOG.info('checking %s against torch with ONNX Runtime (batch %d on %s; minutes for a '
                 'real-size model on a CPU)...', out.name, max(2, batch[1]), device)
        try:
            result.parity = check_parity(out, wrapper, input_size, batch, seed=seed + 1,
                                         device=device)
        except ExportError as exc:
            missing = _missing_kernel(exc)
            if isinstance(exc, ParityError) or graph_dtype == 'fp32' or missing is None:
                raise
            msg = (f'parity check skipped: ONNX Runtime has no {graph_dtype} kernel for '
                   f'{missing} on CUDA (the graph is valid ONNX; TensorRT runs it)')
            LOG.warning(msg)
            notes.append(msg)
        else:
            LOG.info('parity of %s vs torch (batch %d, %s): %s', out.name, result.parity.batch,
                     result.parity.provider, result.parity.summary())
    return result


def check_fp16_norms(model: torch.nn.Module, task: str) -> None:
    """Raise :class:`ExportError` when an RMS norm of ``model`` overflows in fp16."""
    unsafe = fp16_unsafe_norms(model)
    if unsafe:
        raise ExportError(
            f'{len(unsafe)} RMS norms of the {task} model ({unsafe[0]}, ...) compute their '
            f'variance in fp16, where x**2 overflows above 256 on high-norm tokens: export '
            f'--dtype bf16 (compute capability >= 8.0) or fp32 (TensorRT 10.x then pins the '
            f'norms to FP32 in an fp16 engine), or use a transformers whose Sapiens2RMSNorm '
            f'computes in fp32 (5.10.1 and later)')


def _missing_kernel(exc: Exception) -> str | None:
    """Return the op ONNX Runtime says it has no kernel for (NOT_IMPLEMENTED), else None."""
    text = f'{exc} {exc.__cause__ or ""}'
    if 'NOT_IMPLEMENTED' not in text and 'Could not find an implementation' not in text:
        return None
    match = re.search(r'implementation for (\w+)', text)
    return match.group(1) if match else 'an operator'


def check_graph(path: str | Path) -> None:
    """Raise :class:`ExportError` unless ``onnx.checker.check_model(full_check=True)`` passes."""
    import onnx

    try:
        onnx.checker.check_model(str(path), full_check=True)
    except Exception as exc:  # noqa: B902 - checker and shape inference raise several types
        raise ExportError(f'the exported graph {Path(path).name} is not valid ONNX: '
                          f'{str(exc).strip().splitlines()[0]}') from exc


def onnx_metadata(path: str | Path) -> dict[str, str]:
    """Read the ``sapiens_ros.*`` metadata of an exported graph (without its weights)."""
    import onnx

    return proto_metadata(onnx.load(str(path), load_external_data=False))


def proto_metadata(model) -> dict[str, str]:
    """Return the ``sapiens_ros.*`` metadata of an already loaded ONNX ``ModelProto``."""
    prefix = 'sapiens_ros.'
    return {p.key[len(prefix):]: p.value for p in model.metadata_props
            if p.key.startswith(prefix)}


def graph_input_size(model) -> Size | None:
    """
    Return the static ``(height, width)`` of a loaded ``ModelProto``'s image input, else None.

    Read from the input's shape, not the ``input_size`` metadata: graphs of recipe 2 and older
    wrote that HEIGHTxWIDTH (it is WIDTHxHEIGHT since), and graphs from elsewhere have none.
    """
    inputs = list(model.graph.input)
    image = next((i for i in inputs if i.name == INPUT_NAME), inputs[0] if inputs else None)
    dims = image.type.tensor_type.shape.dim if image is not None else ()
    if len(dims) != 4 or dims[2].dim_value <= 0 or dims[3].dim_value <= 0:
        return None  # symbolic (dim_param) or missing
    return Size(dims[2].dim_value, dims[3].dim_value)


def _can_check_reduced(device: torch.device) -> bool:
    """Tell whether a bf16/fp16 graph can be parity-checked here (CUDA and ORT's CUDA EP)."""
    return device.type == 'cuda' and _ort_has_cuda()


def _ort_has_cuda() -> bool:
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    return 'CUDAExecutionProvider' in ort.get_available_providers()


def _ort_session(path: Path, device: torch.device):
    """Open ``path`` in ONNX Runtime on ``device`` (its CUDA index, not GPU 0), CPU otherwise."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise BackendUnavailableError(
            'the parity check needs ONNX Runtime: pip install onnxruntime (or onnxruntime-gpu), '
            'or skip it with check=False') from None
    providers, provider_options = ['CPUExecutionProvider'], [{}]
    if device.type == 'cuda' and 'CUDAExecutionProvider' in ort.get_available_providers():
        providers.insert(0, 'CUDAExecutionProvider')  # exact fp32: no TF32 in the check
        provider_options.insert(0, {'device_id': str(device.index or 0), 'use_tf32': '0'})
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=providers,
                                provider_options=provider_options)


def within_tolerance(err: float, scale: float, tolerance: tuple[float, float]) -> bool:
    """Tell whether a max abs error is finite and within ``atol + rtol * scale`` (max|torch|)."""
    atol, rtol = tolerance
    return bool(np.isfinite(err)) and err <= atol + rtol * scale


def check_parity(path: str | Path, wrapper: ExportWrapper, input_size: tuple[int, int],
                 batch: tuple[int, int, int], *, seed: int = 1,
                 tolerance: tuple[float, float] | None = None,
                 device: torch.device | None = None) -> ParityReport:
    """
    Compare ONNX Runtime with torch on a fresh random batch; raise :class:`ParityError`.

    Both run on ``device`` (default: the wrapper's): ONNX Runtime on the CUDA provider of the
    same GPU index when the device is CUDA.
    """
    path = Path(path)
    device = device or next(wrapper.parameters()).device
    atol, rtol = tolerance or TOLERANCES[wrapper.dtype]
    n = min(max(batch[0], 3), batch[2])  # a batch other than the export example where allowed
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, *input_size, generator=gen)
    try:
        session = _ort_session(path, device)
        got = session.run(list(wrapper.output_names), {INPUT_NAME: x.numpy()})
    except BackendUnavailableError:
        raise
    except Exception as exc:  # noqa: B902 - ORT raises its own exception types
        raise ExportError(
            f'ONNX Runtime cannot run {path.name} for the parity check ({exc}). For bf16/fp16 '
            f'graphs install onnxruntime-gpu, or export fp32') from exc
    with torch.inference_mode():
        ref = wrapper(x.to(device))
    report = ParityReport(n, session.get_providers()[0], tolerance=(atol, rtol))
    failed = []
    for name, a, b in zip(wrapper.output_names, got, ref, strict=True):
        b = b.float().cpu().numpy()
        if a.shape != b.shape:
            raise ParityError(f'{path.name}: output {name!r} has shape {a.shape}, torch gives '
                              f'{b.shape}')
        err = float(np.max(np.abs(a.astype(np.float32) - b))) if a.size else 0.0
        scale = float(np.max(np.abs(b))) if b.size else 0.0
        report.max_abs[name] = err
        report.max_rel[name] = err / scale if scale > 0 else err
        if not within_tolerance(err, scale, (atol, rtol)):
            failed.append(f'{name}: max abs error {err:.3g}, max rel error '
                          f'{report.max_rel[name]:.3g} (|torch| up to {scale:.3g}) exceeds the '
                          f'tolerance atol {atol:g} + rtol {rtol:g} * max|torch|')
    if failed:
        raise ParityError(f'ONNX parity check failed for {path.name} (batch {n}, '
                          f'{report.provider}): ' + '; '.join(failed))
    return report


def write_report(result: ExportResult, path: str | Path) -> None:
    """Write an export summary JSON next to the graph (used by the CLI)."""
    data = {'path': str(result.path), 'task': result.task,
            'input_size': str(result.input_size), 'batch': list(result.batch),
            'outputs': list(result.output_names), 'requested_dtype': result.requested_dtype,
            'exported_dtype': result.exported_dtype, 'opset': result.opset,
            'weights_hash': result.weights_hash,
            'external_data': result.external_data, 'seconds': round(result.seconds, 2),
            'notes': result.notes}
    if result.parity is not None:
        p = result.parity
        data['parity'] = {'batch': p.batch, 'provider': p.provider, 'max_abs': p.max_abs,
                          'max_rel': p.max_rel, 'tolerance': list(p.tolerance)}
    Path(path).write_text(json.dumps(data, indent=2) + '\n')
