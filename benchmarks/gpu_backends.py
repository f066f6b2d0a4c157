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
GPU verification: every backend per head at 1024x768, against the FLOP floor of the card.

For each head and layout (tiny and the real 0.4B, ``--layouts tiny,0.4b,1b``) with random
weights, times the model forward (CUDA events, median of ``--repeats``) and the end-to-end
pipeline (upload, preprocessing, forward, decoding, copy to host) for:

* torch eager fp32 and bf16, torch.compile bf16, torch bf16 + CUDA graphs;
* ONNX Runtime CUDA (fp32 graph) where onnxruntime-gpu is installed;
* TensorRT bf16 and fp16 where TensorRT is installed (engines cached in ``--cache-dir``).

The floor is the head's FLOPs (counted with torch's FlopCounterMode; the reference for 0.4B at
1024x768 is pose 3.87, seg 3.59, normal 5.03, pointmap 8.34 TFLOP) divided by the bf16 matmul
rate measured on this card. Prints markdown tables for docs/benchmarks.md; ``--json`` saves
the raw numbers.

    python benchmarks/gpu_backends.py --layouts tiny,0.4b --repeats 20
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import statistics
import tempfile
import traceback

import numpy as np
from sapiens_ros.backends.factory import make_runner
from sapiens_ros.backends.torch_runner import AcceleratedTorchRunner
from sapiens_ros.core.configs import random_model
from sapiens_ros.core.pipeline import Pipeline, PipelineConfig
from sapiens_ros.core.registry import PERCEPTION_TASKS
import torch

#: TFLOP per frame of the real 0.4B heads at 1024x768 (issue reference).
REFERENCE_TFLOP = {'pose': 3.87, 'seg': 3.59, 'normal': 5.03, 'pointmap': 8.34}


