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

"""The ROS-free image codec: every raw encoding, JPEG/PNG, header size limits, bad input."""

import io

import cv2
import numpy as np
from PIL import Image
import pytest
from sapiens_ros.core.errors import FrameError
from sapiens_ros.core.media.image_codec import decode_compressed, decode_raw
from skimage import data as skdata


@pytest.fixture(scope='module')
def rgb():
    """Return the astronaut photo, cropped to an odd-ish size to catch stride mistakes."""
    return np.ascontiguousarray(skdata.astronaut()[:120, :160])


def _padded(pixels, pad=7):
    height = pixels.shape[0]
    rows = pixels.reshape(height, -1)
    out = np.zeros((height, rows.shape[1] + pad), np.uint8)
    out[:, :rows.shape[1]] = rows
    return out.shape[1], out.tobytes()


@pytest.mark.parametrize('encoding', ['rgb8', 'bgr8', 'rgba8', 'bgra8'])
def test_color_encodings_with_padding(rgb, encoding):
    pixels = rgb if encoding.startswith('rgb') else rgb[..., ::-1]
    if encoding.endswith('a8'):
        pixels = np.concatenate([pixels, np.full(rgb.shape[:2] + (1,), 255, np.uint8)], -1)
    step, raw = _padded(np.ascontiguousarray(pixels))
    frame = decode_raw(encoding, 120, 160, step, raw)
    assert np.array_equal(frame.rgb(), rgb)


def test_mono8_and_mono16(rgb):
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    assert np.array_equal(decode_raw('mono8', 120, 160, 160, gray.tobytes()).pixels, gray)
    sixteen = gray.astype('<u2') * 16  # 12-bit sensor data
    out = decode_raw('mono16', 120, 160, 320, sixteen.tobytes()).pixels
    assert out.dtype == np.uint8 and abs(int(out.max()) - 255) <= 1
    big = decode_raw('mono16', 120, 160, 320, sixteen.astype('>u2').tobytes(),
                     is_bigendian=True).pixels
    assert np.array_equal(big, out)


@pytest.mark.parametrize('encoding,code', [('yuv422', cv2.COLOR_YUV2RGB_UYVY),
                                           ('uyvy', cv2.COLOR_YUV2RGB_UYVY),
                                           ('yuyv', cv2.COLOR_YUV2RGB_YUYV),
                                           ('yuv422_yuy2', cv2.COLOR_YUV2RGB_YUYV)])
def test_yuv422(rgb, encoding, code):
    yuv = cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV)
    y, u, v = yuv[..., 0], yuv[:, ::2, 1], yuv[:, ::2, 2]
    packed = np.empty((120, 160, 2), np.uint8)
    chroma = np.stack([u, v], -1).reshape(120, 160)
    if code == cv2.COLOR_YUV2RGB_UYVY:
        packed[..., 0], packed[..., 1] = chroma, y
    else:
        packed[..., 0], packed[..., 1] = y, chroma
    step, raw = _padded(packed, pad=4)
    out = decode_raw(encoding, 120, 160, step, raw).rgb()
    assert np.abs(out.astype(int) - rgb).mean() < 12


