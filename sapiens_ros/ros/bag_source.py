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
Play a recorded camera from a bag: colour frames with the depth and camera_info recorded beside.

The sample camera uses it for photos-free demos of RGB-D recordings (a RealSense/ZED/Kinect bag
with ``.../color/image_raw``, ``.../aligned_depth_to_color/image_raw`` and ``camera_info``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

from ..core.media.video import SourceError

_IMAGE_TYPES = {'sensor_msgs/msg/Image': Image, 'sensor_msgs/msg/CompressedImage': CompressedImage}
_INFO_TYPE = 'sensor_msgs/msg/CameraInfo'


@dataclass(frozen=True)
class BagTopics:
    """The topics of one camera in a bag; ``depth``/``camera_info`` None when not recorded."""

    image: str
    depth: str | None = None
    camera_info: str | None = None
    cameras: tuple[str, ...] = ()  # every colour image topic of the bag (``image`` among them)

    def describe(self, source: str) -> str:
        """Say which camera of ``source`` plays, and the others there are to choose from."""
        others = [t for t in self.cameras if t != self.image]
        text = f'playing {self.image} from {source}'
        if others:
            text += (f' ({len(self.cameras)} camera topics; the others: {", ".join(others)}; '
                     f'choose with --topic)')
        return text


def _camera_base(topic: str) -> str:
    """``/cam/color/image_raw[/compressed]`` -> ``/cam/color``."""
    parts = topic.rstrip('/').split('/')
    if parts[-1] == 'compressed':
        parts = parts[:-1]
    return '/'.join(parts[:-1])


def bag_topics(path: str | Path, image: str = '', depth: str = '') -> BagTopics:
    """
    Pick one camera's colour, depth and camera_info topics in a bag.

    Colour: ``image``, or the first image topic not named like depth. Depth: ``depth``, or the
    first Image topic with "depth" in its name (``'none'``: no depth). camera_info: the one
    beside the colour topic, else the first one not for depth.

    Raises :class:`SourceError` when the bag has no such colour topic or is unreadable.
    """
    from rosbags.highlevel import AnyReader

    try:
        with AnyReader([Path(path)]) as reader:
            conns = {c.topic: c.msgtype for c in reader.connections}
    except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds on a bad bag
        raise SourceError(f'cannot read the bag {str(path)!r}: {exc}') from exc
    images = [t for t, m in conns.items() if m in _IMAGE_TYPES]
    colour = [t for t in images if 'depth' not in t.lower()] or images
    if image:
        if conns.get(image) not in _IMAGE_TYPES:
            raise SourceError(f'{path} has no sensor_msgs Image/CompressedImage topic {image}; '
                              f'its image topics: {", ".join(images) or "none"}')
    else:
        if not colour:
            raise SourceError(f'{path} has no sensor_msgs Image/CompressedImage topic')
        image = colour[0]
    if depth == 'none':
        depth = None
    elif depth:
        if conns.get(depth) != 'sensor_msgs/msg/Image':
            raise SourceError(f'{path} has no sensor_msgs/Image depth topic {depth}')
    else:
        depth = next((t for t in images if t != image and 'depth' in t.lower() and
                      conns[t] == 'sensor_msgs/msg/Image'), None)
    infos = [t for t, m in conns.items() if m == _INFO_TYPE]
    beside = f'{_camera_base(image)}/camera_info'
    info = beside if beside in infos else next(
        (t for t in infos if 'depth' not in t.lower()), None)
    return BagTopics(image, depth, info, tuple(colour))


def bag_bundles(path: str | Path, topics: BagTopics) -> Iterator[list[tuple[str, object]]]:
    """
    Yield, per colour frame, it and the messages recorded after it until the next one.

    Each bundle is a list of ``(kind, message)`` in bag order with exactly one kind ``'image'``
    (first, except in the first bundle, which also holds what was recorded before the first
    frame), and ``'depth'`` / ``'camera_info'`` messages: a depth image recorded just after its
    colour frame is in that frame's bundle. Messages are rclpy messages, recorded headers kept.
    """
    from rosbags.highlevel import AnyReader

    kinds = {topics.image: 'image', topics.depth: 'depth', topics.camera_info: 'camera_info'}
    with AnyReader([Path(path)]) as reader:
        conns = [c for c in reader.connections if c.topic in kinds]
        bundle: list[tuple[str, object]] = []
        for conn, _, raw in reader.messages(connections=conns):
            cdr = raw if reader.is2 else reader.typestore.ros1_to_cdr(raw, conn.msgtype)
            kind = kinds[conn.topic]
            if kind == 'image' and any(k == 'image' for k, _ in bundle):
                yield bundle
                bundle = []
            msg_type = CameraInfo if kind == 'camera_info' else _IMAGE_TYPES[conn.msgtype]
            bundle.append((kind, deserialize_message(bytes(cdr), msg_type)))
        if any(k == 'image' for k, _ in bundle):
            yield bundle


__all__ = ['BagTopics', 'bag_bundles', 'bag_topics']
