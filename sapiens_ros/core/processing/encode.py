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
JPEG / PNG encoding of rendered images: on the GPU where a maintained library offers it.

JPEG of a CUDA tensor goes through nvImageCodec (``nvidia-nvimgcodec``) or
``torchvision.io.encode_jpeg`` on CUDA when either is installed (only the bytes reach the host);
everything else through OpenCV on the host. PNG is always OpenCV's (lossless).
"""

from __future__ import annotations

import functools
import logging

import cv2
import numpy as np
import torch

LOG = logging.getLogger(__name__)

FORMATS = ('jpeg', 'png')


@functools.lru_cache(maxsize=1)
def gpu_jpeg_backend() -> str | None:
    """Return the installed GPU JPEG encoder ('nvimgcodec' or 'torchvision'), or None."""
    if not torch.cuda.is_available():
        return None
    try:
        from nvidia import nvimgcodec  # noqa: F401

        return 'nvimgcodec'
    except ImportError:
        pass
    try:
        from torchvision.io import encode_jpeg  # noqa: F401

        return 'torchvision'
    except ImportError:
        return None


def on_device_encoder(image: torch.Tensor | np.ndarray, fmt: str) -> bool:
    """Tell whether :func:`encode` encodes ``image`` as ``fmt`` on its GPU (else OpenCV)."""
    return isinstance(image, torch.Tensor) and image.is_cuda and fmt == 'jpeg' and \
        gpu_jpeg_backend() is not None


def encode(image: torch.Tensor | np.ndarray, fmt: str, order: str = 'rgb',
           quality: int = 90) -> np.ndarray:
    """
    Encode an HxW or HxWx3 uint8 image (channels in ``order``); return the file's bytes.

    The bytes always decode to the right colours (JPEG/PNG store RGB; OpenCV's BGR convention
    is handled here).
    """
    if fmt not in FORMATS:
        raise ValueError(f'format must be one of {FORMATS}, got {fmt!r}')
    if isinstance(image, torch.Tensor) and image.is_cuda and fmt == 'jpeg':
        backend = gpu_jpeg_backend()
        if backend is not None:
            return _gpu_jpeg(image, order, quality, backend)
    pixels = image.cpu().numpy() if isinstance(image, torch.Tensor) else image
    if pixels.ndim == 3 and order == 'rgb':
        pixels = cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    params = [cv2.IMWRITE_JPEG_QUALITY, int(quality)] if fmt == 'jpeg' else \
        [cv2.IMWRITE_PNG_COMPRESSION, 1]
    ok, data = cv2.imencode('.jpg' if fmt == 'jpeg' else '.png', pixels, params)
    if not ok:
        raise ValueError(f'OpenCV could not encode a {pixels.shape} image as {fmt}')
    return data.reshape(-1)


def _gpu_jpeg(image: torch.Tensor, order: str, quality: int, backend: str) -> np.ndarray:
    rgb = image if image.ndim == 2 or order == 'rgb' else image.flip(-1)
    if backend == 'torchvision':
        from torchvision.io import encode_jpeg

        chw = rgb[None] if rgb.ndim == 2 else rgb.permute(2, 0, 1)
        return encode_jpeg(chw.contiguous(), quality=quality).cpu().numpy()
    from nvidia import nvimgcodec

    try:  # the quality keyword was renamed in nvImageCodec 0.5
        params = nvimgcodec.EncodeParams(quality_value=float(quality))
    except TypeError:
        params = nvimgcodec.EncodeParams(quality=float(quality))
    data = _nvimgcodec_encoder().encode(  # on the stream that wrote the image: ordered after it
        nvimgcodec.as_image(rgb.contiguous()), 'jpeg', params=params,
        cuda_stream=torch.cuda.current_stream(rgb.device).cuda_stream)
    return np.frombuffer(data, np.uint8)


@functools.lru_cache(maxsize=1)
def _nvimgcodec_encoder():
    from nvidia import nvimgcodec

    return nvimgcodec.Encoder()
