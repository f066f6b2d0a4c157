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
Body models (issue 27): cost per body per frame, and the error of the recovered rotations.

1. Cost of ``BodyModels.update`` (faces + kinematics + VRM rig) per frame and per body, for
   1, 4 and 16 tracked bodies, tracks calibrated (steady state), and of each part: the
   median thread CPU time (``time.thread_time``), so that a loaded machine's descheduling
   does not count (the wall time on an idle core is the same).
2. joint_states: bodies posed by known joint angles (within the limits, elbows and knees bent
   >= 17 deg), keypoints from the URDF's forward kinematics, exact 3D, then each keypoint moved
   by 0, 1 or 2 px (Gaussian per image axis, f = 600 px, bodies 2.5 to 3.5 m away) at its
   exact depth. Error: angle between the true and the solved link rotations (FK).
3. VRM rig: bodies posed by known bone rotations (T-pose rig), same noise, 2.5 to 3.5 m and
   0.8 to 1.2 m away (fingers are 2 to 4.5 cm long); error of the local rotations per bone
   group.

    python benchmarks/bench_kinematics.py [--repeat 200] [--bodies 400]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sapiens_ros.core.people.body_models import BodyModels
from sapiens_ros.core.people.depth import torso_axes
from sapiens_ros.core.people.faces import faces, head_poses
from sapiens_ros.core.people.geometry import matrix_to_quat, rotation_angle
from sapiens_ros.core.people.humanoid import (BoneLengths, forward_kinematics, JOINT_NAMES,
                                              LINK_NAMES, LOWER, synthetic_keypoints, UPPER)
from sapiens_ros.core.people.kinematics import BodyKinematics, KinematicsConfig
from sapiens_ros.core.people.rig import (BONE_NAMES, random_rig_locals, rig_pose,
                                         synthetic_rig_keypoints)
from sapiens_ros.core.people.state import People
from scipy.spatial.transform import Rotation

F = 600.0
K = np.array([[F, 0, 320], [0, F, 240], [0, 0, 1]])
J = {n: i for i, n in enumerate(JOINT_NAMES)}
B = {n: i for i, n in enumerate(BONE_NAMES)}


def joint_angles(n: int, rng: np.random.Generator) -> np.ndarray:
    lo, hi = LOWER.copy(), UPPER.copy()
    for s in 'lr':
        lo[J[f'{s}_p_hip']], hi[J[f'{s}_p_hip']] = -0.3, 1.0
        lo[J[f'{s}_elbow']], hi[J[f'{s}_knee']] = 0.3, -0.3
        lo[J[f'{s}_r_shoulder']], hi[J[f'{s}_r_shoulder']] = -1.5, 1.5
    q = rng.uniform(lo, hi, (n, 20))
    q[:, J['waist']] = 0
    return q


def bone_rotations(n: int, rng: np.random.Generator) -> np.ndarray:
    return random_rig_locals(n, rng)


def placement(n: int, rng: np.random.Generator,
              depth: tuple[float, float] = (2.5, 3.5)) -> tuple[np.ndarray, np.ndarray]:
    R = Rotation.random(n, random_state=int(rng.integers(1 << 30))).as_matrix()
    origin = np.c_[rng.uniform(-0.5, 0.5, (n, 2)), rng.uniform(*depth, n)]
    return R, origin


def pixel_noise(xyz: np.ndarray, px: float, rng: np.random.Generator) -> np.ndarray:
    out = xyz.copy()
    out[..., :2] += rng.normal(0, px, xyz.shape[:-1] + (2,)) * xyz[..., 2:3] / F
    return out


def people_of(xyz: np.ndarray, stamp: float) -> People:
    n = len(xyz)
    uv = xyz @ K.T
    uv = (uv[..., :2] / uv[..., 2:]).astype(np.float32)
    scores = np.where(np.isfinite(xyz[..., 0]), 0.9, 0.0).astype(np.float32)
    ids = np.arange(n, dtype=np.int64)
    return People(stamp, ids, uv, uv, scores, xyz.astype(np.float32), None, 'depth',
                  np.zeros((n, 3), np.float32), np.tile(np.float32([0, 0, 0, 1]), (n, 1)),
                  np.ones(n, bool), None, True, ids)


