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


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dot products ``(..., 1)`` over the last axis of ``a, b (..., n)``: one gufunc call."""
    return (a[..., None, :] @ b[..., :, None])[..., 0]


def unit(v: np.ndarray, eps: float = 1e-9) -> np.ndarray:
    """``v (..., 3)`` scaled to unit length (zero vectors stay zero, NaN stays NaN)."""
    return v / np.maximum(np.sqrt(dot(v, v)), eps)


_ALL, _ANY = np.logical_and.reduce, np.logical_or.reduce


def all_of(mask: np.ndarray) -> bool:
    """``mask.all()`` without numpy's Python wrapper (a third of its cost on small arrays)."""
    return bool(_ALL(mask, axis=None))


def any_of(mask: np.ndarray) -> bool:
    """``mask.any()`` without numpy's Python wrapper."""
    return bool(_ANY(mask, axis=None))


def clamp(x: np.ndarray, lo, hi) -> np.ndarray:
    """``np.clip`` for small arrays: the same values (NaN stays NaN), a third of its overhead."""
    return np.minimum(np.maximum(x, lo), hi)


_P, _Q = np.array([1, 2, 0]), np.array([2, 0, 1])


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return ``a x b`` over the last axis (3), cheaper than ``np.cross`` on small arrays."""
    return a.take(_P, -1) * b.take(_Q, -1) - a.take(_Q, -1) * b.take(_P, -1)


def columns(*vectors: np.ndarray) -> np.ndarray:
    """Vectors ``(..., 3)`` as the columns of matrices ``(..., 3, n)`` (``np.stack``, cheaper)."""
    return np.concatenate([v[..., None] for v in vectors], -1)


def frames(aim: np.ndarray, side: np.ndarray) -> np.ndarray:
    """
    Right-handed orthonormal frames ``(..., 3, 3)``, columns ``[aim, side', aim x side']``.

    ``side'`` is ``side`` made orthogonal to ``aim``; both ``(..., 3)``, any length.
    """
    a = unit(aim)
    s = unit(side - dot(side, a) * a)
    return columns(a, s, cross(a, s))


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


#: Shepperd's symmetric 4x4 matrix of a rotation, linear in its entries: ``K.ravel() =
#: m.ravel() @ _SHEPPERD + _SHEPPERD_ONE``; each row of K is ``4 q_i q`` (x, y, z, w).
_SHEPPERD = np.zeros((9, 16))
_SHEPPERD_ONE = np.zeros(16)
for _k, _terms in enumerate((
        ((0, 1), (4, -1), (8, -1)), ((1, 1), (3, 1)), ((2, 1), (6, 1)), ((7, 1), (5, -1)),
        ((1, 1), (3, 1)), ((0, -1), (4, 1), (8, -1)), ((5, 1), (7, 1)), ((2, 1), (6, -1)),
        ((2, 1), (6, 1)), ((5, 1), (7, 1)), ((0, -1), (4, -1), (8, 1)), ((3, 1), (1, -1)),
        ((7, 1), (5, -1)), ((2, 1), (6, -1)), ((3, 1), (1, -1)), ((0, 1), (4, 1), (8, 1)))):
    for _i, _c in _terms:
        _SHEPPERD[_i, _k] = _c
_SHEPPERD_ONE[::5] = 1


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` to unit quaternions ``(..., 4)`` x, y, z, w, w >= 0."""
    m = np.asarray(m, np.float64)
    shape = m.shape[:-2]
    k = (m.reshape(-1, 9) @ _SHEPPERD + _SHEPPERD_ONE).reshape(-1, 4)  # 4 rows per matrix
    # the row of the largest 4 q_i^2 is the best conditioned (Shepperd)
    best = k.reshape(-1, 16)[:, ::5].argmax(-1)
    q = k.take(best + np.arange(0, len(k), 4), 0)
    q *= np.where(q[:, 3:] < 0, -1.0, 1.0) / np.sqrt(dot(q, q))
    return q.reshape(shape + (4,))


