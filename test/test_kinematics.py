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

"""REP-155 kinematics: the humanoid URDF, joint_states solved from 3D keypoints, FK, per track."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from sapiens_ros.core.people.faces import head_poses
from sapiens_ros.core.people.geometry import quat_to_matrix, rotation_angle, wrap
from sapiens_ros.core.people.humanoid import (BoneLengths, forward_kinematics, humanoid_urdf,
                                              JOINT_NAMES, JOINTS, LINK_NAMES, LOWER,
                                              synthetic_keypoints, UPPER)
from sapiens_ros.core.people.kinematics import BodyKinematics, KinematicsConfig
from scipy.spatial.transform import Rotation

J = {n: i for i, n in enumerate(JOINT_NAMES)}
LI = {n: i for i, n in enumerate(LINK_NAMES)}
LIMB_LINKS = [LI[n] for n in ('l_shoulder', 'r_shoulder', 'l_elbow', 'r_elbow', 'l_hip',
                              'r_hip', 'l_knee', 'r_knee')]
LENGTHS = BoneLengths(upperarm_length=0.3, forearm_length=0.26, tight_length=0.45,
                      tibia_length=0.42, torso_height=0.52, neck_shoulder_length=0.19,
                      waist_length=0.22)


def everyday_angles(n: int, seed: int = 0) -> np.ndarray:
    """Joint angles ``(n, 20)`` within the limits; elbows and knees bent (their roll shows)."""
    rng = np.random.default_rng(seed)
    lo, hi = LOWER.copy(), UPPER.copy()
    for s in 'lr':
        lo[J[f'{s}_p_hip']], hi[J[f'{s}_p_hip']] = -0.3, 1.0
        lo[J[f'{s}_elbow']] = 0.3
        hi[J[f'{s}_knee']] = -0.3
        lo[J[f'{s}_r_shoulder']], hi[J[f'{s}_r_shoulder']] = -1.5, 1.5
    q = rng.uniform(lo, hi, (n, 20))
    q[:, J['waist']] = 0
    return q


def posed(q, seed=0, lengths=LENGTHS):
    """Keypoints of bodies posed by ``q`` at random places in front of the camera."""
    rng = np.random.default_rng(seed)
    R = Rotation.random(len(q), random_state=seed).as_matrix()
    origin = rng.normal(0, 0.5, (len(q), 3)) + (0, 0, 3)
    return synthetic_keypoints(lengths.array(), q, R, origin), R, origin


def pixel_noise(xyz, px=1.0, f=600.0, seed=1):
    """Move each point by ``px`` pixels (Gaussian, per image axis) at its exact depth."""
    rng = np.random.default_rng(seed)
    noise = rng.normal(0, px, xyz.shape[:-1] + (2,)) * xyz[..., 2:3] / f
    return xyz + np.concatenate([noise, np.zeros(xyz.shape[:-1] + (1,))], -1)


def solve(kin, ids, xyz, stamp):
    rot, pos, ok = head_poses(xyz)
    return kin.update(ids, xyz, stamp, rot, ok, pos, live=ids)


def test_urdf_has_human_description_names_limits_and_lengths():
    root = ET.fromstring(humanoid_urdf('abcde', LENGTHS))
    links = {e.get('name') for e in root.iter('link')}
    assert links == {f'{n}_abcde' for n in LINK_NAMES}
    joints = {e.get('name'): e for e in root.iter('joint')}
    revolute = [n for n, e in joints.items() if e.get('type') == 'revolute']
    assert sorted(revolute) == sorted(f'{n}_abcde' for n in JOINT_NAMES)
    for n in JOINT_NAMES:
        limit = joints[f'{n}_abcde'].find('limit')
        assert float(limit.get('lower')) == pytest.approx(LOWER[J[n]])
        assert float(limit.get('upper')) == pytest.approx(UPPER[J[n]])
    elbow = joints['l_elbow_abcde'].find('origin').get('xyz').split()
    assert float(elbow[2]) == pytest.approx(-LENGTHS.upperarm_length, abs=1e-4)
    # a tree rooted at body_<id>: every link but the root is some joint's child, once
    children = [e.find('child').get('link') for e in joints.values()]
    assert sorted(children) == sorted(links - {'body_abcde'})
    assert len(JOINTS) == len(LINK_NAMES) - 1


def test_rest_pose_hangs_arms_and_legs_down():
    links = forward_kinematics(LENGTHS.array(), np.zeros(20))
    L = LENGTHS
    np.testing.assert_allclose(links[LI['l_wrist'], :3, 3], (0, L.neck_shoulder_length,
                               L.torso_height - L.upperarm_length - L.forearm_length))
    np.testing.assert_allclose(links[LI['r_ankle'], :3, 3], (0, -L.waist_length / 2,
                               -L.tight_length - L.tibia_length))


def test_known_angles_come_back_exactly_and_fk_reproduces_the_keypoints():
    q = everyday_angles(300)
    xyz, R, origin = posed(q)
    kin = BodyKinematics(KinematicsConfig(smoothing=0))
    frame = solve(kin, np.arange(300), xyz, 0.0)
    assert len(frame) == 300 and frame.measured.all()
    np.testing.assert_allclose(frame.lengths, np.tile(LENGTHS.array(), (300, 1)), atol=1e-9)
    assert np.abs(wrap(frame.joint_positions - q)).max() < 1e-6
    # FK from the solved angles puts the links on the keypoints, in the camera frame
    truth = synthetic_keypoints(frame.lengths, frame.joint_positions,
                                quat_to_matrix(frame.orientation), frame.position)
    np.testing.assert_allclose(truth[np.isfinite(xyz)], xyz[np.isfinite(xyz)], atol=1e-6)
    np.testing.assert_allclose(frame.position, origin, atol=1e-9)


def test_limb_rotations_within_5_degrees_at_1_px_noise():
    q = everyday_angles(400, seed=3)
    xyz, _, _ = posed(q, seed=3)
    kin = BodyKinematics(KinematicsConfig(smoothing=0))
    frame = solve(kin, np.arange(400), pixel_noise(xyz), 0.0)
    truth = forward_kinematics(LENGTHS.array(), q)
    got = forward_kinematics(LENGTHS.array(), frame.joint_positions)  # same lengths: angles
    err = np.degrees(rotation_angle(got[:, LIMB_LINKS, :3, :3], truth[:, LIMB_LINKS, :3, :3]))
    assert np.median(err) < 2.0 and np.percentile(err, 90) < 5.0, np.percentile(err, [50, 90])


def test_bone_lengths_freeze_per_track_and_the_urdf_is_announced_once():
    cfg = KinematicsConfig(calibration_frames=5, smoothing=0)
    kin = BodyKinematics(cfg)
    q = everyday_angles(1, seed=5)
    announced, seen = [], []
    for t in range(12):
        stretch = BoneLengths(**{**LENGTHS.__dict__,
                                 'upperarm_length': 0.3 * (1 + 0.02 * np.sin(t)),
                                 'tibia_length': 0.42 + (0.1 if t >= 8 else 0.0)})
        xyz, _, _ = posed(q, seed=t, lengths=stretch)
        frame = solve(kin, np.array([7]), xyz, t / 30)
        announced += frame.new_urdf
        seen.append(frame.lengths[0].copy())
    assert announced == [7]
    assert all(np.array_equal(seen[4], s) for s in seen[4:])  # frozen at the 5th frame
    assert seen[4][3] == pytest.approx(0.3, rel=0.02)  # the median of the measurements
    assert seen[-1][8] == pytest.approx(0.42)  # a later stretch does not change the body
    assert 'l_elbow_b7' in kin.urdf(7, 'b7')
    assert kin.urdf(8, 'b8') is None


def test_angles_stay_within_the_limits_for_impossible_poses():
    q = everyday_angles(200, seed=7)
    q[:, J['l_elbow']] = -0.8  # hyperextended: outside [0, 2.5]
    q[:, J['r_knee']] = 0.7  # bent forwards
    q[:, J['y_head']] = 2.5
    xyz, _, _ = posed(q, seed=7)
    kin = BodyKinematics()  # smoothed: the second frame blends into the first
    solve(kin, np.arange(200), xyz, 0.0)
    frame = solve(kin, np.arange(200), posed(everyday_angles(200, seed=8), seed=7)[0], 0.03)
    pos = frame.joint_positions
    assert (pos >= LOWER - 1e-12).all() and (pos <= UPPER + 1e-12).all()


def test_unknown_joints_hold_and_the_rest_is_solved():
    q = everyday_angles(2, seed=9)
    xyz, _, _ = posed(q, seed=9)
    kin = BodyKinematics(KinematicsConfig(smoothing=0))
    first = solve(kin, np.array([1, 2]), xyz, 0.0)
    hidden = xyz.copy()
    hidden[0, 62] = np.nan  # left wrist of body 1
    hidden[1, :5] = np.nan  # the face of body 2 (eyes, ears, nose) ...
    hidden[1, 70:] = np.nan  # ... and the rest of it
    q2 = everyday_angles(2, seed=10)
    moved, _, _ = posed(q2, seed=9)
    moved[np.isnan(hidden)] = np.nan
    frame = solve(kin, np.array([1, 2]), moved, 0.1)
    arm = [J[n] for n in ('l_y_shoulder', 'l_p_shoulder', 'l_r_shoulder', 'l_elbow')]
    head = [J[n] for n in ('r_head', 'y_head', 'p_head')]
    assert not frame.measured[0, arm].any() and not frame.measured[1, head].any()
    np.testing.assert_allclose(frame.joint_positions[0, arm], first.joint_positions[0, arm])
    np.testing.assert_allclose(frame.joint_positions[1, head], first.joint_positions[1, head])
    legs = [J[f'{s}_{n}'] for s in 'lr' for n in ('y_hip', 'p_hip', 'r_hip', 'knee')]
    assert np.abs(wrap(frame.joint_positions[:, legs] - q2[:, legs])).max() < 1e-6
    # no torso: no body at all, and nothing raised
    nothing = moved.copy()
    nothing[:, [5, 6, 9, 10]] = np.nan
    assert len(solve(kin, np.array([1, 2]), nothing, 0.2)) == 0
    assert len(kin.update(np.array([1]), None, 0.3)) == 0


def test_angles_are_smoothed_and_tracks_that_end_are_dropped():
    kin = BodyKinematics(KinematicsConfig(smoothing=0.1))
    a, b = everyday_angles(2, seed=11)
    xa, _, _ = posed(a[None], seed=0)
    xb, _, _ = posed(b[None], seed=0)
    solve(kin, np.array([4]), xa, 0.0)
    step = solve(kin, np.array([4]), xb, 1 / 30)
    frac = 1 - np.exp(-(1 / 30) / 0.1)
    elbow = J['l_elbow']
    assert step.joint_positions[0, elbow] == pytest.approx(
        a[elbow] + frac * (b[elbow] - a[elbow]))
    assert 4 in kin.tracks
    kin.update(np.array([5]), xa, 0.1, live=np.array([5]))
    assert 4 not in kin.tracks and 5 in kin.tracks
    kin.update(np.zeros(0, np.int64), None, 10.0)  # unseen longer than forget
    assert not kin.tracks


def test_velocity_is_the_body_speed_in_the_body_frame():
    kin = BodyKinematics(KinematicsConfig(velocity_smoothing=0))
    q = everyday_angles(1, seed=12)
    xyz, R, origin = posed(q, seed=12)
    v = np.array([0.5, 0.0, -0.2])  # camera frame, m/s
    for k in range(3):
        frame = solve(kin, np.array([3]), xyz + v * k / 30, k / 30)
    np.testing.assert_allclose(frame.velocity[0], R[0].T @ v, atol=1e-9)


def test_body_models_take_a_frame_of_people():
    from sapiens_ros.core.people.body_models import BodyModels
    from sapiens_ros.core.people.state import People
    q = everyday_angles(3, seed=13)
    xyz, _, _ = posed(q, seed=13)
    xyz[2, [5, 6, 9, 10]] = np.nan  # the third has no torso: a face, no body
    K = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
    uv = xyz @ K.T
    uv = uv[..., :2] / uv[..., 2:]
    scores = np.where(np.isfinite(xyz[..., 0]), 0.9, 0.0).astype(np.float32)
    ids = np.array([1, 2, 3])
    people = People(0.0, ids, uv, uv, scores, xyz, xyz, 'depth', np.zeros((3, 3)),
                    np.tile([0.0, 0, 0, 1], (3, 1)), np.ones(3, bool), None, True, ids)
    frame = BodyModels().update(people, (480, 640))
    assert frame.faces.ids.tolist() == [1, 2, 3] and frame.faces.pose_valid.all()
    assert frame.kinematics.ids.tolist() == [1, 2] and frame.kinematics.rows.tolist() == [0, 1]
    assert frame.rig.local.shape[:2] == (2, 52) and frame.rig.valid[:, 0].all()
    assert np.abs(wrap(frame.kinematics.joint_positions - q[:2])).max() < 1e-6
    people.xyz_metric = False  # a guessed depth: faces' boxes only, no bodies
    frame = BodyModels().update(people, (480, 640))
    assert len(frame.kinematics) == 0 and not frame.faces.pose_valid.any()


def test_ikpy_reads_the_urdf_as_hri_body_detect_does_and_agrees_with_our_fk():
    """Check with hri_body_detect's IK library, ikpy (not a dependency: skipped without)."""
    chain = pytest.importorskip('ikpy.chain')
    import io
    urdf = humanoid_urdf('abcde', LENGTHS)
    q = everyday_angles(20, seed=14)
    ours = forward_kinematics(LENGTHS.array(), q)
    for first, parent, names, tip in (
            ('l_y_shoulder', 'torso', ('l_y_shoulder', 'l_p_shoulder', 'l_r_shoulder', 'l_elbow'),
             'l_wrist'),
            ('r_y_hip', 'body', ('r_y_hip', 'r_p_hip', 'r_r_hip', 'r_knee'), 'r_ankle'),
            ('r_head', 'torso', ('r_head', 'y_head', 'p_head'), 'head')):
        # hri_body_detect's chains: from the first joint, six links for a limb
        c = chain.Chain.from_urdf_file(io.StringIO(urdf), base_elements=[f'{first}_abcde'],
                                       base_element_type='joint', symbolic=False)
        for b in range(len(q)):
            angles = [0.0] + [q[b, J[n]] for n in names]
            angles += [0.0] * (len(c.links) - len(angles))
            mine = np.linalg.inv(ours[b, LI[parent]]) @ ours[b, LI[tip]]
            np.testing.assert_allclose(c.forward_kinematics(angles), mine, atol=1e-9)


def test_joint_transforms_compose_to_the_link_poses():
    from sapiens_ros.core.people.humanoid import joint_transforms
    q = everyday_angles(5, seed=15)
    local = joint_transforms(LENGTHS.array(), q)
    links = forward_kinematics(LENGTHS.array(), q)
    for j, joint in enumerate(JOINTS):
        np.testing.assert_allclose(links[:, LI[joint.parent]] @ local[:, j],
                                   links[:, LI[joint.child]], atol=1e-12)
    frame = solve(BodyKinematics(), np.arange(5), posed(q, seed=15)[0], 0.0)
    np.testing.assert_allclose(frame.joint_transforms, local, atol=1e-9)
