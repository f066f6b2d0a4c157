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
A stand-in camera: plays the sample photo, a video file or a bag's images at a fixed rate.

Publishes ``image`` (sensor_msgs/Image, bgr8) and ``camera_info`` with matching headers, so the
perception graph can be seen working without hardware.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from .messages import image_msg
from .node_params import declare_float
from .spin import run_node
from ..core.errors import SapiensError
from ..core.image_codec import decode_message


def bundled_photo() -> np.ndarray:
    """Return the sample photo (scikit-image's astronaut, as the CLI uses) as BGR uint8."""
    from ..core.sample_image import sample_image_path

    return cv2.imread(str(sample_image_path()), cv2.IMREAD_COLOR)


class SourceError(SapiensError, ValueError):
    """A sample camera source that does not exist or holds no images."""


def check_source(source: str, topic: str = '') -> None:
    """Raise :class:`SourceError` naming the problem unless ``source`` can be played."""
    if not source:
        return
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceError(f'source {source!r} does not exist')
    if is_bag(path):
        try:
            next(bag_frames(str(path), topic), None)
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds on a bad bag
            raise SourceError(f'cannot read the bag {source!r}: {exc}') from exc
    elif path.is_dir():
        raise SourceError(f'source {source!r} is a directory but not a rosbag2 bag (no '
                          f'metadata.yaml, .mcap or .db3 inside)')
    elif not cv2.VideoCapture(str(path)).isOpened():
        raise SourceError(f'source {source!r} is neither a bag nor a video OpenCV can open')


def is_bag(path: Path) -> bool:
    """Tell whether ``path`` is a rosbag2 directory, an .mcap/.db3 file or a ROS 1 .bag."""
    if path.is_dir():
        return (path / 'metadata.yaml').is_file() or any(path.glob('*.mcap')) or \
            any(path.glob('*.db3'))
    return path.suffix in ('.bag', '.mcap', '.db3')


def bag_frames(path: str, topic: str = ''):
    """Yield BGR frames from the first (or the named) image topic of a rosbag2 / ROS 1 bag."""
    from rosbags.highlevel import AnyReader

    with AnyReader([Path(path)]) as reader:
        conns = [c for c in reader.connections
                 if c.msgtype in ('sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage')
                 and (not topic or c.topic == topic)]
        if not conns:
            raise SourceError(f'{path} has no sensor_msgs Image/CompressedImage topic {topic}')
        for conn, _, raw in reader.messages(connections=conns[:1]):
            frame = decode_message(reader.deserialize(raw, conn.msgtype))
            yield frame.pixels if frame.color_order == 'bgr' else cv2.cvtColor(
                frame.rgb(), cv2.COLOR_RGB2BGR)


def video_frames(path: str):
    """Yield BGR frames from a video file (OpenCV)."""
    cap = cv2.VideoCapture(path)
    if not cap.isOpened():
        raise SourceError(f'cannot open video {path!r}')
    try:
        while True:
            ok, frame = cap.read()
            if not ok:
                return
            yield frame
    finally:
        cap.release()


def camera_info_for(header: Header, height: int, width: int, fov_deg: float) -> CameraInfo:
    """Pinhole ``CameraInfo`` with the given horizontal field of view, no distortion."""
    fx = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    info = CameraInfo(header=header, height=height, width=width, distortion_model='plumb_bob')
    info.d = [0.0] * 5
    info.k = [fx, 0.0, cx, 0.0, fx, cy, 0.0, 0.0, 1.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [fx, 0.0, cx, 0.0, 0.0, fx, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


class SampleCamera(Node):
    """Publishes frames of a photo, video or bag on ``image`` + ``camera_info`` at ``rate``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(kwargs.pop('node_name', 'sample_camera'), **kwargs)
        self.declare_parameter('source', '')
        self.declare_parameter('topic', '')
        rate = declare_float(self, 'rate', 5.0, 'frames per second')
        self.declare_parameter('frame_id', 'camera_optical_frame')
        self.fov_deg = declare_float(self, 'fov_deg', 60.0, 'horizontal field of view')
        self.declare_parameter('loop', True)
        self.declare_parameter('reliable', False)
        qos = 5 if self.get_parameter('reliable').value else qos_profile_sensor_data
        self.image_pub = self.create_publisher(Image, 'image', qos)
        self.info_pub = self.create_publisher(CameraInfo, 'camera_info', qos)
        self.sent = 0
        check_source(self.get_parameter('source').value, self.get_parameter('topic').value)
        self._frames = self._open()
        self.timer = self.create_timer(1.0 / max(rate, 1e-3), self.tick)

    def _open(self):
        source = self.get_parameter('source').value
        if not source:
            return iter([bundled_photo()])
        if is_bag(Path(source).expanduser()):
            return bag_frames(source, self.get_parameter('topic').value)
        return video_frames(source)

    def tick(self) -> None:
        """Publish the next frame: a photo repeats; a video or bag loops or ends."""
        try:
            self._frame = next(self._frames)
        except StopIteration:
            source = self.get_parameter('source').value
            if source and self.get_parameter('loop').value:
                self._frames = self._open()
                self._frame = next(self._frames, None)
            elif source:
                self.get_logger().info(f'{source} ended after {self.sent} frames')
                self.timer.cancel()
                return
            if getattr(self, '_frame', None) is None:
                return
        header = Header(frame_id=self.get_parameter('frame_id').value)
        header.stamp = self.get_clock().now().to_msg()
        height, width = self._frame.shape[:2]
        self.info_pub.publish(camera_info_for(header, height, width, self.fov_deg))
        self.image_pub.publish(image_msg(header, self._frame, 'bgr8'))
        self.sent += 1


def main(args: list[str] | None = None) -> None:
    """Entry point of ``ros2 run sapiens_ros sample_camera``."""
    run_node(SampleCamera, args)


if __name__ == '__main__':
    main()
