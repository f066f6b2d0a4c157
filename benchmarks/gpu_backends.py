#!/usr/bin/env python3

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
GPU acceptance run: every head on torch (eager and CUDA graphs), ONNX Runtime and TensorRT.

For each head (random weights of ``--layout``, default the real 0.4B, at 1024x768) and each
backend and dtype it measures, in one table ready for docs/benchmarks.md:

* parity against torch fp32 (TF32 off) on the same batch of 3: the max abs error relative to
  max|torch|, and whether it is within the export's tolerance for that dtype;
* the forward latency at batch 1 and at the pose batch of 3 (CUDA events, median of
  ``--repeats``), torch eager and with CUDA graphs (captured before timing, as at configure);
* the FLOP floor ratio: batch-1 latency / (head FLOPs / the dense bf16 matmul rate measured on
  this card).

Then the whole pipeline (every head, torch bf16 eager and with CUDA graphs) on one 1024x768
frame with 1 and with 3 persons, and one scheduler step of 4 cameras (median ms per call).

The torch rows, the pipeline and the scheduler step run first (minutes at most on an H100);
the ONNX Runtime and TensorRT rows follow in priority order under a time budget
(``--budget-s``, default 420 s, for an 8-minute visit): a row whose export or engine build would
not fit is listed as not run, and a second run with the same ``--cache-dir`` reuses every graph
and engine already made. TensorRT rows appear when ``tensorrt`` imports, ONNX Runtime rows when
onnxruntime-gpu has the CUDA provider. Offline: install the wheels from a local folder first
(docs/backends.md, "GPU acceptance run without internet"). ``--device cpu --layout tiny`` runs
the same structure on a CPU in seconds (a smoke run: no graphs, host-clock timings).

    python benchmarks/gpu_backends.py [--layout 0.4b|tiny] [--tasks pose,seg] [--json out.json]
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
import json
import logging
import platform
import re
import statistics
import time
import traceback

from sapiens_ros.backends.artifact_cache import get_onnx
from sapiens_ros.backends.artifacts import sidecar_of
from sapiens_ros.backends.export import TOLERANCES, within_tolerance
from sapiens_ros.backends.factory import make_runner
from sapiens_ros.backends.fingerprint import weights_hash
from sapiens_ros.backends.numerics import converted
from sapiens_ros.backends.onnxruntime_runner import OnnxRuntimeRunner
from sapiens_ros.backends.torch_runner import AcceleratedTorchRunner, TorchRunner
from sapiens_ros.core.models.configs import random_model
from sapiens_ros.core.models.input_size import parse_size
from sapiens_ros.core.models.loading import parse_dtype
from sapiens_ros.core.models.registry import DEFAULT_TASKS
import torch

#: TFLOP per frame of the real 0.4B heads at 1024x768 (issue reference, attention included).
REFERENCE_TFLOP = {'pose': 3.87, 'seg': 3.59, 'normal': 5.03, 'pointmap': 8.34}
DTYPES = ('fp32', 'bf16', 'fp16')
#: Rows that need no export or build: the reference first, then the default bf16 path.
TORCH_ORDER = [('torch', 'fp32'), ('torch', 'bf16'), ('torch+graphs', 'fp32'),
               ('torch+graphs', 'bf16'), ('torch', 'fp16')]
#: Rows under the time budget, in priority order: the default bf16 paths, then the rest.
ACCEL_ORDER = [('tensorrt', 'bf16'), ('onnxruntime', 'fp32'), ('tensorrt', 'fp16'),
               ('onnxruntime', 'fp16'), ('tensorrt', 'fp32'), ('onnxruntime', 'bf16')]
#: First guesses of the slow steps (seconds; replaced by what this run measures).
GUESS = {'tiny': {'export': 15.0, 'build': 45.0}, 'real': {'export': 120.0, 'build': 240.0}}


@dataclass
class Row:
    """One line of the table."""

    task: str
    backend: str
    dtype: str
    status: str = 'ok'
    parity: float | None = None  # max|got - ref| / max|ref| over the outputs
    within: bool | None = None  # within the export's tolerance for the dtype
    ms_b1: float | None = None
    ms_b3: float | None = None
    floor_ms: float | None = None
    note: str = ''


