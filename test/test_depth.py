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

"""RGB-D fusion on a synthetic depth plane: keypoint XYZ, pointmap scale fit, torso poses."""

import logging

import numpy as np
import pytest
from sapiens_ros.core.errors import FrameError
from sapiens_ros.core.people.depth import (back_project, depth_at, depth_to_metres, DepthScale,
                                           fit_depth_scale, keypoints_xyz, torso_poses)
from sapiens_ros.core.people.state import PeopleState
from sapiens_ros.core.pipeline.pipeline import FrameResult
from sapiens_ros.core.processing.heads.pointmap import PointmapResult
from sapiens_ros.core.processing.heads.pose import PoseResult
from scipy.spatial.transform import Rotation
import torch

COLOUR = (480, 640)  # H, W of the colour image
K = np.array([[525.0, 0.0, 319.5], [0.0, 525.0, 239.5], [0.0, 0.0, 1.0]])
NORMAL, DIST = np.array([0.08, -0.05, 1.0]), 2.0  # plane n . X = d, about 2 m away


def plane_z(u, v):
    """Return the true depth (m) of the plane at colour pixels ``u``, ``v``."""
    ray = np.linalg.solve(K, np.stack([u, v, np.ones_like(u)]).reshape(3, -1)).reshape(
        (3,) + np.shape(u))
    return DIST / np.tensordot(NORMAL, ray, 1)


def plane_depth_image(size, encoding, holes=0.1, seed=0):
    """Render the plane as an aligned depth image of ``size`` (H, W), with holes."""
    h, w = size
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    # depth pixel centres in colour pixels
    z = plane_z((u + 0.5) * COLOUR[1] / w - 0.5, (v + 0.5) * COLOUR[0] / h - 0.5)
    hole = np.random.default_rng(seed).random(size) < holes
    if encoding == '16UC1':
        img = np.round(z * 1000).astype(np.uint16)
        img[hole] = 0
    else:
        img = z.astype(np.float32)
        img[hole] = np.nan
    return img


def test_depth_encodings_and_errors():
    mm = depth_to_metres(np.array([[0, 1500]], np.uint16), '16UC1')
    assert torch.isnan(mm[0, 0]) and mm[0, 1].item() == pytest.approx(1.5)
    m = depth_to_metres(np.array([[np.inf, -1.0, 2.0]], np.float32), '32FC1')
    assert torch.isnan(m[0, :2]).all() and m[0, 2].item() == 2.0
    with pytest.raises(FrameError, match='encoding'):
        depth_to_metres(np.zeros((2, 2), np.uint8), 'mono8')
    with pytest.raises(FrameError, match='HxW'):
        depth_to_metres(np.zeros((0, 2), np.uint16), '16UC1')


def test_depth_at_ignores_holes_and_outliers():
    depth = torch.full((20, 20), 2.0)
    depth[10, 10] = float('nan')  # the keypoint's own pixel is a hole
    depth[9, 9] = 9.0  # a flying pixel
    z = depth_at(depth, torch.tensor([[10.0, 10.0], [-50.0, -50.0]]), (20, 20), window=5)
    assert z[0].item() == 2.0 and torch.isnan(z[1])  # far outside: no depth


@pytest.mark.parametrize('encoding,size', [('16UC1', (240, 320)), ('32FC1', (480, 640)),
                                           ('16UC1', (720, 1280))])
def test_keypoint_xyz_is_the_back_projection_of_the_plane(encoding, size):
    """Every finite keypoint XYZ is the plane point at its pixel within 1 cm at 2 m."""
    rng = np.random.default_rng(1)
    kps = rng.uniform([0, 0], [COLOUR[1] - 1, COLOUR[0] - 1], (3, 308, 2)).astype(np.float32)
    depth = depth_to_metres(plane_depth_image(size, encoding), encoding)
    xyz = keypoints_xyz(depth, kps, COLOUR, K)
    finite = np.isfinite(xyz).all(-1)
    assert finite.mean() > 0.99
    z = plane_z(kps[..., 0].astype(np.float64), kps[..., 1].astype(np.float64))
    truth = back_project(torch.as_tensor(kps), torch.as_tensor(z, dtype=torch.float32), K)
    assert np.abs(xyz - truth.numpy())[finite].max() < 0.01
    # the back-projection puts the points on the plane
    assert np.abs(xyz[finite] @ NORMAL - DIST).max() < 0.01 * np.linalg.norm(NORMAL)


def synthetic_pointmap(scale_true, rng, outliers=0.2):
    """Make a pointmap of the plane's foreground divided by ``scale_true``, with bad points."""
    v, u = np.mgrid[100:400:2, 200:450:2]
    pixels = np.stack([u.ravel(), v.ravel()], -1).astype(np.int32)
    z = plane_z(pixels[:, 0].astype(float), pixels[:, 1].astype(float))
    pts = back_project(torch.as_tensor(pixels, dtype=torch.float32),
                       torch.as_tensor(z, dtype=torch.float32), K).numpy() / scale_true
    pts = pts * rng.normal(1.0, 0.01, (len(pts), 1))  # 1 % model noise
    bad = rng.random(len(pts)) < outliers
    pts[bad] *= rng.uniform(0.3, 3.0, (int(bad.sum()), 1))
    xyz = np.full((COLOUR[0], COLOUR[1], 3), np.nan, np.float32)
    xyz[pixels[:, 1], pixels[:, 0]] = pts
    return PointmapResult(xyz, pts.astype(np.float32), np.zeros((len(pts), 3), np.uint8), None,
                          pixels, 1.0, 'predicted', 1)


