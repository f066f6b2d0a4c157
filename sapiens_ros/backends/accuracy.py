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
The accuracy gate: an engine is measured against the fp32 torch model before it is trusted.

TensorRT has shipped builds that compute wrong or NaN outputs for ViTs (10.3 on JetPack 6 for
depth ViTs, fixed in 10.14-10.16; all-NaN fp16 with 10.16 on an RTX 5080), and the export's
parity check compares ONNX Runtime with the converted torch copy, not the engine. So after an
engine is built (native TensorRT, or ONNX Runtime's TensorRT provider) and before it is cached,
a fixed probe batch goes through the engine and through the model in fp32: the package's sample
photo (:mod:`~sapiens_ros.core.media.sample_image`) letterboxed to the engine's input size,
normalised as the pipeline does, and its mirror image. The max and mean absolute error of every
output are recorded in the engine's sidecar; an engine beyond its precision's tolerance is
refused (:class:`EngineAccuracyError`: not cached, the head falls back to the next backend).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
import functools
import json
import logging
from pathlib import Path

import numpy as np
import torch

from .errors import EngineError

LOG = logging.getLogger(__name__)

#: Engine tolerance per precision: an output passes when it is finite and its max abs error is
#: at most ``atol + rtol * max|fp32 torch|``. Looser than the export's parity check (which
#: compares the graph with the converted copy in the same dtype): here a reduced-precision engine
#: is compared with fp32, so the whole rounding of bf16 (8 bits) or fp16 (11 bits) counts. A
#: wrong build (NaN, garbage, a swapped layer) misses it by orders of magnitude.
#: ``tf32``: an fp32 engine whose matrix products may run in TF32 (ONNX Runtime's TensorRT
#: provider cannot clear TensorRT's TF32 flag; native engines clear it and are held to fp32).
ENGINE_TOLERANCES = {'fp32': (1e-4, 1e-2), 'tf32': (1e-3, 5e-2), 'fp16': (1e-3, 5e-2),
                     'bf16': (1e-2, 1e-1)}


def fix_of(precision: str) -> str:
    """Return the fix a refusal names for an engine of ``precision``."""
    fp32 = ', or build this head in fp32 (dtype fp32)' if precision in ('bf16', 'fp16') else ''
    return (f'upgrade TensorRT (10.14+ fixed ViT engines that 10.3-10.13 built wrong){fp32}, '
            f'or choose backend torch')


class EngineAccuracyError(EngineError):
    """A built engine disagrees with the fp32 torch model beyond its precision's tolerance."""

    def __init__(self, message: str, report: AccuracyReport) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class AccuracyReport:
    """How far an engine's outputs are from the fp32 model on the probe batch, per output."""

    precision: str
    batch: int
    max_abs: dict[str, float] = field(default_factory=dict)
    mean_abs: dict[str, float] = field(default_factory=dict)
    scale: dict[str, float] = field(default_factory=dict)  # max|fp32 torch| per output
    tolerance: tuple[float, float] = (0.0, 0.0)  # atol, rtol
    failed: list[str] = field(default_factory=list)  # outputs beyond the tolerance

    @property
    def ok(self) -> bool:
        """Tell whether every output is within the tolerance."""
        return not self.failed

    def summary(self) -> str:
        """One line: every output's max and mean error against its scale."""
        return '; '.join(f'{n}: max abs error {self.max_abs[n]:.3g}, mean {self.mean_abs[n]:.3g}'
                         f' (|fp32| up to {self.scale[n]:.3g})' for n in self.max_abs)

    def to_json(self) -> dict:
        """Return the report as the sidecar stores it."""
        return {'probe': 'sample_image (astronaut) + mirror', 'precision': self.precision,
                'batch': self.batch, 'max_abs': self.max_abs, 'mean_abs': self.mean_abs,
                'scale': self.scale, 'tolerance': list(self.tolerance), 'ok': self.ok}


@functools.lru_cache(maxsize=8)
def _probe_cpu(height: int, width: int) -> torch.Tensor:
    import cv2

    from ..core.media.sample_image import sample_image_path
    from ..core.processing.frames import FrameBatch

    bgr = cv2.imread(str(sample_image_path()), cv2.IMREAD_COLOR)
    if bgr is None:
        raise EngineError(f'cannot read the sample photo {sample_image_path()} for the probe')
    frames = [bgr, np.ascontiguousarray(bgr[:, ::-1])]
    return FrameBatch(frames, (height, width), torch.device('cpu'), 'bgr').letterboxed(
        (height, width)).clone()


def probe_batch(input_size: tuple[int, int], batch_range: tuple[int, int] = (1, 2),
                device: torch.device | str = 'cpu') -> torch.Tensor:
    """
    Return the probe: the sample photo and its mirror, normalised, at ``input_size`` (H, W).

    Its rows are fitted to the engine's batch range: repeated up to the minimum, cut to the
    maximum (the photo first).
    """
    probe = _probe_cpu(int(input_size[0]), int(input_size[1]))
    low, high = batch_range
    rows = min(max(probe.shape[0], low), high)
    index = torch.arange(rows) % probe.shape[0]
    return probe[index].to(device)


def measure(got: Mapping[str, torch.Tensor], want: Mapping[str, torch.Tensor],
            precision: str) -> AccuracyReport:
    """Compare an engine's outputs ``got`` with the fp32 model's ``want``, output by output."""
    atol, rtol = ENGINE_TOLERANCES[precision]
    first = next(iter(want.values()))
    report = AccuracyReport(precision, int(first.shape[0]), tolerance=(atol, rtol))
    for name, ref in want.items():
        ref = ref.detach().float().cpu()
        value = got.get(name)
        if value is None or tuple(value.shape) != tuple(ref.shape):
            shape = None if value is None else tuple(value.shape)
            report.max_abs[name] = report.mean_abs[name] = float('inf')
            report.scale[name] = float(ref.abs().max()) if ref.numel() else 0.0
            report.failed.append(f'{name}: shape {shape}, fp32 torch gives {tuple(ref.shape)}')
            continue
        diff = (value.detach().float().cpu() - ref).abs()
        # NaN compares false with everything: count it as an infinite error.
        diff = torch.where(torch.isnan(diff), torch.full_like(diff, float('inf')), diff)
        err = float(diff.max()) if diff.numel() else 0.0
        scale = float(ref.abs().max()) if ref.numel() else 0.0
        report.max_abs[name], report.mean_abs[name] = err, float(diff.mean()) if diff.numel() \
            else 0.0
        report.scale[name] = scale
        if not (np.isfinite(err) and err <= atol + rtol * scale):
            report.failed.append(f'{name}: max abs error {err:.3g} > {atol:g} + {rtol:g} * '
                                 f'{scale:.3g}')
    return report


def gate(engine: Callable[[torch.Tensor], Mapping[str, torch.Tensor]],
         reference: Callable[[torch.Tensor], Mapping[str, torch.Tensor]], *, task: str,
         precision: str, input_size: tuple[int, int], batch_range: tuple[int, int],
         device: torch.device, what: str) -> AccuracyReport:
    """
    Run the probe through ``engine`` and the fp32 ``reference``; raise if it is out of tolerance.

    ``what`` names the engine in the refusal (e.g. ``TensorRT 10.3.0 engine``). Returns the
    report (for the sidecar) when every output is within :data:`ENGINE_TOLERANCES`.
    """
    x = probe_batch(input_size, batch_range, device)
    with torch.inference_mode():
        want = {k: v.float().clone() for k, v in reference(x).items()}
        got = {k: v.float().clone() for k, v in engine(x).items()}
    report = measure(got, want, precision)
    if not report.ok:
        raise EngineAccuracyError(
            f'{what} for {task} ({precision}) refused: against the fp32 torch model on the '
            f'sample photo, {"; ".join(report.failed)}. Fix: {fix_of(precision)}', report)
    LOG.info('%s for %s (%s) within tolerance: %s', what, task, precision, report.summary())
    return report


def tensorrt_gate(task: str, reference, *, precision: str, input_size: tuple[int, int],
                  device: torch.device, trt_version: str):
    """Return the gate of TensorRT engine files for ``get_engine`` (``gate(path)``)."""
    def measure(path) -> AccuracyReport:
        from .tensorrt_runner import TensorRTRunner

        runner = TensorRTRunner(task, path, device=device)
        return gate(runner, reference, task=task, precision=precision, input_size=input_size,
                    batch_range=runner.batch_range, device=device,
                    what=f'TensorRT {trt_version} engine')

    return measure


def torch_reference(model: torch.nn.Module, task: str, device: torch.device):
    """Return the fp32 reference function of ``model`` on ``device`` (a converted copy)."""
    from .numerics import converted
    from .torch_runner import TorchRunner

    return TorchRunner(task, converted(model, device, torch.float32))


def onnx_reference(onnx_path, task: str):
    """
    Return an fp32 reference from a user's fp32 ONNX graph (ONNX Runtime, CPU), else None.

    Used where no torch model exists (an engine built from a given graph); a bf16/fp16 graph,
    or no ONNX Runtime, gives None (the engine is then not gated, and a warning says so).
    """
    from .tensorrt_build import graph_info

    if graph_info(onnx_path)[0] != 'fp32':
        return None
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    from ..core.models.runners import OUTPUT_NAMES

    session = ort.InferenceSession(str(onnx_path), providers=['CPUExecutionProvider'])
    outputs = {o.name for o in session.get_outputs()}
    names = [n for n in OUTPUT_NAMES[task] if n in outputs]
    name = session.get_inputs()[0].name

    def run(x: torch.Tensor) -> dict[str, torch.Tensor]:
        values = session.run(names, {name: x.detach().float().cpu().numpy()})
        return {n: torch.from_numpy(v) for n, v in zip(names, values, strict=True)}

    return run


def gate_ort_tensorrt(runner, loader: Callable[[], torch.nn.Module] | None,
                      cache_dir: str | Path | None, started: float) -> None:
    """
    Measure ONNX Runtime's TensorRT engine against the fp32 model once per engine.

    ONNX Runtime builds and caches that engine itself (``ort_trt/`` of the cache dir), so the
    report goes to a record beside it, named after the graph, precision, batch profile, ONNX
    Runtime, TensorRT and GPU; while it exists and passed, nothing is measured again. A refused
    engine has the files ONNX Runtime wrote since ``started`` removed, and raises
    :class:`EngineAccuracyError`.
    """
    from .artifacts import atomic_write, default_cache_dir
    from .tensorrt_build import installed_tensorrt_version

    trt_version = installed_tensorrt_version() or 'unknown'
    folder = (Path(cache_dir).expanduser() if cache_dir else default_cache_dir()) / 'ort_trt'
    gpu = torch.cuda.get_device_name(runner.device.index or 0) \
        if runner.device.type == 'cuda' else 'cpu'
    profile = 'b' + '-'.join(map(str, runner.batch_profile))
    name = '-'.join([runner.path.stem, runner.precision, profile,
                     f'ort{runner.ort_version}', f'trt{trt_version}',
                     ''.join(c if c.isalnum() else '_' for c in gpu)])
    record = folder / f'{name}.accuracy.json'
    try:
        if json.loads(record.read_text()).get('ok'):
            return
    except (OSError, ValueError):
        pass
    reference = torch_reference(loader(), runner.task, runner.device) if loader is not None \
        else onnx_reference(runner.path, runner.task)
    what = f'ONNX Runtime {runner.ort_version} TensorRT {trt_version} engine'
    if reference is None:
        LOG.warning('the %s for %s is not measured against an fp32 model (the given graph is '
                    'not fp32): its outputs are unchecked', what, runner.task)
        return
    # ONNX Runtime's TensorRT builds "fp32" with TF32 on (no option clears it): TF32 tolerance.
    precision = 'tf32' if runner.precision == 'fp32' else runner.precision
    try:
        report = gate(runner, reference, task=runner.task, precision=precision,
                      input_size=runner.input_size, batch_range=runner.batch_profile[::2],
                      device=runner.device, what=what)
    except EngineAccuracyError:
        for stale in folder.glob('*') if folder.is_dir() else ():
            if stale.is_file() and stale.stat().st_mtime >= started - 1.0:
                stale.unlink(missing_ok=True)  # the engine ONNX Runtime cached
        raise
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(record, (json.dumps(report.to_json(), indent=2) + '\n').encode())
