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
    n = np.sqrt(np.einsum('...i,...i->...', v, v))[..., None]
    return v / np.maximum(n, eps)


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return ``a x b`` over the last axis (3), cheaper than ``np.cross`` on small arrays."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], -1)


def frames(aim: np.ndarray, side: np.ndarray) -> np.ndarray:
    """
    Right-handed orthonormal frames ``(..., 3, 3)``, columns ``[aim, side', aim x side']``.

    ``side'`` is ``side`` made orthogonal to ``aim``; both ``(..., 3)``, any length.
    """
    a = unit(aim)
    s = unit(side - np.einsum('...i,...i->...', side, a)[..., None] * a)
    return np.stack([a, s, cross(a, s)], axis=-1)


def axis_rotations(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Return rotations ``(..., 3, 3)`` by ``angle (...)`` rad about unit ``axis``."""
    angle = np.asarray(angle, np.float64)
    axis = np.broadcast_to(np.asarray(axis, np.float64), angle.shape + (3,))
    c, s = np.cos(angle)[..., None, None], np.sin(angle)[..., None, None]
    k = np.zeros(angle.shape + (3, 3))
    k[..., 0, 1], k[..., 0, 2], k[..., 1, 2] = -axis[..., 2], axis[..., 1], -axis[..., 0]
    k -= np.swapaxes(k, -1, -2)
    outer = axis[..., :, None] * axis[..., None, :]
    return c * np.eye(3) + s * k + (1 - c) * outer


def wrap(angle: np.ndarray) -> np.ndarray:
    """Angles folded into ``[-pi, pi)``."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def _shepperd(m: np.ndarray) -> np.ndarray:
    """Quaternions ``(N, 4)`` of ``m (N, 3, 3)``, dividing by the largest component."""
    t = np.stack([1 + m[:, 0, 0] - m[:, 1, 1] - m[:, 2, 2], 1 - m[:, 0, 0] + m[:, 1, 1]
                  - m[:, 2, 2], 1 - m[:, 0, 0] - m[:, 1, 1] + m[:, 2, 2],
                  1 + m[:, 0, 0] + m[:, 1, 1] + m[:, 2, 2]], -1)
    best = np.argmax(t, -1)
    r = np.sqrt(np.maximum(t[np.arange(len(m)), best], 1e-12))
    wx, wy, wz = m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]
    xy, xz, yz = m[:, 0, 1] + m[:, 1, 0], m[:, 0, 2] + m[:, 2, 0], m[:, 1, 2] + m[:, 2, 1]
    cand = np.stack([np.stack([r * r, xy, xz, wx], -1), np.stack([xy, r * r, yz, wy], -1),
                     np.stack([xz, yz, r * r, wz], -1), np.stack([wx, wy, wz, r * r], -1)], 1)
    return cand[np.arange(len(m)), best] / (2 * r[:, None])


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` to unit quaternions ``(..., 4)`` x, y, z, w, w >= 0."""
    m = np.asarray(m, np.float64)
    shape = m.shape[:-2]
    m = m.reshape(-1, 3, 3)
    d0, d1, d2 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    q = np.empty((len(m), 4))
    q[:, 3] = np.sqrt(np.maximum(1 + d0 + d1 + d2, 0))
    q[:, 0] = np.copysign(np.sqrt(np.maximum(1 + d0 - d1 - d2, 0)), m[:, 2, 1] - m[:, 1, 2])
    q[:, 1] = np.copysign(np.sqrt(np.maximum(1 - d0 + d1 - d2, 0)), m[:, 0, 2] - m[:, 2, 0])
    q[:, 2] = np.copysign(np.sqrt(np.maximum(1 - d0 - d1 + d2, 0)), m[:, 1, 0] - m[:, 0, 1])
    near_pi = q[:, 3] < 0.3  # the signs above are unreliable near a half turn
    if near_pi.any():
        q[near_pi] = _shepperd(m[near_pi])
        q[near_pi] *= np.where(q[near_pi, 3:] < 0, -1.0, 1.0)
    q /= np.sqrt(np.einsum('ni,ni->n', q, q))[:, None]
    return q.reshape(shape + (4,))


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Quaternions ``(..., 4)`` x, y, z, w to rotation matrices ``(..., 3, 3)``."""
    q = np.asarray(q, np.float64)
    q = q / np.sqrt(np.einsum('...i,...i->...', q, q))[..., None]
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - z * w)
    out[..., 0, 2] = 2 * (x * z + y * w)
    out[..., 1, 0] = 2 * (x * y + z * w)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - x * w)
    out[..., 2, 0] = 2 * (x * z - y * w)
    out[..., 2, 1] = 2 * (y * z + x * w)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def rotation_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad) of the rotation between matrices ``a`` and ``b`` ``(..., 3, 3)``."""
    tr = np.einsum('...ji,...ji->...', a, b)  # trace(a^T b)
    return np.arccos(np.clip((tr - 1) / 2, -1.0, 1.0))


def slerp_matrices(a: np.ndarray, b: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Rotations a fraction ``t`` of the way from ``a`` to ``b`` (shortest arc), batched."""
    qa, qb = matrix_to_quat(a), matrix_to_quat(b)
    dot = np.einsum('...i,...i->...', qa, qb)[..., None]
    qb = np.where(dot < 0, -qb, qb)
    theta = np.arccos(np.clip(np.abs(dot), 0, 1))
    t = np.asarray(t, np.float64)[..., None]
    sin = np.sin(theta)
    small = sin < 1e-6
    safe = np.where(small, 1.0, sin)
    wa = np.where(small, 1 - t, np.sin((1 - t) * theta) / safe)
    wb = np.where(small, t, np.sin(t * theta) / safe)
    return quat_to_matrix(wa * qa + wb * qb)


__all__ = ['axis_rotations', 'cross', 'frames', 'matrix_to_quat', 'quat_to_matrix',
           'rotation_angle', 'slerp_matrices', 'unit', 'wrap']
