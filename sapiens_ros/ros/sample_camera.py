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
perception graph can be seen working without hardware. A bag's camera plays with its recorded
camera_info and, when it has one, its aligned depth image on ``depth`` (an RGB-D camera); each
frame's recorded stamps are moved to now (``restamp``), keeping the colour/depth spacing that
the pairing uses.
"""

from __future__ import annotations

import os
from pathlib import Path

from builtin_interfaces.msg import Time
import cv2
import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header

from .array_msgs import image_msg
from .bag_source import bag_bundles, bag_topics, BagTopics
from .launch_support import PROFILE_VAR, shipped_profile
from .node_params import declare_float
from .qos import RELIABLE_CAMERA_QOS, SENSOR_QOS
from .spin import program_args, run_node
from .stamps import stamp_ns
from ..core.media.image_codec import decode_message
from ..core.media.video import SourceError, video_frames


#: The parameters: name, default, description (declared, and listed by ``--help``, from here).
PARAMETERS = (
    ('source', '', 'a video file or a rosbag2 bag (folder, .mcap, .db3) to play; empty: the '
                   'bundled photo'),
    ('topic', '', "the bag's colour image topic (empty: its only image topic)"),
    ('depth_topic', '', "the bag's aligned depth topic (empty: found beside the image; "
                        "'none': off)"),
    ('rate', 5.0, 'frames per second'),
    ('frame_id', 'camera_optical_frame', 'frame_id of every header'),
    ('fov_deg', 60.0, 'horizontal field of view of the synthesised camera_info (degrees)'),
    ('loop', True, 'play a video or bag again when it ends'),
    ('reliable', False, 'publish reliable (keep last 5) instead of the sensor-data QoS'),
    ('restamp', True, "move each bag frame's stamps to now (the colour/depth spacing kept)"),
)


def bundled_photo() -> np.ndarray:
    """Return the sample photo (scikit-image's astronaut, as the CLI uses) as BGR uint8."""
    from ..core.media.sample_image import sample_image_path

    return cv2.imread(str(sample_image_path()), cv2.IMREAD_COLOR)


def check_source(source: str, topic: str = '', depth_topic: str = '') -> BagTopics | None:
    """
    Raise :class:`SourceError` naming the problem unless ``source`` can be played.

    Returns the camera's topics when ``source`` is a bag (None for the photo or a video).
    """
    if not source:
        return None
    path = Path(source).expanduser()
    if not path.exists():
        raise SourceError(f'source {source!r} does not exist')
    if is_bag(path):
        topics = bag_topics(path, topic, depth_topic)
        try:
            next(bag_bundles(path, topics), None)
        except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds on a bad bag
            raise SourceError(f'cannot read the bag {source!r}: {exc}') from exc
        return topics
    if path.is_dir():
        raise SourceError(f'source {source!r} is a directory but not a rosbag2 bag (no '
                          f'metadata.yaml, .mcap or .db3 inside)')
    if not cv2.VideoCapture(str(path)).isOpened():
        raise SourceError(f'source {source!r} is neither a bag nor a video OpenCV can open')
    return None


def is_bag(path: Path) -> bool:
    """Tell whether ``path`` is a rosbag2 directory, an .mcap/.db3 file or a ROS 1 .bag."""
    if path.is_dir():
        return (path / 'metadata.yaml').is_file() or any(path.glob('*.mcap')) or \
            any(path.glob('*.db3'))
    return path.suffix in ('.bag', '.mcap', '.db3')


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


def _shifted(stamp: Time, offset_ns: int) -> Time:
    ns = stamp_ns(stamp) + offset_ns
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


class SampleCamera(Node):
    """Publishes frames of a photo, video or bag on ``image`` + ``camera_info`` at ``rate``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(kwargs.pop('node_name', 'sample_camera'), **kwargs)
        for name, default, text in PARAMETERS:
            if isinstance(default, float):  # an int given (rate:=10) is taken too
                declare_float(self, name, default, text)
            else:
                self.declare_parameter(name, default, ParameterDescriptor(description=text))
        rate = float(self.get_parameter('rate').value)
        self.fov_deg = float(self.get_parameter('fov_deg').value)
        qos = RELIABLE_CAMERA_QOS if self.get_parameter('reliable').value else SENSOR_QOS
        self.image_pub = self.create_publisher(Image, 'image', qos)
        self.info_pub = self.create_publisher(CameraInfo, 'camera_info', qos)
        self.sent = 0
        self.bag = check_source(self.get_parameter('source').value,
                                self.get_parameter('topic').value,
                                self.get_parameter('depth_topic').value)
        self.depth_pub = self.create_publisher(Image, 'depth', qos) \
            if self.bag is not None and self.bag.depth else None
        self._last_info: CameraInfo | None = None
        self._frames = self._open()
        self.timer = self.create_timer(1.0 / max(rate, 1e-3), self.tick)

    def _open(self):
        source = self.get_parameter('source').value
        if not source:
            return iter([bundled_photo()])
        if self.bag is not None:
            return bag_bundles(Path(source).expanduser(), self.bag)
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
        if isinstance(self._frame, list):
            self._publish_bundle(self._frame)
            return
        header = Header(frame_id=self.get_parameter('frame_id').value)
        header.stamp = self.get_clock().now().to_msg()
        self._publish_image(header, self._frame)

    def _publish_image(self, header: Header, frame: np.ndarray,
                       with_info: bool = True) -> None:
        height, width = frame.shape[:2]
        if with_info:
            self.info_pub.publish(camera_info_for(header, height, width, self.fov_deg))
        self.image_pub.publish(image_msg(header, frame, 'bgr8'))
        self.sent += 1

    def _publish_bundle(self, bundle: list) -> None:
        """
        Publish one colour frame of a bag with the depth and camera_info recorded beside it.

        With ``restamp`` the bundle's stamps move by one offset that puts the colour frame at
        now (their spacing, which the depth pairing uses, is kept). Every message takes the
        ``frame_id`` parameter; the latest recorded camera_info (also one recorded only once)
        goes out before each frame under the frame's header, then the frame, then its depth.
        """
        colour = next(msg for kind, msg in bundle if kind == 'image')
        if self.get_parameter('restamp').value:
            first = colour.header.stamp
            offset = self.get_clock().now().nanoseconds - stamp_ns(first)
            for _, msg in bundle:
                msg.header.stamp = _shifted(msg.header.stamp, offset)
        frame_id = self.get_parameter('frame_id').value
        for kind, msg in bundle:
            msg.header.frame_id = frame_id
            if kind == 'camera_info':
                self._last_info = msg
        if self._last_info is not None:
            self._last_info.header = colour.header
            self.info_pub.publish(self._last_info)
        frame = decode_message(colour)
        pixels = frame.pixels if frame.color_order == 'bgr' and frame.pixels.ndim == 3 else \
            cv2.cvtColor(frame.rgb(), cv2.COLOR_RGB2BGR)
        self._publish_image(colour.header, pixels, with_info=self._last_info is None)
        if self.depth_pub is not None:
            for msg in (msg for kind, msg in bundle if kind == 'depth'):
                self.depth_pub.publish(msg)


def main(args: list[str] | None = None) -> None:
    """
    Entry point of ``ros2 run sapiens_ros sample_camera`` (``--help`` lists the parameters).

    Uses the shipped Fast DDS profile (its 64 MiB shared memory carries whole frames) unless
    one is set or ``--no-dds-profile`` is given: with Fast DDS's default 512 KB segment, frames
    of 512x512 and more are lost on the way, which looks as if the node starved the camera.
    """
    options = program_args(
        args, 'sample_camera', __doc__.strip().split('\n\n')[0], PARAMETERS,
        'image, camera_info (and depth, for an RGB-D bag)',
        [('--no-dds-profile', f"keep Fast DDS's default transports (otherwise {PROFILE_VAR} "
                              f'is set to the shipped profile unless it is set already)')])
    profile = None if options.no_dds_profile else shipped_profile()
    if profile:
        os.environ[PROFILE_VAR] = profile
    run_node(SampleCamera, args)


if __name__ == '__main__':
    main()
