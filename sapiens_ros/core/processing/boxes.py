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
Person boxes for top-down pose: full frame, caller boxes, or seg foreground components.

Every box is xyxy in image pixels with pixel centres at integers (the letterbox maps'
convention): a ``W`` x ``H`` image spans ``[-0.5, W - 0.5] x [-0.5, H - 0.5]``, and every box
source (seg components, keypoint boxes, tracker predictions, detectors, ``--boxes``) is clipped
to that extent by :func:`clip_boxes` alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import torch
import torch.nn.functional as F

from .letterbox import Letterbox
from ..errors import FrameError

#: Sapiens/mmpose top-down context: each box is enlarged by this factor before cropping.
BOX_PADDING = 1.25


def image_extent(image_size: tuple[int, int]) -> np.ndarray:
    """Return the ``(4,)`` xyxy extent (its pixel edges) of an image of ``(height, width)``."""
    height, width = image_size
    return np.array([-0.5, -0.5, width - 0.5, height - 0.5])


def full_frame_box(image_size: tuple[int, int]) -> np.ndarray:
    """Return the whole frame as one ``(1, 4)`` xyxy box: the image extent."""
    return image_extent(image_size)[None].astype(np.float32)


def parse_boxes(text: str) -> np.ndarray:
    """Parse ``'X1,Y1,X2,Y2;X1,Y1,X2,Y2'`` into an ``(N, 4)`` float32 array."""
    usage = 'expected X1,Y1,X2,Y2 per box, boxes separated by ";"'
    rows = [r for r in text.replace(' ', '').split(';') if r]
    if not rows:
        raise FrameError(f'no boxes in {text!r}; {usage}')
    values = []
    for row in rows:
        try:
            numbers = [float(v) for v in row.split(',')]
        except ValueError:
            raise FrameError(f'cannot parse box {row!r}; {usage}') from None
        if len(numbers) != 4:
            raise FrameError(f'box {row!r} has {len(numbers)} numbers, not 4; {usage}')
        values.append(numbers)
    return check_boxes(np.array(values, dtype=np.float32))


def clip_boxes(boxes: np.ndarray, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """
    Clip ``(N, 4)`` xyxy boxes to the extent of an image of ``size`` ``(height, width)``.

    The one clipping of every box source (:func:`image_extent`: pixel edges at -0.5). Also
    flags the rows left non-empty: a positive width and height, so finite too (NaN compares
    false). The dtype is numpy's promotion: callers cast.
    """
    extent = image_extent(size)
    clipped = np.clip(boxes, extent[[0, 1, 0, 1]], extent[[2, 3, 2, 3]])
    nonempty = (clipped[:, 2] > clipped[:, 0]) & (clipped[:, 3] > clipped[:, 1])
    return clipped, nonempty


def clip_to_image(boxes: np.ndarray, size: tuple[int, int], warn=None) -> np.ndarray:
    """
    Clip ``(N, 4)`` xyxy boxes to an image of ``size`` ``(height, width)``.

    A box entirely outside the image is an error; one that sticks out is clipped, and ``warn``
    (e.g. ``print``) is told which.
    """
    h, w = size
    # float32 in, half-integer bounds (exact in float32): the clipped values are float32 ones,
    # tested as they are kept
    clipped, inside = clip_boxes(np.asarray(boxes, np.float32), size)
    clipped = clipped.astype(np.float32)
    empty = ~inside
    if empty.any():
        raise FrameError(f'box(es) {boxes[empty].tolist()} lie outside the {w}x{h} image')
    moved = (clipped != boxes).any(1)
    if moved.any() and warn is not None:
        warn(f'warning: box(es) {boxes[moved].tolist()} stick out of the {w}x{h} image: '
             f'clipped to {clipped[moved].tolist()}')
    return clipped


def check_boxes(boxes: np.ndarray) -> np.ndarray:
    """Validate ``(N, 4)`` xyxy boxes: finite, with positive width and height."""
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4) if np.size(boxes) else \
        np.zeros((0, 4), np.float32)
    bad = ~np.isfinite(boxes).all(1) | (boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1])
    if bad.any():
        raise FrameError(f'invalid boxes (need finite x1<x2, y1<y2): {boxes[bad].tolist()}')
    return boxes


