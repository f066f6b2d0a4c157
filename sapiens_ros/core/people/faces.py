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

from .geometry import all_of, best_rotations, clamp, dot, quat_to_matrix
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
def _template() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Template keypoint indices and points; ``(N, 3)`` weights of every point, left, right."""
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    idx = np.array([index[n] for n in FACE_TEMPLATE], np.int64)
    pts = np.array(list(FACE_TEMPLATE.values()), np.float64)
    sides = np.stack([np.ones(len(pts)), pts[:, 1] > 0.005, pts[:, 1] < -0.005], -1)
    return idx, pts, sides.astype(np.float64)


@cache
def _aligned_in_face() -> np.ndarray:
    """Return the five aligned-crop points as positions in :func:`face_indices`."""
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    pos = {int(k): i for i, k in enumerate(face_indices())}
    return np.array([pos[index[n]] for n in _ALIGNED_POINTS], np.int64)


_DST_CENTRE = ALIGNED_TEMPLATE.mean(0)
_DST = ALIGNED_TEMPLATE - _DST_CENTRE
#: ``[a, b] = centred source (P, 10: five x, five y) @ _AB / var``: the similarity's s cos and
#: s sin.
_AB = np.stack([_DST.T.ravel(), np.concatenate([_DST[:, 1], -_DST[:, 0]])], -1)


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


def _face_points(keypoints: np.ndarray, scores: np.ndarray,
                 min_score: float) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the face keypoints' x and y ``(P, 2, 243)``, and which are scored and finite.

    (x and y as rows: reductions over the points run along contiguous memory.)
    """
    idx = face_indices()
    pts = np.asarray(keypoints).transpose(0, 2, 1).take(idx, 2).astype(np.float64, copy=False)
    return pts, (np.asarray(scores).take(idx, 1) >= min_score) & np.isfinite(pts).all(1)