def test_fitted_scale_makes_the_pointmap_match_the_plane():
    rng = np.random.default_rng(2)
    pm = synthetic_pointmap(1.7, rng)
    depth = depth_to_metres(plane_depth_image((240, 320), '16UC1'), '16UC1')
    scale = fit_depth_scale(pm.points[:, 2], pm.pixels, depth, COLOUR)
    assert scale == pytest.approx(1.7, rel=0.02)
    z = plane_z(pm.pixels[:, 0].astype(float), pm.pixels[:, 1].astype(float))
    assert np.median(np.abs(pm.points[:, 2] * scale / z - 1)) < 0.02
    assert fit_depth_scale(pm.points[:5, 2], pm.pixels[:5], depth, COLOUR) is None  # too few


def test_depth_scale_is_smoothed_and_its_variation_reported():
    rng = np.random.default_rng(3)
    ds = DepthScale(time_constant=0.5)
    raw_changes, smooth_changes = [], []
    for i in range(90):
        ds.update(1.5 * rng.normal(1.0, 0.05), i / 30)
        if i:
            raw_changes.append(ds.variation)
            smooth_changes.append(ds.smoothed_variation)
    assert ds.scale == pytest.approx(1.5, rel=0.03)
    assert np.mean(smooth_changes) < 0.2 * np.mean(raw_changes)
    assert ds.update(None, 3.1) == ds.scale  # no fit this frame: keep the scale
    ds.update(2.0, 0.0)  # time went back: restart from the new fit
    assert ds.scale == 2.0


def test_torso_pose_of_a_person_facing_the_camera():
    xyz = np.full((2, 308, 3), np.nan)
    # camera optical frame: x right, y down, z forward. Facing the camera, the person's left
    # is the camera's +x.
    xyz[0, 5], xyz[0, 6] = [0.2, -0.4, 2.0], [-0.2, -0.4, 2.0]  # left/right shoulder
    xyz[0, 9], xyz[0, 10] = [0.15, 0.1, 2.0], [-0.15, 0.1, 2.0]  # left/right hip
    xyz[1, 5], xyz[1, 9] = [1.0, 0.0, 3.0], [1.0, 0.5, 3.0]  # only two torso points
    pos, quat, valid = torso_poses(xyz)
    assert valid.tolist() == [True, True]
    assert np.allclose(pos[0], [0.0, -0.15, 2.0]) and np.allclose(pos[1], [1.0, 0.25, 3.0])
    rot = Rotation.from_quat(quat[0])
    assert np.allclose(rot.apply([1, 0, 0]), [0, 0, -1], atol=1e-6)  # x forward: to the camera
    assert np.allclose(rot.apply([0, 1, 0]), [1, 0, 0], atol=1e-6)  # y to the person's left
    assert np.allclose(rot.apply([0, 0, 1]), [0, -1, 0], atol=1e-6)  # z up
    assert np.allclose(quat[1], [0, 0, 0, 1])  # orientation unknown: identity


def frame_result(people_x, rng, pointmap):
    """Make a FrameResult with people whose torso keypoints sit around ``people_x``."""
    from test_tracking import person  # the tracker tests' synthetic person
    parts = [person((x, 250), (100, 260), rng) for x in people_x]
    pose = PoseResult(np.stack([p[1] for p in parts]).astype(np.float32),
                      np.stack([p[2] for p in parts]).astype(np.float32),
                      np.stack([p[0] for p in parts]).astype(np.float32),
                      np.ones(len(parts), np.float32))
    return FrameResult(COLOUR, pose=pose, pointmap=pointmap)


def test_people_state_with_depth(caplog):
    """Ids, smoothed keypoints, metric XYZ, torso poses and a fitted scale in one call."""
    rng = np.random.default_rng(4)
    state = PeopleState()
    depth = plane_depth_image((240, 320), '16UC1')
    ids = []
    for i in range(10):
        result = frame_result([200 + 3 * i, 430 - 3 * i], rng, synthetic_pointmap(1.7, rng))
        people = state.update(result, 10 + i / 30, depth=depth, K=K, depth_encoding='16UC1')
        ids.append(people.ids.tolist())
    assert all(row == ids[0] for row in ids) and len(set(ids[0])) == 2
    assert people.xyz_source == 'depth' and people.pointmap_scale == pytest.approx(1.7, rel=0.02)
    finite = np.isfinite(people.xyz).all(-1)
    assert finite.mean() > 0.95
    assert np.abs(people.xyz[finite] @ NORMAL - DIST).max() < 0.02  # smoothed, on the plane
    assert people.torso_valid.all() and np.isfinite(people.torso_position).all()
    assert np.abs(people.smoothed - people.keypoints).max() < 20
    assert state.diagnostics()['depth_scale'] == people.pointmap_scale
    with caplog.at_level(logging.WARNING, logger='sapiens_ros.core.people.state'):
        again = state.update(frame_result([200, 430], rng, None), 0.0)
    assert 'time jumped back' in caplog.text and state.resets == 1
    assert set(again.ids.tolist()).isdisjoint(ids[0])  # new ids after the reset
    assert again.xyz is None and not again.torso_valid.any()  # no depth, no pointmap: no 3D


def test_people_state_hidden_keypoints_get_no_xyz():
    rng = np.random.default_rng(5)
    result = frame_result([300], rng, None)
    result.pose.scores[0, :100] = 0.05
    people = PeopleState().update(result, 1.0, depth=plane_depth_image((480, 640), '32FC1'),
                                  K=K, depth_encoding='32FC1')
    assert np.isnan(people.xyz[0, :100]).all() and np.isfinite(people.xyz[0, 100:]).mean() > 0.9
    assert people.pointmap_scale is None  # no pointmap: nothing to fit
