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
Aspect-preserving resize + centred padding, and the exact maps between image and model pixels.

Pixel coordinates are continuous with pixel centres at integers (``0 .. W-1``). Resizing uses the
half-pixel convention of ``F.interpolate(..., align_corners=False)``, so for the resized image
``x_model = (x_image + 0.5) * scale_x - 0.5 + pad_left`` and the inverse is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Letterbox:
    """How one frame of ``image_size`` was placed into the ``input_size`` model input."""

    image_size: tuple[int, int]  # (H, W) of the original frame
    input_size: tuple[int, int]  # (H, W) of the model input
    resized_size: tuple[int, int]  # (h, w) of the resized frame inside the input
    pad: tuple[int, int]  # (top, left) padding

    @classmethod
    def fit(cls, image_size: tuple[int, int], input_size: tuple[int, int]) -> Letterbox:
        """Fit ``image_size`` into ``input_size`` keeping the aspect ratio, padding centred."""
        height, width = image_size
        in_h, in_w = input_size
        ratio = min(in_h / height, in_w / width)
        new_h = min(in_h, max(1, round(height * ratio)))
        new_w = min(in_w, max(1, round(width * ratio)))
        return cls((height, width), (in_h, in_w), (new_h, new_w),
                   ((in_h - new_h) // 2, (in_w - new_w) // 2))

    @property
    def scale(self) -> tuple[float, float]:
        """Resize factors ``(sx, sy)`` from image to model pixels."""
        return (self.resized_size[1] / self.image_size[1],
                self.resized_size[0] / self.image_size[0])

    @property
    def ratio(self) -> float:
        """Return the nominal resize ratio ``r`` (model pixels per image pixel)."""
        return min(self.input_size[0] / self.image_size[0],
                   self.input_size[1] / self.image_size[1])

    def to_model(self, xy: np.ndarray) -> np.ndarray:
        """Map ``(..., 2)`` image pixel coordinates to model-input pixel coordinates."""
        sx, sy = self.scale
        xy = np.asarray(xy, dtype=np.float64)
        return np.stack([(xy[..., 0] + 0.5) * sx - 0.5 + self.pad[1],
                         (xy[..., 1] + 0.5) * sy - 0.5 + self.pad[0]], axis=-1)

    def to_image(self, xy: np.ndarray) -> np.ndarray:
        """Map ``(..., 2)`` model-input pixel coordinates back to image pixel coordinates."""
        sx, sy = self.scale
        xy = np.asarray(xy, dtype=np.float64)
        return np.stack([(xy[..., 0] - self.pad[1] + 0.5) / sx - 0.5,
                         (xy[..., 1] - self.pad[0] + 0.5) / sy - 0.5], axis=-1)

    def sampling_grid(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """
        ``grid_sample`` grid (``align_corners=False``) at image pixels ``xs`` x ``ys``.

        Works for any head output resolution that spans the whole model input, because the
        normalised coordinate of an image pixel does not depend on the output size.
        Returns ``(1, len(ys), len(xs), 2)``.
        """
        gx, gy = self.normalized(xs, ys)
        return torch.stack(torch.broadcast_tensors(gx[None, :], gy[:, None]), dim=-1)[None]

    def point_grid(self, xy: torch.Tensor) -> torch.Tensor:
        """``grid_sample`` grid at arbitrary image points ``(N, 2)``; returns ``(1, 1, N, 2)``."""
        gx, gy = self.normalized(xy[:, 0], xy[:, 1])
        return torch.stack([gx, gy], dim=-1)[None, None]

    def normalized(self, xs: torch.Tensor, ys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """
        Normalised ``[-1, 1]`` model coordinates of image coordinates ``xs`` and ``ys``.

        Coordinates are clamped to the resized frame, so samples never blend in the padding
        (the same edge rule as cropping the frame out and interpolating it).
        """
        sx, sy = self.scale
        (in_h, in_w), (rh, rw), (top, left) = self.input_size, self.resized_size, self.pad
        mx = ((xs + 0.5) * sx - 0.5).clamp(0, rw - 1) + left
        my = ((ys + 0.5) * sy - 0.5).clamp(0, rh - 1) + top
        return (mx + 0.5) * (2.0 / in_w) - 1.0, (my + 0.5) * (2.0 / in_h) - 1.0


def sample_map(maps: torch.Tensor, letterbox: Letterbox, stride: int = 1,
               mode: str = 'bilinear') -> torch.Tensor:
    """
    Resample a head output ``(C, h, w)`` at the frame's pixels (every ``stride``-th one).

    Removes the padding and undoes the resize; returns ``(C, ceil(H/stride), ceil(W/stride))``
    in the dtype of ``maps``. When the padding falls on whole output pixels (every Sapiens2
    head) and ``stride`` is 1 this is a crop plus ``F.interpolate``, which runs in any dtype;
    otherwise a ``grid_sample`` with float32 coordinates.
    """
    height, width = letterbox.image_size
    crop = output_crop(maps.shape[-2:], letterbox)
    if stride == 1 and crop is not None:
        top, left, bottom, right = crop
        return F.interpolate(maps[None, :, top:bottom, left:right], size=(height, width),
                             mode=mode, **({'align_corners': False} if mode == 'bilinear'
                                           else {}))[0]
    dev = maps.device
    xs = torch.arange(0, width, stride, device=dev, dtype=torch.float32)
    ys = torch.arange(0, height, stride, device=dev, dtype=torch.float32)
    grid = letterbox.sampling_grid(xs, ys)
    out = F.grid_sample(maps[None].float(), grid, mode=mode, padding_mode='border',
                        align_corners=False)[0]
    return out.to(maps.dtype)


def output_crop(out_hw: tuple[int, int] | torch.Size,
                letterbox: Letterbox) -> tuple[int, int, int, int] | None:
    """Return ``(top, left, bottom, right)`` of the frame in an output map, if integral."""
    fy = out_hw[0] / letterbox.input_size[0]
    fx = out_hw[1] / letterbox.input_size[1]
    (top, left), (rh, rw) = letterbox.pad, letterbox.resized_size
    edges = (top * fy, left * fx, (top + rh) * fy, (left + rw) * fx)
    rounded = tuple(round(e) for e in edges)
    if all(abs(e - r) < 1e-6 for e, r in zip(edges, rounded, strict=True)):
        return rounded
    return None


def sample_points(maps: torch.Tensor, letterbox: Letterbox, xy: torch.Tensor,
                  mode: str = 'bilinear') -> torch.Tensor:
    """Sample a head output ``(C, h, w)`` at image points ``xy (N, 2)``; returns ``(N, C)``."""
    grid = letterbox.point_grid(xy.float())
    out = F.grid_sample(maps[None].float(), grid, mode=mode, padding_mode='border',
                        align_corners=False)
    return out[0, :, 0].T.to(maps.dtype)
