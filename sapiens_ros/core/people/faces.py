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
Faces from the 308 keypoints, REP-155 style (ROS-free): box, head pose, aligned-crop warp.

The 308 set holds 243 face points (nose, eyes, ears, and 70 to 307: brows, lids, lashes, irises,
pupils, nose, lips, ear detail, chin tip). A face gets:

- ``roi``: the box of its keypoints scored ``>= min_score``, grown by ``margin``, normalised to
  the image (``hri_msgs/NormalizedRegionOfInterest2D``'s xmin, ymin, xmax, ymax);
- a head pose in the camera frame: REP-155's ``face_<id>`` frame, origin at the sellion (the
  ``center_of_nose_root`` point), x forward along the gaze, y to the person's left, z up. A
  scaled rigid fit (Umeyama) of :data:`FACE_TEMPLATE`, a generic face written in that frame,
  to the face's metric 3D keypoints;
- ``aligned``: the 2x3 similarity that maps image pixels onto the usual 112x112 five-point
  template (eyes, nose tip, mouth corners), for ``cv2.warpAffine``.

What the set cannot give: no jaw contour (only ``tip_of_chin``), so no 68- or 70-point iBUG
landmarks and no face outline; the head pose needs metric 3D keypoints (depth or a calibrated
pointmap): from pixels alone it is not computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from .geometry import clamp, matrix_to_quat
from ..models.metadata import keypoint_info

#: A generic adult face in the REP-155 face frame (m): x forward, y left, z up, origin at the
#: sellion. Our own round numbers from common anthropometry (eye spacing 64 mm, ears 150 mm
#: apart); left/right are the person's.
FACE_TEMPLATE: dict[str, tuple[float, float, float]] = {
    'center_of_nose_root': (0.0, 0.0, 0.0),
    'center_of_glabella': (0.002, 0.0, 0.016),
    'left_eye': (-0.012, 0.032, -0.004), 'right_eye': (-0.012, -0.032, -0.004),
    'l_center_of_iris': (-0.008, 0.032, -0.004), 'r_center_of_iris': (-0.008, -0.032, -0.004),
    'end_of_l_eyebrow': (-0.018, 0.05, 0.012), 'end_of_r_eyebrow': (-0.018, -0.05, 0.012),
    'upper_startpoint_of_l_eyebrow': (0.0, 0.012, 0.016),
    'upper_startpoint_of_r_eyebrow': (0.0, -0.012, 0.016),
    'nose': (0.026, 0.0, -0.046), 'tip_of_nose': (0.026, 0.0, -0.046),
    'bottom_center_of_nose': (0.012, 0.0, -0.058),
    'l_outer_corner_of_nose': (0.0, 0.018, -0.05), 'r_outer_corner_of_nose': (0.0, -0.018, -0.05),
    'center_of_cupid_bow': (0.012, 0.0, -0.07),
    'l_outer_corner_of_mouth': (-0.004, 0.025, -0.08),
    'r_outer_corner_of_mouth': (-0.004, -0.025, -0.08),
    'center_of_lower_outer_lip': (0.01, 0.0, -0.088),
    'tip_of_chin': (0.004, 0.0, -0.118),
    'left_ear': (-0.09, 0.075, -0.035), 'right_ear': (-0.09, -0.075, -0.035),
}

#: The five points of the 112x112 aligned crop (pixels), in image order: the person's right
#: eye, left eye, nose tip, right and left mouth corners (the widely used face-recognition
#: template).
ALIGNED_SIZE = 112
ALIGNED_TEMPLATE = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                             [41.5493, 92.3655], [70.7299, 92.2041]])
_ALIGNED_POINTS = ('right_eye', 'left_eye', 'tip_of_nose', 'r_outer_corner_of_mouth',
                   'l_outer_corner_of_mouth')


@cache
def face_indices() -> np.ndarray:
    """Return the indices of the 243 face keypoints of the 308 set (nose, eyes, ears, 70..307)."""
    out = np.r_[0:5, 70:308].astype(np.int64)
    out.flags.writeable = False
    return out


