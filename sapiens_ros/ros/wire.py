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
Images and clouds to and from their serialised (CDR) bytes with as few copies as can be.

Reading: camera images straight from their serialised bytes, a size check before any copy.

The node subscribes to images with ``raw=True``, so rclpy hands over the serialised message
instead of deserialising it. :func:`read_image` reads the header and the few scalar fields in
place and refuses an image over ``max_pixels`` before its pixels are touched; an accepted image's
``data`` is a memoryview into the received bytes, which the decoder views without a copy (rclpy's
own deserialisation copies the pixels twice, into a C struct and then into an ``array.array``).
Plain CDR and XCDR2 in either byte order are read here; any other representation falls back to
``rclpy.serialization.deserialize_message``.

Writing: :func:`serialize` is ``rclpy.serialization.serialize_message`` with one copy of a bulk
message's ``data`` where rclpy makes three (into the C message, into the CDR buffer, into the
returned ``bytes``): rclpy serialises the message without its data (a few hundred bytes) and the
data is spliced in by one ``bytes.join``.
"""

from __future__ import annotations

import array
from dataclasses import dataclass
import struct

from builtin_interfaces.msg import Time
from rclpy.serialization import serialize_message
from sensor_msgs.msg import CompressedImage, Image, PointCloud2
from std_msgs.msg import Header

from ..core.errors import FrameError
from ..core.media.image_codec import check_pixels

#: Encapsulation ids (the first two bytes): CDR and PLAIN_CDR2, big and little endian. Image and
#: CompressedImage are final types of 4-byte-or-smaller fields, laid out alike in both.
_BYTE_ORDER = {b'\x00\x00': '>', b'\x00\x01': '<', b'\x00\x06': '>', b'\x00\x07': '<'}
#: Plain CDR (XCDR1) only, for writing: the layout :func:`serialize` splices into.
_CDR1_ORDER = {b'\x00\x00': '>', b'\x00\x01': '<'}
#: Bytes after ``data`` in the serialised message (fields of one byte: no padding before them).
_AFTER_DATA = {Image: 0, CompressedImage: 0, PointCloud2: 1}  # PointCloud2: is_dense
#: Below this much data rclpy's three copies cost less than serialising the message twice.
SPLICE_MIN_BYTES = 64 << 10


@dataclass
class WireImage:
    """The fields of a ``sensor_msgs/Image`` as the decoder reads them; ``data`` is a view."""

    header: Header
    height: int
    width: int
    encoding: str
    is_bigendian: int
    step: int
    data: memoryview


@dataclass
class WireCompressedImage:
    """The fields of a ``sensor_msgs/CompressedImage``; ``data`` is a view."""

    header: Header
    format: str  # noqa: A003 - the message field
    data: memoryview


class _Reader:
    """Reads CDR fields in order, with CDR's alignment (relative to the body, after 4 bytes)."""

    def __init__(self, buf: memoryview, order: str) -> None:
        self.buf, self.order, self.pos = buf, order, 4

    def _take(self, size: int, align: int) -> int:
        self.pos += -(self.pos - 4) % align
        start, self.pos = self.pos, self.pos + size
        if self.pos > len(self.buf):
            raise FrameError(f'serialised image truncated: {len(self.buf)} bytes, a field needs '
                             f'{self.pos}')
        return start

    def u32(self) -> int:
        return struct.unpack_from(self.order + 'I', self.buf, self._take(4, 4))[0]

    def i32(self) -> int:
        return struct.unpack_from(self.order + 'i', self.buf, self._take(4, 4))[0]

    def u8(self) -> int:
        return self.buf[self._take(1, 1)]

    def octets(self) -> memoryview:
        size = self.u32()
        start = self._take(size, 1)
        return self.buf[start:start + size]

    def string(self) -> str:
        return bytes(self.octets()).rstrip(b'\x00').decode('utf-8', 'replace')

    def header(self) -> Header:
        sec, nanosec = self.i32(), self.u32()
        return Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=self.string())


def read_image(raw: bytes, compressed: bool = False,
               max_pixels: int | None = None) -> WireImage | WireCompressedImage:
    """
    Read a serialised Image (or, with ``compressed``, CompressedImage).

    Raises :class:`~sapiens_ros.core.errors.FrameError` for a raw image over ``max_pixels``
    (nothing of its pixels read) or a truncated message. A compressed image's size is in its
    JPEG/PNG header, which the decoder checks before decoding.
    """
    buf = memoryview(raw)
    order = _BYTE_ORDER.get(bytes(buf[:2]))
    if order is None:  # another representation: let rclpy read it
        return _deserialised(raw, compressed, max_pixels)
    reader = _Reader(buf, order)
    header = reader.header()
    if compressed:
        fmt = reader.string()
        return WireCompressedImage(header, fmt, reader.octets())
    height, width = reader.u32(), reader.u32()
    check_pixels(height, width, max_pixels)
    encoding = reader.string()
    is_bigendian, step = reader.u8(), reader.u32()
    return WireImage(header, height, width, encoding, is_bigendian, step, reader.octets())


def _deserialised(raw: bytes, compressed: bool, max_pixels: int | None):
    from rclpy.serialization import deserialize_message

    msg = deserialize_message(raw, CompressedImage if compressed else Image)
    if not compressed:
        check_pixels(msg.height, msg.width, max_pixels)
    return msg


def serialize(msg) -> bytes:
    """
    ``msg``'s CDR, as ``rclpy.serialization.serialize_message``, with one copy of bulk data.

    ``Image``, ``CompressedImage`` and ``PointCloud2`` whose ``data`` is a buffer (what
    :mod:`.array_msgs` builds, and rclpy keeps) of :data:`SPLICE_MIN_BYTES` or more take the
    one-copy path; any other message, and any other representation than plain CDR (XCDR2 may
    carry sizes ahead of the data), goes through rclpy. The bytes are rclpy's but for CDR's
    alignment padding, which Fast CDR leaves uninitialised and this leaves as rclpy wrote it in
    the data-less message.
    """
    after = _AFTER_DATA.get(type(msg))
    data = msg.data if after is not None else None
    if not (isinstance(data, (bytes, bytearray)) or
            isinstance(data, array.array) and data.typecode == 'B') or \
            len(data) < SPLICE_MIN_BYTES:
        return serialize_message(msg)
    rest = {name: getattr(msg, name) for name in msg.get_fields_and_field_types()
            if name != 'data'}
    head = serialize_message(type(msg)(**rest))  # the same fields, data empty
    order = _CDR1_ORDER.get(head[:2])
    if order is None:
        return serialize_message(msg)
    length = len(head) - after - 4  # where data's length (0 here) was written
    return b''.join((head[:length], struct.pack(order + 'I', len(data)), data,
                     head[length + 4:]))