def keypoint_extent(keypoints: np.ndarray, visible: np.ndarray,
                    min_count: int = 2) -> np.ndarray:
    """Boxes ``(P, 4)`` xyxy around the ``visible`` keypoints; NaN rows with fewer of them."""
    lo = np.where(visible[..., None], keypoints, np.inf).min(1)
    hi = np.where(visible[..., None], keypoints, -np.inf).max(1)
    box = np.concatenate([lo, hi], -1)
    box[visible.sum(1) < max(min_count, 1)] = np.nan
    return box


def keypoint_boxes(keypoints: np.ndarray, scores: np.ndarray, fallback: np.ndarray,
                   image_size: tuple[int, int], min_score: float = 0.3,
                   padding: float = 0.1) -> np.ndarray:
    """
    Person boxes ``(P, 4)`` xyxy around the keypoints scored at least ``min_score``.

    Each side is padded by ``padding`` of the box size and clipped to the image; a person with
    fewer than two such keypoints keeps its ``fallback`` box. Between seg frames these boxes
    (not the predicted ones pose ran on) tell the tracker where each person really is.
    """
    keypoints = np.asarray(keypoints, np.float32)
    if keypoints.shape[0] == 0:
        return np.zeros((0, 4), np.float32)
    box = keypoint_extent(keypoints, np.asarray(scores) >= min_score)
    pad = np.tile((box[:, 2:] - box[:, :2]) * padding, 2) * [-1, -1, 1, 1]
    boxes, ok = clip_boxes(box + pad, image_size)
    return np.where(ok[:, None], boxes, np.asarray(fallback, np.float32)).astype(np.float32)


