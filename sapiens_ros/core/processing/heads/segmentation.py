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

"""Body-part segmentation: logits to a uint8 label map at the original image size."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..hostbuf import device_empty
from ..letterbox import Letterbox, output_crop, sample_map


@dataclass
class SegResult:
    """Label map of one frame."""

    labels: np.ndarray  # (H, W) uint8 class ids

    @property
    def foreground(self) -> np.ndarray:
        """Boolean person mask (every class but background)."""
        return self.labels != 0


#: Fraction of uniform 2x2 source blocks below which argmax-first labels cost more than the
#: reference (a trained head's labels are smooth: nearly every block is uniform).
MIN_UNIFORM = 0.75


def upsample_dtype(device: torch.device) -> torch.dtype:
    """Reduced precision for the logit upsampling where it is fast (CUDA), else float32."""
    return torch.float16 if device.type == 'cuda' else torch.float32


def seg_labels(logits: torch.Tensor, letterbox: Letterbox,
               dtype: torch.dtype | None = None) -> torch.Tensor:
    """
    ``(H, W)`` uint8 labels: the argmax of the logits ``(C, h, w)`` resampled to the frame.

    The reference resamples every logit plane to the frame, then takes the argmax. On the CPU
    (float32) the argmax comes first, at the logits' resolution (:func:`argmax_first_labels`):
    the same labels but where float rounding decides a near tie, at a fraction of the cost. On
    other devices the planes are resampled in ``dtype`` (float16 on CUDA by default, which
    agrees with the float32 reference on well over 99.5% of pixels) with no host round trip.
    """
    dtype = dtype or upsample_dtype(logits.device)
    # On the CPU the labels are written into a message-ready buffer (seg/labels adopts it).
    out = device_empty(tuple(letterbox.image_size), torch.uint8, logits.device)
    if logits.device.type == 'cpu' and dtype == torch.float32:
        labels = argmax_first_labels(logits, letterbox, out)
        if labels is not None:
            return labels
    return channel_argmax(sample_map(logits.to(dtype), letterbox), out)


def argmax_first_labels(logits: torch.Tensor, letterbox: Letterbox,
                        out: torch.Tensor | None = None) -> torch.Tensor | None:
    """
    Bilinear-upsample-then-argmax labels, computed argmax first.

    None where that costs more (a downscale, or labels so speckled that fewer than
    :data:`MIN_UNIFORM` of the source blocks share one label) or the padding is not whole
    output pixels. Written
    into ``out`` ``(H, W)`` uint8 when given.

    Bilinear resampling blends the four source pixels around each frame pixel with convex
    weights, so where those four share one argmax label, the blend's argmax is that label
    too. Only the frame pixels whose four sources disagree (the class borders) are resampled,
    in all planes, exactly as ``F.interpolate`` does (``align_corners=False``).
    """
    crop = output_crop(logits.shape[-2:], letterbox)
    height, width = letterbox.image_size
    if crop is None or height * width < (crop[2] - crop[0]) * (crop[3] - crop[1]):
        return None  # a downscale costs less resampled first: fewer pixels to take argmax of
    top, left, bottom, right = crop
    maps = logits[:, top:bottom, left:right].float()
    low = channel_argmax(maps)
    low_h, low_w = low.shape
    if (low_h, low_w) == (height, width):  # the logits are at the frame's size: no resampling
        return low if out is None else out.copy_(low)
    y0, y1, wy = _taps(low_h, height, low.device)
    x0, x1, wx = _taps(low_w, width, low.device)
    # A 2x2 block of source pixels (clamped at the last row and column, as the taps are) is
    # uniform when its four labels agree.
    down = torch.cat([low[1:], low[-1:]])
    uniform = (low == down)
    uniform &= torch.cat([uniform[:, 1:], uniform[:, -1:]], 1)
    uniform &= low == torch.cat([low[:, 1:], low[:, -1:]], 1)
    if uniform.sum() < MIN_UNIFORM * uniform.numel():
        return None  # speckle (an untrained model): resampling every pixel costs less
    labels = torch.index_select(low.index_select(0, y0), 1, x0,
                                **({} if out is None else {'out': out}))
    ys, xs = (~uniform.index_select(0, y0).index_select(1, x0)).nonzero(as_tuple=True)
    if len(ys):
        a, b = y0[ys], y1[ys]
        c, d = x0[xs], x1[xs]
        ly, lx = wy[ys], wx[xs]
        # F.interpolate's blend, in its order: rows first weighted by columns
        top_row = (1 - lx) * maps[:, a, c] + lx * maps[:, a, d]
        bottom_row = (1 - lx) * maps[:, b, c] + lx * maps[:, b, d]
        blend = (1 - ly) * top_row + ly * bottom_row
        labels[ys, xs] = channel_argmax(blend[:, :, None])[:, 0]
    return labels


def _taps(size: int, out_size: int,
          device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    Source rows ``i0``, ``i1`` and weights of ``i1`` of a bilinear resize to ``out_size``.

    PyTorch's ``align_corners=False`` rule in float32: ``src = max((i + 0.5) * size / out -
    0.5, 0)``, ``i0 = floor(src)``, ``i1 = min(i0 + 1, size - 1)``.
    """
    scale = torch.tensor(size, dtype=torch.float32) / torch.tensor(out_size, dtype=torch.float32)
    src = ((torch.arange(out_size, dtype=torch.float32) + 0.5) * scale - 0.5).clamp_min(0)
    i0 = src.long().clamp_max(size - 1)
    i1 = (i0 + 1).clamp_max(size - 1)
    return i0.to(device), i1.to(device), (src - i0).to(device)


def channel_argmax(scores: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """
    ``scores.argmax(0)`` as uint8 (lowest index on ties), fast on every device.

    On CPU a strided ``argmax`` over the channel axis is ~4x slower than ``amax``, so there the
    index comes from ``amax`` over a descending channel ramp masked by the maxima. Written into
    ``out`` (uint8) when given.
    """
    if scores.device.type != 'cpu':
        labels = scores.argmax(0)
        return labels.to(torch.uint8) if out is None else out.copy_(labels)
    count = scores.shape[0]
    ramp = torch.arange(count - 1, -1, -1, dtype=torch.uint8).view(-1, 1, 1)
    best = scores.amax(0, keepdim=True)
    last = torch.tensor(count - 1, dtype=torch.uint8)
    return torch.sub(last, ((scores == best) * ramp).amax(0),
                     **({} if out is None else {'out': out}))
