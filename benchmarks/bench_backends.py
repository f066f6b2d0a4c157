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
Per-head ms/frame of the torch and ONNX Runtime backends on CPU, side by side in one run.

Each head is a random Sapiens2 model (tiny layout by default; ``--layout 0.4b`` for the real
one), exported to ONNX with the package's exporter. The two runners are timed interleaved on the
same input, with the same thread count, and the median of ``--repeats`` runs is reported.

    python benchmarks/bench_backends.py [--layout tiny|0.4b|1b] [--input-size 192x256]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time

from sapiens_ros.backends.export import export_onnx
from sapiens_ros.backends.onnxruntime_runner import OnnxRuntimeRunner
from sapiens_ros.backends.torch_runner import TorchRunner
from sapiens_ros.core.models.configs import random_model
from sapiens_ros.core.models.input_size import parse_size
from sapiens_ros.core.models.registry import DEFAULT_TASKS
import torch


def timed(fn, x) -> float:
    """Return the wall time of one call in ms."""
    start = time.perf_counter()
    fn(x)
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    """Run the benchmark and print a markdown table."""
    p = argparse.ArgumentParser(description=__doc__.strip().split('\n')[0])
    p.add_argument('--layout', default='tiny', help="'tiny' or a model size (0.4b, 1b, ...)")
    p.add_argument('--input-size', default=None,
                   help='WIDTHxHEIGHT (default 192x256 tiny, 768x1024 real)')
    p.add_argument('--tasks', default=','.join(DEFAULT_TASKS))
    p.add_argument('--batch', type=int, default=1)
    p.add_argument('--repeats', type=int, default=10)
    p.add_argument('--warmup', type=int, default=2)
    p.add_argument('--threads', type=int, default=0, help='threads for both (default: torch)')
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    logging.basicConfig(level=logging.WARNING)
    tiny = args.layout == 'tiny'
    size = parse_size(args.input_size or ('192x256' if tiny else '768x1024'))
    threads = torch.get_num_threads()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks.split(','):
            model = random_model(task, '0.4b' if tiny else args.layout, tiny=tiny,
                                 input_size=size)
            export_onnx(model, task, f'{tmp}/{task}.onnx', input_size=size,
                        batch=(1, args.batch, max(args.batch, 2)))
            runners = {'torch': TorchRunner(task, model),
                       'onnxruntime': OnnxRuntimeRunner(task, f'{tmp}/{task}.onnx',
                                                        threads=threads)}
            x = torch.randn(args.batch, 3, *size)
            for runner in runners.values():
                for _ in range(args.warmup):
                    runner(x)
            times = {name: [] for name in runners}
            for _ in range(args.repeats):  # interleaved, so drift hits both alike
                for name, runner in runners.items():
                    times[name].append(timed(runner, x) / args.batch)
            med = {name: statistics.median(v) for name, v in times.items()}
            rows.append((task, med['torch'], med['onnxruntime'],
                         med['onnxruntime'] / med['torch']))
    print(f'\nCPU, {threads} threads, layout {args.layout}, input {size}, '
          f'batch {args.batch}, median of {args.repeats} (torch {torch.__version__}, '
          f'onnxruntime {__import__("onnxruntime").__version__})\n')
    print('| head | torch ms/frame | onnxruntime ms/frame | ort / torch |')
    print('|---|---:|---:|---:|')
    for task, t, o, r in rows:
        print(f'| {task} | {t:.1f} | {o:.1f} | {r:.2f} |')


if __name__ == '__main__':
    main()
