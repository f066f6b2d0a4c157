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
