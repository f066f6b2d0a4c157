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
The pinhole camera of the pointmap grid, so its depth image can be back-projected by others.

Pixel ``(j, i)`` of the ``stride``-strided pointmap grid is image pixel ``(j * stride,
i * stride)`` (pixel centres at integers), so the image's intrinsics divide by the stride.
Without them, the intrinsics are the pointmap's own: the least-squares pinhole fit of its
rays, ``u = fx * x / z + cx``, ``v = fy * y / z + cy``, over the grid.
"""

from __future__ import annotations

import numpy as np

from .heads.pointmap import PointmapResult
from .intrinsics import Intrinsics

#: Points the pinhole fit of a pointmap uses at most (an evenly strided subset).
MAX_FIT_POINTS = 40000


def strided_intrinsics(image: Intrinsics, stride: int) -> Intrinsics:
    """Return the image's intrinsics on the grid of every ``stride``-th pixel."""
    s = float(stride)
    return Intrinsics(image.fx / s, image.fy / s, image.cx / s, image.cy / s)


def fitted_intrinsics(xyz: np.ndarray) -> Intrinsics | None:
    """
    Least-squares pinhole intrinsics of a pointmap ``(H, W, 3)`` in its own grid pixels.

    Uses the finite points in front of the camera (on a grid of at most ``MAX_FIT_POINTS``);
    None with fewer than 3 of them or a degenerate fit (no spread of x/z or y/z, or a
    non-positive focal length).
    """
    h, w = xyz.shape[:2]
    step = max(1, int(np.sqrt(h * w / MAX_FIT_POINTS)))
    xyz = np.asarray(xyz[::step, ::step], np.float64)
    v, u = np.mgrid[0:h:step, 0:w:step]
    z = xyz[..., 2]
    ok = np.isfinite(xyz).all(-1) & (z > 0)
    if ok.sum() < 3:
        return None
    fits = []
    for pixel, ratio in ((u[ok], xyz[..., 0][ok] / z[ok]), (v[ok], xyz[..., 1][ok] / z[ok])):
        spread = ratio.var()
        if not spread > 1e-12:
            return None
        f = ((ratio - ratio.mean()) * (pixel - pixel.mean())).mean() / spread
        fits.append((f, pixel.mean() - f * ratio.mean()))
    (fx, cx), (fy, cy) = fits
    if not (fx > 0 and fy > 0):
        return None
    return Intrinsics(float(fx), float(fy), float(cx), float(cy))


def pointmap_intrinsics(pointmap: PointmapResult,
                        image: Intrinsics | None = None) -> Intrinsics | None:
    """Intrinsics of the pointmap grid: ``image``'s strided, else the pointmap's own fit."""
    if image is not None:
        return strided_intrinsics(image, pointmap.stride)
    return fitted_intrinsics(pointmap.xyz)


class PointmapCamera:
    """
    One camera's pointmap grid intrinsics, fitted once per grid size.

    The head predicts its rays in a canonical camera fixed by the frame's geometry (size,
    letterbox, stride), not by the scene, so the fit of the first pointmap with usable rays
    holds for every later frame of that size. A pointmap without usable rays (an untrained
    head) gives None, and its grid size is fitted again only after :attr:`retry_after` more
    frames. With the input camera_info's intrinsics, those are strided instead (nothing to fit).
    """

    retry_after = 30  # frames of a grid size without a fit before fitting it again

    def __init__(self) -> None:
        self._fits: dict[tuple[int, int, int], Intrinsics] = {}
        self._wait: dict[tuple[int, int, int], int] = {}  # frames until the next try

    def intrinsics(self, pointmap: PointmapResult,
                   image: Intrinsics | None = None) -> Intrinsics | None:
        """Intrinsics of ``pointmap``'s grid (:func:`pointmap_intrinsics`, fits cached)."""
        if image is not None:
            return strided_intrinsics(image, pointmap.stride)
        key = (*pointmap.xyz.shape[:2], pointmap.stride)
        if key in self._fits:
            return self._fits[key]
        if self._wait.get(key, 0) > 0:
            self._wait[key] -= 1
            return None
        fit = fitted_intrinsics(pointmap.xyz)
        if fit is None:
            self._wait[key] = self.retry_after
            return None
        self._fits[key] = fit
        return fit


__all__ = ['PointmapCamera', 'fitted_intrinsics', 'pointmap_intrinsics', 'strided_intrinsics']
