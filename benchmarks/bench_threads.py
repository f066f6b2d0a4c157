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
The pipeline's frame rate per torch thread count, alone and beside a CPU hog.

A robot's CPU is always shared: this runs the core pipeline (tiny random checkpoints, every
head) for ``--seconds`` per setting with ``torch.set_num_threads(n)`` for each ``--threads``
(0: torch's default, one per core), first on its own, then beside ``test/cpu_hog.py``'s busy
processes (``--hog`` of them; default 2 per core). The ``cpu_threads`` node default is the
setting that holds its rate beside the hog.

    python benchmarks/bench_threads.py [--threads 0,1,2] [--seconds 6] [--hog 4]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import sys
import tempfile
import time

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'test'))

from cpu_hog import CpuHog  # noqa: E402, I100 - beside the tests
import numpy as np  # noqa: E402, I100
from sapiens_ros.backends.factory import load_pipeline  # noqa: E402
from sapiens_ros.core.models.configs import save_random_checkpoints  # noqa: E402
from sapiens_ros.core.pipeline.pipeline import PipelineConfig  # noqa: E402
import torch  # noqa: E402, I100

TASKS = ('pose', 'seg', 'normal', 'pointmap')


def rate(pipe, frame: np.ndarray, seconds: float) -> float:
    """Frames per second of ``pipe(frame)`` over ``seconds`` (after one warm-up call)."""
    pipe(frame)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        pipe(frame)
        count += 1
    return count / (time.perf_counter() - start)


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--threads', default='0,1,2', help='torch thread counts (0: torch default)')
    ap.add_argument('--seconds', type=float, default=6.0)
    ap.add_argument('--hog', type=int, default=2 * (os.cpu_count() or 1),
                    help='busy processes beside the pipeline')
    ap.add_argument('--input-size', default='192x256', help='model input WIDTHxHEIGHT')
    args = ap.parse_args()
    width, height = (int(v) for v in args.input_size.split('x'))
    from skimage import data

    frame = np.ascontiguousarray(data.astronaut()[:384])
    default = torch.get_num_threads()
    load = os.getloadavg()[0]
    counts = [int(v) for v in args.threads.split(',')]
    with tempfile.TemporaryDirectory() as tmp:
        save_random_checkpoints(tmp, TASKS, tiny=True, input_size=(height, width))
        pipe = load_pipeline(','.join(TASKS), model_dir=tmp, config=PipelineConfig(
            input_size=(height, width), box_source='full'))
        rows = {}
        for hog in (False, True):
            for n in counts:
                torch.set_num_threads(n or default)
                if hog:
                    with CpuHog(procs=args.hog, limit=args.seconds * 3 + 30):
                        time.sleep(0.5)
                        rows.setdefault(n, []).append(rate(pipe, frame, args.seconds))
                else:
                    rows.setdefault(n, []).append(rate(pipe, frame, args.seconds))
    print(f'bench_threads: torch {torch.__version__}, {os.cpu_count()} CPUs (torch default '
          f'{default} threads), tiny heads {",".join(TASKS)} at {width}x{height}, frame '
          f'{frame.shape[1]}x{frame.shape[0]}, {args.seconds:g} s per row, hog: {args.hog} busy '
          f'processes, load average before {load:.1f}\n')
    print('| cpu_threads | alone Hz | beside the hog Hz | kept |\n|---|---|---|---|')
    for n, (alone, loaded) in rows.items():
        label = f'0 (torch default: {default})' if n == 0 else str(n)
        print(f'| {label} | {alone:.2f} | {loaded:.2f} | {loaded / alone:.0%} |')


if __name__ == '__main__':
    main()
