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

"""Faces from the 308 keypoints: box, REP-155 head pose axes, aligned-crop warp."""

import numpy as np
from sapiens_ros.core.models.metadata import keypoint_info
from sapiens_ros.core.people.faces import (ALIGNED_TEMPLATE, face_boxes, face_template_points,
                                           faces, head_poses)
from scipy.spatial.transform import Rotation

NAMES = keypoint_info().names
K = np.array([[600.0, 0, 320], [0, 600.0, 240], [0, 0, 1]])
#: A face looking at the camera: gaze (x) towards the camera (-z optical), the person's left
#: (y) on the image's right (+x optical), up (z) is -y optical.
FACING = np.array([[0.0, 1, 0], [0, 0, -1], [-1, 0, 0]])


def project(xyz):
    uv = xyz @ K.T
    return uv[..., :2] / uv[..., 2:]


def a_face(rotation, position=(0.1, -0.2, 1.5)):
    xyz = face_template_points(rotation[None], np.asarray(position, float)[None])
    return xyz, project(xyz), np.where(np.isfinite(xyz[..., 0]), 0.9, 0.0)


def test_head_pose_axes_of_a_face_looking_at_the_camera():
    xyz, _, _ = a_face(FACING)
    rot, origin, ok = head_poses(xyz)
    assert ok.all()
    np.testing.assert_allclose(rot[0], FACING, atol=1e-9)
    np.testing.assert_allclose(rot[0][:, 0], (0, 0, -1), atol=1e-9)  # gaze at the camera
    np.testing.assert_allclose(origin[0], (0.1, -0.2, 1.5), atol=1e-9)


def test_head_turned_to_its_left_looks_to_the_image_right():
    turned = FACING @ Rotation.from_euler('z', 0.6).as_matrix()  # yaw about its own z (up)
    xyz, _, _ = a_face(turned)
    noisy = xyz + np.random.default_rng(0).normal(0, 0.002, xyz.shape)
    rot, _, ok = head_poses(noisy)
    gaze = rot[0][:, 0]
    assert ok.all() and gaze[0] > 0.5 and gaze[2] < 0  # towards +x optical, still our way
    err = np.degrees(Rotation.from_matrix(rot[0].T @ turned).magnitude())
    assert err < 5.0


def test_box_roi_and_aligned_warp():
    xyz, uv, scores = a_face(FACING)
    box, roi, visible = face_boxes(uv, scores, (480, 640))
    pts = uv[0][scores[0] > 0]
    assert visible.all()
    assert (pts >= box[0, :2]).all() and (pts <= box[0, 2:]).all()
    np.testing.assert_allclose(roi[0], box[0] / (640, 480, 640, 480))
    f = faces(np.array([3]), uv, scores, xyz, (480, 640))
    warp = f.aligned[0]
    eyes = uv[0, [NAMES.index('right_eye'), NAMES.index('left_eye')]]
    mapped = eyes @ warp[:, :2].T + warp[:, 2]
    # the person's right eye lands left in the crop, level with the left one
    assert mapped[0, 0] < mapped[1, 0] and abs(mapped[0, 1] - mapped[1, 1]) < 2
    assert np.abs(mapped - ALIGNED_TEMPLATE[:2]).max() < 10
    assert f.pose_valid.all() and f.ids.tolist() == [3]


def test_faces_without_3d_or_keypoints():
    xyz, uv, scores = a_face(FACING)
    f = faces(np.array([1]), uv, scores, None, (480, 640))  # no depth: a box, no pose
    assert f.visible.all() and not f.pose_valid.any() and np.isnan(f.position).all()
    hidden = np.zeros_like(scores)
    f = faces(np.array([1]), uv, hidden, xyz, (480, 640))  # face not seen
    assert not f.visible.any() and not f.pose_valid.any() and np.isnan(f.aligned).all()
    xyz[0, :, :] = np.nan
    assert not head_poses(xyz)[2].any()
