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
Overlays for people to look at: seg blend, normal and depth colours, skeleton drawing.

The seg and normal overlays are :mod:`.render`'s torch code (what the messages publish), here on
numpy arrays.
"""

from __future__ import annotations

import colorsys

import cv2
import numpy as np
import torch

from ..models.keypoint_formats import keypoint_format, KEYPOINT_FORMATS
from ..processing import render


def seg_overlay(image_rgb: np.ndarray, labels: np.ndarray, alpha: float = 0.5) -> np.ndarray:
    """Blend the class palette over ``image_rgb`` (HxWx3 uint8) where a person is; RGB out."""
    return render.seg_overlay(_tensor(image_rgb), _tensor(labels), alpha).numpy()


def normal_colors(normals: np.ndarray) -> np.ndarray:
    """Map unit normals (HxWx3) to RGB uint8 via ``(n + 1) / 2``; non-finite pixels are black."""
    return render.normal_colors(_tensor(normals)).numpy()


def normal_overlay(image_rgb: np.ndarray, normals: np.ndarray, alpha: float = 0.6) -> np.ndarray:
    """Blend the normal colours over ``image_rgb`` with weight ``alpha``; RGB uint8."""
    return render.normal_overlay(_tensor(image_rgb), _tensor(normals), alpha).numpy()


def _tensor(values: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(values))


def depth_colors(depth: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Colour a depth map (metres) with a perceptual colormap, near = warm; RGB uint8."""
    valid = np.isfinite(depth) if mask is None else (mask & np.isfinite(depth))
    out = np.zeros(depth.shape + (3,), np.uint8)
    if not valid.any():
        return out
    lo, hi = np.percentile(depth[valid], [2, 98])
    norm = np.clip((depth - lo) / max(hi - lo, 1e-6), 0, 1)
    gray = ((1.0 - np.nan_to_num(norm)) * 255).astype(np.uint8)
    colored = cv2.applyColorMap(gray, cv2.COLORMAP_TURBO)[..., ::-1]
    out[valid] = colored[valid]
    return out


#: Colour of people without a track id (RGB, 0-1).
UNTRACKED_COLOR = (0.6, 0.6, 0.6)


def id_color(track_id: int) -> tuple[float, float, float]:
    """Return a distinct, stable RGB colour (0-1) per track id (golden-ratio hues); -1 grey."""
    if track_id < 0:
        return UNTRACKED_COLOR
    return colorsys.hsv_to_rgb((track_id * 0.618033988749895) % 1.0, 0.85, 1.0)


def draw_skeleton(image_rgb: np.ndarray, keypoints: np.ndarray, scores: np.ndarray,
                  boxes: np.ndarray | None = None, threshold: float = 0.3,
                  radius: int = 2, ids: np.ndarray | None = None) -> np.ndarray:
    """
    Draw persons' skeleton links, keypoints and boxes above ``threshold``; RGB out.

    Vectorised: one polyline call for all links (one a person with ``ids``) and one dilation for
    all points. With ``ids`` (a track id per person, -1 untracked) each person's links and box
    take its :func:`id_color` and tracked people get ``#id`` written at their top.
    """
    out = np.ascontiguousarray(image_rgb.copy())
    if keypoints.size == 0:
        return out
    links = _skeleton(keypoints.shape[1])
    height, width = out.shape[:2]
    a, b = links[:, 0], links[:, 1]
    ok = (scores[:, a] > threshold) & (scores[:, b] > threshold)  # (P, L)
    segs = np.round(np.stack([keypoints[:, a], keypoints[:, b]], axis=2)).astype(np.int32)
    colors = [(255, 255, 0)] * len(keypoints) if ids is None else \
        [tuple(int(c * 255) for c in id_color(int(i))) for i in ids]
    if ids is None and ok.any():
        cv2.polylines(out, list(segs[ok]), False, (0, 255, 128), 2, cv2.LINE_AA)
    elif ids is not None:
        for person_segs, person_ok, color in zip(segs, ok, colors, strict=True):
            if person_ok.any():
                cv2.polylines(out, list(person_segs[person_ok]), False, color, 2, cv2.LINE_AA)
    pts = np.round(keypoints[scores > threshold]).astype(np.int64)
    inside = (pts[:, 0] >= 0) & (pts[:, 0] < width) & (pts[:, 1] >= 0) & (pts[:, 1] < height)
    mask = np.zeros((height, width), np.uint8)
    mask[pts[inside, 1], pts[inside, 0]] = 255
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    mask = cv2.dilate(mask, disk)
    out[mask > 0] = (255, 64, 32)
    if boxes is not None:
        for (x1, y1, x2, y2), color in zip(np.round(boxes).astype(int), colors, strict=True):
            cv2.rectangle(out, (x1, y1), (x2, y2), color, 2)
    if ids is not None:
        _draw_ids(out, keypoints, scores > threshold, ids, colors, boxes)
    return out


def _skeleton(count: int) -> np.ndarray:
    """Links of the published keypoint format with ``count`` keypoints (308, 17 or 18)."""
    for name in KEYPOINT_FORMATS:
        fmt = keypoint_format(name)
        if len(fmt) == count:
            return fmt.skeleton
    return np.zeros((0, 2), np.int64)


def _draw_ids(out: np.ndarray, keypoints: np.ndarray, visible: np.ndarray, ids: np.ndarray,
              colors: list, boxes: np.ndarray | None) -> None:
    """Write each tracked person's ``#id`` at its box's top left, else its highest keypoint."""
    scale = max(out.shape[0] / 600.0, 0.5)
    for row, (kp, vis, track, color) in enumerate(zip(keypoints, visible, ids, colors,
                                                      strict=True)):
        if track < 0 or (boxes is None and not vis.any()):
            continue
        x, y = boxes[row, :2] if boxes is not None else kp[vis][np.argmin(kp[vis][:, 1])]
        top = np.clip(y - 6 * scale, 22 * scale, out.shape[0] - 1)
        org = (int(np.clip(x, 0, out.shape[1] - 40 * scale)), int(top))
        text = f'#{int(track)}'
        cv2.putText(out, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0),
                    int(4 * scale) + 2, cv2.LINE_AA)
        cv2.putText(out, text, org, cv2.FONT_HERSHEY_SIMPLEX, scale, color,
                    max(int(2 * scale), 1), cv2.LINE_AA)
