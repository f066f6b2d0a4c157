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
The tests' pose model: keypoints where a test wants them (real weights cannot be had here).

A stand-in for the pose runner: it wraps the real runner (everything but the forward pass) and
returns heatmaps peaked at fixed places of each crop, so the node's own decoding, tracking,
depth and publishing run on keypoints the test knows. Say so in each test that uses it.
"""

import numpy as np
from sapiens_ros.core.models.metadata import keypoint_info
from sapiens_ros.core.people.synthetic import standing_body
from sapiens_ros.core.processing.heads.pose import gaussian_heatmaps
import torch


def standing_template(height: float = 0.7) -> dict[str, tuple[float, float]]:
    """
    Return every keypoint of a person facing the camera, as crop fractions (u right, v down).

    The synthetic standing body (``core.people.synthetic.standing_body``) seen from the front,
    ``height`` of the crop tall, centred: its left is the image's right.
    """
    body = standing_body(0)  # x forward, y left, z up; origin mid-hips
    top, bottom = body[:, 2].max(), body[:, 2].min()
    scale = height / (top - bottom)
    u = 0.5 + body[:, 1] * scale  # facing the camera: the person's left is the image's right
    v = 0.5 - (body[:, 2] - (top + bottom) / 2) * scale
    names = keypoint_info().names
    return {n: (float(a), float(b)) for n, a, b in zip(names, u, v, strict=True)}


class TemplatePose:
    """Heatmaps peaked at ``places`` (keypoint name: crop fraction u, v); others at the centre."""

    def __init__(self, runner, places: dict[str, tuple[float, float]]) -> None:
        self._runner = runner
        names = keypoint_info().names
        self.template = np.full((len(names), 2), 0.5)
        for name, at in places.items():
            self.template[names.index(name)] = at

    def __getattr__(self, name):
        return getattr(self._runner, name)

    def __call__(self, crops: torch.Tensor) -> dict:
        h, w = crops.shape[-2] // 4, crops.shape[-1] // 4
        centres = torch.as_tensor(self.template * [w - 1, h - 1], dtype=torch.float32)
        return {'heatmaps': gaussian_heatmaps(centres.expand(len(crops), -1, -1), (h, w))}
