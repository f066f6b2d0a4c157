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

"""Top-down pose: heatmap decoding (argmax + local DARK-UDP) and mapping back to the image."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

#: DARK blur kernel of the Sapiens/mmpose reference (cv2 sigma rule gives sigma = 2.0).
DARK_KERNEL = 11
_WINDOW = DARK_KERNEL + 2  # blurred 3x3 neighbourhood of the peak needs a 13x13 raw window
#: DARK-UDP Newton steps are clipped to this many heatmap px per axis.
MAX_STEP = 3.0


@dataclass
class PoseResult:
    """Keypoints of every person in one frame, in original-image pixels."""

    keypoints: np.ndarray  # (P, K, 2) float32, x/y
    scores: np.ndarray  # (P, K) float32, heatmap maxima
    boxes: np.ndarray  # (P, 4) float32, xyxy person boxes
    box_scores: np.ndarray  # (P,) float32

    @classmethod
    def empty(cls, num_keypoints: int) -> PoseResult:
        """Return a result with no person."""
        return cls(np.zeros((0, num_keypoints, 2), np.float32),
                   np.zeros((0, num_keypoints), np.float32),
                   np.zeros((0, 4), np.float32), np.zeros((0,), np.float32))

    def __len__(self) -> int:
        return int(self.keypoints.shape[0])


def _gaussian_kernel(size: int, device: torch.device) -> torch.Tensor:
    sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8
    x = torch.arange(size, device=device, dtype=torch.float32) - (size - 1) / 2
    k1 = torch.exp(-(x * x) / (2 * sigma * sigma))
    k1 = k1 / k1.sum()
    return (k1[:, None] * k1[None, :])[None, None]


def flip_back(heatmaps: torch.Tensor, permutation: torch.Tensor) -> torch.Tensor:
    """Undo a horizontal flip of the input: swap left/right channels and mirror the maps."""
    return heatmaps.index_select(1, permutation).flip(-1)


def decode_heatmaps(heatmaps: torch.Tensor,
                    max_step: float = MAX_STEP) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Sub-pixel keypoints ``(N, K, 2)`` (heatmap pixels) and scores ``(N, K)``.

    Argmax, then DARK-UDP refinement (Gaussian blur, log, one Newton step) evaluated only on a
    13x13 window around each peak: the same numbers as blurring the whole map, at a tiny cost.
    The step is clipped to ``max_step`` heatmap px per axis (and dropped when not finite): on a
    flat or saddle-shaped map (an occluded keypoint) the reference's unclipped step runs away by
    hundreds of px, while the former 1 px guard discarded good steps on broad, noisy peaks.
    Clipping keeps the reference's accuracy on noisy peaks, where skipping long steps does not
    (``benchmarks/bench_people.py``).
    """
    heatmaps = heatmaps.float()
    n, k, h, w = heatmaps.shape
    flat = heatmaps.reshape(n * k, h * w)
    if n * k == 0:
        return torch.zeros(n, k, 2, device=heatmaps.device), flat.new_zeros(n, k)
    scores, px, py = _peaks(flat.view(n * k, h, w))

    r = _WINDOW // 2
    offs = torch.arange(-r, r + 1, device=heatmaps.device)
    rows = py[:, None] + offs[None]  # (NK, 13)
    cols = px[:, None] + offs[None]
    # Gather the window straight from the flat maps; outside the map reads as zero padding.
    inside = ((rows >= 0) & (rows < h))[:, :, None] & ((cols >= 0) & (cols < w))[:, None, :]
    flat_index = rows.clamp(0, h - 1)[:, :, None] * w + cols.clamp(0, w - 1)[:, None, :]
    window = flat.gather(1, flat_index.reshape(n * k, -1)).reshape(n * k, _WINDOW, _WINDOW)
    window = window * inside
    batch = torch.arange(n * k, device=heatmaps.device)[:, None, None]
    blurred = F.conv2d(window[:, None], _gaussian_kernel(DARK_KERNEL, heatmaps.device))[:, 0]
    # Keep the reference's max-preserving rescale (it matters only through the log clamp).
    peak = blurred.amax(dim=(1, 2)).clamp_min(1e-12)
    blurred = blurred * (scores / peak)[:, None, None]
    # The reference replicate-pads the blurred map by one pixel: clamp neighbours at the edges.
    dy = (torch.stack([py - 1, py, py + 1], 1).clamp(0, h - 1) - py[:, None] + 1)
    dx = (torch.stack([px - 1, px, px + 1], 1).clamp(0, w - 1) - px[:, None] + 1)
    logv = blurred.clamp(1e-3, 50.0).log()
    logv = logv[batch, dy[:, :, None], dx[:, None, :]]  # (NK, 3, 3) rows=y, cols=x
    c = logv[:, 1, 1]
    gx = 0.5 * (logv[:, 1, 2] - logv[:, 1, 0])
    gy = 0.5 * (logv[:, 2, 1] - logv[:, 0, 1])
    hxx = logv[:, 1, 2] - 2 * c + logv[:, 1, 0]
    hyy = logv[:, 2, 1] - 2 * c + logv[:, 0, 1]
    hxy = 0.5 * (logv[:, 2, 2] - logv[:, 1, 2] - logv[:, 2, 1] + 2 * c
                 - logv[:, 1, 0] - logv[:, 0, 1] + logv[:, 0, 0])
    eps = torch.finfo(torch.float32).eps
    hxx, hyy = hxx + eps, hyy + eps
    det = hxx * hyy - hxy * hxy
    ox = (hyy * gx - hxy * gy) / det
    oy = (-hxy * gx + hxx * gy) / det
    offset = torch.stack([ox, oy], dim=-1)
    # A flat or saddle-shaped peak gives no sensible Newton step: bound it.
    ok = torch.isfinite(offset).all(-1)
    offset = torch.where(ok[:, None], offset.clamp(-max_step, max_step),
                         torch.zeros_like(offset))
    coords = torch.stack([px, py], dim=-1).float() - offset
    return coords.reshape(n, k, 2), scores.reshape(n, k)


