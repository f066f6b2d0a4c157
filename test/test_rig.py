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

"""Avatar rotations: the VRM 1.0 bones come back from keypoints of a posed synthetic body."""

import numpy as np
from sapiens_ros.core.models.metadata import keypoint_info
from sapiens_ros.core.people.depth import torso_axes
from sapiens_ros.core.people.faces import head_poses
from sapiens_ros.core.people.geometry import matrix_to_quat, rotation_angle
from sapiens_ros.core.people.rig import (BONE_NAMES, BONES, MODEL_FROM_BODY,
                                         random_rig_locals, rig_pose, synthetic_rig_keypoints)
from scipy.spatial.transform import Rotation

B = {n: i for i, n in enumerate(BONE_NAMES)}
NAMES = keypoint_info().names
LIMBS = [B[f'{s}{b}'] for s in ('left', 'right')
         for b in ('UpperArm', 'LowerArm', 'UpperLeg', 'LowerLeg')]


def rotvec(v):
    return Rotation.from_rotvec(np.asarray(v, float)).as_matrix()


def random_locals(n: int, seed: int = 0) -> np.ndarray:
    """VRM locals ``(n, N, 3, 3)``: free where keypoints show them, hinges where they bend."""
    return random_rig_locals(n, np.random.default_rng(seed))


def recover(xyz):
    rot, ok = torso_axes(xyz)
    origin = (xyz[:, NAMES.index('left_hip')] + xyz[:, NAMES.index('right_hip')]) / 2
    head, _, valid = head_poses(xyz)
    return rig_pose(xyz, rot, origin, head, valid), rot


def place(loc, seed=0):
    rng = np.random.default_rng(seed)
    R = Rotation.random(len(loc), random_state=seed).as_matrix()
    return synthetic_rig_keypoints(loc, R, rng.normal(0, 0.5, (len(loc), 3)) + (0, 0, 3)), R


def angle(q1, q2):
    return np.degrees(2 * np.arccos(np.clip(np.abs((q1 * q2).sum(-1)), 0, 1)))


def test_known_rotations_of_every_bone_come_back():
    loc = random_locals(100)
    xyz, R = place(loc)
    pose, rot = recover(xyz)
    assert pose.valid.all()
    err = angle(pose.local, matrix_to_quat(loc))
    # the hips are measured against body_<id> (the torso's frame), not the generator's root
    err[:, B['hips']] = 0
    assert err.max() < 1e-4, BONE_NAMES[int(np.argmax(err.max(0)))]
    hips = np.einsum('bji,bjk->bik', rot @ MODEL_FROM_BODY, R @ MODEL_FROM_BODY) @ loc[:, 0]
    assert np.degrees(rotation_angle(hips, pose.global_[:, 0])).max() < 1e-4


def test_limbs_within_5_degrees_at_1_px_noise():
    loc = random_locals(300, seed=1)
    xyz, _ = place(loc, seed=1)
    rng = np.random.default_rng(2)
    noisy = xyz.copy()
    noisy[..., :2] += rng.normal(0, 1.0, xyz.shape[:-1] + (2,)) * xyz[..., 2:3] / 600.0
    pose, _ = recover(noisy)
    err = angle(pose.local[:, LIMBS], matrix_to_quat(loc[:, LIMBS]))
    assert np.median(err) < 2.5 and np.percentile(err, 90) < 5.0, np.percentile(err, [50, 90])


def test_raising_the_left_arm_turns_its_bone_about_plus_z():
    loc = np.tile(np.eye(3), (1, len(BONES), 1, 1))
    loc[0, B['leftLowerArm']] = rotvec([0, -0.5, 0])  # bent a little: the roll shows
    xyz, _ = place(loc)
    rest, _ = recover(xyz)
    np.testing.assert_allclose(rest.local[0, B['leftUpperArm']], (0, 0, 0, 1), atol=1e-9)
    loc[0, B['leftUpperArm']] = rotvec([0, 0, 0.8])  # the arm (+X) lifted towards +Y
    xyz, _ = place(loc)
    up, _ = recover(xyz)
    q = up.local[0, B['leftUpperArm']]
    np.testing.assert_allclose(q, (0, 0, np.sin(0.4), np.cos(0.4)), atol=1e-9)


def test_hidden_hand_and_face_leave_their_bones_at_rest():
    loc = random_locals(1, seed=4)
    xyz, _ = place(loc, seed=4)
    for n in NAMES:
        if n.startswith('left_') and ('finger' in n or 'thumb' in n):
            xyz[0, NAMES.index(n)] = np.nan
    xyz[0, :5] = np.nan
    xyz[0, 70:] = np.nan
    pose, _ = recover(xyz)
    for name in ('leftHand', 'leftIndexDistal', 'leftThumbMetacarpal', 'head', 'neck'):
        assert not pose.valid[0, B[name]], name
        np.testing.assert_allclose(pose.local[0, B[name]], (0, 0, 0, 1))
    assert pose.valid[0, B['rightIndexDistal']] and pose.valid[0, B['leftLowerArm']]
    # a bone at rest turns with its parent
    np.testing.assert_allclose(pose.global_[0, B['leftIndexDistal']],
                               pose.global_[0, B['leftLowerArm']], atol=1e-12)
    err = angle(pose.local[0, B['rightIndexDistal']],
                matrix_to_quat(loc[0, B['rightIndexDistal']]))
    assert err < 1e-4