#: ``R.ravel() = (q outer q).ravel() @ _QUAT_TERMS`` for a unit quaternion x, y, z, w.
_QUAT_TERMS = np.zeros((16, 9))
for _r, _terms in enumerate((
        ((0, 0, 1), (1, 1, -1), (2, 2, -1), (3, 3, 1)), ((0, 1, 2), (2, 3, -2)),
        ((0, 2, 2), (1, 3, 2)), ((0, 1, 2), (2, 3, 2)),
        ((0, 0, -1), (1, 1, 1), (2, 2, -1), (3, 3, 1)), ((1, 2, 2), (0, 3, -2)),
        ((0, 2, 2), (1, 3, -2)), ((1, 2, 2), (0, 3, 2)),
        ((0, 0, -1), (1, 1, -1), (2, 2, 1), (3, 3, 1)))):
    for _i, _j, _c in _terms:
        _QUAT_TERMS[4 * _i + _j, _r] = _c


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Quaternions ``(..., 4)`` x, y, z, w to rotation matrices ``(..., 3, 3)``."""
    q = np.asarray(q, np.float64)
    q = q / np.sqrt(dot(q, q))
    outer = (q[..., :, None] * q[..., None, :]).reshape(q.shape[:-1] + (16,))
    return (outer @ _QUAT_TERMS).reshape(q.shape[:-1] + (3, 3))


#: Horn's symmetric 4x4 matrix N of a 3x3 matrix C, linear in C: ``q^T N q = trace(R(q)^T C)``.
_HORN = ((_QUAT_TERMS + _QUAT_TERMS.reshape(4, 4, 9).transpose(1, 0, 2).reshape(16, 9)) / 2).T


def best_rotations(c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the unit quaternions ``(..., 4)`` (w >= 0) of the R maximising ``trace(R^T c)``.

    ``c (..., 3, 3)``, e.g. the covariance of measured x model points; also returns that
    maximum ``(...)`` (Horn's closed form: the top eigenvector of a symmetric 4x4 matrix).
    """
    c = np.asarray(c, np.float64)
    vals, vecs = np.linalg.eigh((c.reshape(c.shape[:-2] + (9,)) @ _HORN).reshape(
        c.shape[:-2] + (4, 4)))
    q = vecs[..., -1]
    return np.where(q[..., 3:] < 0, -q, q), vals[..., -1]


def rotation_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad) of the rotation between matrices ``a`` and ``b`` ``(..., 3, 3)``."""
    tr = np.einsum('...ji,...ji->...', a, b)  # trace(a^T b)
    return np.arccos(clamp((tr - 1) / 2, -1.0, 1.0))


def slerp_matrices(a: np.ndarray, b: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """Rotations a fraction ``t`` of the way from ``a`` to ``b`` (shortest arc), batched."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    q = matrix_to_quat(a.swapaxes(-1, -2) @ b)  # a to b; w >= 0: the shortest arc
    w = q[..., 3:]
    theta = np.arccos(np.minimum(w, 1.0))  # half its angle
    sin = np.sin(theta)
    small = sin < 1e-6
    t = np.asarray(t, np.float64)[..., None]
    tt = t * theta
    # the fraction t of it: (v sin(t theta) / sin theta, cos(t theta)); near identity, linear
    s, c = np.sin(tt), np.cos(tt)
    if any_of(small):
        s = np.where(small, t, s / np.where(small, 1.0, sin))
        c = np.where(small, (1 - t) + t * w, c)
    else:
        s = s / sin
    return a @ quat_to_matrix(np.concatenate([q[..., :3] * s, c], -1))


__all__ = ['axis_rotations', 'best_rotations', 'clamp', 'columns', 'cross', 'dot', 'frames',
           'matrix_to_quat', 'quat_to_matrix', 'rotation_angle', 'slerp_matrices', 'unit', 'wrap']
