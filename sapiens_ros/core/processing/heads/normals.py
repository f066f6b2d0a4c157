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

"""Surface normals: unit vectors at the original image size, padding removed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..hostbuf import device_empty
from ..letterbox import Letterbox, sample_map


@dataclass
class NormalResult:
    """Normals of one frame."""

    normals: np.ndarray  # (H, W, 3) float32 unit vectors, camera frame


def unit_normals(raw: torch.Tensor, letterbox: Letterbox) -> torch.Tensor:
    """
    ``(H, W, 3)`` float32 unit normals from the raw head output ``(3, h, w)``, contiguous.

    The last division writes the pixel-interleaved layout directly (on the CPU into a
    message-ready buffer, :func:`~..hostbuf.host_tensor`): no transposing copy follows.
    """
    n = sample_map(_unit(raw.float()), letterbox)
    out = device_empty((n.shape[1], n.shape[2], 3), torch.float32, n.device)
    _unit(n, out.permute(2, 0, 1))
    return out


def _unit(v: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Normalise ``(3, H, W)`` vectors; plane arithmetic beats a strided norm over dim 0."""
    norm = torch.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).clamp_min(1e-8)
    return torch.div(v, norm, out=out) if out is not None else v / norm