def cuda_ms(fn, x, repeats: int, warmup: int) -> float:
    """Return the median ms of ``fn(x)`` timed with CUDA events (the host clock on a CPU)."""
    for _ in range(warmup):
        fn(x)
    if not torch.cuda.is_available():
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            fn(x)
            times.append((time.perf_counter() - started) * 1e3)
        return statistics.median(times)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def matmul_tflops(device: str, n: int = 8192, repeats: int = 20) -> float:
    """Measure the dense bf16 matmul rate of the card in TFLOP/s (fp32 and small on a CPU)."""
    dtype = torch.bfloat16 if device == 'cuda' else torch.float32
    n = n if device == 'cuda' else 512
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    ms = cuda_ms(lambda _: a @ b, a, repeats, 3)
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def count_tflop(model: torch.nn.Module, size: tuple[int, int]) -> float:
    """Count the forward FLOPs (matmul/conv, 2 per MAC) of one frame in TFLOP."""
    from torch.utils.flop_counter import FlopCounterMode

    first = next(model.parameters())
    x = torch.zeros(1, 3, *size, device=first.device, dtype=first.dtype)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(pixel_values=x)
    return counter.get_total_flops() / 1e12


def parity(got: dict, ref: dict, tolerance: tuple[float, float]) -> tuple[float, bool]:
    """Return the max over outputs of max|got - ref| / max|ref|, and whether all are within."""
    worst, within = 0.0, True
    for name, want in ref.items():
        err = (got[name].float() - want).abs().max().item()
        scale = want.abs().max().item()
        worst = max(worst, err / (scale or 1.0))
        within = within and within_tolerance(err, scale, tolerance)
    return worst, within


class Budget:
    """Time left for the run, and adaptive estimates of its slow steps."""

    def __init__(self, seconds: float, guesses: dict) -> None:
        self.end = time.monotonic() + seconds
        self.estimate = dict(guesses)

    def left(self) -> float:
        return self.end - time.monotonic()

    def fits(self, *steps: str) -> bool:
        return sum(self.estimate[s] for s in steps) < self.left()

    def measured(self, step: str, seconds: float) -> None:
        self.estimate[step] = max(seconds, 0.5 * self.estimate[step])


def make(backend: str, dtype: str, task: str, model, args, budget: Budget):
    """Return the runner of one row (exporting or building as needed, within the budget)."""
    size, cache, device = args.size, args.cache_dir, torch.device(args.device)
    if backend == 'torch':
        return TorchRunner(task, converted(model, device, parse_dtype(dtype)))
    if backend == 'torch+graphs':  # captured here, before timing: as at configure
        return AcceleratedTorchRunner(task, converted(model, device, parse_dtype(dtype)),
                                      cuda_graphs=True, graph_batches=(1, 3), input_size=size,
                                      device=device)
    graph_steps = ('export',)
    if backend == 'onnxruntime':
        if not budget.fits(*graph_steps):
            raise TimeoutError('time budget')
        started = time.monotonic()
        graph = get_onnx(task, model, input_size=size, batch=(1, 1, 3), dtype=dtype,
                         device='cuda', cache_dir=cache, w_hash=args.hashes[task])
        budget.measured('export', time.monotonic() - started)
        options = {'CUDAExecutionProvider': {'use_tf32': '0'}} if dtype == 'fp32' else None
        return OnnxRuntimeRunner(task, graph, device='cuda', providers=['cuda'],
                                 provider_options=options, batch=(1, 1, 3))
    if not budget.fits('export', 'build'):
        raise TimeoutError('time budget')
    started = time.monotonic()
    runner = make_runner(task, 'tensorrt', model=model, dtype=dtype, device='cuda',
                         input_size=size, batch=(1, 1, 3), cache_dir=cache, progress=False)
    budget.measured('build', time.monotonic() - started)
    return runner


def head_model(task: str, args):
    """Return the random model of ``task`` at ``--layout`` (fp32, on the CPU)."""
    tiny = args.layout == 'tiny'
    return random_model(task, '0.4b' if tiny else args.layout, tiny=tiny, input_size=args.size)


