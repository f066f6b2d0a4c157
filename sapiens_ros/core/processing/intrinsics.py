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

"""Pinhole intrinsics from a camera's K matrix, validated before anything is computed with them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import math

from ..errors import FrameError

#: A focal length above this many image widths is a corrupt K (a field of view under 0.06 deg).
MAX_FOCAL_WIDTHS = 1000.0


@dataclass(frozen=True)
class Intrinsics:
    """Focal lengths and principal point in pixels of the image they describe."""

    fx: float
    fy: float
    cx: float
    cy: float

    @classmethod
    def from_k(cls, k: Sequence[float], info_size: tuple[int, int],
               image_size: tuple[int, int]) -> Intrinsics:
        """
        Validate the row-major 3x3 ``k`` of a ``(height, width)`` camera for an image of that size.

        ``info_size`` is the calibrated size (``(0, 0)`` when the camera does not say). Raises
        :class:`FrameError` naming the bad entry: non-finite or non-positive focal lengths, an
        implausible focal length, a principal point far outside the image, or another size.
        """
        if len(k) != 9:
            raise FrameError(f'camera_info K must have 9 entries, got {len(k)}')
        h, w = image_size
        if all(info_size) and tuple(info_size) != (h, w):
            raise FrameError(f'camera_info is for {info_size[1]}x{info_size[0]} but the image is '
                             f'{w}x{h}')
        fx, fy, cx, cy = (float(k[0]), float(k[4]), float(k[2]), float(k[5]))
        for name, f in (('K[0] (fx)', fx), ('K[4] (fy)', fy)):
            if not math.isfinite(f) or f <= 0:
                raise FrameError(f'camera_info {name} must be a positive focal length, got {f}')
            if f > MAX_FOCAL_WIDTHS * max(h, w):
                raise FrameError(f'camera_info {name} = {f:g} px is implausible for a {w}x{h} '
                                 f'image (over {MAX_FOCAL_WIDTHS:g} image widths)')
        for name, c, size in (('K[2] (cx)', cx, w), ('K[5] (cy)', cy, h)):
            if not math.isfinite(c) or not -size <= c <= 2 * size:
                raise FrameError(f'camera_info {name} = {c} is not a principal point of a '
                                 f'{w}x{h} image')
        return cls(fx, fy, cx, cy)
