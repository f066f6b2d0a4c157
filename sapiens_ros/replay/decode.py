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

"""Turn a raw bag message into the node's input: an rclpy Header and a decoded Frame."""

from __future__ import annotations

from dataclasses import dataclass

from builtin_interfaces.msg import Time
from std_msgs.msg import Header

from ..core.errors import FrameError
from ..core.media.image_codec import decode_message, Frame

#: The node's default ``max_pixels`` parameter.
DEFAULT_MAX_PIXELS = 4096 * 4096


@dataclass
class FrameItem:
    """One selected camera message: where it came from, and its frame or why it has none."""

    index: int  # position among the selected frames of the run
    topic: str
    time_ns: int  # bag (receive) time, used for every output of the frame
    header: Header
    frame: Frame | None = None
    error: str | None = None
    kind: str = ''  # error kind: 'deserialize', 'decode', 'inference', 'model_nan', 'internal'


def fallback_header(time_ns: int, frame_id: str = '') -> Header:
    """Header for a message that could not be deserialized: the bag time as stamp."""
    return Header(stamp=Time(sec=time_ns // 1_000_000_000, nanosec=time_ns % 1_000_000_000),
                  frame_id=frame_id)


def to_header(header) -> Header:
    """Copy a deserialized (rosbags) header into an rclpy ``std_msgs/Header``."""
    return Header(stamp=Time(sec=int(header.stamp.sec), nanosec=int(header.stamp.nanosec)),
                  frame_id=str(header.frame_id))


def decode_item(bag, index: int, connection, time_ns: int, raw: bytes,
                max_pixels: int = DEFAULT_MAX_PIXELS) -> FrameItem:
    """Deserialize and decode one camera message exactly as the node would; never raises."""
    item = FrameItem(index, connection.topic, time_ns, fallback_header(time_ns))
    try:
        msg = bag.deserialize(raw, connection.msgtype)
    except Exception as exc:  # noqa: BLE001 - any rosbags/serde failure is a bad message
        item.error, item.kind = (f'cannot deserialize {connection.msgtype}: '
                                 f'{type(exc).__name__}: {exc}'), 'deserialize'
        return item
    try:
        item.header = to_header(msg.header)
    except (AttributeError, ValueError, TypeError, AssertionError) as exc:
        item.error, item.kind = f'bad header: {exc}', 'deserialize'
        return item
    try:
        item.frame = decode_message(msg, max_pixels)
    except FrameError as exc:
        item.error, item.kind = str(exc), 'decode'
    return item
