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
Multi-view triangulation, ROS-free: world-frame joints from the 2D keypoints of calibrated cameras.

Conventions (those of ``sensor_msgs/CameraInfo`` and TF):

- A camera's **optical frame** has x right, y down, z forward (``*_optical_frame`` in ROS).
- **Pixels** have their centres at integer coordinates (``0 .. W-1``), as the letterbox maps and
  the boxes use, and as ``CameraInfo.K`` assumes: a point on the optical axis lands on
  ``(cx, cy)``. Keypoints from the pose head can therefore be used with ``K`` as they are.
- A **pose** is the 4x4 ``camera_to_world`` transform that maps optical-frame points into the world
  frame (what ``tf2`` returns for ``lookup_transform(world, camera_optical_frame, t)``). The
  projection is ``P = K [R | t]`` of its inverse, world -> camera.

Only numpy: the arrays are small (308 joints x a few views) and already on the host after the
model. Everything is vectorised over joints; there is no per-joint Python loop.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Views scored lower than this leave a joint out (the node's ``xyz_min_score`` default).
MIN_SCORE = 0.3
#: Joints whose observed rays meet at a smaller angle are left invalid; see :func:`triangulate`.
MIN_PARALLAX_DEG = 2.0
#: Gauss-Newton iterations after the DLT (0: DLT only). One converges (a second changes the
#: error by < 0.1 %); it cuts the error by up to a third where views differ in range or score
#: and changes it by < 0.5 % where they do not (benchmarks/bench_triangulation.py).
REFINE_ITERATIONS = 1


class Triangulation(NamedTuple):
    """World-frame joints of one person (unpacks as ``xyz, valid, error_px``)."""

    xyz: np.ndarray  # (J, 3) float64 world metres; NaN where not valid
    valid: np.ndarray  # (J,) bool
    error_px: np.ndarray  # (J,) float64 score-free RMS reprojection error over the used views


def projection_matrix(camera_matrix: np.ndarray, camera_to_world: np.ndarray) -> np.ndarray:
    """
    Return the ``(..., 3, 4)`` projection ``P = K [R | t]`` of world points into pixels.

    ``camera_matrix`` is ``(..., 3, 3)`` (``CameraInfo.K`` reshaped, or ``P[:, :3]`` of a
    rectified camera); ``camera_to_world`` is ``(..., 4, 4)``, the optical frame's pose in the
    world. ``R = R_wc^T`` and ``t = -R_wc^T t_wc`` invert it (rigid, so no matrix inverse).
    """
    k = np.asarray(camera_matrix, dtype=np.float64)
    pose = np.asarray(camera_to_world, dtype=np.float64)
    rot_cw = np.swapaxes(pose[..., :3, :3], -1, -2)
    t_cw = -rot_cw @ pose[..., :3, 3:]
    return k @ np.concatenate([rot_cw, t_cw], axis=-1)


def look_at(eye: np.ndarray, target: np.ndarray,
            up: np.ndarray = (0.0, 0.0, 1.0)) -> np.ndarray:
    """
    Return the 4x4 ``camera_to_world`` pose of an optical frame at ``eye`` looking at ``target``.

    ``up`` is the world's up (z in ROS' REP 103); the image's y axis points away from it. For
    synthetic rigs (tests, benchmarks); it must not be parallel to the viewing direction.
    """
    eye = np.asarray(eye, dtype=np.float64)
    forward = np.asarray(target, dtype=np.float64) - eye
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, np.asarray(up, dtype=np.float64))
    right /= np.linalg.norm(right)
    pose = np.eye(4)
    pose[:3, :3] = np.stack([right, np.cross(forward, right), forward], axis=1)
    pose[:3, 3] = eye
    return pose


def project_points(projections: np.ndarray, xyz: np.ndarray) -> np.ndarray:
    """Project ``(J, 3)`` world points with ``(V, 3, 4)`` projections to ``(V, J, 2)`` pixels."""
    image = _project(np.asarray(xyz, dtype=np.float64), np.asarray(projections, np.float64))
    with np.errstate(divide='ignore', invalid='ignore'):
        return (image[..., :2] / image[..., 2:]).transpose(1, 0, 2)