@cache
def _template() -> tuple[np.ndarray, np.ndarray]:
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    idx = np.array([index[n] for n in FACE_TEMPLATE], np.int64)
    pts = np.array(list(FACE_TEMPLATE.values()), np.float64)
    return idx, pts


@cache
def _aligned_indices() -> np.ndarray:
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    return np.array([index[n] for n in _ALIGNED_POINTS], np.int64)


@dataclass
class Faces:
    """The faces of one frame's people; rows follow the people's rows."""

    ids: np.ndarray  # (F,) track ids (the face of a body has its body's track)
    visible: np.ndarray  # (F,) bool: enough face keypoints scored to have a box
    box: np.ndarray  # (F, 4) xyxy pixels
    roi: np.ndarray  # (F, 4) xmin, ymin, xmax, ymax normalised to [0, 1]
    pose_valid: np.ndarray  # (F,) bool: position and orientation known
    position: np.ndarray  # (F, 3) sellion in the camera frame (m); NaN if unknown
    rotation: np.ndarray  # (F, 3, 3) face axes (columns x fwd, y left, z up) in the camera
    orientation: np.ndarray  # (F, 4) the same as a quaternion x, y, z, w
    aligned: np.ndarray  # (F, 2, 3) image px -> 112x112 aligned crop px; NaN if unknown

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def face_boxes(keypoints: np.ndarray, scores: np.ndarray, image_size: tuple[int, int],
               min_score: float = 0.3, margin: float = 0.1,
               min_points: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Face boxes ``(P, 4)`` xyxy px, their normalised ROIs ``(P, 4)`` and a mask ``(P,)``.

    The box of the face keypoints scored ``>= min_score``, grown by ``margin`` of its size on
    each side and clipped to the image ``(height, width)``; a face needs ``min_points`` such
    keypoints (otherwise NaN and not visible).
    """
    idx = face_indices()
    pts = np.asarray(keypoints, np.float64)[:, idx]
    ok = (np.asarray(scores)[:, idx] >= min_score) & np.isfinite(pts).all(-1)
    visible = ok.sum(1) >= min_points
    lo = np.where(ok[..., None], pts, np.inf).min(1)
    hi = np.where(ok[..., None], pts, -np.inf).max(1)
    grow = (hi - lo) * margin
    h, w = image_size
    size = np.array([w, h], np.float64)
    lo, hi = clamp(lo - grow, 0, size), clamp(hi + grow, 0, size)
    box = np.concatenate([lo, hi], -1)
    box[~visible] = np.nan
    return box, box / np.tile(size, 2), visible


def head_poses(xyz: np.ndarray,
               min_points: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Head poses from metric keypoints ``xyz (P, 308, 3)`` (camera frame, NaN unknown).

    Returns face axes ``(P, 3, 3)`` (columns x forward, y left, z up; identity if unknown),
    sellion positions ``(P, 3)`` (NaN if unknown) and a mask ``(P,)``: at least ``min_points``
    template points known, on both sides of the face.
    """
    idx, tpl = _template()
    m = np.asarray(xyz, np.float64)[:, idx]  # (P, N, 3)
    w = np.isfinite(m).all(-1).astype(np.float64)
    left, right = tpl[:, 1] > 0.005, tpl[:, 1] < -0.005
    ok = (w.sum(1) >= min_points) & (w[:, left].sum(1) > 0) & (w[:, right].sum(1) > 0)
    m = np.where(w[..., None] > 0, m, 0.0)
    n = np.maximum(w.sum(1), 1)[:, None]
    mc = (w[..., None] * m).sum(1) / n  # (P, 3)
    tc = (w[..., None] * tpl).sum(1) / n
    dm, dt = m - mc[:, None], tpl - tc[:, None]
    cov = np.einsum('pn,pni,pnj->pij', w, dm, dt)  # measured x template
    u, s, vt = np.linalg.svd(cov)
    d = np.sign(np.linalg.det(u @ vt))
    u[:, :, 2] *= d[:, None]
    s[:, 2] *= d
    rot = u @ vt  # template (face frame) -> camera
    var = (w * (dt ** 2).sum(-1)).sum(1)
    scale = s.sum(1) / np.maximum(var, 1e-12)
    origin = mc - scale[:, None] * np.einsum('pij,pj->pi', rot, tc)
    ok &= np.isfinite(rot).all((1, 2)) & (scale > 0.3) & (scale < 3.0)
    rot[~ok] = np.eye(3)
    origin[~ok] = np.nan
    return rot, origin, ok


def aligned_warps(keypoints: np.ndarray, scores: np.ndarray,
                  min_score: float = 0.3) -> np.ndarray:
    """
    Similarity transforms ``(P, 2, 3)`` from image pixels to the 112x112 aligned face crop.

    Least squares (a similarity, no reflection; closed form in 2D) from the eyes, nose tip and
    mouth corners; NaN where one of the five is scored under ``min_score``. Scale the matrix for
    another size.
    """
    src = np.asarray(keypoints, np.float64)[:, _aligned_indices()]  # (P, 5, 2)
    ok = (np.asarray(scores)[:, _aligned_indices()] >= min_score).all(1) & \
        np.isfinite(src).all((1, 2))
    dst = ALIGNED_TEMPLATE
    sc, dc = src.mean(1), dst.mean(0)
    ds, dd = src - sc[:, None], dst - dc
    # in 2D the best rotation and scale are closed-form: a = s cos, b = s sin
    var = np.maximum((ds * ds).sum((1, 2)), 1e-12)
    a = (ds * dd).sum((1, 2)) / var
    b = (ds[..., 0] * dd[:, 1] - ds[..., 1] * dd[:, 0]).sum(1) / var
    a = np.stack([np.stack([a, -b], -1), np.stack([b, a], -1)], 1)
    t = dc - np.einsum('pij,pj->pi', a, sc)
    out = np.concatenate([a, t[..., None]], -1)
    out[~ok] = np.nan
    return out


def faces(ids: np.ndarray, keypoints: np.ndarray, scores: np.ndarray,
          xyz: np.ndarray | None, image_size: tuple[int, int], min_score: float = 0.3,
          margin: float = 0.1) -> Faces:
    """
    Return the faces of a frame's people, one row per person.

    Pass ``people.ids``, ``people.smoothed``, ``people.scores``, ``people.xyz`` if
    ``people.xyz_metric`` else None, and the image ``(height, width)``.
    """
    keypoints = np.asarray(keypoints, np.float64).reshape(len(ids), -1, 2)
    box, roi, visible = face_boxes(keypoints, scores, image_size, min_score, margin)
    if xyz is not None and len(ids):
        rot, pos, valid = head_poses(xyz)
        valid &= visible
    else:
        rot = np.tile(np.eye(3), (len(ids), 1, 1))
        pos, valid = np.full((len(ids), 3), np.nan), np.zeros(len(ids), bool)
    if not valid.all():
        rot[~valid], pos[~valid] = np.eye(3), np.nan
    warp = aligned_warps(keypoints, scores, min_score) if len(ids) else np.zeros((0, 2, 3))
    return Faces(np.asarray(ids, np.int64), visible, box, roi, valid, pos, rot,
                 matrix_to_quat(rot), warp)


def face_template_points(rotation: np.ndarray, position: np.ndarray,
                         scale: float = 1.0) -> np.ndarray:
    """
    :data:`FACE_TEMPLATE` placed at a head pose: ``(..., 308, 3)``, NaN off the template.

    For synthetic faces in tests and benchmarks: ``rotation (..., 3, 3)`` face axes,
    ``position (..., 3)`` the sellion.
    """
    idx, tpl = _template()
    rotation, position = np.asarray(rotation, np.float64), np.asarray(position, np.float64)
    out = np.full(position.shape[:-1] + (len(keypoint_info().names), 3), np.nan)
    placed = np.einsum('...ij,nj->...ni', rotation, tpl)
    out[..., idx, :] = position[..., None, :] + scale * placed
    return out


__all__ = ['ALIGNED_SIZE', 'ALIGNED_TEMPLATE', 'FACE_TEMPLATE', 'Faces', 'aligned_warps',
           'face_boxes', 'face_indices', 'face_template_points', 'faces', 'head_poses']