def _peaks(maps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    Maximum, column and row of each map ``(M, h, w)``: the first peak in row-major order.

    The same as ``max`` over the flattened maps, in two steps that cost what they must: one
    ``amax`` pass over every pixel (an index-tracking ``max`` over the maps is ~7x slower on
    CPU), then the first row holding the maximum and its first column, on ``(M, h)`` and
    ``(M, w)`` only.
    """
    row_max = maps.amax(dim=2)  # (M, h)
    scores, py = row_max.max(dim=1)
    rows = maps[torch.arange(maps.shape[0], device=maps.device), py]  # (M, w)
    px = rows.argmax(dim=1)
    return scores, px, py


def heatmap_to_image(coords: torch.Tensor, centers: torch.Tensor, sizes: torch.Tensor,
                     heatmap_size: tuple[int, int]) -> torch.Tensor:
    """Map heatmap pixels to image pixels for crop windows ``centers``/``sizes`` (UDP)."""
    h, w = heatmap_size
    denom = torch.tensor([max(w - 1, 1), max(h - 1, 1)], device=coords.device,
                         dtype=torch.float32)
    return coords / denom * sizes[:, None, :] + centers[:, None, :] - 0.5 * sizes[:, None, :]


def image_to_heatmap(xy: torch.Tensor, centers: torch.Tensor, sizes: torch.Tensor,
                     heatmap_size: tuple[int, int]) -> torch.Tensor:
    """Inverse of :func:`heatmap_to_image` (used by tests and training-style targets)."""
    h, w = heatmap_size
    denom = torch.tensor([max(w - 1, 1), max(h - 1, 1)], device=xy.device, dtype=torch.float32)
    return (xy - centers[:, None, :] + 0.5 * sizes[:, None, :]) / sizes[:, None, :] * denom


def gaussian_heatmaps(centers_xy: torch.Tensor, heatmap_size: tuple[int, int],
                      sigma: float = 2.0) -> torch.Tensor:
    """Gaussian heatmaps ``(N, K, h, w)`` peaked at sub-pixel ``centers_xy (N, K, 2)``."""
    h, w = heatmap_size
    ys = torch.arange(h, dtype=torch.float32, device=centers_xy.device)
    xs = torch.arange(w, dtype=torch.float32, device=centers_xy.device)
    dx2 = (xs[None, None, None, :] - centers_xy[..., 0, None, None]) ** 2
    dy2 = (ys[None, None, :, None] - centers_xy[..., 1, None, None]) ** 2
    return torch.exp(-(dx2 + dy2) / (2 * sigma * sigma))


__all__ = ['PoseResult', 'decode_heatmaps', 'flip_back', 'heatmap_to_image',
           'image_to_heatmap', 'gaussian_heatmaps', 'DARK_KERNEL', 'MAX_STEP']
