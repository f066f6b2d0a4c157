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
People figures: keypoint decoding accuracy, One-Euro jitter and lag, tracker cost.

1. DARK-UDP on noisy synthetic heatmaps (sigma 2 and 6): mean error of the unguarded reference,
   the former 1 px guard, clipping the step to 3 px (the choice) and skipping steps over 3 px,
   and the largest distance from the argmax on flat (noise-only) maps.
2. One-Euro on a synthetic noisy keypoint trajectory at 30 fps (still, then constant speed):
   jitter (RMS error while still) and lag (mean error / speed while moving), raw vs filtered.
3. PersonTracker.update cost per frame for 1, 3 and 8 people with 308 keypoints.
4. What the node adds per frame (1, 3, 8 people, 640x480): PeopleState.update without and with
   a 16UC1 depth image (keypoint depth, pointmap scale fit over 100k foreground points), and
   build_messages' pose and people outputs with and without the People (needs rclpy).

    python benchmarks/bench_people.py [--repeat 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from sapiens_ros.core.people.smoothing import OneEuroConfig, OneEuroFilter
from sapiens_ros.core.people.state import PeopleState
from sapiens_ros.core.people.tracking import PersonTracker
from sapiens_ros.core.pipeline.pipeline import FrameResult
from sapiens_ros.core.processing.heads.pointmap import PointmapResult
from sapiens_ros.core.processing.heads.pose import decode_heatmaps, gaussian_heatmaps, PoseResult
import torch


def _argmax(maps: torch.Tensor) -> torch.Tensor:
    w = maps.shape[-1]
    index = maps.flatten(2).argmax(-1)
    return torch.stack([index % w, index // w], -1).float()


def dark_table(seed: int = 0) -> None:
    """Print decoding errors (heatmap px) of the guard variants."""
    print('| sigma | noise | reference | 1 px guard | clip 3 px (ours) | skip > 3 px |')
    print('|---|---|---|---|---|---|')
    gen = torch.Generator().manual_seed(seed)
    for sigma in (2.0, 6.0):
        for noise in (0.02, 0.05, 0.1):
            truth = torch.rand(2, 308, 2, generator=gen) * torch.tensor([150.0, 200.0]) + 20
            maps = gaussian_heatmaps(truth, (256, 192), sigma)
            maps = maps + noise * torch.randn(maps.shape, generator=gen)
            print(f'| {sigma:g} | {noise:g} | ' + ' | '.join(
                f'{(c - truth).norm(dim=-1).mean().item():.3f}' for c in _variants(maps)) + ' |')
    maps = 0.002 + 0.001 * torch.rand(2, 308, 64, 48, generator=gen)
    far = [(c - _argmax(maps)).norm(dim=-1) for c in _variants(maps)]
    print('| flat map | max px from argmax | ' + ' | '.join(
        f'{f.max().item():.1f}' for f in far) + ' |')
    print('| flat map | mean px from argmax | ' + ' | '.join(
        f'{f.mean().item():.2f}' for f in far) + ' |')


def _variants(maps: torch.Tensor) -> list[torch.Tensor]:
    free, _ = decode_heatmaps(maps, max_step=float('inf'))  # the reference's unguarded step
    peak = _argmax(maps)
    return [free, _skip(free, peak, 1.0), decode_heatmaps(maps)[0], _skip(free, peak, 3.0)]


def _skip(free: torch.Tensor, peak: torch.Tensor, limit: float) -> torch.Tensor:
    """Keep the argmax where the step exceeds ``limit`` (the former guard had 1 px)."""
    return torch.where(((peak - free).abs() <= limit).all(-1, keepdim=True), free, peak)


def one_euro_table(noise: float, speed: float, dims: int, unit: str,
                   settings: tuple[tuple[float, float], ...],
                   default: tuple[float, float]) -> None:
    """Print jitter and lag of the filter on a still-then-moving noisy point track at 30 fps."""
    t = np.arange(0, 6, 1 / 30)
    truth = np.where(t < 3, 2.0, 2.0 + speed * (t - 3))
    rng = np.random.default_rng(0)
    raw = truth[:, None, None] + rng.normal(0, noise, (len(t), 308, dims))
    still, moving = (t > 1) & (t < 3), t > 4
    print(f'| filter | min_cutoff Hz | beta | jitter {unit} (RMS, still) | lag ms (moving) |')
    print('|---|---|---|---|---|')
    print(f'| raw | | | {_rms(raw[still] - truth[still, None, None]):.4g} | 0 |')
    for min_cutoff, beta in settings:
        f = OneEuroFilter(OneEuroConfig(min_cutoff=min_cutoff, beta=beta))
        out = np.stack([f(np.array([1]), raw[i:i + 1], t[i])[0] for i in range(len(t))])
        jitter = _rms(out[still] - truth[still, None, None])
        lag = (truth[moving, None, None] - out[moving]).mean() / speed * 1e3
        mark = ' (default)' if (min_cutoff, beta) == default else ''
        print(f'| One-Euro{mark} | {min_cutoff:g} | {beta:g} | {jitter:.4g} | {lag:.0f} |')


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt((x ** 2).mean()))


def tracker_table(repeat: int) -> None:
    """Print the median cost of one tracker update."""
    print('| people | update ms (median) |')
    print('|---|---|')
    rng = np.random.default_rng(1)
    for n in (1, 3, 8):
        tracker = PersonTracker()
        centers = rng.uniform(100, 900, (n, 2))
        times = []
        for i in range(repeat + 5):
            c = centers + i * 2.0
            boxes = np.concatenate([c - [50, 130], c + [50, 130]], 1)
            kps = c[:, None] + rng.uniform(-50, 50, (n, 308, 2))
            scores = np.full((n, 308), 0.9)
            start = time.perf_counter()
            tracker.update(boxes, kps, scores, i / 30)
            times.append((time.perf_counter() - start) * 1e3)
        print(f'| {n} | {statistics.median(times[5:]):.2f} |')


def _frame(rng: np.random.Generator, n: int, i: int, h: int = 480, w: int = 640) -> FrameResult:
    """Return a synthetic 640x480 result: ``n`` people walking, a foreground pointmap."""
    c = np.stack([np.linspace(120, 520, n), np.full(n, 240.0)], -1)
    c = c + [i * 2.0, 0]
    boxes = np.concatenate([c - [50, 120], c + [50, 120]], 1).astype(np.float32)
    kps = (c[:, None] + rng.uniform(-50, 50, (n, 308, 2))).astype(np.float32)
    pose = PoseResult(kps, np.full((n, 308), 0.9, np.float32), boxes, np.ones(n, np.float32))
    ys, xs = np.mgrid[40:440, 120:370]  # 100k foreground pixels
    pixels = np.stack([xs.ravel(), ys.ravel()], -1).astype(np.int32)
    z = (rng.normal(1.0, 0.01, len(pixels))).astype(np.float32)  # predicted: scale 1/2
    points = np.stack([z * 0, z * 0, z], -1)
    pointmap = PointmapResult(np.zeros((h, w, 3), np.float32), points,
                              np.zeros((len(pixels), 3), np.uint8), None, pixels, 1.0,
                              'predicted', 1)
    xyz = np.concatenate([kps * 0.002, np.ones((n, 308, 1), np.float32)], -1)
    return FrameResult((h, w), pose=pose, pointmap=pointmap, keypoints_xyz=xyz)


def node_cost_table(repeat: int) -> None:
    """Print the per-frame cost of the people step and of the messages with people."""
    try:
        from sapiens_ros.ros.messages import build_messages
        from sapiens_ros.ros.render_plan import MessageOptions
        from std_msgs.msg import Header
    except ImportError:  # no rclpy: the core half only
        build_messages = None
    K = np.array([[525.0, 0, 319.5], [0, 525.0, 239.5], [0, 0, 1]])
    depth = np.full((480, 640), 2000, np.uint16)
    outputs = ('pose/keypoints', 'pose/persons', 'pose/markers', 'people/poses', 'people/ids')
    print('| people | update ms | update + depth ms | messages ms | messages with people ms |')
    print('|---|---|---|---|---|')
    rng = np.random.default_rng(2)
    for n in (1, 3, 8):
        times: dict[str, list] = {k: [] for k in ('plain', 'depth', 'msg', 'msg_people')}
        plain, rgbd = PeopleState(), PeopleState()
        for i in range(repeat + 5):
            frame = _frame(rng, n, i)
            start = time.perf_counter()
            plain.update(frame, i / 30)
            mid = time.perf_counter()
            people = rgbd.update(frame, i / 30, depth=depth, K=K, depth_encoding='16UC1')
            end = time.perf_counter()
            times['plain'].append((mid - start) * 1e3)
            times['depth'].append((end - mid) * 1e3)
            if build_messages is not None:
                options = MessageOptions(outputs=outputs)
                start = time.perf_counter()
                build_messages(Header(), frame, options)
                mid = time.perf_counter()
                build_messages(Header(), frame, options, None, people)
                times['msg'].append((mid - start) * 1e3)
                times['msg_people'].append((time.perf_counter() - mid) * 1e3)
        cells = [f'{statistics.median(v[5:]):.2f}' if v else '-' for v in times.values()]
        print(f'| {n} | ' + ' | '.join(cells) + ' |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--repeat', type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print('## DARK-UDP mean error (heatmap px)\n')
    dark_table()
    print('\n## One-Euro on image keypoints (noise sd 2 px, 200 px/s, 30 fps)\n')
    one_euro_table(2.0, 200.0, 2, 'px', ((0.5, 0.02), (1.0, 0.02), (1.0, 0.05), (2.0, 0.02)),
                   (1.0, 0.02))
    print('\n## One-Euro on XYZ (noise sd 2 cm, 1 m/s, 30 fps)\n')
    one_euro_table(0.02, 1.0, 3, 'm', ((1.0, 0.5), (1.0, 2.0), (1.0, 5.0)), (1.0, 2.0))
    print('\n## Tracker cost\n')
    tracker_table(args.repeat)
    print('\n## People step and messages per frame in the node (640x480)\n')
    node_cost_table(args.repeat)


if __name__ == '__main__':
    main()
