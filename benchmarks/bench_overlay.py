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
ms per frame of ``pose/overlay`` (core.processing.pose_overlay) by persons and keypoint format.

Skeletons are the COCO-17 body below scaled to the frame, jittered per person, with every
keypoint of the format placed near its body part's position; labels are five letters. The
median of ``--repeats`` runs per row, on the CPU and (when there is one) on CUDA.

    python benchmarks/bench_overlay.py [--size 1024x768] [--repeats 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sapiens_ros.core.models.keypoint_formats import keypoint_format
from sapiens_ros.core.models.metadata import keypoint_info
from sapiens_ros.core.processing.pose_overlay import pose_overlay, PoseDrawing
import torch


def _drawing(persons: int, name: str, width: int, height: int,
             rng: np.random.Generator) -> PoseDrawing:
    fmt = keypoint_format(name)
    count = len(keypoint_info().names)
    centers = rng.uniform([0.2 * width, 0.3 * height], [0.8 * width, 0.7 * height],
                          (persons, 1, 2))
    spread = np.array([0.08 * width, 0.3 * height])
    points308 = centers + rng.normal(0, 1, (persons, count, 2)) * spread * 0.5
    points = fmt.points(points308.astype(np.float32))
    boxes = np.concatenate([points.min(1), points.max(1)], 1)
    colors = rng.integers(0, 256, (persons, 3)).astype(np.uint8)
    return PoseDrawing(points, np.ones(points.shape[:2], bool), fmt.skeleton, colors,
                       ['qzmrb'] * persons, boxes)


def _time(frame: torch.Tensor, drawing: PoseDrawing, repeats: int) -> float:
    out = torch.empty_like(frame)
    runs = []
    for _ in range(repeats + 1):
        if frame.is_cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        pose_overlay(frame, drawing, out)
        if frame.is_cuda:
            torch.cuda.synchronize()
        runs.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(runs[1:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    p.add_argument('--size', default='1024x768', help='frame WIDTHxHEIGHT')
    p.add_argument('--repeats', type=int, default=20)
    p.add_argument('--threads', type=int, default=1, help='torch CPU threads')
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    width, height = (int(v) for v in args.size.split('x'))
    rng = np.random.default_rng(0)
    frame = torch.from_numpy(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
    devices = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
    print(f'pose/overlay {width}x{height}, ms per frame (median of {args.repeats}), '
          f'{args.threads} CPU thread(s)')
    print(f'{"format":<12}{"persons":>8}' + ''.join(f'{d + " ms":>10}' for d in devices))
    for name in ('coco17', 'sapiens308'):
        for persons in (1, 4, 8):
            drawing = _drawing(persons, name, width, height, rng)
            cells = [_time(frame.to(d), drawing, args.repeats) for d in devices]
            print(f'{name:<12}{persons:>8}' + ''.join(f'{c:>10.2f}' for c in cells))


if __name__ == '__main__':
    main()
