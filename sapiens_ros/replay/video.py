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

"""``--video``: side-by-side overlays (skeleton, segmentation, normals, depth) into an mp4."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from ..core.pipeline import FrameResult
from ..core.visualize import depth_colors, draw_skeleton, normal_colors, seg_overlay


def panels(image_rgb: np.ndarray, result: FrameResult, threshold: float = 0.3) -> list:
    """Return the overlays one frame can show, each HxWx3 RGB at the frame's size."""
    out = []
    if result.pose is not None:
        pose = result.pose
        out.append(draw_skeleton(image_rgb, pose.keypoints, pose.scores, pose.boxes, threshold))
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


class VideoOut:
    """An mp4 (``mp4v``) of side-by-side panels; the size is fixed by the first frame."""

    def __init__(self, path: str | Path, fps: float = 10.0, height: int = 360) -> None:
        self.path = Path(path)
        self.fps = float(min(max(fps, 1.0), 60.0))
        self.height = height
        self.frames = 0
        self._writer = None
        self._size: tuple[int, int] | None = None

    def write(self, image_rgb: np.ndarray, result: FrameResult) -> None:
        """Add one frame's panels, scaled to the video height and joined left to right."""
        scale = self.height / image_rgb.shape[0]
        width = max(2, int(round(image_rgb.shape[1] * scale / 2)) * 2)
        tiles = [cv2.resize(p, (width, self.height), interpolation=cv2.INTER_AREA)
                 for p in panels(image_rgb, result)]
        canvas = np.concatenate(tiles, axis=1)
        if self._writer is None:
            self._size = (canvas.shape[1], canvas.shape[0])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = cv2.VideoWriter(str(self.path), cv2.VideoWriter_fourcc(*'mp4v'),
                                           self.fps, self._size)
            if not self._writer.isOpened():
                raise OSError(f'OpenCV cannot write {self.path} (mp4v)')
        if (canvas.shape[1], canvas.shape[0]) != self._size:
            canvas = cv2.resize(canvas, self._size, interpolation=cv2.INTER_AREA)
        self._writer.write(np.ascontiguousarray(canvas[..., ::-1]))
        self.frames += 1

    def close(self) -> None:
        """Finish the file."""
        if self._writer is not None:
            self._writer.release()
            self._writer = None