def face_boxes(keypoints: np.ndarray, scores: np.ndarray, image_size: tuple[int, int],
               min_score: float = 0.3, margin: float = 0.1,
               min_points: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Face boxes ``(P, 4)`` xyxy px, their normalised ROIs ``(P, 4)`` and a mask ``(P,)``.

    The box of the face keypoints scored ``>= min_score``, grown by ``margin`` of its size on
    each side and clipped to the image ``(height, width)``; a face needs ``min_points`` such
    keypoints (otherwise NaN and not visible).
    """
    return _boxes(*_face_points(keypoints, scores, min_score), image_size, margin, min_points)


def _boxes(pts: np.ndarray, ok: np.ndarray, image_size: tuple[int, int], margin: float,
           min_points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    visible = ok.sum(1) >= min_points
    # lo and -hi in one reduction
    ext = np.where(ok[:, None], np.concatenate([pts, -pts], 1), np.inf).min(-1)
    grow = -(ext[:, :2] + ext[:, 2:]) * margin  # (hi - lo) margin
    h, w = image_size
    size = np.array([w, h, w, h], np.float64)
    box = clamp(ext * _LO_HI - np.concatenate([grow, -grow], -1), 0, size)
    box = np.where(visible[:, None], box, np.nan)
    return box, box / size, visible


_LO_HI = np.array([1.0, 1, -1, -1])


def head_poses(xyz: np.ndarray,
               min_points: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Head poses from metric keypoints ``xyz (P, 308, 3)`` (camera frame, NaN unknown).

    Returns face axes ``(P, 3, 3)`` (columns x forward, y left, z up; identity if unknown),
    sellion positions ``(P, 3)`` (NaN if unknown) and a mask ``(P,)``: at least ``min_points``
    template points known, on both sides of the face.
    """
    _, rot, origin, ok = _head_quats(xyz, min_points, True)
    return rot, origin, ok


_IDENTITY_Q = np.array([0.0, 0, 0, 1])


def _head_quats(xyz: np.ndarray, min_points: int, visible: np.ndarray | bool
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`head_poses` of the ``visible`` faces, the axes also as quaternions ``(P, 4)``."""
    idx, tpl, sides = _template()
    m = np.asarray(xyz).take(idx, 1).astype(np.float64, copy=False)  # (P, N, 3)
    known = np.isfinite(m @ _ONES3)
    w = known.astype(np.float64)
    counts = w @ sides  # (P, 3): all, left, right
    ok = (counts[:, 0] >= min_points) & (counts[:, 1:] > 0).all(1) & visible
    m = np.where(known[..., None], m, 0.0)
    n = np.maximum(counts[:, :1], 1)
    mc = (w[:, None] @ m)[:, 0] / n  # (P, 3)
    tc = (w @ tpl) / n
    dt = tpl - tc[:, None]
    wdt = w[..., None] * dt
    # the measured x template covariance (the measured centroid cancels against sum w dt = 0)
    q, top = best_rotations(m.swapaxes(1, 2) @ wdt)  # Umeyama's rotation, via Horn
    scale = top / np.maximum(dot(wdt.reshape(len(w), -1), dt.reshape(len(w), -1))[:, 0], 1e-12)
    rot = quat_to_matrix(q)
    origin = mc - scale[:, None] * (rot @ tc[..., None])[..., 0]
    ok &= (scale > 0.3) & (scale < 3.0)  # (q is finite: the covariance is)
    if all_of(ok):
        return q, rot, origin, ok
    return (np.where(ok[:, None], q, _IDENTITY_Q), np.where(ok[:, None, None], rot, _EYE3),
            np.where(ok[:, None], origin, np.nan), ok)


_ONES3, _EYE3 = np.ones(3), np.eye(3)


def aligned_warps(keypoints: np.ndarray, scores: np.ndarray,
                  min_score: float = 0.3) -> np.ndarray:
    """
    Similarity transforms ``(P, 2, 3)`` from image pixels to the 112x112 aligned face crop.

    Least squares (a similarity, no reflection; closed form in 2D) from the eyes, nose tip and
    mouth corners; NaN where one of the five is scored under ``min_score``. Scale the matrix for
    another size.
    """
    pts, ok = _face_points(keypoints, scores, min_score)
    return _warps(pts, ok)


def _warps(pts: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """:func:`aligned_warps` from :func:`_face_points`."""
    at = _aligned_in_face()
    src = pts.take(at, 2)  # (P, 2, 5)
    sc = src.sum(-1) / 5
    ds = (src - sc[..., None]).reshape(-1, 10)
    # in 2D the best rotation and scale are closed-form: a = s cos, b = s sin
    ab = (ds @ _AB) / np.maximum(dot(ds, ds), 1e-12)
    a = (ab @ _AB_MATRIX).reshape(-1, 2, 2)  # [[a, -b], [b, a]]
    t = _DST_CENTRE - (a @ sc[..., None])[..., 0]
    out = np.concatenate([a, t[..., None]], -1)
    return np.where(ok.take(at, 1).all(1)[:, None, None], out, np.nan)


_AB_MATRIX = np.array([[1.0, 0, 0, 1], [0, -1, 1, 0]])


def faces(ids: np.ndarray, keypoints: np.ndarray, scores: np.ndarray,
          xyz: np.ndarray | None, image_size: tuple[int, int], min_score: float = 0.3,
          margin: float = 0.1) -> Faces:
    """
    Return the faces of a frame's people, one row per person.

    Pass ``people.ids``, ``people.smoothed``, ``people.scores``, ``people.xyz`` if
    ``people.xyz_metric`` else None, and the image ``(height, width)``.
    """
    n = len(ids)
    pts, ok = _face_points(np.asarray(keypoints).reshape(n, -1, 2), scores, min_score)
    box, roi, visible = _boxes(pts, ok, image_size, margin, 5)
    if xyz is not None and n:
        q, rot, pos, valid = _head_quats(xyz, 6, visible)
    else:
        q, rot = np.tile(_IDENTITY_Q, (n, 1)), np.tile(_EYE3, (n, 1, 1))
        pos, valid = np.full((n, 3), np.nan), np.zeros(n, bool)
    return Faces(np.asarray(ids, np.int64), visible, box, roi, valid, pos, rot, q,
                 _warps(pts, ok))


def face_template_points(rotation: np.ndarray, position: np.ndarray,
                         scale: float = 1.0) -> np.ndarray:
    """
    :data:`FACE_TEMPLATE` placed at a head pose: ``(..., 308, 3)``, NaN off the template.

    For synthetic faces in tests and benchmarks: ``rotation (..., 3, 3)`` face axes,
    ``position (..., 3)`` the sellion.
    """
    idx, tpl = _template()[:2]
    rotation, position = np.asarray(rotation, np.float64), np.asarray(position, np.float64)
    out = np.full(position.shape[:-1] + (len(keypoint_info().names), 3), np.nan)
    placed = np.einsum('...ij,nj->...ni', rotation, tpl)
    out[..., idx, :] = position[..., None, :] + scale * placed
    return out


__all__ = ['ALIGNED_SIZE', 'ALIGNED_TEMPLATE', 'FACE_TEMPLATE', 'Faces', 'aligned_warps',
           'face_boxes', 'face_indices', 'face_template_points', 'faces', 'head_poses']
