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

"""Images read from their serialised bytes (rclpy's own serialiser writes them), and written."""

import struct

import numpy as np
import pytest

pytest.importorskip('rclpy')

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402, I100
from sapiens_ros.core.errors import FrameError  # noqa: E402
from sapiens_ros.core.media.image_codec import decode_message  # noqa: E402
from sapiens_ros.ros import wire  # noqa: E402
from sapiens_ros.ros.array_msgs import byte_array, image_msg, pointcloud2  # noqa: E402
from sapiens_ros.ros.wire import read_image, serialize  # noqa: E402
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402


def _header(frame_id: str) -> Header:
    header = Header(frame_id=frame_id)
    header.stamp.sec, header.stamp.nanosec = 1_700_000_123, 456_789
    return header


@pytest.mark.parametrize('frame_id', ['', 'c', 'cam', 'camera_optical_frame', 'ü/ñ'])
@pytest.mark.parametrize('encoding', ['rgb8', 'mono8', 'bgra8', 'mono16'])
def test_fields_and_pixels_equal_rclpy_deserialised(frame_id, encoding):
    """Every alignment of the strings that follow (frame_id and encoding lengths vary)."""
    rng = np.random.default_rng(len(frame_id))
    channels = {'rgb8': 3, 'mono8': 1, 'bgra8': 4, 'mono16': 1}[encoding]
    dtype = np.uint16 if encoding == 'mono16' else np.uint8
    pixels = rng.integers(0, 255, (7, 5, channels), dtype).squeeze()
    msg = image_msg(_header(frame_id), pixels, encoding)
    wire = read_image(serialize_message(msg))
    assert wire.header == msg.header
    assert (wire.height, wire.width, wire.encoding, wire.step, wire.is_bigendian) == \
        (msg.height, msg.width, msg.encoding, msg.step, msg.is_bigendian)
    assert bytes(wire.data) == bytes(msg.data)
    np.testing.assert_array_equal(decode_message(wire).pixels, decode_message(msg).pixels)


def test_xcdr2_reads_alike_and_compressed_images_too():
    msg = image_msg(_header('cam'), np.zeros((2, 3, 3), np.uint8), 'bgr8')
    raw = bytearray(serialize_message(msg))
    raw[1] = 0x07  # PLAIN_CDR2, little endian: the same layout for these types
    assert read_image(bytes(raw)).header == msg.header
    jpeg = CompressedImage(header=_header('cam'), format='jpeg', data=b'\xff\xd8\xff' + bytes(9))
    wire = read_image(serialize_message(jpeg), compressed=True)
    assert wire.format == 'jpeg' and bytes(wire.data) == bytes(jpeg.data)
    assert wire.header == jpeg.header


def test_an_oversized_image_is_refused_before_its_pixels_are_read():
    """Height and width say 8000x8000: refused, though not one byte of pixels is present."""
    raw = serialize_message(Image(header=_header('cam'), height=8000, width=8000,
                                  encoding='rgb8', step=24000))
    with pytest.raises(FrameError, match='8000x8000 has 64000000 pixels, over the max_pixels'):
        read_image(raw, max_pixels=4096 * 4096)
    with pytest.raises(FrameError, match='truncated'):  # accepted size: its data is read
        read_image(raw[:-2], max_pixels=10**9)


def test_big_endian_cdr():
    msg = image_msg(_header('cam'), np.arange(6, dtype=np.uint8).reshape(1, 2, 3), 'rgb8')
    little = serialize_message(msg)
    # Re-encode the scalar fields big-endian by hand: header, sizes, step, lengths.
    body = bytearray(little)
    body[1] = 0x00
    for offset in (4, 8, 12):  # sec, nanosec, frame_id length
        body[offset:offset + 4] = struct.pack('>I', struct.unpack_from('<I', little, offset)[0])
    pos = 16 + 4  # 'cam\0'
    for _ in range(3):  # height, width, encoding length
        body[pos:pos + 4] = struct.pack('>I', struct.unpack_from('<I', little, pos)[0])
        pos += 4
    pos += 6  # 'rgb8\0' + is_bigendian, then aligned to 4
    pos += -(pos - 4) % 4
    for _ in range(2):  # step, data length
        body[pos:pos + 4] = struct.pack('>I', struct.unpack_from('<I', little, pos)[0])
        pos += 4
    wire = read_image(bytes(body))
    assert (wire.header, wire.height, wire.width, wire.step) == (msg.header, 1, 2, 6)
    assert bytes(wire.data) == bytes(range(6))


def _cloud(frame_id: str, points: int, dense: bool) -> PointCloud2:
    rec = np.zeros(points, np.dtype([('x', 'f4'), ('y', 'f4'), ('z', 'f4'), ('label', 'u1')]))
    rec['x'] = np.arange(points)
    rec['z'] = np.nan if not dense and points else 1.0
    return pointcloud2(_header(frame_id), rec, dense=dense)


def _compressed(frame_id: str, size: int) -> CompressedImage:
    msg = CompressedImage(header=_header(frame_id), format='bgr8; jpeg compressed bgr8')
    msg.data = byte_array(np.arange(size, dtype=np.uint8))
    return msg


@pytest.mark.parametrize('frame_id', ['', 'c', 'cam', 'camera_optical_frame'])
@pytest.mark.parametrize('make', [
    lambda f: image_msg(_header(f), np.arange(35, dtype=np.uint8).reshape(7, 5), 'mono8'),
    lambda f: image_msg(_header(f), np.ones((3, 2, 3), np.float32), '32FC3'),
    lambda f: image_msg(_header(f), np.zeros((0, 4), np.uint8), 'mono8'),
    lambda f: _cloud(f, 5, True), lambda f: _cloud(f, 3, False), lambda f: _cloud(f, 0, True),
    lambda f: _compressed(f, 13), lambda f: _compressed(f, 0),
    lambda f: CameraInfo(header=_header(f), height=4, width=3),  # no data: rclpy's own
])
def test_serialize_writes_what_rclpy_writes(frame_id, make, monkeypatch):
    """
    Same length, and every field (data included) reads back as rclpy's own CDR.

    Every alignment of the strings before ``data`` (frame_id lengths vary); the one-copy path
    taken whatever the size. Not compared byte for byte: Fast CDR leaves the alignment padding
    uninitialised.
    """
    monkeypatch.setattr(wire, 'SPLICE_MIN_BYTES', 0)
    sent = []  # the data length of each message wire.serialize hands to rclpy

    def recorded(message):
        sent.append(len(getattr(message, 'data', ())))
        return serialize_message(message)

    monkeypatch.setattr(wire, 'serialize_message', recorded)
    msg = make(frame_id)
    ours, theirs = serialize(msg), serialize_message(msg)
    if isinstance(msg, (Image, CompressedImage, PointCloud2)):
        assert sent == [0]  # spliced: rclpy wrote the data-less message only
    assert isinstance(ours, bytes) and len(ours) == len(theirs)
    back = deserialize_message(ours, type(msg))
    assert back == msg
    if hasattr(msg, 'data'):
        assert bytes(back.data) == bytes(msg.data)


def test_serialize_reads_back_through_the_camera_path():
    """An ``Image`` written by :func:`serialize` is what the node's raw subscription reads."""
    msg = image_msg(_header('camera'), np.arange(24, dtype=np.uint8).reshape(2, 4, 3), 'rgb8')
    wire = read_image(serialize(msg))
    assert (wire.header, wire.height, wire.width, wire.step) == (msg.header, 2, 4, 12)
    assert bytes(wire.data) == bytes(msg.data)
