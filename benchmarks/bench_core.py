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
Per-stage CPU timings of the core pipeline, and its overhead over the bare model.

For each head it prints upload+preprocess, forward, decode and to-host times, and the
pipeline's end-to-end time divided by ``model(pixel_values)`` on the same input, measured in
the same run (targets: <= 1.10 for seg/normal/pointmap, <= 1.25 for pose with 3 persons).
Random weights: the tiny test layout and the real 0.4B layout.

    python benchmarks/bench_core.py [--configs tiny,0.4b] [--input-size 384x512] [--repeat 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path
import statistics
import sys
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

import numpy as np  # noqa: E402, I100
from sapiens_ros.backends.torch_runner import TorchRunner  # noqa: E402
from sapiens_ros.core.models.configs import random_model  # noqa: E402
from sapiens_ros.core.models.input_size import parse_size  # noqa: E402
from sapiens_ros.core.pipeline.host_memory import keep_freed_memory  # noqa: E402
from sapiens_ros.core.pipeline.pipeline import Pipeline, PipelineConfig  # noqa: E402
from sapiens_ros.core.processing.boxes import crop_windows  # noqa: E402
from sapiens_ros.core.processing.frames import FrameBatch  # noqa: E402
import torch  # noqa: E402

TARGETS = {'pose': 1.25, 'seg': 1.10, 'normal': 1.10, 'pointmap': 1.10}
BOXES = np.array([[40, 40, 200, 480], [180, 30, 340, 500], [330, 60, 500, 470]], np.float32)


def _median_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def bench(layout: str, task: str, frame: np.ndarray, input_size: tuple[int, int],
          repeat: int) -> dict[str, float]:
    """Time one head: the pipeline by stage, and the bare model on the same input."""
    model = random_model(task, '0.4b', tiny=layout == 'tiny', input_size=input_size)
    pipe = Pipeline({task: TorchRunner(task, model)},
                    PipelineConfig(input_size=input_size, box_source='full'))
    boxes = BOXES if task == 'pose' else None
    stages: list[dict[str, float]] = []

    def run_pipeline():
        stages.append(pipe(frame, boxes=boxes)[0].timings)

    end_to_end = _median_ms(run_pipeline, repeat)
    if task == 'pose':
        batch = FrameBatch([frame], input_size, torch.device('cpu'))
        c, s = crop_windows(torch.as_tensor(BOXES), input_size)
        pixel_values = batch.crops(torch.zeros(3, dtype=torch.long), c, s, input_size)
    else:
        pixel_values = FrameBatch([frame], input_size, torch.device('cpu')).pixel_values
    with torch.inference_mode():
        bare = _median_ms(lambda: model(pixel_values), repeat)
    med = {k: statistics.median(st.get(k, 0.0) for st in stages[1:]) for k in stages[-1]}
    fwd = sum(v for k, v in med.items() if k.endswith('.forward'))
    decode = sum(v for k, v in med.items()
                 if k.endswith(('.decode', '.crop', '.boxes')))
    return {'preprocess': med['preprocess'], 'forward': fwd, 'decode': decode,
            'to_host': med['to_host'], 'end_to_end': end_to_end, 'bare': bare,
            'ratio': end_to_end / bare}


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--configs', default='tiny,0.4b')
    parser.add_argument('--tasks', default='seg,normal,pointmap,pose')
    parser.add_argument('--input-size', default='384x512', help='model input WIDTHxHEIGHT')
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    h, w = parse_size(args.input_size)
    from skimage import data

    frame = data.astronaut()
    memory = keep_freed_memory()  # as in every process that loads a pipeline
    print(f'torch {torch.__version__}, {torch.get_num_threads()} threads, CPU, input {w}x{h}, '
          f'frame 512x512 (astronaut), pose with {len(BOXES)} persons, median of '
          f'{args.repeat}; host memory: {memory}')
    header = ('| layout | head | preprocess ms | forward ms | decode ms | to-host ms | '
              'end-to-end ms | bare model ms | ratio | target |')
    print(header)
    print('|' + '---|' * 10)
    for layout in args.configs.split(','):
        for task in args.tasks.split(','):
            r = bench(layout, task, frame, (h, w), args.repeat)
            print(f"| {layout} | {task} | {r['preprocess']:.1f} | {r['forward']:.1f} | "
                  f"{r['decode']:.1f} | {r['to_host']:.1f} | {r['end_to_end']:.1f} | "
                  f"{r['bare']:.1f} | {r['ratio']:.3f} | <= {TARGETS[task]:.2f} |", flush=True)


if __name__ == '__main__':
    main()
