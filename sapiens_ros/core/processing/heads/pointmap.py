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

"""Pointmap: metric XYZ per pixel, from the predicted scale or a calibrated focal length."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..letterbox import Letterbox, sample_map

#: Focal length (model-input pixels) of the canonical camera the pointmap head predicts in.
CANONICAL_FOCAL = 768.0


@dataclass
class PointmapResult:
    """Metric geometry of one frame (camera frame: x right, y down, z forward, metres)."""

    xyz: np.ndarray  # (Hs, Ws, 3) float32 at every ``stride``-th image pixel
    points: np.ndarray  # (N, 3) float32 kept points (foreground only when a mask was used)
    colors: np.ndarray  # (N, 3) uint8 RGB of the kept points
    labels: np.ndarray | None  # (N,) uint8 seg classes of the kept points, when seg ran
    pixels: np.ndarray  # (N, 2) int32 image pixel (x, y) of each kept point
    scale: float  # the scale that XYZ was divided by
    scale_source: str  # 'predicted', 'calibrated' or 'none'
    stride: int

    @property
    def depth(self) -> np.ndarray:
        """``(Hs, Ws)`` float32 z in metres."""
        return self.xyz[..., 2]


def calibrated_scale(fx: float, letterbox: Letterbox) -> float:
    """Return the scale of a camera with focal length ``fx`` (image pixels): ``768 / (fx * r)``."""
    return CANONICAL_FOCAL / (float(fx) * letterbox.ratio)


def metric_xyz(pointmap: torch.Tensor, letterbox: Letterbox, scale: torch.Tensor | float,
               stride: int = 1) -> torch.Tensor:
    """``(Hs, Ws, 3)`` metric XYZ: the head output ``(3, h, w)`` / scale, at the frame pixels."""
    xyz = sample_map(pointmap.float(), letterbox, stride=stride)
    return (xyz / scale).permute(1, 2, 0)