def crop_windows(boxes: torch.Tensor, input_size: tuple[int, int],
                 padding: float = BOX_PADDING) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Centres ``(N, 2)`` and window sizes ``(N, 2)`` (w, h): boxes enlarged and fixed to aspect.

    The window keeps the model input aspect (3:4 for 1024x768) by growing the short side, as
    Sapiens and mmpose do.
    """
    centers = (boxes[:, :2] + boxes[:, 2:]) * 0.5
    wh = (boxes[:, 2:] - boxes[:, :2]) * padding
    aspect = input_size[1] / input_size[0]
    w = torch.maximum(wh[:, 0], wh[:, 1] * aspect)
    return centers, torch.stack([w, w / aspect], dim=1)


def foreground_boxes(logits: torch.Tensor, letterbox: Letterbox, *, factor: int = 4,
                     min_area: float = 0.002, max_persons: int = 8,
                     fg_threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """
    Person boxes from the connected components of the seg foreground of one frame.

    ``logits`` is the seg output ``(C, h, w)`` over the model input; the rest is
    :func:`foreground_boxes_batch`'s, for one frame.
    """
    return foreground_boxes_batch(logits[None], [letterbox], factor=factor, min_area=min_area,
                                  max_persons=max_persons, fg_threshold=fg_threshold)[0]


def foreground_boxes_batch(logits: torch.Tensor, letterboxes: Sequence[Letterbox], *,
                           factor: int = 4, min_area: float = 0.002, max_persons: int = 8,
                           fg_threshold: float = 0.5) -> list[tuple[np.ndarray, np.ndarray]]:
    """
    Person boxes from the connected components of the seg foreground of each frame of a batch.

    ``logits`` is the seg output ``(N, C, h, w)`` over the model input, one letterbox per frame.
    The foreground probability (1 - p(background)) is computed on the device at ``1/factor``
    resolution for the whole batch at once (one pooling, one softmax, one masking of each
    frame's padding), so only small maps cross to the host, in one copy, where OpenCV labels
    each frame's components (the person count is data dependent). On the CPU, which has no
    launch or copy to save, the pooling goes frame by frame: its maps stay small (the whole
    batch at once measured 0.8x at 4 frames, ``benchmarks/bench_step_kernels.py``). Per
    frame: xyxy boxes ``(P, 4)`` in image pixels and scores ``(P,)`` (mean foreground
    probability), largest component first.
    """
    if not len(letterboxes):
        return []
    in_h, in_w = letterboxes[0].input_size
    low_h, low_w = max(1, in_h // factor), max(1, in_w // factor)
    if logits.device.type == 'cpu':  # no launch or copy to save: each frame's maps stay small
        prob = torch.cat([_foreground_prob(one[None], (low_h, low_w)) for one in logits])
    else:
        prob = _foreground_prob(logits, (low_h, low_w))
    # Ignore the padding: it is not part of the frame (cells known here, on the host).
    cells = [_frame_cells(lb, (low_h, low_w)) for lb in letterboxes]
    inside = np.zeros((len(cells), low_h, low_w), bool)
    for k, (rows, cols) in enumerate(cells):
        inside[k, rows, cols] = True
    inside = torch.as_tensor(inside).to(prob.device, non_blocking=True)
    probs = torch.where(inside, prob, torch.zeros((), dtype=prob.dtype, device=prob.device))
    probs = probs.cpu().numpy()  # the one transfer: OpenCV labels the components
    return [_components(p, lb, cell, (low_h, low_w), min_area, max_persons, fg_threshold)
            for p, lb, cell in zip(probs, letterboxes, cells, strict=True)]


def _foreground_prob(logits: torch.Tensor, low: tuple[int, int]) -> torch.Tensor:
    """``(N, *low)`` foreground probability, 1 - p(background), of ``(N, C, h, w)`` logits."""
    return 1.0 - _pool(logits.float(), low).softmax(1)[:, 0]


def _frame_cells(letterbox: Letterbox, low: tuple[int, int]) -> tuple[slice, slice]:
    """Rows and columns of the low-resolution grid that lie inside the frame (not padding)."""
    (in_h, in_w), (low_h, low_w) = letterbox.input_size, low
    top, left = letterbox.pad
    rh, rw = letterbox.resized_size
    fy, fx = in_h / low_h, in_w / low_w
    return (slice(int(np.ceil(top / fy)), int((top + rh) // fy)),
            slice(int(np.ceil(left / fx)), int((left + rw) // fx)))


def _components(prob: np.ndarray, letterbox: Letterbox, cells: tuple[slice, slice],
                low: tuple[int, int], min_area: float, max_persons: int,
                fg_threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """One frame's boxes and scores from its low-resolution foreground probability map."""
    (in_h, in_w), (low_h, low_w) = letterbox.input_size, low
    fy, fx = in_h / low_h, in_w / low_w
    rows, cols = cells
    valid_cells = len(range(low_h)[rows]) * len(range(low_w)[cols])
    mask = (prob > fg_threshold).astype(np.uint8)
    count, comp, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    areas = stats[1:, cv2.CC_STAT_AREA]
    keep = np.nonzero(areas >= min_area * valid_cells)[0] + 1
    keep = keep[np.argsort(-areas[keep - 1], kind='stable')][:max_persons]
    if keep.size == 0:
        return np.zeros((0, 4), np.float32), np.zeros((0,), np.float32)
    x0 = stats[keep, cv2.CC_STAT_LEFT]
    y0 = stats[keep, cv2.CC_STAT_TOP]
    x1 = x0 + stats[keep, cv2.CC_STAT_WIDTH]
    y1 = y0 + stats[keep, cv2.CC_STAT_HEIGHT]
    # Low-res cell edges -> model pixel coordinates (centres at integers) -> image pixels.
    corners = np.stack([np.stack([x0 * fx - 0.5, y0 * fy - 0.5], -1),
                        np.stack([x1 * fx - 0.5, y1 * fy - 0.5], -1)], axis=1)
    img, _ = clip_boxes(letterbox.to_image(corners).reshape(-1, 4), letterbox.image_size)
    sums = np.bincount(comp.ravel(), weights=prob.ravel(), minlength=count)
    scores = sums[keep] / stats[keep, cv2.CC_STAT_AREA]
    return img.astype(np.float32), scores.astype(np.float32)


def _pool(maps: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """
    Mean of ``maps`` ``(N, C, H, W)`` over the cells of a ``size`` grid.

    A fixed-window ``avg_pool2d`` when the grid divides the map (every Sapiens2 input size), the
    same numbers as ``adaptive_avg_pool2d`` at a lower cost; the adaptive pool otherwise.
    """
    (height, width), (low_h, low_w) = maps.shape[-2:], size
    if height % low_h == 0 and width % low_w == 0:
        kernel = (height // low_h, width // low_w)
        return F.avg_pool2d(maps, kernel, kernel)
    return F.adaptive_avg_pool2d(maps, size)
