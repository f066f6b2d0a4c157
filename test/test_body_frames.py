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

"""REP-155 body frames: where, how oriented, only from metric 3D; on /tf over Fast DDS."""

import numpy as np
import pytest
from sapiens_ros.core.models.metadata import keypoint_info
from sapiens_ros.core.people.body_frames import body_frames, body_id, JOINT_KEYPOINTS
from sapiens_ros.core.people.hri_ids import is_hri_id, TrackNames
from sapiens_ros.core.people.state import People, PeopleState
from sapiens_ros.core.people.synthetic import STANDING, standing_body
from sapiens_ros.core.people.tracking import IdAllocator
from sapiens_ros.core.pipeline.pipeline import FrameResult
from sapiens_ros.core.processing.heads.pose import PoseResult
from scipy.spatial.transform import Rotation

NAMES = keypoint_info().names
SIZE = (480, 640)
K = np.array([[525.0, 0.0, 319.5], [0.0, 525.0, 239.5], [0.0, 0.0, 1.0]])
#: A standing person in its own REP-155 body frame (x forward, y left, z up; metres).
BODY = STANDING
canonical_body = standing_body


def people_at(rotation: Rotation, origin, ids=(1,), metric=True) -> People:
    """People whose ``xyz`` is the canonical body moved by ``rotation`` and ``origin``."""
    xyz = np.stack([rotation.apply(canonical_body(i)) + origin for i in range(len(ids))])
    n = len(ids)
    nan2 = np.full((n, 308, 2), np.nan, np.float32)
    return People(0.0, np.asarray(ids, np.int64), nan2, nan2, np.ones((n, 308), np.float32),
                  xyz.astype(np.float32), xyz.astype(np.float32), 'depth',
                  np.zeros((n, 3), np.float32), np.tile(np.float32([0, 0, 0, 1]), (n, 1)),
                  np.ones(n, bool), None, metric, np.asarray(ids, np.int64))


#: Body axes of a person facing the camera, in the optical frame (x right, y down, z ahead):
#: forward is -z, the person's left is +x (the image's right), up is -y.
FACING = Rotation.from_matrix(np.array([[0, 1, 0], [0, 0, -1], [-1, 0, 0]], float))  # columns


def test_body_frame_is_at_mid_hips_with_rep155_axes_for_any_turn():
    for yaw in (0.0, 45.0, 120.0, -90.0):  # the person turns about its own vertical axis
        rotation = FACING * Rotation.from_euler('z', yaw, degrees=True)
        frames = body_frames(people_at(rotation, [0.3, 0.2, 2.5]), joints=True)
        assert frames.ids.tolist() == [1]
        np.testing.assert_allclose(frames.position[0], [0.3, 0.2, 2.5], atol=1e-5)
        got = Rotation.from_quat(frames.orientation[0])
        assert (got.inv() * rotation).magnitude() < 1e-4, yaw
        # joints sit at their keypoints, in the body frame
        assert frames.joint_names == tuple(JOINT_KEYPOINTS)
        j = dict(zip(frames.joint_names, frames.joints[0], strict=True))
        np.testing.assert_allclose(j['l_wrist'], BODY['left_wrist'], atol=1e-5)
        np.testing.assert_allclose(j['head'], [0.08, 0, 0.75], atol=1e-5)  # mid-eyes
    facing = body_frames(people_at(FACING, [0, 0, 2]))
    axes = Rotation.from_quat(facing.orientation[0]).as_matrix()
    np.testing.assert_allclose(axes[:, 0], [0, 0, -1], atol=1e-6)  # x forward: to the camera
    np.testing.assert_allclose(axes[:, 2], [0, -1, 0], atol=1e-6)  # z towards the head: up
    assert facing.joints.shape == (1, 0, 3)  # no joint frames unless asked


def test_no_frame_without_metric_3d_a_track_or_the_torso():
    assert len(body_frames(people_at(FACING, [0, 0, 2], metric=False))) == 0  # guessed depth
    assert len(body_frames(people_at(FACING, [0, 0, 2], ids=(-1,)))) == 0  # untracked
    people = people_at(FACING, [0, 0, 2], ids=(3, 4))
    people.xyz[0, NAMES.index('right_hip')] = np.nan  # hidden hip: no origin for that one
    people.xyz[1, NAMES.index('left_eye')] = np.nan  # hidden eye: no head frame
    frames = body_frames(people, joints=True)
    assert frames.ids.tolist() == [4]
    head = frames.joint_names.index('head')
    assert np.isnan(frames.joints[0, head]).all() and np.isfinite(frames.joints[0, 1:]).all()


def project(points: np.ndarray) -> np.ndarray:
    uvw = points @ K.T
    return uvw[..., :2] / uvw[..., 2:]