def run_rows(task: str, args, rate: float, budget: Budget, available: set,
             order: list[tuple[str, str]]) -> list[Row]:
    """Measure the rows of one head in ``order`` (the torch fp32 reference kept in args.refs)."""
    model = head_model(task, args)
    args.hashes[task] = weights_hash(model)
    gpu_dtype = torch.bfloat16 if args.device == 'cuda' else torch.float32
    tflop = REFERENCE_TFLOP[task] if (args.layout, args.size) == ('0.4b', (1024, 768)) \
        else count_tflop(converted(model, torch.device(args.device), gpu_dtype), args.size)
    floor_ms = tflop / rate * 1e3
    gen = torch.Generator().manual_seed(0)
    x3 = torch.randn(3, 3, *args.size, generator=gen).to(args.device)
    x1 = x3[:1].contiguous()
    rows, ref = [], args.refs.get(task)
    for backend, dtype in order:
        row = Row(task, backend, dtype, floor_ms=floor_ms)
        rows.append(row)
        if backend not in available:
            row.status, row.note = 'not run', f'{backend} not available here'
            continue
        try:
            runner = make(backend, dtype, task, model, args, budget)
            with torch.inference_mode():
                got = {k: v.float().clone() for k, v in runner(x3).items()}
                if (backend, dtype) == ('torch', 'fp32'):
                    ref = args.refs[task] = got
                if ref is not None:
                    row.parity, row.within = parity(got, ref, TOLERANCES[parse_dtype(dtype)])
                row.ms_b1 = cuda_ms(runner, x1, args.repeats, args.warmup)
                row.ms_b3 = cuda_ms(runner, x3, args.repeats, args.warmup)
            if backend == 'tensorrt' and getattr(runner, 'path', None) is not None:
                sidecar = json.loads(sidecar_of(runner.path).read_text())
                key, gate = sidecar['key'], sidecar.get('accuracy') or {}
                row.note = (f'TensorRT {key["trt_version"]}: {key["graph_dtype"]} graph at opset '
                            f'{key["opset"]}, {key["typing"]}ly typed; gate max abs '
                            + ', '.join(f'{v:.2g}' for v in gate.get('max_abs', {}).values()))
            elif backend == 'tensorrt':
                row.note = 'engine refused by the accuracy gate: torch served the head'
            elif backend == 'torch+graphs':
                row.note = f'{runner.name}, captured before timing'
            del runner
        except TimeoutError:
            row.status, row.note = 'not run', 'time budget (rerun with the same --cache-dir)'
        except Exception as exc:  # noqa: B902 - report every row, whatever fails
            logging.debug(traceback.format_exc())
            text = re.sub(r'\x1b\[[0-9;]*m|\s+', ' ', f'{type(exc).__name__}: {exc}')
            row.status, row.note = 'failed', text.strip()
        finally:
            torch.cuda.empty_cache()
    return rows


def pipeline_rows(args, available_torch_dtype: torch.dtype) -> list[str]:
    """Time the whole pipeline (1 and 3 persons) and a 4-camera scheduler step."""
    import cv2
    import numpy as np

    from sapiens_ros.backends.factory import graph_batches_of
    from sapiens_ros.core.media.sample_image import sample_image_path
    from sapiens_ros.core.pipeline.pipeline import Pipeline, PipelineConfig
    from sapiens_ros.core.pipeline.scheduler import Camera, FrameRequest, Scheduler

    device = torch.device(args.device)
    tasks = [t for t in ('seg', 'normal', 'pointmap', 'pose') if t in args.tasks.split(',')]
    frame = cv2.resize(cv2.imread(str(sample_image_path())), (1024, 768))[..., ::-1].copy()
    h, w = frame.shape[:2]
    boxes = np.array([[w * i / 3, h * 0.1, w * (i + 1) / 3, h * 0.95] for i in range(3)],
                     np.float32)
    config = PipelineConfig(input_size=args.size, max_persons=4)
    lines = ['| run | torch mode | ms per call |', '|---|---|---:|']
    for graphs in (False, True):
        if graphs and args.device != 'cuda':
            continue
        runners = {t: AcceleratedTorchRunner(
            t, converted(head_model(t, args), device, available_torch_dtype),
            cuda_graphs=graphs, graph_batches=graph_batches_of(t, config), input_size=args.size,
            device=device) for t in tasks}
        pipe = Pipeline(runners, config, device)
        mode = f'{dtype_label(available_torch_dtype)}{" + CUDA graphs" if graphs else ""}'
        for persons in (1, 3):
            ms = cuda_ms(lambda _, pipe=pipe, persons=persons: pipe(
                [frame], boxes=[boxes[:persons]]), None, args.repeats, args.warmup)
            lines.append(f'| pipeline, 1 frame 1024x768, {persons} person(s) | {mode} | '
                         f'{ms:.1f} |')
        cameras = [Camera(f'cam{i}') for i in range(4)]
        sched = Scheduler(pipe)
        wanted = frozenset(tasks)

        def step(_, sched=sched, wanted=wanted, cameras=cameras):
            sched.run([FrameRequest(c, frame, time.monotonic(), wanted, boxes=boxes[:2])
                       for c in cameras])

        ms = cuda_ms(step, None, args.repeats, args.warmup)
        lines.append(f'| scheduler step, 4 cameras x 1024x768, 2 persons each | {mode} | '
                     f'{ms:.1f} |')
        runners.clear()
        if args.device == 'cuda':
            torch.cuda.empty_cache()
    return lines


