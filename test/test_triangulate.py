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

"""Multi-view triangulation on synthetic rigs: 640x480 cameras, f = 600 px, a person 3 m away."""

import math

import numpy as np
import pytest
from sapiens_ros.core.people.triangulate import (look_at, project_points, projection_matrix,
                                                 triangulate)

K = np.array([[600.0, 0.0, 319.5], [0.0, 600.0, 239.5], [0.0, 0.0, 1.0]])
TARGET = np.array([0.0, 0.0, 1.0])  # the person's centre, world z up
JOINTS = 308


def skeleton(seed: int = 0) -> np.ndarray:
    """Return a ``(308, 3)`` cloud filling a standing person's box (0.3 x 0.6 x 1.7 m)."""
    rng = np.random.default_rng(seed)
    return TARGET + rng.uniform(-0.5, 0.5, (JOINTS, 3)) * [0.3, 0.6, 1.7]


def rig(azimuths_deg, distances=None, target=TARGET) -> np.ndarray:
    """``(V, 3, 4)`` projections of cameras on a horizontal circle, all looking at ``target``."""
    distances = distances or [3.0] * len(azimuths_deg)
    poses = [look_at(target + r * np.array([math.cos(math.radians(a)),
                                            math.sin(math.radians(a)), 0.0]), target)
             for a, r in zip(azimuths_deg, distances, strict=True)]
    return np.stack([projection_matrix(K, pose) for pose in poses])


def rms_cm(projections, noise_px, trials=10, seed=1, **kwargs) -> float:
    """RMS 3D error (cm) over joints and trials with Gaussian pixel noise on every keypoint."""
    xyz = skeleton()
    pixels = project_points(projections, xyz)
    scores = np.ones(pixels.shape[:2])
    rng = np.random.default_rng(seed)
    squared = [((triangulate(pixels + rng.normal(0.0, noise_px, pixels.shape), scores,
                             projections, **kwargs).xyz - xyz) ** 2).sum(1)
               for _ in range(trials)]
    return 100.0 * float(np.sqrt(np.mean(squared)))


def test_conventions_optical_frame_and_pixel_centres():
    pose = look_at([3.0, 0.0, 1.0], TARGET)  # looking along world -x, z up
    np.testing.assert_allclose(pose[:3, 2], [-1.0, 0.0, 0.0])  # optical z forward
    np.testing.assert_allclose(pose[:3, 1], [0.0, 0.0, -1.0])  # optical y down
    proj = projection_matrix(K, pose)[None]
    # On the optical axis -> (cx, cy); the pixel-centre convention of CameraInfo and letterbox.
    np.testing.assert_allclose(project_points(proj, TARGET[None])[0, 0], [319.5, 239.5])
    right, down = project_points(proj, np.array([pose[:3, 3] + 3 * pose[:3, 2] + pose[:3, 0],
                                                 pose[:3, 3] + 3 * pose[:3, 2] + pose[:3, 1]]))[0]
    np.testing.assert_allclose(right, [319.5 + 200.0, 239.5])
    np.testing.assert_allclose(down, [319.5, 239.5 + 200.0])


@pytest.mark.parametrize('baseline', [15, 30, 60, 90])
@pytest.mark.parametrize('refine', [0, 1, 3])
def test_exact_without_noise(baseline, refine):
    projections = rig([-baseline / 2, baseline / 2])
    xyz = skeleton()
    pixels = project_points(projections, xyz)
    assert (pixels >= -0.5).all() and (pixels[..., 0] <= 639.5).all() \
        and (pixels[..., 1] <= 479.5).all()  # the whole person is in both images
    result = triangulate(pixels, np.ones((2, JOINTS)), projections, refine_iterations=refine)
    assert result.valid.all()
    assert np.abs(result.xyz - xyz).max() < 1e-6
    assert result.error_px.max() < 1e-6


def test_exact_far_from_the_origin_and_for_any_projection_scale():
    offset = np.array([1200.0, -800.0, 30.0])  # a map frame with its origin a km away
    projections = rig([-30, 30, 80], target=TARGET + offset)
    projections = projections * np.array([1e-3, -2.0, 40.0])[:, None, None]  # P ~ s P, s < 0 too
    xyz = skeleton() + offset
    result = triangulate(project_points(projections, xyz), np.ones((3, JOINTS)), projections)
    assert result.valid.all()
    assert np.abs(result.xyz - xyz).max() < 1e-6