def cuda_ms(fn, repeats: int, warmup: int) -> float:
    """Return the median ms of ``fn()`` timed with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def matmul_tflops(n: int = 8192, repeats: int = 20) -> float:
    """Measure the dense bf16 matmul rate of the card in TFLOP/s."""
    a = torch.randn(n, n, device='cuda', dtype=torch.bfloat16)
    b = torch.randn(n, n, device='cuda', dtype=torch.bfloat16)
    ms = cuda_ms(lambda: a @ b, repeats, 3)
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def count_tflop(model: torch.nn.Module, size: tuple[int, int]) -> float:
    """Count the forward FLOPs (matmul/conv, 2 per MAC) of one frame in TFLOP."""
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.zeros(1, 3, *size, device=next(model.parameters()).device,
                    dtype=next(model.parameters()).dtype)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(pixel_values=x)
    return counter.get_total_flops() / 1e12


def backends(task: str, model: torch.nn.Module, size, args, tmp: str):
    """Yield ``(label, runner factory)`` for every backend available here."""
    def torch_runner(dtype, **kw):
        return lambda: AcceleratedTorchRunner(task, model.to('cuda', dtype), **kw)

    yield 'torch eager fp32', torch_runner(torch.float32)
    yield 'torch eager bf16', torch_runner(torch.bfloat16)
    yield 'torch.compile bf16', torch_runner(torch.bfloat16, compile=True)
    yield 'torch bf16 + CUDA graphs', torch_runner(torch.bfloat16, cuda_graphs=True,
                                                   graph_batches=(1,))
    common = {'device': 'cuda', 'input_size': size, 'batch': (1, 1, args.max_batch),
              'cache_dir': args.cache_dir or tmp}
    try:
        import onnxruntime as ort

        if 'CUDAExecutionProvider' in ort.get_available_providers():
            yield 'onnxruntime CUDA fp32', lambda: make_runner(
                task, 'onnxruntime', model=model.float().cpu(), providers=['cuda'], **common)
    except ImportError:
        pass
    try:
        import tensorrt  # noqa: F401

        for precision in ('bf16', 'fp16'):
            yield f'tensorrt {precision}', lambda p=precision: make_runner(
                task, 'tensorrt', model=model.float().cpu(), dtype=p, **common)
    except ImportError:
        pass


def run_head(task: str, layout: str, size, args, rate: float, frame: np.ndarray, tmp: str):
    """Time every backend of one head; return table rows."""
    tiny = layout == 'tiny'
    model = random_model(task, '0.4b' if tiny else layout, tiny=tiny, input_size=size)
    counted = count_tflop(model.cuda().to(torch.bfloat16), size)
    # The reference includes attention; FlopCounterMode misses some SDPA kernels.
    tflop = REFERENCE_TFLOP[task] if (layout, size) == ('0.4b', (1024, 768)) else counted
    floor_ms = tflop / rate * 1e3
    rows = []
    x = torch.randn(1, 3, *size, device='cuda')
    for label, factory in backends(task, model, size, args, tmp):
        try:
            runner = factory()
            fwd = cuda_ms(lambda r=runner: r(x), args.repeats, args.warmup)
            pipe = Pipeline({task: runner}, PipelineConfig(input_size=size, box_source='full'),
                            device='cuda')
            e2e = cuda_ms(lambda p=pipe: p(frame), args.repeats, args.warmup)
            rows.append({'task': task, 'layout': layout, 'backend': label, 'forward_ms': fwd,
                         'e2e_ms': e2e, 'tflop': tflop, 'counted_tflop': counted,
                         'floor_ms': floor_ms, 'ratio': e2e / floor_ms})
        except Exception as exc:  # noqa: B902 - report every backend, whatever fails
            logging.debug(traceback.format_exc())
            rows.append({'task': task, 'layout': layout, 'backend': label,
                         'error': f'{exc}'[:160]})
        finally:
            torch.cuda.empty_cache()
    return rows


def main() -> None:
    """Run the GPU benchmark and print markdown tables."""
    p = argparse.ArgumentParser(description=__doc__.strip().split('\n')[0])
    p.add_argument('--layouts', default='tiny,0.4b')
    p.add_argument('--tasks', default=','.join(PERCEPTION_TASKS))
    p.add_argument('--input-size', default='1024x768')
    p.add_argument('--repeats', type=int, default=20)
    p.add_argument('--warmup', type=int, default=5)
    p.add_argument('--max-batch', type=int, default=4, help='TensorRT profile max batch')
    p.add_argument('--cache-dir', default=None, help='engine cache (default: a temp dir)')
    p.add_argument('--json', default=None, help='write the raw rows here')
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if not torch.cuda.is_available():
        raise SystemExit('needs a CUDA GPU')
    size = tuple(int(v) for v in args.input_size.split('x'))
    props = torch.cuda.get_device_properties(0)
    versions = {'python': platform.python_version(), 'torch': torch.__version__,
                'cuda': torch.version.cuda}
    for name in ('onnxruntime', 'tensorrt', 'transformers'):
        try:
            versions[name] = __import__(name).__version__
        except ImportError:
            versions[name] = 'not installed'
    rate = matmul_tflops()
    print(f'device: {props.name} (sm {props.major}.{props.minor}, '
          f'{props.total_memory / 2 ** 30:.0f} GiB); '
          + ', '.join(f'{k} {v}' for k, v in versions.items()))
    print(f'measured dense bf16 matmul: {rate:.0f} TFLOP/s; input {size[0]}x{size[1]}, batch 1, '
          f'median of {args.repeats}')
    from skimage import data
    import cv2

    frame = cv2.resize(data.astronaut(), (size[1], size[0]))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.layouts.split(','):
            for task in args.tasks.split(','):
                rows += run_head(task, layout, size, args, rate, frame, tmp)
    print('\n| layout | head | backend | forward ms | end-to-end ms | TFLOP | floor ms | '
          'e2e / floor |')
    print('|---|---|---|---:|---:|---:|---:|---:|')
    for r in rows:
        if 'error' in r:
            print(f'| {r["layout"]} | {r["task"]} | {r["backend"]} | failed: {r["error"]} '
                  f'| | | | |')
            continue
        print(f'| {r["layout"]} | {r["task"]} | {r["backend"]} | {r["forward_ms"]:.2f} | '
              f'{r["e2e_ms"]:.2f} | {r["tflop"]:.3f} | {r["floor_ms"]:.2f} | {r["ratio"]:.1f} |')
    print('\nreference TFLOP for 0.4B at 1024x768: '
          + ', '.join(f'{k} {v}' for k, v in REFERENCE_TFLOP.items()))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'device': props.name, 'versions': versions, 'bf16_tflops': rate,
                       'rows': rows}, f, indent=2)


if __name__ == '__main__':
    main()
