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
Person tracking across frames (ByteTrack-style, ROS-free, one tracker per camera).

Detections are split by confidence (the mean of their best keypoint scores): high ones are
matched first to every live track, low ones then to the tracks still unmatched, and only high
ones start new tracks. The similarity of a track and a detection mixes box IoU and keypoint
similarity (OKS), both computed against the track's constant-velocity prediction at the
detection's time stamp, so dropped frames and occlusions (up to ``max_age`` seconds) keep their
identities.

Ids come from an :class:`IdAllocator`: each tracker has its own unless one is shared, as the
cameras of one process do, so that every id (and TF frame named after it) is unique.
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
import threading

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..processing.boxes import clip_boxes, keypoint_extent

LOG = logging.getLogger(__name__)

#: Id returned for a detection that is not tracked (a low-confidence one matching no track).
UNTRACKED = -1


@dataclass
class TrackerConfig:
    """Parameters of :class:`PersonTracker` (times in seconds, scores as the heatmap maxima)."""

    high_score: float = 0.4  # detections at or above start and first-match tracks
    low_score: float = 0.1  # detections below are ignored entirely
    # confidence = mean of the best fifth of the keypoint scores: a person seen from the back
    # or with hidden hands still scores high on the keypoints that are visible
    confidence_fraction: float = 0.2
    keypoint_score: float = 0.3  # keypoints at or above take part in OKS
    min_similarity_high: float = 0.2  # gate of the first (high-confidence) stage
    min_similarity_low: float = 0.4  # stricter gate of the second (low-confidence) stage
    iou_weight: float = 0.5  # similarity = w * IoU + (1 - w) * OKS
    oks_sigma: float = 0.1  # per-keypoint OKS constant k (uniform over the 308 keypoints)
    max_age: float = 1.0  # a track unseen this long is dropped
    velocity_smoothing: float = 0.5  # weight of the newest velocity measurement
    # Where an unseen person may be: the constant-velocity prediction and the place it was last
    # seen (it may have stopped or turned), each with a position uncertainty that grows by this
    # many box heights per second unseen (a walking person covers about one height a second).
    gate_growth: float = 1.0
    stop_weight: float = 0.9  # the last-seen hypothesis scores this much of its similarity
    # A track whose last box touches the image border (this fraction of its size) and moves out
    # of it is leaving: only its constant-velocity prediction, without growth, can match, so a
    # person entering where another left gets a new id.
    border_margin: float = 0.01
    predict_margin: float = 0.1  # predict_boxes: keypoint boxes grow by this fraction of size
    predict_min_keypoints: int = 3  # fewer visible keypoints: predict from the last box