def test_one_pixel_noise_at_60_degrees_is_what_the_geometry_allows():
    # Each camera fixes the two directions across its ray to sigma = range * 1 px / f = 5 mm.
    # With rays +-30 deg off the bisector: vertical sigma / sqrt(2), across sigma / (sqrt(2)
    # cos 30), along sigma / (sqrt(2) sin 30), so the 3D RMS is about 1.78 sigma = 0.89 cm.
    sigma = 3.0 * 1.0 / 600.0
    expected = 100.0 * sigma * math.sqrt(0.5 + 0.5 / math.cos(math.radians(30)) ** 2
                                         + 0.5 / math.sin(math.radians(30)) ** 2)
    measured = rms_cm(rig([-30, 30]), 1.0)
    assert measured == pytest.approx(expected, rel=0.15)
    assert measured <= 2.0  # the goal: <= 2 cm RMS at 3 m, 1 px, 60 degrees


def test_more_views_are_better_and_refining_pays_with_unequal_ranges():
    two = rms_cm(rig([-30, 30]), 1.0)  # 0.89 cm
    assert rms_cm(rig([-30, 0, 30]), 1.0) < 0.97 * two  # 0.83: little new on the depth axis
    assert rms_cm(rig([-30, 30, 90]), 1.0) < 0.8 * two  # 0.64
    assert rms_cm(rig([-30, 30, 90, 150]), 1.0) < 0.7 * two  # 0.56
    # Equal ranges: the DLT's algebraic error is the reprojection error up to one factor, so
    # refining changes nothing; cameras at 2..8 m weigh the far views too much in the DLT.
    assert rms_cm(rig([-30, 30]), 1.0, refine_iterations=1) \
        <= 1.01 * rms_cm(rig([-30, 30]), 1.0, refine_iterations=0)
    unequal = rig([-60, -20, 20, 60], [2.0, 3.0, 5.0, 8.0])
    assert rms_cm(unequal, 1.0, refine_iterations=1) \
        < 0.85 * rms_cm(unequal, 1.0, refine_iterations=0)


def test_scores_weight_the_views():
    # Noise whose deviation goes as 1 / score: weighting by score is then inverse-variance.
    projections = rig([-30, 30, 90])
    xyz = skeleton()
    pixels = project_points(projections, xyz)
    scores = np.random.default_rng(4).uniform(0.3, 1.0, (3, JOINTS))
    rng = np.random.default_rng(5)
    weighted, equal = [], []
    for _ in range(10):
        noisy = pixels + rng.normal(0.0, 1.0, pixels.shape) / scores[..., None]
        weighted.append(((triangulate(noisy, scores, projections).xyz - xyz) ** 2).sum(1))
        equal.append(((triangulate(noisy, np.ones_like(scores), projections).xyz - xyz) ** 2)
                     .sum(1))
    assert np.sqrt(np.mean(weighted)) < 0.95 * np.sqrt(np.mean(equal))  # 1.05 vs 1.16 cm


def test_low_score_and_missing_views_are_left_out():
    projections = rig([-30, 30, 90])
    xyz = skeleton()
    pixels = project_points(projections, xyz)
    noisy = pixels + np.random.default_rng(2).normal(0.0, 1.0, pixels.shape)
    corrupted = noisy.copy()
    corrupted[2] += 80.0  # the third view is wrong...
    scores = np.ones((3, JOINTS))
    scores[2, ::2] = 0.1  # ...but below min_score for the even joints
    scores[2, 1::2] = np.nan  # and unscored for the odd ones
    missing = noisy.copy()
    missing[2] = np.nan  # a view without keypoints
    # The DLT is the same in any world frame, so the third camera's share in the normalisation
    # changes nothing; one refining step stops within a micron of the optimum.
    for refine, atol in ((0, 1e-9), (1, 1e-6)):
        two = triangulate(noisy[:2], np.ones((2, JOINTS)), projections[:2],
                          refine_iterations=refine)
        assert two.valid.all()
        for pixels, weights in ((corrupted, scores), (missing, np.ones((3, JOINTS)))):
            result = triangulate(pixels, weights, projections, refine_iterations=refine)
            assert result.valid.all()
            np.testing.assert_allclose(result.xyz, two.xyz, rtol=0, atol=atol)


