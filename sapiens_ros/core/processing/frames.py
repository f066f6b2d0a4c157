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

"""Upload camera frames to the model's device once and normalise them for every head."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from .letterbox import Letterbox
from ..errors import FrameError

#: ImageNet statistics on the 0-255 scale, RGB order (what Sapiens2 was trained with).
MEAN_255 = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD_255 = (0.229 * 255, 0.224 * 255, 0.225 * 255)
COLOR_ORDERS = ('rgb', 'bgr')


def check_frame(frame: np.ndarray | torch.Tensor, max_pixels: int | None = None) -> None:
    """Raise :class:`FrameError` unless ``frame`` is a non-empty uint8 HxW, HxWx1 or HxWx3."""
    shape = tuple(frame.shape)
    dtype = frame.dtype
    if dtype not in (np.uint8, torch.uint8):
        raise FrameError(f'frame dtype must be uint8, got {dtype}')
    if len(shape) not in (2, 3) or (len(shape) == 3 and shape[2] not in (1, 3)):
        raise FrameError(f'frame must be HxW (mono8) or HxWx3 (rgb8/bgr8), got shape {shape}')
    if shape[0] == 0 or shape[1] == 0:
        raise FrameError(f'frame has zero size {shape[1]}x{shape[0]}')
    if max_pixels and shape[0] * shape[1] > max_pixels:
        raise FrameError(f'frame {shape[1]}x{shape[0]} exceeds max_pixels={max_pixels}')


@dataclass
class UploadedFrame:
    """One frame on the device: the original pixels and an ImageNet-scaled float copy."""

    rgb: torch.Tensor  # (H, W, 3) uint8, RGB order
    scaled: torch.Tensor  # (3, H, W) float32: rgb / std (mean is subtracted after sampling)
    letterbox: Letterbox  # into the batch's default input size

    @property
    def size(self) -> tuple[int, int]:
        """``(H, W)`` of the original frame."""
        return self.letterbox.image_size


class FrameBatch:
    """
    Frames uploaded and normalised once, shared by every head of the pipeline.

    :meth:`letterboxed` gives the letterboxed, normalised ``(B, 3, H_in, W_in)`` batch of any
    input size (each head may run at its own), each frame built once per size and only when a
    head asks for it; ``pixel_values`` is the one at the default ``input_size``. :meth:`crops`
    samples pose crops from the same uploaded frames.
    ``color_order`` is one order for every frame or one per frame.
    """

    def __init__(self, frames: Sequence[np.ndarray | torch.Tensor], input_size: tuple[int, int],
                 device: torch.device, color_order: str | Sequence[str] = 'rgb') -> None:
        if not frames:
            raise FrameError('no frame given')
        orders = [color_order] * len(frames) if isinstance(color_order, str) else \
            list(color_order)
        if len(orders) != len(frames):
            raise FrameError(f'{len(orders)} color orders for {len(frames)} frames')
        for order in orders:
            if order not in COLOR_ORDERS:
                raise FrameError(f'color_order must be one of {COLOR_ORDERS}, got {order!r}')
        self.device = device
        self.input_size = tuple(input_size)
        self._mean = torch.tensor(MEAN_255, device=device).div_(
            torch.tensor(STD_255, device=device)).view(3, 1, 1)
        inv_std = (1.0 / torch.tensor(STD_255, device=device)).view(3, 1, 1)
        self.frames: list[UploadedFrame] = []
        for frame, order in zip(frames, orders, strict=True):
            check_frame(frame)
            rgb = _upload(frame, device, order)
            scaled = rgb.permute(2, 0, 1).float().mul_(inv_std)
            lb = Letterbox.fit(tuple(rgb.shape[:2]), self.input_size)
            self.frames.append(UploadedFrame(rgb, scaled, lb))
        self._letterboxes: dict[tuple[int, int], list[Letterbox]] = {
            self.input_size: [f.letterbox for f in self.frames]}
        self._batches: dict[tuple[int, int], torch.Tensor] = {}
        self._built: dict[tuple[int, int], list[bool]] = {}

    def __len__(self) -> int:
        return len(self.frames)

    @property
    def pixel_values(self) -> torch.Tensor:
        """Return the whole batch letterboxed into the default input size."""
        return self.letterboxed(self.input_size)

    def letterboxes_at(self, size: tuple[int, int]) -> list[Letterbox]:
        """Letterbox transform of each frame into ``size`` ``(H, W)``."""
        size = tuple(size)
        if size not in self._letterboxes:
            self._letterboxes[size] = [Letterbox.fit(f.size, size) for f in self.frames]
        return self._letterboxes[size]

    def letterboxed(self, size: tuple[int, int],
                    indices: Sequence[int] | None = None) -> torch.Tensor:
        """
        Normalised frames letterboxed into ``size`` ``(H, W)``: all, or those at ``indices``.

        Each frame is letterboxed once per size, and only when first asked for; a subset is a
        view (contiguous indices) or one gather of the size's batch.
        """
        size = tuple(size)
        if size not in self._batches:
            in_h, in_w = size
            self._batches[size] = torch.empty(len(self.frames), 3, in_h, in_w, device=self.device)
            self._built[size] = [False] * len(self.frames)
        out = self._batches[size]
        rows = range(len(self.frames)) if indices is None else indices
        built, lbs = self._built[size], self.letterboxes_at(size)
        for i in rows:
            if not built[i]:
                self._letterbox_into(out[i], self.frames[i], lbs[i])
                built[i] = True
        if indices is None:
            return out
        first = indices[0]
        if list(indices) == list(range(first, first + len(indices))):
            return out[first:first + len(indices)]
        return out[torch.as_tensor(list(indices), device=out.device)]

    def _letterbox_into(self, out: torch.Tensor, frame: UploadedFrame, lb: Letterbox) -> None:
        """
        Write ``frame`` letterboxed by ``lb`` and normalised into ``out`` ``(3, H, W)``.

        Only the padding bands are filled (with the normalised zero), and a frame already at
        its resized size is written in one pass, without an identity ``F.interpolate``.
        """
        (h, w), (top, left) = lb.resized_size, lb.pad
        pad = -self._mean
        for band in (out[:, :top], out[:, top + h:], out[:, top:top + h, :left],
                     out[:, top:top + h, left + w:]):
            if band.numel():
                band.copy_(pad.expand_as(band))
        inner = out[:, top:top + h, left:left + w]
        if (h, w) == tuple(lb.image_size):
            torch.sub(frame.scaled, self._mean, out=inner)
            return
        down = h < lb.image_size[0]
        resized = F.interpolate(frame.scaled[None], size=(h, w), mode='bilinear',
                                align_corners=False, antialias=down)[0]
        torch.sub(resized, self._mean, out=inner)

    def crops(self, frame_index: torch.Tensor, centers: torch.Tensor, sizes: torch.Tensor,
              out_size: tuple[int, int]) -> torch.Tensor:
        """
        Sample normalised crops ``(N, 3, h, w)`` for boxes given as centre and size (UDP).

        Crop pixel ``(0, 0)`` is the window's top-left corner and ``(w-1, h-1)`` its bottom-right
        (``align_corners=True``), the convention the heatmap decoder inverts. Like the Sapiens2
        reference, upscaled crops are bicubic (no clamping of the overshoot, as there) and
        downscaled ones bilinear; both are sampled on the device from the float frame.
        """
        out_h, out_w = out_size
        n = int(frame_index.shape[0])
        out = torch.empty(n, 3, out_h, out_w, device=self.device)
        unit_x = torch.linspace(-0.5, 0.5, out_w, device=self.device)
        unit_y = torch.linspace(-0.5, 0.5, out_h, device=self.device)
        for i, frame in enumerate(self.frames):
            sel = (frame_index == i).nonzero().flatten()
            if sel.numel() == 0:
                continue
            height, width = frame.size
            xs = centers[sel, 0:1] + unit_x[None] * sizes[sel, 0:1]  # (n, w)
            ys = centers[sel, 1:2] + unit_y[None] * sizes[sel, 1:2]  # (n, h)
            gx = (xs + 0.5) * (2.0 / width) - 1.0
            gy = (ys + 0.5) * (2.0 / height) - 1.0
            grid = torch.stack(torch.broadcast_tensors(gx[:, None, :], gy[:, :, None]), dim=-1)
            upscaled = _upscaled(sizes[sel], out_size)
            for mask, mode in ((~upscaled, 'bilinear'), (upscaled, 'bicubic')):
                idx = sel[mask]
                if idx.numel():
                    out[idx] = F.grid_sample(frame.scaled[None].expand(len(idx), -1, -1, -1),
                                             grid[mask], mode=mode, padding_mode='zeros',
                                             align_corners=False)
        return out.sub_(self._mean)


def _upscaled(sizes: torch.Tensor, out_size: tuple[int, int]) -> torch.Tensor:
    """Crops ``(N,)`` magnified in both axes (the reference's bicubic case)."""
    out_h, out_w = out_size
    scale_x = (out_w - 1) / sizes[:, 0]
    scale_y = (out_h - 1) / sizes[:, 1]
    return torch.minimum(scale_x, scale_y) >= 1.0


def _upload(frame: np.ndarray | torch.Tensor, device: torch.device,
            color_order: str) -> torch.Tensor:
    """Copy one uint8 frame to ``device`` as ``(H, W, 3)`` RGB."""
    if isinstance(frame, np.ndarray):
        frame = np.ascontiguousarray(frame)
        with warnings.catch_warnings():  # read-only buffers (e.g. bag messages): never written
            warnings.simplefilter('ignore', UserWarning)
            tensor = torch.from_numpy(frame)
    else:
        tensor = frame
    if device.type == 'cuda' and tensor.device.type == 'cpu':
        tensor = tensor.pin_memory().to(device, non_blocking=True)
    else:
        tensor = tensor.to(device)
    if tensor.ndim == 2:
        tensor = tensor[:, :, None]
    if tensor.shape[2] == 1:
        return tensor.expand(-1, -1, 3)
    return tensor.flip(2) if color_order == 'bgr' else tensor
