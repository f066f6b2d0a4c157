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
Multi-view triangulation accuracy and cost (``core.people.triangulate``), CPU only.

Rig: 640x480 pinhole cameras, fx = fy = 600 px, principal point at the image centre, on a
horizontal circle 3 m from a person's centre and looking at it; the person is 308 joints filling
a 0.3 x 0.6 x 1.7 m box (all inside every image). Gaussian noise of the given standard deviation
is added to both pixel coordinates of every keypoint, all scores 1.

1. RMS 3D error (cm, over joints and trials) against noise x baseline angle for two cameras,
   DLT alone and refined (Gauss-Newton); the first-order model for two cameras at range d,
   focal f and angle a: ``d sigma / f * sqrt(1/2 + 1/(2 cos^2(a/2)) + 1/(2 sin^2(a/2)))``;
   then three and four cameras, and rigs at unequal ranges where refining pays. A column
   gives the DLT solved as a unit-norm null vector (Linear-Eigen, ``eigh``) for comparison.
2. Time per call for 308 joints and 2 or 4 views, DLT alone and refined; and for 8 people
   stacked along the joint axis (joints are independent, so one call serves them all).

    python benchmarks/bench_triangulation.py [--trials 20] [--repeat 200]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
from sapiens_ros.core.people.triangulate import (look_at, project_points, projection_matrix,
                                                 REFINE_ITERATIONS, triangulate)

K = np.array([[600.0, 0.0, 319.5], [0.0, 600.0, 239.5], [0.0, 0.0, 1.0]])
TARGET = np.array([0.0, 0.0, 1.0])
RANGE = 3.0
NOISES = (0.5, 1.0, 2.0, 4.0)
JOINTS = 308


def skeleton(seed: int = 0) -> np.ndarray:
    """Return a ``(308, 3)`` cloud filling a standing person's box."""
    rng = np.random.default_rng(seed)
    return TARGET + rng.uniform(-0.5, 0.5, (JOINTS, 3)) * [0.3, 0.6, 1.7]


def rig(azimuths_deg, ranges=None) -> np.ndarray:
    """``(V, 3, 4)`` projections of cameras around the person, all looking at its centre."""
    ranges = ranges or [RANGE] * len(azimuths_deg)
    return np.stack([projection_matrix(K, look_at(
        TARGET + r * np.array([math.cos(math.radians(a)), math.sin(math.radians(a)), 0.0]),
        TARGET)) for a, r in zip(azimuths_deg, ranges, strict=True)])


def linear_eigen(pixels: np.ndarray, projections: np.ndarray) -> np.ndarray:
    """
    Solve the same normalised rows for their unit-norm null vector (Linear-Eigen), by ``eigh``.

    The module solves them with ``X_4 = 1`` (Linear-LS) instead; this measures what that costs.
    """
    centres = np.stack([-np.linalg.solve(p[:, :3], p[:, 3]) for p in projections])
    to_world = np.eye(4)
    to_world[:3, 3] = centres.mean(0)
    to_world[:3, :3] *= np.linalg.norm(centres - centres.mean(0), axis=1).mean()
    proj = projections @ to_world
    rows = pixels.transpose(1, 0, 2)[..., None] * proj[:, 2:3, :] - proj[:, :2, :]
    rows /= np.linalg.norm(rows[..., :3], axis=-1, keepdims=True)
    rows = rows.reshape(pixels.shape[1], -1, 4)
    homo = np.linalg.eigh(np.swapaxes(rows, 1, 2) @ rows)[1][..., 0]
    return (to_world @ (homo / homo[:, 3:]).T).T[:, :3]


def rms_cm(projections: np.ndarray, noise: float, refine: int | None, trials: int) -> float:
    """RMS 3D error in cm (``refine`` None: :func:`linear_eigen`); the same noise draws each."""
    xyz = skeleton()
    pixels = project_points(projections, xyz)
    scores = np.ones(pixels.shape[:2])
    rng = np.random.default_rng(1)
    squared = []
    for _ in range(trials):
        noisy = pixels + rng.normal(0.0, noise, pixels.shape)
        if refine is None:
            estimate = linear_eigen(noisy, projections)
        else:
            result = triangulate(noisy, scores, projections, refine_iterations=refine)
            assert result.valid.all()
            estimate = result.xyz
        squared.append(((estimate - xyz) ** 2).sum(1))
    return 100.0 * float(np.sqrt(np.mean(squared)))