def triangulate(points: np.ndarray, scores: np.ndarray, projections: np.ndarray, *,
                min_score: float = MIN_SCORE, min_views: int = 2,
                min_parallax_deg: float = MIN_PARALLAX_DEG,
                refine_iterations: int = REFINE_ITERATIONS,
                max_error_px: float | None = None) -> Triangulation:
    """
    Triangulate ``J`` joints seen by ``V`` cameras: score-weighted DLT, then Gauss-Newton.

    ``points`` ``(V, J, 2)`` are pixels, ``scores`` ``(V, J)`` their confidences and
    ``projections`` ``(V, 3, 4)`` the :func:`projection_matrix` of each view. A view counts for a
    joint when its score is at least ``min_score`` and its point is finite; the others get weight
    0. Each used view's equations (DLT rows, then reprojection residuals) are multiplied by its
    score, so a confident view pulls harder (inverse-variance weighting if the keypoint noise's
    standard deviation goes as ``1 / score``). Joints are independent: stack several people
    along ``J`` to triangulate them in one call.

    Conditioning (Hartley-style): world points are solved in a normalised frame (centred on the
    cameras, unit mean camera distance), so metre-scale maps far from the origin stay well
    conditioned. Each DLT row is a plane through its camera centre (the back-projected image
    line ``u = x``); it is scaled so that its normal has unit length, which makes its residual
    the joint's distance to that plane. That error is the same in every world frame and for any
    scale of ``P``, and it balances the rows as Hartley's 2D normalisation would (for the DLT a
    view's 2D similarity only scales that view's rows).

    That distance is about the reprojection error times depth / f, so the DLT weighs far views
    more; ``refine_iterations`` Gauss-Newton steps then minimise the score-weighted reprojection
    error itself, each step kept only for the joints whose cost it lowers.

    A joint is **valid** only if all of these hold (otherwise ``xyz`` is NaN, never a guess):

    - at least ``min_views`` views (never fewer than 2) count for it;
    - **parallax**: some two of its observed rays (back-projected from the pixels, so independent
      of the estimate) meet at ``min_parallax_deg`` or more. Nearly parallel rays (a tiny
      baseline, or a joint far away) fix the depth poorly: the depth error per pixel of noise is
      about ``range / (f * parallax)``, 5 % of the range at 2 degrees and ``f = 600`` px;
    - **cheirality**: the point lies in front of (positive depth in) every view that counts;
    - the reprojection RMS is at most ``max_error_px`` when that is given (mismatched keypoints).

    ``error_px`` is the unweighted RMS pixel distance between the observed points and the
    projected estimate over the views that count (NaN where not valid).
    """
    points = np.asarray(points, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    projections = np.asarray(projections, dtype=np.float64)
    n_views, n_joints = scores.shape if scores.ndim == 2 else (-1, -1)
    if points.shape != (n_views, n_joints, 2) or projections.shape != (n_views, 3, 4):
        raise ValueError(f'triangulate wants points (V, J, 2), scores (V, J), projections '
                         f'(V, 3, 4); got {points.shape}, {scores.shape}, {projections.shape}')
    used = (scores >= min_score) & np.isfinite(points).all(-1)  # NaN scores fail >=
    weights = np.where(used, scores, 0.0).T  # (J, V)
    obs = np.where(used[..., None], points, 0.0).transpose(1, 0, 2)  # (J, V, 2)

    centre, scale = _world_normalisation(projections)
    to_world = np.eye(4)
    to_world[:3, :3] *= scale
    to_world[:3, 3] = centre
    proj_n = projections @ to_world  # projections of normalised points

    xyz_n = _dlt(obs, weights, proj_n)
    for _ in range(refine_iterations):
        xyz_n = _gauss_newton_step(xyz_n, obs, weights, proj_n)
    xyz = centre + scale * xyz_n

    image = _project(xyz_n, proj_n)
    with np.errstate(divide='ignore', invalid='ignore'):
        squared = ((image[..., :2] / image[..., 2:] - obs) ** 2).sum(-1)
        error = np.sqrt(np.where(weights > 0, squared, 0.0).sum(1) / (weights > 0).sum(1))
    # det M_n = scale^3 det M: the sign of each view's depth is sign(det M) times its w.
    depth = image[..., 2] * np.sign(np.linalg.det(projections[:, :, :3]))
    valid = ((weights > 0).sum(1) >= max(min_views, 2)) & np.isfinite(xyz).all(1)
    valid &= _parallax_deg(obs, weights, projections) >= min_parallax_deg
    valid &= ((depth > 0) | (weights == 0)).all(1)
    if max_error_px is not None:
        valid &= error <= max_error_px
    xyz[~valid] = np.nan
    error[~valid] = np.nan
    return Triangulation(xyz, valid, error)


def _homogeneous(xyz: np.ndarray) -> np.ndarray:
    return np.concatenate([xyz, np.ones(xyz.shape[:-1] + (1,))], axis=-1)


def _project(xyz: np.ndarray, proj: np.ndarray) -> np.ndarray:
    """``(J, V, 3)`` homogeneous image points of ``(J, 3)`` points, one matrix product."""
    n_views = proj.shape[0]
    image = xyz @ proj[:, :, :3].reshape(-1, 3).T + proj[:, :, 3].reshape(-1)
    return image.reshape(len(xyz), n_views, 3)


def _solve3(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """
    Solve ``(N, 3, 3) x = (N, 3)`` by the adjugate: elementwise, several times LAPACK's speed.

    Rows whose matrix is singular to 1e-12 of its scale come back NaN.
    """
    a = matrix
    cof = np.stack([
        a[:, 1, 1] * a[:, 2, 2] - a[:, 1, 2] * a[:, 2, 1],
        a[:, 0, 2] * a[:, 2, 1] - a[:, 0, 1] * a[:, 2, 2],
        a[:, 0, 1] * a[:, 1, 2] - a[:, 0, 2] * a[:, 1, 1],
        a[:, 1, 2] * a[:, 2, 0] - a[:, 1, 0] * a[:, 2, 2],
        a[:, 0, 0] * a[:, 2, 2] - a[:, 0, 2] * a[:, 2, 0],
        a[:, 0, 2] * a[:, 1, 0] - a[:, 0, 0] * a[:, 1, 2],
        a[:, 1, 0] * a[:, 2, 1] - a[:, 1, 1] * a[:, 2, 0],
        a[:, 0, 1] * a[:, 2, 0] - a[:, 0, 0] * a[:, 2, 1],
        a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]], axis=1).reshape(-1, 3, 3)
    det = (a[:, 0] * cof[:, :, 0]).sum(1)
    size = np.abs(a).max((1, 2))
    regular = np.abs(det) > 1e-12 * size ** 3
    with np.errstate(divide='ignore', invalid='ignore'):
        solution = (cof * rhs[:, None, :]).sum(2) / det[:, None]
    return np.where(regular[:, None], solution, np.nan)


def _camera_centres(projections: np.ndarray) -> np.ndarray:
    """``(V, 3)`` centres ``C = -M^-1 p4``; NaN for a singular ``M``."""
    return _solve3(projections[:, :, :3], -projections[:, :, 3])


def _world_normalisation(projections: np.ndarray) -> tuple[np.ndarray, float]:
    """Centre and scale mapping the cameras to mean distance 1 around the origin."""
    centres = _camera_centres(projections)
    centres = centres[np.isfinite(centres).all(1)]
    if len(centres) == 0:
        return np.zeros(3), 1.0
    centre = centres.mean(0)
    spread = float(np.linalg.norm(centres - centre, axis=1).mean())
    return centre, spread if spread > 1e-9 else 1.0


def _dlt(obs: np.ndarray, weights: np.ndarray, proj: np.ndarray) -> np.ndarray:
    """
    ``(J, 3)`` score-weighted DLT with ``X_4 = 1`` (Hartley-Sturm's Linear-LS).

    Each view adds rows ``x p_3 - p_1`` and ``y p_3 - p_2`` of ``A [X; 1] = 0``, solved through
    the 3x3 normal equations. Unlike the unit-norm eigenvector (Linear-Eigen) this is affine
    invariant, no less accurate (the benchmark compares them), and a closed-form 3x3 solve is
    ~6x faster than a batched 4x4 ``eigh``. It only fails for a point at infinity (singular
    system, NaN), which the parallax check rejects anyway.
    """
    n_joints, n_views = weights.shape
    rows = obs[..., None] * proj[:, 2:3, :] - proj[:, :2, :]  # (J, V, 2, 4)
    norms = np.linalg.norm(rows[..., :3], axis=-1, keepdims=True)  # see triangulate()
    rows = rows * (weights[..., None, None] / np.where(norms > 0, norms, 1.0))
    rows = rows.reshape(n_joints, 2 * n_views, 4)
    normal = np.swapaxes(rows, 1, 2) @ rows[..., :3]  # (J, 4, 3): A^T A's first three columns
    return _solve3(normal[:, :3], -normal[:, 3])


def _weighted_residuals(xyz: np.ndarray, obs: np.ndarray, weights: np.ndarray,
                        proj: np.ndarray):
    """Image points ``(J, V, 3)``, pixels ``(J, V, 2)`` and score-weighted residuals."""
    image = _project(xyz, proj)
    with np.errstate(divide='ignore', invalid='ignore'):
        pixels = image[..., :2] / image[..., 2:]
    residual = np.where(weights[..., None] > 0, weights[..., None] * (pixels - obs), 0.0)
    return image, pixels, residual


def _cost(residual: np.ndarray) -> np.ndarray:
    cost = (residual ** 2).sum((1, 2))
    return np.where(np.isfinite(cost), cost, np.inf)


def _gauss_newton_step(xyz: np.ndarray, obs: np.ndarray, weights: np.ndarray,
                       proj: np.ndarray) -> np.ndarray:
    """One Gauss-Newton step on the score-weighted reprojection error, kept where it helps."""
    n_joints, n_views = weights.shape
    image, pixels, residual = _weighted_residuals(xyz, obs, weights, proj)
    used = weights > 0
    with np.errstate(divide='ignore', invalid='ignore'):
        scale = np.where(used, weights / image[..., 2], 0.0)  # (J, V)
        # d(u, v)/dX = (p_{1,2} - (u, v) p_3) / w over the first three columns of P.
        jac = (proj[:, :2, :3] - np.where(used[..., None], pixels, 0.0)[..., None]
               * proj[:, None, 2, :3]) * scale[..., None, None]  # (J, V, 2, 3)
    jac = jac.reshape(n_joints, 2 * n_views, 3)
    jac_t = np.swapaxes(jac, 1, 2)
    hessian = jac_t @ jac
    hessian += 1e-9 * np.trace(hessian, axis1=1, axis2=2)[:, None, None] * np.eye(3)
    step = _solve3(hessian, -(jac_t @ residual.reshape(n_joints, 2 * n_views, 1))[..., 0])
    candidate = xyz + step
    better = _cost(_weighted_residuals(candidate, obs, weights, proj)[2]) < _cost(residual)
    return np.where(better[:, None], candidate, xyz)


def _parallax_deg(obs: np.ndarray, weights: np.ndarray, projections: np.ndarray) -> np.ndarray:
    """``(J,)`` largest angle between two used observed rays, in degrees (0 with < 2 rays)."""
    m = projections[:, :, :3]
    det = np.linalg.det(m)
    regular = np.abs(det) > 0
    # d = sign(det M) M^-1 x points from the centre towards what the pixel sees.
    inv = np.linalg.inv(np.where(regular[:, None, None], m, np.eye(3)))
    inv *= np.sign(det)[:, None, None]
    rays = (inv * _homogeneous(obs)[:, :, None, :]).sum(-1)  # (J, V, 3)
    rays /= np.linalg.norm(rays, axis=-1, keepdims=True)
    used = (weights > 0) & regular
    rays = np.where(used[..., None], rays, 0.0)
    cosine = rays @ np.swapaxes(rays, 1, 2)  # (J, V, V)
    pair = used[:, :, None] & used[:, None, :]
    cosine = np.where(pair, cosine, 1.0).min((1, 2), initial=1.0)  # no view: no parallax
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))
