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

"""The bundled sample photo (scikit-image's astronaut) for demos, the CLI and tests."""

from __future__ import annotations

import atexit
import os
from pathlib import Path
import tempfile

import numpy as np

from ..errors import SapiensError

#: This process's private copy of the photo, when scikit-image ships no PNG of it.
_copy: Path | None = None


def sample_image_path() -> Path:
    """Return the sample photo as a PNG path: scikit-image's file, else a private copy."""
    global _copy
    try:
        import skimage

        path = Path(skimage.__file__).parent / 'data' / 'astronaut.png'
        if path.is_file():
            return path
        if _copy is not None and _copy.is_file():
            return _copy
        from skimage import data

        image = data.astronaut()
    except ImportError:
        raise SapiensError(
            'the sample photo needs scikit-image: pip install scikit-image') from None
    _copy = _private_png(image[..., ::-1])
    return _copy


def _private_png(bgr: np.ndarray) -> Path:
    """
    Write an image to a new private temporary PNG, removed when the process exits.

    ``mkstemp`` creates a file only its owner can read, under a new random name, and never
    through a symlink: a fixed name in a shared /tmp could be planted by anyone beforehand.
    """
    import cv2

    ok, png = cv2.imencode('.png', np.ascontiguousarray(bgr))
    if not ok:
        raise SapiensError('cannot encode the sample photo as PNG')
    fd, name = tempfile.mkstemp(prefix='sapiens_ros_astronaut_', suffix='.png')
    with os.fdopen(fd, 'wb') as f:
        f.write(png.tobytes())
    atexit.register(Path(name).unlink, missing_ok=True)
    return Path(name)