def frame_facing_camera(x_offsets) -> FrameResult:
    """Return a frame of people facing the camera at 2 m, as the pose head would see them."""
    kps = np.stack([project(FACING.apply(canonical_body(i)) + [x, 0.1, 2.0])
                    for i, x in enumerate(x_offsets)]).astype(np.float32)
    boxes = np.concatenate([kps.min(1) - 10, kps.max(1) + 10], 1).astype(np.float32)
    pose = PoseResult(kps, np.full(kps.shape[:2], 0.9, np.float32), boxes,
                      np.ones(len(kps), np.float32))
    return FrameResult(SIZE, pose=pose)


def test_body_frame_sits_at_the_measured_depth_of_a_plane():
    """A 2 m wall behind the person: body_<id> within 2 cm of it, at the mid-hip pixel's ray."""
    depth_mm = np.full((240, 320), 2000, np.uint16)  # half resolution, 16UC1
    state = PeopleState()
    for i in range(3):
        people = state.update(frame_facing_camera([-0.4, 0.5]), 1.0 + i / 30, depth=depth_mm,
                              K=K, depth_encoding='16UC1')
    frames = body_frames(people)
    assert sorted(frames.ids.tolist()) == sorted(people.ids.tolist()) and len(frames) == 2
    assert np.abs(frames.position[:, 2] - 2.0).max() < 0.02
    hips = project(np.array([[x, 0.1, 2.0] for x in (-0.4, 0.5)]))
    np.testing.assert_allclose(project(frames.position), hips, atol=1.5)  # pixels
    for q in frames.orientation:  # flat on the wall: facing the camera
        axes = Rotation.from_quat(q).as_matrix()
        np.testing.assert_allclose(axes[:, 0], [0, 0, -1], atol=0.02)
        np.testing.assert_allclose(axes[:, 2], [0, -1, 0], atol=0.02)
    # the same frame without depth has no metric 3D: no body frame at a guessed depth
    assert len(body_frames(PeopleState().update(frame_facing_camera([0.0]), 1.0))) == 0


def test_body_ids_and_frames_are_unique_across_cameras_sharing_ids():
    ids = IdAllocator()
    depth_mm = np.full((240, 320), 2000, np.uint16)
    cams = [PeopleState(ids=ids) for _ in range(3)]
    names = []
    for state in cams:  # the same scene in each camera: same pixels, different people
        frames = body_frames(state.update(frame_facing_camera([-0.4, 0.5]), 1.0,
                                          depth=depth_mm, K=K, depth_encoding='16UC1'))
        names += [body_id(t) for t in frames.ids]
    assert len(names) == 6 and len(set(names)) == 6
    assert all(is_hri_id(n) for n in names)  # ROS4HRI: five lowercase letters


def test_body_ids_are_five_letters_unique_and_stable():
    names = TrackNames(seed=3)
    ids = [names(t) for t in range(20000)]
    assert all(is_hri_id(n) for n in ids) and len(set(ids)) == len(ids)
    assert names(12) == names(12) == TrackNames(seed=3)(12) != TrackNames(seed=4)(12)
    with pytest.raises(ValueError, match='outside'):
        names(-1)


def test_body_frames_on_tf_over_dds(graph):
    tf2 = pytest.importorskip('tf2_msgs.msg')
    from ros_graph import qos
    from sapiens_ros.ros.tf_frames import body_transforms, TF_QOS, TF_TOPIC
    from std_msgs.msg import Header

    received = graph.collect(tf2.TFMessage, TF_TOPIC, qos(depth=100))
    pub = graph.publisher(tf2.TFMessage, TF_TOPIC, TF_QOS)
    graph.wait_for_subscribers(pub)
    header = Header(frame_id='front_camera_optical_frame')
    header.stamp.sec, header.stamp.nanosec = 42, 7
    rotation = FACING * Rotation.from_euler('z', 30, degrees=True)
    frames = body_frames(people_at(rotation, [0.3, 0.2, 2.5], ids=(7, 12)), joints=True)
    pub.publish(tf2.TFMessage(transforms=body_transforms(header, frames)))
    assert graph.wait(lambda: received)
    by_child = {t.child_frame_id: t for t in received[0].transforms}
    b7, b12 = body_id(7), body_id(12)
    assert set(by_child) == {f'{j}_{b}' for b in (b7, b12) for j in JOINT_KEYPOINTS} | \
        {f'body_{b7}', f'body_{b12}'}
    body = by_child[f'body_{b12}']
    assert body.header.frame_id == 'front_camera_optical_frame'
    assert (body.header.stamp.sec, body.header.stamp.nanosec) == (42, 7)
    t, r = body.transform.translation, body.transform.rotation
    np.testing.assert_allclose([t.x, t.y, t.z], [0.3, 0.2, 2.5], atol=1e-5)
    assert (Rotation.from_quat([r.x, r.y, r.z, r.w]).inv() * rotation).magnitude() < 1e-4
    wrist = by_child[f'l_wrist_{b12}']
    assert wrist.header.frame_id == f'body_{b12}' and wrist.transform.rotation.w == 1.0
    np.testing.assert_allclose([wrist.transform.translation.x, wrist.transform.translation.y,
                                wrist.transform.translation.z], BODY['left_wrist'], atol=1e-5)