class IdAllocator:
    """
    Thread-safe source of increasing track ids; share one between trackers for one id space.

    ``take(n)`` returns the next ``n`` ids; an id is never given twice.
    """

    def __init__(self, first: int = 1) -> None:
        self._next = int(first)
        self._lock = threading.Lock()

    def take(self, count: int) -> np.ndarray:
        """Return ``count`` new ids, ``(count,)`` int64."""
        with self._lock:
            first = self._next
            self._next += int(count)
        return np.arange(first, first + int(count), dtype=np.int64)

    def continue_from(self, next_id: int) -> None:
        """Give ids from ``next_id`` on (never lower than the ones already given)."""
        with self._lock:
            self._next = max(self._next, int(next_id))


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return the IoU matrix ``(A, B)`` of xyxy boxes."""
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    area_a = np.clip(a[:, 2:] - a[:, :2], 0, None).prod(-1)
    area_b = np.clip(b[:, 2:] - b[:, :2], 0, None).prod(-1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-9), 0.0)


def keypoint_similarity(kp_a: np.ndarray, vis_a: np.ndarray, kp_b: np.ndarray,
                        vis_b: np.ndarray, areas_b: np.ndarray, sigma: float,
                        spread_a: np.ndarray | None = None) -> np.ndarray:
    """
    OKS matrix ``(A, B)`` over keypoints visible in both (COCO formula, uniform ``k``).

    ``kp_*`` are ``(N, K, 2)``, ``vis_*`` ``(N, K)`` booleans, ``areas_b`` the object scale
    ``s^2`` of each ``b`` (its box area). ``spread_a`` ``(A,)`` adds a position uncertainty
    (pixels, standard deviation) of each ``a`` to the tolerance. Pairs sharing no visible
    keypoint score 0.
    """
    d2 = ((kp_a[:, None] - kp_b[None]) ** 2).sum(-1)  # (A, B, K)
    var = np.maximum(areas_b, 1.0)[None, :, None] * (2.0 * sigma) ** 2
    if spread_a is not None:
        var = var + (np.asarray(spread_a, np.float64) ** 2)[:, None, None]
    e = d2 / (2.0 * var)
    both = vis_a[:, None] & vis_b[None]
    count = both.sum(-1)
    return np.where(count > 0, (np.exp(-e) * both).sum(-1) / np.maximum(count, 1), 0.0)


def person_confidence(scores: np.ndarray, fraction: float) -> np.ndarray:
    """Mean of the best ``fraction`` of each row of keypoint scores ``(P, K)`` -> ``(P,)``."""
    if scores.shape[1] == 0:
        return np.zeros(scores.shape[0])
    m = max(1, int(round(fraction * scores.shape[1])))
    return np.partition(scores, -m, axis=1)[:, -m:].mean(1)


def _xyxy(cxcywh: np.ndarray) -> np.ndarray:
    c, s = cxcywh[..., :2], cxcywh[..., 2:]
    return np.concatenate([c - s / 2, c + s / 2], -1)


def _cxcywh(xyxy: np.ndarray) -> np.ndarray:
    return np.concatenate([(xyxy[..., :2] + xyxy[..., 2:]) / 2, xyxy[..., 2:] - xyxy[..., :2]],
                          -1)


class PersonTracker:
    """
    Stable person ids for one camera's frames, given in time order.

    ``update(boxes (P, 4) xyxy, keypoints (P, K, 2), scores (P, K), stamp) -> ids (P,) int64``.
    A frame older than the previous one (a bag loop, a replay restart) resets the tracker with a
    log line; ids are never reused, so a reset gives new ones.
    """

    def __init__(self, config: TrackerConfig | None = None,
                 ids: IdAllocator | None = None) -> None:
        self.config = config or TrackerConfig()
        self.id_source = ids or IdAllocator()
        self._last_stamp: float | None = None
        self.resets = 0
        self._clear()

    def _clear(self) -> None:
        self.ids = np.zeros((0,), np.int64)
        self._box = np.zeros((0, 4))  # cx, cy, w, h at the last match
        self._kp_box = np.zeros((0, 4))  # cx, cy, w, h of the scored keypoints then (or NaN)
        self._vel = np.zeros((0, 4))  # per second
        self._kp = np.zeros((0, 0, 2))
        self._vis = np.zeros((0, 0), bool)
        self._seen = np.zeros((0,))  # stamp of the last match
        self._hits = np.zeros((0,), np.int64)  # matches so far (1: no velocity yet)

    def continue_ids(self, next_id: int) -> None:
        """Give new tracks ids from ``next_id`` on (never lower than the ones already given)."""
        self.id_source.continue_from(next_id)

    def reset(self) -> None:
        """Forget every track (ids keep counting up)."""
        self._clear()
        self._last_stamp = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def update(self, boxes: np.ndarray, keypoints: np.ndarray, scores: np.ndarray,
               stamp: float, image_size: tuple[int, int] | None = None) -> np.ndarray:
        """
        Associate this frame's people with the tracks; return their ids (P,) int64.

        ``image_size`` ``(height, width)`` lets tracks that walk out of the image end there
        (see ``TrackerConfig.border_margin``); without it no track counts as leaving.
        """
        cfg = self.config
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        keypoints = np.asarray(keypoints, np.float64)
        scores = np.asarray(scores, np.float64)
        n = boxes.shape[0]
        if keypoints.ndim != 3 or keypoints.shape[0] != n or scores.shape != keypoints.shape[:2]:
            raise ValueError(f'expected keypoints (P, K, 2) and scores (P, K) for {n} boxes, got '
                             f'{keypoints.shape} and {scores.shape}')
        stamp = float(stamp)
        if self._last_stamp is not None and stamp < self._last_stamp:
            LOG.warning('time jumped back %.3f s (%.3f -> %.3f): tracker reset',
                        self._last_stamp - stamp, self._last_stamp, stamp)
            self.resets += 1
            self.reset()
        previous, self._last_stamp = self._last_stamp, stamp
        alive = stamp - self._seen <= cfg.max_age
        self._keep(alive)
        if self._kp.shape[1] != keypoints.shape[1]:
            if len(self):
                LOG.warning('keypoint count changed %d -> %d: tracker reset',
                            self._kp.shape[1], keypoints.shape[1])
            self._clear()
            self._kp = np.zeros((0, keypoints.shape[1], 2))
            self._vis = np.zeros((0, keypoints.shape[1]), bool)

        ids = np.full(n, UNTRACKED, np.int64)
        confidence = person_confidence(scores, cfg.confidence_fraction)
        finite = np.isfinite(boxes).all(1) & np.isfinite(confidence)
        high = np.flatnonzero(finite & (confidence >= cfg.high_score))
        low = np.flatnonzero(finite & (confidence >= cfg.low_score)
                             & (confidence < cfg.high_score))
        sim = self._similarity(boxes, keypoints, scores >= cfg.keypoint_score, stamp,
                               image_size, previous)

        free_tracks = np.arange(len(self))
        matched_t, matched_d = [], []
        for dets, gate in ((high, cfg.min_similarity_high), (low, cfg.min_similarity_low)):
            if len(dets) == 0 or len(free_tracks) == 0:
                continue
            sub = sim[np.ix_(free_tracks, dets)]
            rows, cols = linear_sum_assignment(-sub)
            good = sub[rows, cols] >= gate
            matched_t.append(free_tracks[rows[good]])
            matched_d.append(dets[cols[good]])
            free_tracks = np.setdiff1d(free_tracks, free_tracks[rows[good]])
        if matched_t:
            t_idx, d_idx = np.concatenate(matched_t), np.concatenate(matched_d)
            self._correct(t_idx, boxes[d_idx], keypoints[d_idx],
                          scores[d_idx] >= cfg.keypoint_score, stamp)
            ids[d_idx] = self.ids[t_idx]
        new = np.setdiff1d(high, np.concatenate(matched_d) if matched_d else [])
        if len(new):
            ids[new] = self._start(boxes[new], keypoints[new],
                                   scores[new] >= cfg.keypoint_score, stamp)
        return ids

    def _keep(self, mask: np.ndarray) -> None:
        self.ids, self._box, self._vel = self.ids[mask], self._box[mask], self._vel[mask]
        self._kp_box = self._kp_box[mask]
        self._kp, self._vis, self._seen = self._kp[mask], self._vis[mask], self._seen[mask]
        self._hits = self._hits[mask]

    def _similarity(self, boxes: np.ndarray, keypoints: np.ndarray, vis: np.ndarray,
                    stamp: float, image_size: tuple[int, int] | None,
                    previous: float | None = None) -> np.ndarray:
        """
        Track x detection similarity: the best of two hypotheses of where each track is now.

        Moving on at its velocity (the prediction) or stopped where it was last seen (it may
        have stopped, slowed down or turned while hidden), the latter weighted by
        ``stop_weight``. Both widen the keypoint term's tolerance by ``gate_growth`` box
        heights per second unseen; leaving tracks keep only the prediction, not widened. The
        stop hypothesis is evaluated only for tracks missed in the ``previous`` frame (for the
        others it is within one frame's motion of the prediction).
        """
        cfg = self.config
        if len(self) == 0 or boxes.shape[0] == 0:
            return np.zeros((len(self), boxes.shape[0]))
        dt = np.maximum(stamp - self._seen, 0.0)
        pred = self._predicted(dt)
        leaving = self._leaving(image_size)
        spread = np.where(leaving, 0.0, cfg.gate_growth * dt * self._box[:, 3])
        areas = np.clip(boxes[:, 2:] - boxes[:, :2], 0, None).prod(-1)
        rows = np.arange(len(self))
        sim = self._pair_similarity(rows, pred, pred[:, :2] - self._box[:, :2], spread, boxes,
                                    keypoints, vis, areas)
        missed = np.flatnonzero(~leaving & (self._seen < previous)) if previous is not None \
            else np.zeros(0, np.int64)
        if cfg.stop_weight > 0 and len(missed):
            stopped = self._pair_similarity(missed, self._box[missed], np.zeros((len(missed), 2)),
                                            spread[missed], boxes, keypoints, vis, areas)
            sim[missed] = np.maximum(sim[missed], cfg.stop_weight * stopped)
        return sim

    def _pair_similarity(self, rows: np.ndarray, where: np.ndarray, shift: np.ndarray,
                         spread: np.ndarray, boxes: np.ndarray, keypoints: np.ndarray,
                         vis: np.ndarray, areas: np.ndarray) -> np.ndarray:
        """``w * IoU + (1 - w) * OKS`` of tracks ``rows`` placed at ``where`` (cxcywh)."""
        iou = box_iou(_xyxy(where), boxes)
        oks = keypoint_similarity(self._kp[rows] + shift[:, None, :], self._vis[rows], keypoints,
                                  vis, areas, self.config.oks_sigma, spread)
        w = self.config.iou_weight
        return w * iou + (1.0 - w) * oks

    def _predicted(self, dt: np.ndarray) -> np.ndarray:
        """Constant-velocity boxes ``(T, 4)`` cxcywh ``dt`` seconds after each last match."""
        pred = self._box + self._vel * dt[:, None]
        pred[:, 2:] = np.maximum(pred[:, 2:], 1.0)
        return pred

    def _leaving(self, image_size: tuple[int, int] | None) -> np.ndarray:
        """Tracks whose last box touches an image border and moves out through it."""
        if image_size is None or len(self) == 0:
            return np.zeros(len(self), bool)
        h, w = image_size
        box, vel = _xyxy(self._box), self._vel
        margin = self.config.border_margin * self._box[:, 2:].max(1)
        return (((box[:, 0] <= margin - 0.5) & (vel[:, 0] < 0))
                | ((box[:, 2] >= w - 0.5 - margin) & (vel[:, 0] > 0))
                | ((box[:, 1] <= margin - 0.5) & (vel[:, 1] < 0))
                | ((box[:, 3] >= h - 0.5 - margin) & (vel[:, 1] > 0)))

    def predict_boxes(self, stamp: float, image_size: tuple[int, int] | None = None,
                      current: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """
        Where the live tracks are expected at ``stamp``: ``(ids (N,), boxes (N, 4) xyxy)``.

        Each box moves at the track's velocity from its last match: the box around the
        keypoints scored at least ``keypoint_score`` then (``predict_min_keypoints`` of them),
        enlarged by ``predict_margin``, else the last box; its size follows the box's size
        velocity. With ``image_size`` ``(height, width)`` boxes are clipped to the image and
        those left empty dropped. Tracks older than ``max_age`` at ``stamp`` are left out; with
        ``current``, every track not matched by the last update too (running pose between seg
        frames only on the people it still sees; the others keep their ids until seg finds
        them again).
        """
        cfg = self.config
        dt = np.maximum(float(stamp) - self._seen, 0.0)
        live = dt <= cfg.max_age
        if current:
            live &= self._seen == self._last_stamp
        pred = self._predicted(dt)[live]
        base = self._kp_box[live]
        has_kp = np.isfinite(base).all(1)
        growth = pred[:, 2:] / np.maximum(self._box[live, 2:], 1.0)
        out = pred.copy()
        out[has_kp, :2] = base[has_kp, :2] + (pred[has_kp, :2] - self._box[live][has_kp, :2])
        out[has_kp, 2:] = base[has_kp, 2:] * growth[has_kp] * (1.0 + cfg.predict_margin)
        boxes, ids = _xyxy(out), self.ids[live]
        if image_size is not None:
            boxes, keep = clip_boxes(boxes, image_size)
            boxes, ids = boxes[keep], ids[keep]
        return ids.copy(), boxes.astype(np.float32)

    def _correct(self, t_idx: np.ndarray, boxes: np.ndarray, keypoints: np.ndarray,
                 vis: np.ndarray, stamp: float) -> None:
        box = _cxcywh(boxes)
        dt = (stamp - self._seen[t_idx])[:, None]
        measured = (box - self._box[t_idx]) / np.maximum(dt, 1e-6)
        a = self.config.velocity_smoothing
        first = (self._hits[t_idx] == 1)[:, None]
        vel = np.where(first, measured, a * measured + (1.0 - a) * self._vel[t_idx])
        self._vel[t_idx] = np.where(dt > 0, vel, self._vel[t_idx])
        self._hits[t_idx] += (dt[:, 0] > 0)
        # keypoints hidden in this frame follow the box from their last visible position
        self._kp[t_idx] = np.where(vis[..., None], keypoints, self._kp[t_idx]
                                   + (box[:, None, :2] - self._box[t_idx, None, :2]))
        self._box[t_idx] = box
        self._kp_box[t_idx] = self._keypoint_boxes(keypoints, vis)
        self._vis[t_idx] = vis | self._vis[t_idx]
        self._seen[t_idx] = stamp

    def _keypoint_boxes(self, keypoints: np.ndarray, vis: np.ndarray) -> np.ndarray:
        """Boxes ``(N, 4)`` cxcywh around the visible keypoints; NaN with too few of them."""
        return _cxcywh(keypoint_extent(keypoints, vis, self.config.predict_min_keypoints))

    def _start(self, boxes: np.ndarray, keypoints: np.ndarray, vis: np.ndarray,
               stamp: float) -> np.ndarray:
        new_ids = self.id_source.take(len(boxes))
        self.ids = np.concatenate([self.ids, new_ids])
        self._box = np.concatenate([self._box, _cxcywh(boxes)])
        self._kp_box = np.concatenate([self._kp_box, self._keypoint_boxes(keypoints, vis)])
        self._vel = np.concatenate([self._vel, np.zeros((len(boxes), 4))])
        self._kp = np.concatenate([self._kp, keypoints])
        self._vis = np.concatenate([self._vis, vis])
        self._seen = np.concatenate([self._seen, np.full(len(boxes), stamp)])
        self._hits = np.concatenate([self._hits, np.ones(len(boxes), np.int64)])
        return new_ids


__all__ = ['IdAllocator', 'PersonTracker', 'TrackerConfig', 'UNTRACKED', 'box_iou',
           'keypoint_similarity', 'person_confidence']