def dtype_label(dtype: torch.dtype) -> str:
    """``bf16``/``fp32``/``fp16`` of a torch dtype."""
    return {torch.bfloat16: 'bf16', torch.float32: 'fp32', torch.float16: 'fp16'}[dtype]


def table(rows: list[Row]) -> str:
    """Return the markdown table of ``rows``."""
    lines = ['| head | backend | dtype | parity vs torch fp32 (max rel) | ms batch 1 | '
             'ms batch 3 | floor ms | batch 1 / floor | note |',
             '|---|---|---|---:|---:|---:|---:|---:|---|']
    for r in rows:
        if r.status != 'ok':
            lines.append(f'| {r.task} | {r.backend} | {r.dtype} | {r.status} | | | '
                         f'{r.floor_ms:.3g} | | {r.note[:150]} |')
            continue
        mark = '' if r.within is not False else ' (beyond tolerance)'
        par = 'no reference' if r.parity is None else f'{r.parity:.2e}{mark}'
        lines.append(f'| {r.task} | {r.backend} | {r.dtype} | {par} | '
                     f'{r.ms_b1:.2f} | {r.ms_b3:.2f} | {r.floor_ms:.3g} | '
                     f'{r.ms_b1 / r.floor_ms:.1f} | {r.note} |')
    return '\n'.join(lines)


def main() -> None:
    """Run the acceptance matrix and print one markdown table."""
    p = argparse.ArgumentParser(description=__doc__.strip().split('\n')[0])
    p.add_argument('--layout', default='0.4b', help="'tiny' or a real layout (0.4b, 1b, ...)")
    p.add_argument('--tasks', default=','.join(DEFAULT_TASKS))
    p.add_argument('--input-size', default='768x1024', help='model input WIDTHxHEIGHT')
    p.add_argument('--repeats', type=int, default=10)
    p.add_argument('--warmup', type=int, default=3)
    p.add_argument('--budget-s', type=float, default=420.0,
                   help='time for the rows; a slow step that would not fit is skipped')
    p.add_argument('--cache-dir', default='gpu-acceptance-cache',
                   help='graphs and engines, reused by the next run')
    p.add_argument('--json', default=None, help='write the rows here')
    p.add_argument('--device', default='cuda', choices=('cuda', 'cpu'),
                   help='cpu: a smoke run of the structure (use --layout tiny)')
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.device == 'cuda' and not torch.cuda.is_available():
        raise SystemExit('needs a CUDA GPU (and a CUDA build of torch); --device cpu --layout '
                         'tiny runs a smoke run of the structure')
    started = time.monotonic()
    args.size = parse_size(args.input_size)
    args.hashes, args.refs = {}, {}
    torch.backends.cuda.matmul.allow_tf32 = False  # torch fp32 is the exact reference
    torch.backends.cudnn.allow_tf32 = False
    versions = {'python': platform.python_version(), 'torch': torch.__version__,
                'cuda': torch.version.cuda}
    available = {'torch'}
    for name in ('onnxruntime', 'tensorrt'):
        try:
            module = __import__(name)
            versions[name] = module.__version__
        except ImportError:
            versions[name] = 'not installed'
            continue
        if args.device == 'cuda' and (name == 'tensorrt' or 'CUDAExecutionProvider'
                                      in module.get_available_providers()):
            available.add(name)
    available |= {'torch+graphs'}
    name = torch.cuda.get_device_properties(0).name if args.device == 'cuda' else \
        f'CPU ({platform.processor() or platform.machine()})'
    rate = matmul_tflops(args.device)
    budget = Budget(args.budget_s, GUESS['tiny' if args.layout == 'tiny' else 'real'])
    tasks = args.tasks.split(',')
    rows = [r for task in tasks for r in run_rows(task, args, rate, budget, available,
                                                  TORCH_ORDER)]
    pipeline = pipeline_rows(args, torch.bfloat16 if args.device == 'cuda' else torch.float32)
    rows += [r for task in tasks for r in run_rows(task, args, rate, budget, available,
                                                   ACCEL_ORDER)]
    rows.sort(key=lambda r: tasks.index(r.task))
    print(f'\n{name}; ' + ', '.join(f'{k} {v}' for k, v in versions.items())
          + f'; dense matmul {rate:.3g} TFLOP/s; layout {args.layout}, input '
          f'{args.size}, median of {args.repeats}; '
          f'{time.monotonic() - started:.0f} s\n')
    print(table(rows))
    print()
    print('\n'.join(pipeline))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'device': name, 'versions': versions, 'matmul_tflops': rate,
                       'rows': [asdict(r) for r in rows], 'pipeline': pipeline}, f, indent=2)


if __name__ == '__main__':
    main()
