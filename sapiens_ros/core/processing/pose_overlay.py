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
``pose/overlay``: every person's box, skeleton, keypoints and id label drawn on the frame.

One call draws all persons at once with :mod:`.draw` (torch, on the frame's device): the boxes,
then the links of the keypoint format whose both ends are visible, then the visible keypoints
(a lighter tint of the person's colour), then each label on a patch of the person's colour at
its box's top-left corner. What to draw comes in a :class:`PoseDrawing` (host arrays; the
caller picks the keypoints, the colours and the label strings of the rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from . import draw


@dataclass(frozen=True)
class PoseDrawing:
    """What :func:`pose_overlay` draws, one row per person."""

    keypoints: np.ndarray  # (P, K, 2) image pixels x, y
    visible: np.ndarray  # (P, K) bool: drawn (and their links)
    links: np.ndarray  # (L, 2) keypoint index pairs of the skeleton
    colors: np.ndarray  # (P, 3) uint8 RGB
    labels: Sequence[str] = ()  # per row, [a-z0-9]; '' or missing rows: no label
    boxes: np.ndarray | None = None  # (P, 4) x_min, y_min, x_max, y_max; None: no boxes

    def __post_init__(self) -> None:
        rows = len(self.keypoints)
        shapes = {'visible': (len(self.visible), rows), 'colors': (len(self.colors), rows)}
        if self.boxes is not None:
            shapes['boxes'] = (len(self.boxes), rows)
        if self.labels:
            shapes['labels'] = (len(self.labels), rows)
        wrong = [f'{name} has {n} rows' for name, (n, want) in shapes.items() if n != want]
        if wrong:
            raise ValueError(f'PoseDrawing of {rows} persons: {", ".join(wrong)}')
        for label in self.labels:
            draw.char_codes(label)  # ValueError naming a character the font lacks


def line_radius(height: int, width: int) -> int:
    """Half-thickness of links and boxes: 1 (3 px lines) up to 1000 px, thicker above."""
    return max(1, min(height, width) // 500)


def text_scale(height: int, width: int) -> int:
    """Font pixels per glyph pixel: 2 (14 px high text) for VGA to 1080p, more above."""
    return max(1, min(height, width) // 400 + 1)


def pose_overlay(rgb: torch.Tensor, drawing: PoseDrawing,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    """
    Return ``rgb`` (HxWx3 uint8) with ``drawing`` drawn on it (into ``out`` when given).

    Channel order is the input's: the colours are RGB, so pass an RGB frame.
    """
    image = rgb.clone() if out is None else out.copy_(rgb)
    if not len(drawing.keypoints):
        return image
    device = image.device
    height, width = image.shape[:2]
    radius = line_radius(height, width)
    kp = torch.as_tensor(np.asarray(drawing.keypoints, np.float32), device=device)
    visible = torch.as_tensor(np.asarray(drawing.visible, bool), device=device)
    visible = visible & torch.isfinite(kp).all(-1)
    colors = torch.as_tensor(np.asarray(drawing.colors, np.uint8), device=device)
    if drawing.boxes is not None:
        boxes = torch.as_tensor(np.asarray(drawing.boxes, np.float32), device=device)
        ok = torch.isfinite(boxes).all(1)
        draw.draw_boxes(image, boxes[ok], colors[ok], max(radius - 1, 0))
    links = torch.as_tensor(np.asarray(drawing.links, np.int64).reshape(-1, 2), device=device)
    both = visible[:, links[:, 0]] & visible[:, links[:, 1]]  # (P, L)
    person, link = both.nonzero(as_tuple=True)
    draw.draw_segments(image, kp[person, links[link, 0]], kp[person, links[link, 1]],
                       colors[person], radius)
    person, point = visible.nonzero(as_tuple=True)
    tint = ((colors.to(torch.int32) + 255) // 2).to(torch.uint8)
    draw.draw_discs(image, kp[person, point], tint[person], radius + 1)
    _labels(image, drawing, kp, visible, colors)
    return image


def _labels(image: torch.Tensor, drawing: PoseDrawing, kp: torch.Tensor,
            visible: torch.Tensor, colors: torch.Tensor) -> None:
    """Each row's label on a patch of its colour: above its box's top-left corner, or inside."""
    rows = [i for i, label in enumerate(drawing.labels) if label]
    if not rows:
        return
    height, width = image.shape[:2]
    scale = text_scale(height, width)
    pad = scale
    if drawing.boxes is not None:
        anchor = np.asarray(drawing.boxes, np.float32)[rows, :2]
    else:  # the top-left of the visible keypoints
        pts = np.where(np.asarray(drawing.visible)[..., None],
                       np.asarray(drawing.keypoints, np.float32), np.nan)[rows]
        anchor = np.nanmin(pts, axis=1) if pts.size else np.zeros((0, 2), np.float32)
    keep = [k for k, row in enumerate(rows) if np.isfinite(anchor[k]).all()]
    rows, anchor = [rows[k] for k in keep], anchor[keep]
    if not rows:
        return
    labels = [drawing.labels[i] for i in rows]
    sizes = np.array([draw.text_size(len(label), scale) for label in labels], np.int64)
    patch = sizes + 2 * pad  # (N, 2) width, height
    x = np.clip(np.round(anchor[:, 0]).astype(np.int64), 0, max(width - 1, 0))
    top = np.round(anchor[:, 1]).astype(np.int64)
    y = np.where(top - patch[:, 1] >= 0, top - patch[:, 1], np.maximum(top, 0))
    rects = torch.as_tensor(np.stack([x, y, patch[:, 0], patch[:, 1]], 1), device=image.device)
    back = colors[rows]
    draw.fill_rects(image, rects, back)
    luma = back.float() @ torch.tensor([0.299, 0.587, 0.114], device=image.device)
    ink = torch.where((luma > 128)[:, None], torch.zeros_like(back), torch.full_like(back, 255))
    draw.draw_text(image, labels, rects[:, :2] + pad, ink, scale)