def cost_table(repeat: int) -> None:
    rng = np.random.default_rng(0)
    print('| bodies | faces ms | kinematics ms | rig ms | BodyModels.update ms | per body ms |')
    print('|---|---|---|---|---|---|')
    for n in (1, 4, 16):
        R, origin = placement(n, rng)
        frames = [synthetic_rig_keypoints(bone_rotations(n, rng), R, origin)
                  for _ in range(8)]
        frames = [pixel_noise(x, 1.0, rng) for x in frames]
        models = BodyModels(KinematicsConfig(calibration_frames=3))
        whole = BodyModels(KinematicsConfig(calibration_frames=3))
        for k in range(10):  # calibrate the tracks
            models.update(people_of(frames[k % 8], k / 30), (480, 640))
            whole.update(people_of(frames[k % 8], k / 30), (480, 640))
        people = [people_of(frames[k % 8], (10 + k) / 30) for k in range(repeat)]
        times = {'faces': [], 'kin': [], 'rig': [], 'all': []}
        kin = models.kinematics
        for p in people:
            t0 = time.thread_time()
            fc = faces(p.ids, p.smoothed, p.scores, p.xyz, (480, 640))
            t1 = time.thread_time()
            kf = kin.update(p.ids, p.xyz, p.stamp, fc.rotation, fc.pose_valid, fc.position,
                            live=p.tracks)
            t2 = time.thread_time()
            rig_pose(p.xyz.take(kf.rows, 0), kf.rotation, kf.position,
                     fc.rotation.take(kf.rows, 0), fc.pose_valid.take(kf.rows, 0))
            t3 = time.thread_time()
            whole.update(p, (480, 640))
            t4 = time.thread_time()
            times['faces'].append(t1 - t0)
            times['kin'].append(t2 - t1)
            times['rig'].append(t3 - t2)
            times['all'].append(t4 - t3)
        med = {k: 1e3 * float(np.median(v)) for k, v in times.items()}
        print(f"| {n} | {med['faces']:.3f} | {med['kin']:.3f} | {med['rig']:.3f} | "
              f"{med['all']:.3f} | {med['all'] / n:.3f} |")


def _stats(err: np.ndarray) -> str:
    return f'{np.median(err):.2f} / {np.percentile(err, 90):.2f} / {err.max():.1f}'


def joint_state_table(n: int) -> None:
    rng = np.random.default_rng(1)
    L = BoneLengths(upperarm_length=0.3, forearm_length=0.26, tight_length=0.45,
                    tibia_length=0.42, torso_height=0.52)
    q = joint_angles(n, rng)
    R, origin = placement(n, rng)
    xyz = synthetic_keypoints(L.array(), q, R, origin)
    truth = forward_kinematics(L.array(), q)
    li = {x: i for i, x in enumerate(LINK_NAMES)}
    groups = {'upper arms': ['l_shoulder', 'r_shoulder'], 'forearms': ['l_elbow', 'r_elbow'],
              'thighs': ['l_hip', 'r_hip'], 'shins': ['l_knee', 'r_knee'], 'head': ['head']}
    print('| noise | ' + ' | '.join(groups) + ' |')
    print('|---|' + '---|' * len(groups))
    for px in (0.0, 1.0, 2.0):
        noisy = pixel_noise(xyz, px, rng)
        rot, pos, ok = head_poses(noisy)
        frame = BodyKinematics(KinematicsConfig(smoothing=0)).update(
            np.arange(n), noisy, 0.0, rot, ok, pos)
        got = forward_kinematics(L.array(), frame.joint_positions)
        cells = []
        for links in groups.values():
            idx = [li[x] for x in links]
            err = np.degrees(rotation_angle(got[:, idx, :3, :3], truth[:, idx, :3, :3]))
            cells.append(_stats(err))
        print(f'| {px:g} px | ' + ' | '.join(cells) + ' |')


def rig_table(n: int, depth: tuple[float, float]) -> None:
    rng = np.random.default_rng(2)
    loc = bone_rotations(n, rng)
    R, origin = placement(n, rng, depth)
    xyz = synthetic_rig_keypoints(loc, R, origin)
    truth = matrix_to_quat(loc)
    groups = {'upper arms': ['UpperArm'], 'lower arms': ['LowerArm'], 'hands': ['Hand'],
              'upper legs': ['UpperLeg'], 'lower legs': ['LowerLeg'], 'feet': ['Foot'],
              'head': None, 'fingers': ['Index', 'Middle', 'Ring', 'Little'],
              'thumbs': ['Thumb']}
    print('| noise | ' + ' | '.join(groups) + ' |')
    print('|---|' + '---|' * len(groups))
    for px in (0.0, 1.0, 2.0):
        noisy = pixel_noise(xyz, px, rng)
        rot, _ = torso_axes(noisy)
        hips = (noisy[:, 9] + noisy[:, 10]) / 2
        head, _, ok = head_poses(noisy)
        pose = rig_pose(noisy, rot, hips, head, ok)
        err = np.degrees(2 * np.arccos(np.clip(np.abs((pose.local * truth).sum(-1)), 0, 1)))
        cells = []
        for key in groups.values():
            idx = [B['head']] if key is None else \
                [i for i, b in enumerate(BONE_NAMES) if any(k in b for k in key)
                 and b.startswith(('left', 'right'))]
            cells.append(_stats(err[:, idx]))
        print(f'| {px:g} px | ' + ' | '.join(cells) + ' |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--repeat', type=int, default=200)
    parser.add_argument('--bodies', type=int, default=400)
    args = parser.parse_args()
    print('## Cost per frame (median thread CPU time), steady state\n')
    cost_table(args.repeat)
    print('\n## joint_states: link rotation error, deg (median / p90 / max)\n')
    joint_state_table(args.bodies)
    for depth in ((2.5, 3.5), (0.8, 1.2)):
        print(f'\n## VRM rig, bodies {depth[0]:g} to {depth[1]:g} m away: local rotation '
              'error, deg (median / p90 / max)\n')
        rig_table(args.bodies, depth)


if __name__ == '__main__':
    main()