def test_joints_seen_by_one_view_are_invalid():
    projections = rig([-30, 30])
    pixels = project_points(projections, skeleton())
    scores = np.ones((2, JOINTS))
    scores[1, :100] = 0.0
    result = triangulate(pixels, scores, projections)
    assert not result.valid[:100].any() and result.valid[100:].all()
    assert np.isnan(result.xyz[:100]).all() and np.isnan(result.error_px[:100]).all()
    assert not triangulate(pixels, np.ones((2, JOINTS)), projections, min_views=3).valid.any()


def test_a_point_behind_a_camera_is_invalid():
    projections = rig([-30, 30])
    xyz = skeleton()
    # A third camera between the person and the second one, looking away from the person: the
    # points project through its (negative-depth) rays onto pixels that are consistent.
    eye = TARGET + 1.5 * np.array([math.cos(math.radians(30)), math.sin(math.radians(30)), 0.0])
    away = projection_matrix(K, look_at(eye, 2 * eye - TARGET))[None]
    projections = np.concatenate([projections, away])
    pixels = project_points(projections, xyz)
    result = triangulate(pixels, np.ones((3, JOINTS)), projections)
    assert not result.valid.any() and np.isnan(result.xyz).all()
    assert triangulate(pixels[:2], np.ones((2, JOINTS)), projections[:2]).valid.all()


def test_a_tiny_baseline_is_invalid_not_garbage():
    # Two cameras 1 cm apart 3 m from the person: parallax 0.2 deg, so 1 px of noise moves a
    # joint by about range / (f * parallax) = 1.5 m along the rays.
    projections = rig([-0.1, 0.1])
    xyz = skeleton()
    pixels = project_points(projections, xyz)
    noisy = pixels + np.random.default_rng(3).normal(0.0, 1.0, pixels.shape)
    scores = np.ones((2, JOINTS))
    assert not triangulate(noisy, scores, projections).valid.any()
    forced = triangulate(noisy, scores, projections, min_parallax_deg=0.0)
    errors = np.linalg.norm(forced.xyz - xyz, axis=1)
    assert np.nanmedian(errors) > 0.3  # what the parallax check keeps out
    # Cameras at one centre (a pure rotation) see no depth at all.
    same = np.stack([projection_matrix(K, look_at([3.0, 0.0, 1.0], TARGET + [0, d, 0]))
                     for d in (-0.2, 0.2)])
    assert not triangulate(project_points(same, xyz), scores, same,
                           min_parallax_deg=0.0).valid.any()


def test_max_error_rejects_a_mismatched_view():
    projections = rig([-45, 0, 45])
    pixels = project_points(projections, skeleton())
    pixels[1, :10] += [40.0, 0.0]  # another person's keypoints in the middle view
    result = triangulate(pixels, np.ones((3, JOINTS)), projections, max_error_px=5.0)
    assert not result.valid[:10].any() and result.valid[10:].all()
    assert result.error_px[10:].max() < 1e-6


def test_shapes():
    projections = rig([-30, 30])
    empty = triangulate(np.zeros((2, 0, 2)), np.zeros((2, 0)), projections)
    assert empty.xyz.shape == (0, 3) and empty.valid.shape == (0,) and empty.error_px.shape == (0,)
    pixels = project_points(projections, skeleton())
    for views in (0, 1):
        alone = triangulate(pixels[:views], np.ones((views, JOINTS)), projections[:views])
        assert alone.xyz.shape == (JOINTS, 3) and not alone.valid.any()
    with pytest.raises(ValueError, match='points'):
        triangulate(np.zeros((2, 5, 3)), np.zeros((2, 5)), projections)
    with pytest.raises(ValueError, match='projections'):
        triangulate(np.zeros((3, 5, 2)), np.zeros((3, 5)), projections)
    with pytest.raises(ValueError, match='scores'):
        triangulate(np.zeros((2, 5, 2)), np.zeros(10), projections)
