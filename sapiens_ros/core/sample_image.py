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

from pathlib import Path
import tempfile

from .errors import SapiensError


def sample_image_path() -> Path:
    """Return the sample photo as a PNG path (written once from ``skimage.data`` if needed)."""
    try:
        import skimage

        path = Path(skimage.__file__).parent / 'data' / 'astronaut.png'
        if path.is_file():
            return path
        from skimage import data

        image = data.astronaut()
    except ImportError:
        raise SapiensError(
            'the sample photo needs scikit-image: pip install scikit-image') from None
    import cv2

    path = Path(tempfile.gettempdir()) / 'sapiens_ros_astronaut.png'
    cv2.imwrite(str(path), image[..., ::-1])
    return path
