"""Surface normals: unit vectors at the original image size, padding removed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..letterbox import Letterbox, sample_map


@dataclass
class NormalResult:
    """Normals of one frame."""

    normals: np.ndarray  # (H, W, 3) float32 unit vectors, camera frame


def unit_normals(raw: torch.Tensor, letterbox: Letterbox) -> torch.Tensor:
    """``(H, W, 3)`` float32 unit normals from the raw head output ``(3, h, w)``."""
    n = F.normalize(raw.float(), dim=0, eps=1e-8)
    n = sample_map(n, letterbox)
    return F.normalize(n, dim=0, eps=1e-8).permute(1, 2, 0)