def model_cm(angle_deg: float, noise: float) -> float:
    """First-order RMS (cm) of two cameras at ``RANGE``, ``angle_deg`` apart."""
    half = math.radians(angle_deg) / 2
    return 100.0 * RANGE * noise / K[0, 0] * math.sqrt(
        0.5 + 0.5 / math.cos(half) ** 2 + 0.5 / math.sin(half) ** 2)


def accuracy_table(trials: int) -> None:
    """Print RMS error (cm) as ``DLT / refined`` against noise for each rig."""
    rigs = [(f'2 cameras, {a} deg', [-a / 2, a / 2], None, a) for a in (15, 30, 60, 90)]
    rigs += [('3 cameras, 0 and +-30 deg', [-30, 0, 30], None, None),
             ('3 cameras, -30, 30, 90 deg', [-30, 30, 90], None, None),
             ('4 cameras, 60 deg apart', [-30, 30, 90, 150], None, None),
             ('2 cameras, 60 deg, at 1.5 and 6 m', [-30, 30], [1.5, 6.0], None),
             ('4 cameras, 40 deg apart, at 2, 3, 5, 8 m', [-60, -20, 20, 60],
              [2.0, 3.0, 5.0, 8.0], None)]
    steps = f'{REFINE_ITERATIONS} Gauss-Newton step' + ('s' if REFINE_ITERATIONS > 1 else '')
    print(f'RMS 3D error, cm: DLT / refined ({steps}); '
          f'{trials} trials x {JOINTS} joints; model: first-order two-camera estimate')
    print()
    print('| rig | ' + ' | '.join(f'{n:g} px' for n in NOISES)
          + ' | Linear-Eigen at 1 px | model at 1 px |')
    print('|---|' + '---|' * (len(NOISES) + 2))
    for name, azimuths, ranges, angle in rigs:
        projections = rig(azimuths, ranges)
        cells = [f'{rms_cm(projections, n, 0, trials):.2f} / '
                 f'{rms_cm(projections, n, REFINE_ITERATIONS, trials):.2f}' for n in NOISES]
        model = f'{model_cm(angle, 1.0):.2f}' if angle else '-'
        eigen = f'{rms_cm(projections, 1.0, None, trials):.2f}'
        print(f'| {name} | ' + ' | '.join(cells) + f' | {eigen} | {model} |')


def timing_table(repeat: int) -> None:
    """Print the median time per call for 308 joints (and 8 people stacked) x 2 or 4 views."""
    print()
    print(f'Time per call (median of {repeat}, ms)')
    print()
    print('| joints | views | DLT | refined |')
    print('|---|---|---|---|')
    for people in (1, 8):
        xyz = np.concatenate([skeleton(seed) for seed in range(people)])
        for azimuths in ([-30, 30], [-30, 30, 90, 150]):
            projections = rig(azimuths)
            pixels = project_points(projections, xyz)
            pixels += np.random.default_rng(2).normal(0.0, 1.0, pixels.shape)
            scores = np.ones(pixels.shape[:2])
            cells = []
            for refine in (0, REFINE_ITERATIONS):
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    triangulate(pixels, scores, projections, refine_iterations=refine)
                    times.append(time.perf_counter() - start)
                cells.append(f'{1e3 * statistics.median(times):.2f}')
            print(f'| {len(xyz)} | {len(azimuths)} | ' + ' | '.join(cells) + ' |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--trials', type=int, default=20, help='noise draws per cell')
    parser.add_argument('--repeat', type=int, default=200, help='calls timed per row')
    args = parser.parse_args()
    accuracy_table(args.trials)
    timing_table(args.repeat)


if __name__ == '__main__':
    main()
