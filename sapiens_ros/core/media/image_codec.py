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
Decode raw ``sensor_msgs/Image`` fields and compressed bytes into numpy frames (no ROS).

Every function takes plain fields (encoding, height, width, step, bytes) so it is testable and
reusable without rclpy. Failures raise :class:`~sapiens_ros.core.errors.FrameError` with a
message naming the problem; nothing here logs.
"""

from __future__ import annotations

from dataclasses import dataclass
import io
import warnings

import cv2
import numpy as np

from ..errors import FrameError

#: OpenCV demosaicing codes per ROS bayer pattern (OpenCV names the pattern one pixel later).
_BAYER = {
    'rggb': cv2.COLOR_BayerBG2RGB,
    'bggr': cv2.COLOR_BayerRG2RGB,
    'gbrg': cv2.COLOR_BayerGR2RGB,
    'grbg': cv2.COLOR_BayerGB2RGB,
}

#: 4:2:2 packed encodings: ROS ``yuv422`` is UYVY; ``yuv422_yuy2`` and ``yuyv`` are YUYV.
_YUV422 = {
    'yuv422': cv2.COLOR_YUV2RGB_UYVY,
    'uyvy': cv2.COLOR_YUV2RGB_UYVY,
    'yuv422_yuy2': cv2.COLOR_YUV2RGB_YUYV,
    'yuyv': cv2.COLOR_YUV2RGB_YUYV,
}

#: Channels and bytes per channel of the directly supported encodings.
_PLAIN = {
    'rgb8': (3, 1), 'bgr8': (3, 1), 'rgba8': (4, 1), 'bgra8': (4, 1),
    'mono8': (1, 1), '8uc1': (1, 1), '8uc3': (3, 1), '8uc4': (4, 1),
    'mono16': (1, 2),
}

#: Depth encodings by ROS convention (REP 118): never a camera picture.
DEPTH_ENCODINGS = ('16uc1', '32fc1')

SUPPORTED_ENCODINGS = tuple(sorted(
    [e for e in _PLAIN if not e[0].isdigit()] + list(_YUV422)
    + [f'bayer_{p}{b}' for p in _BAYER for b in (8, 16)]))


@dataclass
class Frame:
    """A decoded frame ready for the pipeline: uint8 HxW (mono) or HxWx3 in ``color_order``."""

    pixels: np.ndarray
    color_order: str  # 'rgb' or 'bgr'

    def rgb(self) -> np.ndarray:
        """Return the frame as HxWx3 RGB uint8 (a copy only when a conversion is needed)."""
        if self.pixels.ndim == 2:
            return cv2.cvtColor(self.pixels, cv2.COLOR_GRAY2RGB)
        if self.color_order == 'bgr':
            return cv2.cvtColor(self.pixels, cv2.COLOR_BGR2RGB)
        return self.pixels


def check_pixels(height: int, width: int, max_pixels: int | None, kind: str = 'image') -> None:
    """Raise :class:`FrameError` when an image of this size is over ``max_pixels`` (None: any)."""
    if max_pixels and height * width > max_pixels:
        raise FrameError(f'{kind} {width}x{height} has {height * width} pixels, over the '
                         f'max_pixels limit {max_pixels}')


def _bytes_per_pixel(enc: str) -> int:
    if enc in DEPTH_ENCODINGS:
        raise FrameError(f'{enc.upper()} is a depth encoding (REP 118), not a camera image: '
                         f'remap the depth topic to the depth input of the node (`depth`), and a '
                         f'colour or mono image to `image`')
    if enc in _PLAIN:
        channels, depth = _PLAIN[enc]
        return channels * depth
    if enc in _YUV422:
        return 2
    if enc.startswith('bayer_') and enc[6:10] in _BAYER and enc[10:] in ('8', '16'):
        return int(enc[10:]) // 8
    raise FrameError(f'unsupported image encoding {enc!r}; supported: '
                     f'{", ".join(SUPPORTED_ENCODINGS)}')


def _to8(values: np.ndarray) -> np.ndarray:
    """16-bit intensities to 8 bits, stretched by the frame's maximum (10/12-bit sensors too)."""
    peak = int(values.max()) if values.size else 0
    if peak == 0:
        return np.zeros(values.shape, np.uint8)
    return cv2.convertScaleAbs(values, alpha=255.0 / peak)


def raw_rows(height: int, width: int, step: int, data, bpp: int, encoding: str) -> np.ndarray:
    """
    Return the ``(height, width * bpp)`` uint8 view of a raw image buffer, padding cut off.

    Raises :class:`FrameError` when ``step`` or the buffer length do not fit the size.
    """
    row = width * bpp
    if step < row:
        raise FrameError(f'step {step} is smaller than width*bytes_per_pixel = {width}*{bpp} '
                         f'= {row} for {encoding}')
    buf = np.frombuffer(data, np.uint8)
    if buf.size != step * height:
        raise FrameError(f'data has {buf.size} bytes but step*height = {step}*{height} = '
                         f'{step * height}')
    return buf.reshape(height, step)[:, :row]


