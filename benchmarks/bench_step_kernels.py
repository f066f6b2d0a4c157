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
ms per scheduler step of the per-frame small kernels, once per frame vs once over the step.

Side by side in one run, at 1 and 4 frames of one size: seg-foreground person boxes
(``foreground_boxes`` per frame vs ``foreground_boxes_batch``: one pooling, one softmax and one
device-to-host copy for the step). Seg logits are random (29 classes, background-heavy so the
components are person-sized); the median of ``--repeats`` runs per row, the two ways in turn,
on the CPU and (when there is one) on CUDA. On the CPU ``foreground_boxes_batch`` pools frame
by frame (no launch to save): the CPU rows show that nothing got slower there.

    python benchmarks/bench_step_kernels.py [--size 1024x768 (HxW)] [--repeats 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sapiens_ros.core.processing.boxes import foreground_boxes, foreground_boxes_batch
from sapiens_ros.core.processing.letterbox import Letterbox
import torch


def _paired_ms(first, second, device: torch.device, repeats: int) -> tuple[float, float]:
    """Median ms of two functions run in turn (a load that changes hits both alike)."""
    runs: tuple[list, list] = ([], [])
    for n in range(repeats + 1):  # the first round warms up
        for fn, times in ((first, runs[0]), (second, runs[1])):
            if device.type == 'cuda':
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            fn()
            if device.type == 'cuda':
                torch.cuda.synchronize(device)
            if n:
                times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(runs[0]), statistics.median(runs[1])


def _logits(frames: int, size: tuple[int, int], device: torch.device) -> torch.Tensor:
    gen = torch.Generator().manual_seed(frames)
    logits = torch.randn(frames, 29, *size, generator=gen)
    logits[:, 0] += 2.0  # mostly background
    height, width = size
    logits[:, 1, height // 4:3 * height // 4, width // 3:2 * width // 3] += 6.0  # a person
    return logits.to(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--size', default='1024x768', help='seg logits HEIGHTxWIDTH')
    parser.add_argument('--repeats', type=int, default=20)
    parser.add_argument('--threads', type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    height, width = (int(v) for v in args.size.split('x'))
    devices = [torch.device('cpu')] + ([torch.device('cuda')] if torch.cuda.is_available()
                                       else [])
    print(f'seg logits {height}x{width}, 29 classes; median of {args.repeats} runs, ms per step')
    print('| device | frames | per frame | batched | ratio |')
    print('|---|---:|---:|---:|---:|')
    for device in devices:
        for frames in (1, 4):
            logits = _logits(frames, (height, width), device)
            lbs = [Letterbox.fit((720, 1280) if k % 2 else (768, 1024), (height, width))
                   for k in range(frames)]
            each = [foreground_boxes(logits[k], lbs[k]) for k in range(frames)]
            batch = foreground_boxes_batch(logits, lbs)
            for (b1, s1), (b2, s2) in zip(each, batch, strict=True):
                assert np.array_equal(b1, b2) and np.array_equal(s1, s2)
            per_frame, batched = _paired_ms(
                lambda logits=logits, lbs=lbs: [foreground_boxes(logits[k], lbs[k])
                                                for k in range(len(lbs))],
                lambda logits=logits, lbs=lbs: foreground_boxes_batch(logits, lbs),
                device, args.repeats)
            print(f'| {device.type} | {frames} | {per_frame:.2f} | {batched:.2f} | '
                  f'{per_frame / batched:.2f}x |')


if __name__ == '__main__':
    main()
