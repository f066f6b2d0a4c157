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

"""``--video``: side-by-side overlays (skeleton with track ids, seg, normals, depth), mp4."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from ..core.media.video import Mp4Writer
from ..core.media.visualize import depth_colors, draw_skeleton, normal_colors, seg_overlay
from ..core.people.state import People
from ..core.pipeline.pipeline import FrameResult


def panels(image_rgb: np.ndarray, result: FrameResult, people: People | None = None,
           threshold: float = 0.3) -> list:
    """Return the overlays one frame can show, each HxWx3 RGB at the frame's size."""
    out = []
    if result.pose is not None:
        pose = result.pose
        keypoints, ids = pose.keypoints, None
        if people is not None and len(people) == len(pose.boxes):
            keypoints, ids = people.smoothed, people.ids
        out.append(draw_skeleton(image_rgb, keypoints, pose.scores, pose.boxes, threshold,
                                 ids=ids))
    else:
        out.append(image_rgb)
    if result.seg is not None:
        out.append(seg_overlay(image_rgb, result.seg.labels))
    if result.normal is not None:
        out.append(normal_colors(result.normal.normals))
    if result.pointmap is not None:
        depth = depth_colors(result.pointmap.xyz[..., 2])
        out.append(cv2.resize(depth, image_rgb.shape[1::-1], interpolation=cv2.INTER_NEAREST))
    return out


class VideoOut(Mp4Writer):
    """An mp4 of side-by-side panels, ``height`` pixels high."""

    def __init__(self, path: str | Path, fps: float = 10.0, height: int = 360) -> None:
        super().__init__(path, min(fps, 60.0))
        self.height = height

    def write_panels(self, image_rgb: np.ndarray, result: FrameResult,
                     people: People | None = None) -> None:
        """Add one frame's panels, scaled to the video height and joined left to right."""
        scale = self.height / image_rgb.shape[0]
        width = max(2, int(round(image_rgb.shape[1] * scale / 2)) * 2)
        tiles = [cv2.resize(p, (width, self.height), interpolation=cv2.INTER_AREA)
                 for p in panels(image_rgb, result, people)]
        self.write(np.concatenate(tiles, axis=1))
