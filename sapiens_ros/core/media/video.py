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

"""Video files in and out (OpenCV), ROS-free: frames of a clip, overlays into an mp4."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np

from ..errors import SapiensError


class SourceError(SapiensError, ValueError):
    """A video (or other frame source) that does not exist or holds no images."""


def video_frames(path: str | Path) -> Iterator[np.ndarray]:
    """Yield BGR frames from a video file (OpenCV)."""
    cap = cv2.VideoCapture(str(path))
    if not cap.isOpened():
        raise SourceError(f'cannot open video {str(path)!r}')
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                return
            yield frame
    finally:
        cap.release()


def video_fps(path: str | Path, default: float = 30.0) -> float:
    """Return the frame rate a video file declares, or ``default`` when it declares none."""
    cap = cv2.VideoCapture(str(path))
    try:
        fps = float(cap.get(cv2.CAP_PROP_FPS)) if cap.isOpened() else 0.0
    finally:
        cap.release()
    return fps if 0.0 < fps < 1000.0 else default


def open_video(path: str | Path) -> tuple[float, Iterator[np.ndarray]]:
    """
    Return the frame rate and BGR frames of a video file, its first frame already decoded.

    Raises :class:`SourceError` when OpenCV cannot open it or it holds no decodable frame.
    """
    frames = video_frames(path)
    first = next(frames, None)  # opens the file (SourceError) and proves a frame decodes
    if first is None:
        raise SourceError(f'{str(path)!r} holds no frames OpenCV can decode')

    def chained() -> Iterator[np.ndarray]:
        yield first
        yield from frames
    return video_fps(path), chained()


class Mp4Writer:
    """RGB frames into an ``mp4v`` file; the size is fixed by the first frame."""

    def __init__(self, path: str | Path, fps: float) -> None:
        self.path = Path(path)
        self.fps = float(min(max(fps, 1.0), 120.0))
        self.frames = 0
        self._writer = None
        self._size: tuple[int, int] | None = None

    def write(self, image_rgb: np.ndarray) -> None:
        """Append one frame (resized to the first frame's size if it differs)."""
        height, width = image_rgb.shape[:2]
        if self._writer is None:
            self._size = (width - width % 2, height - height % 2)  # mp4v wants even sizes
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = cv2.VideoWriter(str(self.path), cv2.VideoWriter_fourcc(*'mp4v'),
                                           self.fps, self._size)
            if not self._writer.isOpened():
                raise OSError(f'OpenCV cannot write {self.path} (mp4v)')
        if (width, height) != self._size:
            image_rgb = cv2.resize(image_rgb, self._size, interpolation=cv2.INTER_AREA)
        self._writer.write(np.ascontiguousarray(image_rgb[..., ::-1]))
        self.frames += 1

    def close(self) -> None:
        """Finish the file."""
        if self._writer is not None:
            self._writer.release()
            self._writer = None

    def __enter__(self) -> Mp4Writer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ['Mp4Writer', 'SourceError', 'open_video', 'video_fps', 'video_frames']