def decode_raw(encoding: str, height: int, width: int, step: int, data,
               is_bigendian: bool = False, max_pixels: int | None = None) -> Frame:
    """
    Decode the fields of a raw ``sensor_msgs/Image`` into a :class:`Frame`.

    ``data`` is any buffer (``bytes``, ``array.array``, memoryview). Row padding
    (``step > width * bytes_per_pixel``) is honoured without copying the rows twice.
    """
    enc = (encoding or '').strip().lower()
    if height <= 0 or width <= 0:
        raise FrameError(f'image has zero size {width}x{height}')
    check_pixels(height, width, max_pixels)
    bpp = _bytes_per_pixel(enc)
    rows = raw_rows(height, width, step, data, bpp, enc)
    if enc in _PLAIN:
        channels, depth = _PLAIN[enc]
        if depth == 2:
            dtype = np.dtype('>u2' if is_bigendian else '<u2')
            pixels = _to8(rows.copy().view(dtype).reshape(height, width).astype(np.uint16))
            return Frame(pixels, 'rgb')
        pixels = rows.reshape(height, width, channels) if channels > 1 else rows
        if channels == 1:
            return Frame(pixels, 'rgb')
        order = 'rgb' if enc.startswith('rgb') else 'bgr'
        return Frame(pixels[..., :3] if channels == 4 else pixels, order)
    if enc in _YUV422:
        if width % 2:
            raise FrameError(f'{enc} needs an even width, got {width}')
        packed = np.ascontiguousarray(rows).reshape(height, width, 2)
        return Frame(cv2.cvtColor(packed, _YUV422[enc]), 'rgb')
    # Bayer
    mosaic = np.ascontiguousarray(rows)
    if bpp == 2:
        dtype = np.dtype('>u2' if is_bigendian else '<u2')
        mosaic = _to8(mosaic.view(dtype).reshape(height, width).astype(np.uint16))
    else:
        mosaic = mosaic.reshape(height, width)
    if height < 2 or width < 2:
        raise FrameError(f'{enc} needs at least 2x2 pixels, got {width}x{height}')
    return Frame(cv2.cvtColor(mosaic, _BAYER[enc[6:10]]), 'rgb')


def _format_of(data: np.ndarray) -> str:
    head = data[:8].tobytes()
    if head[:3] == b'\xff\xd8\xff':
        return 'jpeg'
    if head == b'\x89PNG\r\n\x1a\n':
        return 'png'
    return 'unknown'


def decode_compressed(fmt: str, data, max_pixels: int | None = None,
                      expected: str | None = None) -> Frame:
    """
    Decode a ``sensor_msgs/CompressedImage`` (jpeg or png) into a BGR :class:`Frame`.

    ``fmt`` is the message's ``format`` string (only used in messages); the codec is detected
    from the bytes. ``expected`` ('jpeg'/'png'), when given, rejects the other codec.
    Truncated files are rejected even where libjpeg would return a partial image.
    """
    buf = np.frombuffer(data, np.uint8)
    if buf.size == 0:
        raise FrameError(f'compressed image ({fmt!r}) has no data')
    kind = _format_of(buf)
    if kind == 'unknown':
        raise FrameError(f'compressed image ({fmt!r}) is neither JPEG nor PNG (corrupt header)')
    if expected and kind != expected:
        raise FrameError(f'compressed image is {kind} but the node expects {expected}')
    tail = buf[-64:].tobytes().rstrip(b'\x00')
    if kind == 'jpeg' and not tail.endswith(b'\xff\xd9'):
        raise FrameError('corrupt or truncated JPEG: no end-of-image marker')
    if kind == 'png' and b'IEND' not in tail:
        raise FrameError('corrupt or truncated PNG: no IEND chunk')
    height, width = compressed_size(buf, kind)  # from the header: nothing decoded yet
    check_pixels(height, width, max_pixels, f'{kind.upper()} image')
    pixels = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if pixels is None or pixels.size == 0:
        raise FrameError(f'corrupt {kind.upper()}: OpenCV could not decode it')
    if pixels.shape[:2] != (height, width):
        raise FrameError(f'corrupt {kind.upper()}: its header says {width}x{height}, the data '
                         f'{pixels.shape[1]}x{pixels.shape[0]}')
    return Frame(pixels, 'bgr')


def compressed_size(buf: np.ndarray, kind: str = 'image') -> tuple[int, int]:
    """
    ``(height, width)`` of a JPEG or PNG from its header, read by Pillow without decoding pixels.

    Pillow's parser walks every marker layout a decoder accepts (fill bytes, APP segments of
    any size, progressive and arithmetic SOFs), so the size cannot be hidden from the limit.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(buf)) as image:
                width, height = image.size
    except Image.DecompressionBombError as exc:
        raise FrameError(f'{kind.upper()} image is far too large to decode ({exc})') from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise FrameError(f'corrupt {kind.upper()} header: {exc}') from None
    if height <= 0 or width <= 0:
        raise FrameError(f'{kind.upper()} header gives zero size {width}x{height}')
    return height, width


def decode_message(msg, max_pixels: int | None = None, expect: str | None = None) -> Frame:
    """
    Decode an Image or CompressedImage message (rclpy's or rosbags', duck-typed) to a Frame.

    A message with ``format`` is compressed (``expect`` restricts it to jpeg or png); otherwise
    its ``encoding``, ``height``, ``width``, ``step`` and ``data`` describe raw pixels.
    """
    if hasattr(msg, 'format'):
        return decode_compressed(msg.format, msg.data, max_pixels, expect)
    return decode_raw(msg.encoding, int(msg.height), int(msg.width), int(msg.step), msg.data,
                      bool(msg.is_bigendian), max_pixels)
