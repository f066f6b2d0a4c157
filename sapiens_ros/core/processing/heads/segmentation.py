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

from ..letterbox import Letterbox, sample_map


@dataclass
class SegResult:
    """Label map of one frame."""

    labels: np.ndarray  # (H, W) uint8 class ids

    @property
    def foreground(self) -> np.ndarray:
        """Boolean person mask (every class but background)."""
        return self.labels != 0


def upsample_dtype(device: torch.device) -> torch.dtype:
    """Reduced precision for the logit upsampling where it is fast (CUDA), else float32."""
    return torch.float16 if device.type == 'cuda' else torch.float32


def seg_labels(logits: torch.Tensor, letterbox: Letterbox,
               dtype: torch.dtype | None = None) -> torch.Tensor:
    """
    ``(H, W)`` uint8 labels: logits ``(C, h, w)`` resampled to the frame, then argmax.

    Resampling runs in ``dtype`` (float16 on CUDA by default), which agrees with the float32
    reference on well over 99.5% of pixels at a fraction of the memory traffic.
    """
    dtype = dtype or upsample_dtype(logits.device)
    return channel_argmax(sample_map(logits.to(dtype), letterbox))


def channel_argmax(scores: torch.Tensor) -> torch.Tensor:
    """
    ``scores.argmax(0)`` as uint8 (lowest index on ties), fast on every device.

    On CPU a strided ``argmax`` over the channel axis is ~4x slower than ``amax``, so there the
    index comes from ``amax`` over a descending channel ramp masked by the maxima.
    """
    if scores.device.type != 'cpu':
        return scores.argmax(0).to(torch.uint8)
    count = scores.shape[0]
    ramp = torch.arange(count - 1, -1, -1, dtype=torch.uint8).view(-1, 1, 1)
    best = scores.amax(0, keepdim=True)
    return (count - 1) - ((scores == best) * ramp).amax(0)
