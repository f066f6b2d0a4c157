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

"""Small batched rotation helpers shared by the kinematics, the avatar rig and the faces."""

from __future__ import annotations

import numpy as np


def unit(v: np.ndarray, eps: float = 1e-9) -> np.ndarray:
    """``v (..., 3)`` scaled to unit length (zero vectors stay zero, NaN stays NaN)."""
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.maximum(n, eps)


def frames(aim: np.ndarray, side: np.ndarray) -> np.ndarray:
    """
    Right-handed orthonormal frames ``(..., 3, 3)``, columns ``[aim, side', aim x side']``.

    ``side'`` is ``side`` made orthogonal to ``aim``; both ``(..., 3)``, any length.
    """
    a = unit(aim)
    s = unit(side - (side * a).sum(-1, keepdims=True) * a)
    return np.stack([a, s, np.cross(a, s)], axis=-1)


def axis_rotations(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotations ``(..., 3, 3)`` by ``angle (...)`` rad about unit ``axis (3,)`` or ``(..., 3)``."""
    axis = np.broadcast_to(np.asarray(axis, np.float64), np.shape(angle) + (3,))
    c, s = np.cos(angle)[..., None, None], np.sin(angle)[..., None, None]
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    zero = np.zeros_like(x)
    k = np.stack([np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1),
                  np.stack([-y, x, zero], -1)], -2)
    outer = axis[..., :, None] * axis[..., None, :]
    return c * np.eye(3) + s * k + (1 - c) * outer


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angles folded into ``[-pi, pi)``."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` to quaternions ``(..., 4)`` x, y, z, w with w >= 0."""
    m = np.asarray(m, np.float64)
    t = np.stack([1 + m[..., 0, 0] - m[..., 1, 1] - m[..., 2, 2],
                  1 - m[..., 0, 0] + m[..., 1, 1] - m[..., 2, 2],
                  1 - m[..., 0, 0] - m[..., 1, 1] + m[..., 2, 2],
                  1 + m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]], -1)
    # the largest of 4x^2, 4y^2, 4z^2, 4w^2 is the stable one to divide by
    best = np.argmax(t, -1)
    r = np.sqrt(np.maximum(np.take_along_axis(t, best[..., None], -1), 1e-12))[..., 0]
    off = np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                    m[..., 1, 0] - m[..., 0, 1], m[..., 0, 1] + m[..., 1, 0],
                    m[..., 0, 2] + m[..., 2, 0], m[..., 1, 2] + m[..., 2, 1]], -1)
    wx, wy, wz, xy, xz, yz = (off[..., i] for i in range(6))
    cand = np.stack([np.stack([r * r, xy, xz, wx], -1), np.stack([xy, r * r, yz, wy], -1),
                     np.stack([xz, yz, r * r, wz], -1), np.stack([wx, wy, wz, r * r], -1)], -2)
    q = np.take_along_axis(cand, best[..., None, None], -2)[..., 0, :] / (2 * r[..., None])
    q = q * np.where(q[..., 3:] < 0, -1.0, 1.0)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Quaternions ``(..., 4)`` x, y, z, w to rotation matrices ``(..., 3, 3)``."""
    q = np.asarray(q, np.float64)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = (q[..., i] for i in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


def rotation_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad) of the rotation between matrices ``a`` and ``b`` ``(..., 3, 3)``."""
    tr = np.einsum('...ji,...ji->...', a, b)  # trace(a^T b)
    return np.arccos(np.clip((tr - 1) / 2, -1.0, 1.0))


def slerp_matrices(a: np.ndarray, b: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Rotations a fraction ``t`` of the way from ``a`` to ``b`` (shortest arc), batched."""
    qa, qb = matrix_to_quat(a), matrix_to_quat(b)
    dot = (qa * qb).sum(-1, keepdims=True)
    qb = np.where(dot < 0, -qb, qb)
    dot = np.abs(dot).clip(max=1.0)
    theta = np.arccos(dot)
    t = np.asarray(t, np.float64)[..., None] if np.ndim(t) else np.float64(t)
    sin = np.sin(theta)
    small = sin < 1e-6
    wa = np.where(small, 1 - t, np.sin((1 - t) * theta) / np.where(small, 1, sin))
    wb = np.where(small, t, np.sin(t * theta) / np.where(small, 1, sin))
    return quat_to_matrix(wa * qa + wb * qb)


__all__ = ['axis_rotations', 'frames', 'matrix_to_quat', 'quat_to_matrix', 'rotation_angle',
           'slerp_matrices', 'unit', 'wrap']
