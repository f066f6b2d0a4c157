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

"""Each camera topic's latest ``camera_info`` in a bag: its K, for metric 3D and triangulation."""

from __future__ import annotations

from pathlib import PurePosixPath

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo


def info_topic(image_topic: str) -> str:
    """Return the camera_info topic beside an image topic (``/cam/image_raw`` -> ``/cam/...``)."""
    parent = PurePosixPath(image_topic).parent
    if parent.name == 'compressed':  # /cam/image/compressed
        parent = parent.parent
    return str(parent / 'camera_info')


class CameraInfos:
    """The K of each camera topic, from the ``camera_info`` beside it, as the bag plays."""

    def __init__(self, bag, cameras: list[str]) -> None:
        names = {c.topic for c in bag.connections}
        #: camera_info topic -> its image topic, for the cameras that have one
        self.topics = {info_topic(t): t for t in cameras if info_topic(t) in names}
        self._k: dict[str, np.ndarray] = {}

    def add(self, topic: str, raw: bytes) -> None:
        """Keep the newest valid K of the camera whose camera_info ``topic`` this is."""
        info = deserialize_message(raw, CameraInfo)
        k = np.asarray(info.k, np.float64).reshape(3, 3)
        if np.isfinite(k).all() and k[0, 0] > 0 and k[1, 1] > 0:
            self._k[self.topics[topic]] = k

    def k(self, camera: str) -> np.ndarray | None:
        """Return a camera's 3x3 K, or None before its first valid camera_info."""
        return self._k.get(camera)

    def focal_length(self, camera: str) -> float | None:
        """Return a camera's calibrated fx (pixels), or None before its first camera_info."""
        k = self._k.get(camera)
        return None if k is None else float(k[0, 0])


__all__ = ['CameraInfos', 'info_topic']
