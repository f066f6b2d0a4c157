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
Person boxes from an external detector (ROS-free): centre/size boxes to clipped xyxy boxes.

A detector gives per detection a centre, a size (pixels of the image it ran on), a rotation,
class ids and scores (``vision_msgs/Detection2D``: each result a class and a score). Kept are
the detections whose best accepted class scores at least ``min_score``; their axis-aligned box
is clipped to the image as every box source is (``core.processing.boxes.clip_boxes``: pixel
centres at integers, the edges at -0.5). Bad entries are counted by kind, never raised: ``nan``
(non-finite numbers), ``size`` (zero or negative width or height), ``outside`` (nothing left
inside the image); filtered ones as ``class`` (no accepted class) and ``score`` (below
``min_score``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from .boxes import clip_boxes

#: Kinds of rejected detections, in the order they are checked.
REJECTED_KINDS = ('nan', 'size', 'class', 'score', 'outside')


@dataclass
class DetectorBoxes:
    """The raw boxes of one detector message, one row per detection."""

    centers: np.ndarray  # (N, 2) float64 pixels
    sizes: np.ndarray  # (N, 2) float64 width, height in pixels
    thetas: np.ndarray  # (N,) float64 rotation (rad, counter-clockwise)
    classes: list[Sequence[str]]  # per detection, its hypotheses' class ids
    scores: list[Sequence[float]]  # per detection, its hypotheses' scores

    def __len__(self) -> int:
        return int(self.centers.shape[0])


@dataclass
class PersonBoxes:
    """Accepted person boxes and what was rejected."""

    boxes: np.ndarray  # (M, 4) float32 xyxy, clipped to [-0.5, W - 0.5] x [-0.5, H - 0.5]
    scores: np.ndarray  # (M,) float32
    rows: np.ndarray  # (M,) int64 index of each box in the detector message
    rejected: Counter = field(default_factory=Counter)  # kind -> count

    def __len__(self) -> int:
        return int(self.boxes.shape[0])


def _best_scores(det: DetectorBoxes, accepted: Collection[str] | None) -> np.ndarray:
    """Best score per detection over its accepted classes; NaN for none, -inf if bad."""
    best = np.full(len(det), np.nan)
    for i, (classes, scores) in enumerate(zip(det.classes, det.scores, strict=True)):
        ok = [float(s) for c, s in zip(classes, scores, strict=True)
              if accepted is None or str(c) in accepted]
        if ok:
            best[i] = max(ok) if all(np.isfinite(ok)) else -np.inf
    return best


def person_boxes(det: DetectorBoxes, image_size: tuple[int, int],
                 classes: Collection[str] | None = ('person',), min_score: float = 0.5,
                 max_boxes: int | None = None) -> PersonBoxes:
    """
    Clipped xyxy person boxes of ``det`` for an image of ``image_size`` ``(height, width)``.

    Boxes keep the message's order. ``classes``: the accepted class ids (None: any); a
    detection without hypotheses counts as one of class ``''`` with score 1. ``max_boxes``
    keeps the best-scored ones; the others are not counted as rejected.
    """
    n = len(det)
    rejected: Counter = Counter()
    empty = PersonBoxes(np.zeros((0, 4), np.float32), np.zeros(0, np.float32),
                        np.zeros(0, np.int64), rejected)
    if n == 0:
        return empty
    det = DetectorBoxes(det.centers, det.sizes, det.thetas,
                        [c if len(c) else ('',) for c in det.classes],
                        [s if len(s) else (1.0,) for s in det.scores])
    score = _best_scores(det, None if classes is None else {str(c) for c in classes})
    geometry = np.concatenate([det.centers, det.sizes, det.thetas[:, None]], 1)
    kind = np.full(n, '', object)
    kind[~np.isfinite(geometry).all(1) | (score == -np.inf)] = 'nan'
    kind[(kind == '') & ~(det.sizes > 0).all(1)] = 'size'
    kind[(kind == '') & np.isnan(score)] = 'class'
    kind[(kind == '') & ~(score >= min_score)] = 'score'
    # the axis-aligned box of the (possibly rotated) box, clipped to the image
    c, s = np.cos(det.thetas), np.sin(det.thetas)
    with np.errstate(invalid='ignore'):  # bad rows (inf sizes) are already counted
        half = np.stack([np.abs(c) * det.sizes[:, 0] + np.abs(s) * det.sizes[:, 1],
                         np.abs(s) * det.sizes[:, 0] + np.abs(c) * det.sizes[:, 1]], 1) / 2
        boxes, inside = clip_boxes(np.concatenate([det.centers - half, det.centers + half], 1),
                                   image_size)
    kind[(kind == '') & ~inside] = 'outside'
    rejected.update(k for k in kind if k)
    keep = np.flatnonzero(kind == '')
    if max_boxes is not None and len(keep) > max_boxes:  # the best ones, in message order
        keep = np.sort(keep[np.argsort(-score[keep], kind='stable')[:max_boxes]])
    return PersonBoxes(boxes[keep].astype(np.float32), score[keep].astype(np.float32),
                       keep.astype(np.int64), rejected)


__all__ = ['DetectorBoxes', 'PersonBoxes', 'REJECTED_KINDS', 'person_boxes']