@pytest.mark.parametrize('pattern', ['rggb', 'bggr', 'gbrg', 'grbg'])
def test_bayer_patterns_give_the_right_colour(pattern):
    color = np.array([200, 120, 40], np.uint8)  # RGB
    idx = {'r': 0, 'g': 1, 'b': 2}
    mosaic = np.empty((32, 48), np.uint8)
    for dy in range(2):
        for dx in range(2):
            mosaic[dy::2, dx::2] = color[idx[pattern[2 * dy + dx]]]
    out = decode_raw(f'bayer_{pattern}8', 32, 48, 48, mosaic.tobytes()).rgb()
    assert np.abs(out[8:-8, 8:-8].astype(int) - color).max() <= 2
    wide = (mosaic.astype('<u2') << 8)
    out16 = decode_raw(f'bayer_{pattern}16', 32, 48, 96, wide.tobytes()).rgb()
    assert np.abs(out16[8:-8, 8:-8].astype(int) - color.astype(int) * 255 // 200).max() <= 3


@pytest.mark.parametrize('args,match', [
    (('bgr10', 4, 4, 12, bytes(48)), 'unsupported image encoding'),
    (('bgr8', 4, 4, 12, bytes(40)), 'data has 40 bytes'),
    (('bgr8', 4, 4, 8, bytes(32)), 'step 8 is smaller'),
    (('bgr8', 0, 4, 12, b''), 'zero size'),
    (('yuyv', 2, 3, 6, bytes(12)), 'even width'),
])
def test_bad_raw_images(args, match):
    with pytest.raises(FrameError, match=match):
        decode_raw(*args)


def test_max_pixels():
    with pytest.raises(FrameError, match='max_pixels'):
        decode_raw('mono8', 100, 100, 100, bytes(10000), max_pixels=5000)


def test_compressed_jpeg_png(rgb):
    bgr = rgb[..., ::-1]
    jpg = cv2.imencode('.jpg', bgr)[1].tobytes()
    png = cv2.imencode('.png', bgr)[1].tobytes()
    assert np.abs(decode_compressed('jpeg', jpg).rgb().astype(int) - rgb).mean() < 6
    assert np.array_equal(decode_compressed('png', png).rgb(), rgb)
    with pytest.raises(FrameError, match='truncated JPEG'):
        decode_compressed('jpeg', jpg[:len(jpg) // 2])
    with pytest.raises(FrameError, match='truncated PNG'):
        decode_compressed('png', png[:len(png) // 2])
    with pytest.raises(FrameError, match='neither JPEG nor PNG'):
        decode_compressed('jpeg', b'garbage' * 10)
    with pytest.raises(FrameError, match='corrupt JPEG'):
        decode_compressed('jpeg', jpg[:4] + bytes(len(jpg) - 6) + b'\xff\xd9')
    with pytest.raises(FrameError, match='max_pixels'):
        decode_compressed('jpeg', jpg, max_pixels=100)
    with pytest.raises(FrameError, match='expects png'):
        decode_compressed('jpeg', jpg, expected='png')


def _jpeg_with_hidden_sof(rgb) -> bytes:
    """Build a valid JPEG whose SOF comes after fill bytes and 128 KB of APP1 segments."""
    jpg = cv2.imencode('.jpg', rgb)[1].tobytes()
    app = b''.join(b'\xff\xe1' + (65535).to_bytes(2, 'big') + bytes(65533) for _ in range(2))
    return jpg[:2] + b'\xff\xff\xff' + app + jpg[2:]


def test_pixel_limit_read_from_any_jpeg_layout_before_decoding(rgb, monkeypatch):
    hidden = _jpeg_with_hidden_sof(rgb)
    # Decodable as it is: fill bytes and big APP segments are legal JPEG.
    assert decode_compressed('jpeg', hidden).pixels.shape == (120, 160, 3)
    # Over the limit: rejected from the header, before any pixel is decoded (this layout
    # bypassed the old hand-written SOF scan and was decoded in full first).
    decoded = []
    real = cv2.imdecode
    monkeypatch.setattr(cv2, 'imdecode', lambda *a: decoded.append(1) or real(*a))
    with pytest.raises(FrameError, match='160x120 has 19200 pixels, over the max_pixels'):
        decode_compressed('jpeg', hidden, max_pixels=19199)
    progressive = io.BytesIO()
    Image.fromarray(rgb).save(progressive, 'JPEG', progressive=True)
    with pytest.raises(FrameError, match='max_pixels'):
        decode_compressed('jpeg', progressive.getvalue(), max_pixels=1000)
    png = cv2.imencode('.png', rgb)[1].tobytes()
    with pytest.raises(FrameError, match='PNG image 160x120'):
        decode_compressed('png', png, max_pixels=1000)
    assert not decoded
    assert decode_compressed('jpeg', progressive.getvalue(), max_pixels=19200).pixels.shape[:2] \
        == (120, 160)


def test_corrupt_compressed_header(rgb):
    jpg = cv2.imencode('.jpg', rgb)[1].tobytes()
    broken = jpg[:2] + b'\xff\xc0\x00\x02' + bytes(64) + b'\xff\xd9'  # SOF with no size
    with pytest.raises(FrameError, match='corrupt JPEG'):
        decode_compressed('jpeg', broken, max_pixels=10**6)


@pytest.mark.parametrize('encoding,dtype', [('16UC1', '<u2'), ('32FC1', '<f4')])
def test_depth_encodings_are_not_camera_images(encoding, dtype):
    depth = np.full((4, 6), 1500, dtype)
    with pytest.raises(FrameError, match='depth encoding.*depth input'):
        decode_raw(encoding, 4, 6, 6 * depth.itemsize, depth.tobytes())
