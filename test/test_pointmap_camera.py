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

"""The pointmap grid's camera: the input's intrinsics strided, or the pointmap's own."""

import numpy as np
import pytest
from sapiens_ros.core.processing.heads.pointmap import PointmapResult
from sapiens_ros.core.processing.intrinsics import Intrinsics
from sapiens_ros.core.processing.pointmap_camera import (fitted_intrinsics, pointmap_intrinsics,
                                                         strided_intrinsics)


def pinhole(size, fx, fy, cx, cy, noise=0.0, seed=0):
    """Return a pointmap ``(H, W, 3)`` of a tilted plane seen by a pinhole camera."""
    h, w = size
    v, u = np.mgrid[0:h, 0:w].astype(np.float64)
    z = 2.0 + 0.002 * u - 0.001 * v
    xyz = np.stack([(u - cx) / fx * z, (v - cy) / fy * z, z], -1)
    xyz += np.random.default_rng(seed).normal(0, noise, xyz.shape)
    return xyz.astype(np.float32)


def test_strided_grid_of_the_input_camera():
    pm = PointmapResult(pinhole((60, 80), 1, 1, 0, 0), np.zeros((0, 3)), np.zeros((0, 3)),
                        None, np.zeros((0, 2)), 1.0, 'calibrated', stride=4)
    grid = pointmap_intrinsics(pm, Intrinsics(600.0, 610.0, 319.5, 239.5))
    assert grid == Intrinsics(150.0, 152.5, 79.875, 59.875)
    assert strided_intrinsics(Intrinsics(1, 2, 3, 4), 1) == Intrinsics(1, 2, 3, 4)


def test_fit_recovers_a_pinhole_pointmap_and_tolerates_noise_and_holes():
    xyz = pinhole((384, 512), 410.0, 405.0, 250.0, 190.0)
    got = fitted_intrinsics(xyz)
    assert (got.fx, got.fy, got.cx, got.cy) == pytest.approx((410, 405, 250, 190), rel=1e-4)
    noisy = pinhole((384, 512), 410.0, 405.0, 250.0, 190.0, noise=0.002)
    noisy[:100, :100] = np.nan  # holes and points behind the camera are left out
    noisy[300:, 400:, 2] = -1.0
    got = fitted_intrinsics(noisy)
    assert (got.fx, got.fy, got.cx, got.cy) == pytest.approx((410, 405, 250, 190), rel=0.02)


def test_no_fit_from_degenerate_pointmaps():
    assert fitted_intrinsics(np.full((10, 10, 3), np.nan, np.float32)) is None
    flat = np.zeros((10, 10, 3), np.float32)
    flat[..., 2] = 1.0  # every ray the same: no focal length
    assert fitted_intrinsics(flat) is None
    mirrored = pinhole((20, 30), -100.0, 100.0, 15, 10)  # x grows to the left
    assert fitted_intrinsics(mirrored) is None


def test_the_camera_fits_once_per_grid_size_and_strides_an_input_camera():
    from sapiens_ros.core.processing.pointmap_camera import PointmapCamera

    def result(xyz, stride=1):
        return PointmapResult(xyz, np.zeros((0, 3)), np.zeros((0, 3)), None, np.zeros((0, 2)),
                              1.0, 'predicted', stride=stride)

    camera = PointmapCamera()
    camera.retry_after = 2
    assert camera.intrinsics(result(np.full((30, 40, 3), np.nan, np.float32))) is None
    good = result(pinhole((30, 40), 50.0, 52.0, 20.0, 15.0))
    assert camera.intrinsics(good) is None and camera.intrinsics(good) is None  # waits 2 frames
    first = camera.intrinsics(good)  # then fits again
    assert (first.fx, first.cy) == pytest.approx((50.0, 15.0), rel=1e-4)
    # the same grid size: the kept fit, whatever the rays of this frame
    assert camera.intrinsics(result(pinhole((30, 40), 70.0, 70.0, 20.0, 15.0))) == first
    other = camera.intrinsics(result(pinhole((60, 80), 70.0, 70.0, 40.0, 30.0)))
    assert other.fx == pytest.approx(70.0, rel=1e-4)  # a new size is fitted
    given = Intrinsics(600.0, 610.0, 319.5, 239.5)
    assert camera.intrinsics(result(pinhole((30, 40), 1, 1, 0, 0), 4), given) == \
        strided_intrinsics(given, 4)
