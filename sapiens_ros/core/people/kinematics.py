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
REP-155 body kinematics per tracked body, as hri_body_detect publishes them (ROS-free).

:class:`BodyKinematics` (one per camera) turns each frame's metric 3D keypoints into, per
tracked body: the :mod:`~sapiens_ros.core.people.humanoid` joint angles (``joint_states``),
solved in closed form per limb, kept within the URDF limits and smoothed over time; the body's
segment lengths, measured over its first frames and then frozen (its URDF); every link's pose
from forward kinematics (the link TF, without robot_state_publisher); the body's position
(mid-hips, camera frame) and velocity (in ``body_<id>``). Tracks that end are dropped.

The root ``body_<id>`` is :func:`~sapiens_ros.core.people.depth.torso_axes`' frame at the hip
centre, as :mod:`~sapiens_ros.core.people.body_frames` publishes it. It follows the torso, so the
``waist`` joint (torso pitch against the body frame) stays 0.
"""

from __future__ import annotations

from collections.abc import KeysView
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, cached_property
import warnings

import numpy as np

from .depth import torso_axes
from .geometry import all_of, any_of, clamp, cross, dot, matrix_to_quat, unit, wrap
from .humanoid import (BoneLengths, humanoid_urdf, JOINT_NAMES, joint_transforms,
                       LENGTH_NAMES, LINK_NAMES, links_from_joints, LOWER, UPPER)
from ..models.metadata import keypoint_info


@dataclass
class KinematicsConfig:
    """Parameters of :class:`BodyKinematics`."""

    calibration_frames: int = 10  # measurements of a length before it is frozen (median)
    max_calibration_frames: int = 60  # then freeze anyway, unmeasured lengths by proportion
    smoothing: float = 0.05  # s, time constant of the joint-angle smoothing (0: none)
    velocity_smoothing: float = 0.2  # s, time constant of the velocity filter
    forget: float = 2.0  # s, state of a track unseen this long is dropped


_NAMES = ('left_shoulder', 'right_shoulder', 'left_elbow', 'right_elbow', 'left_wrist',
          'right_wrist', 'left_hip', 'right_hip', 'left_knee', 'right_knee', 'left_ankle',
          'right_ankle', 'left_big_toe', 'left_small_toe', 'right_big_toe', 'right_small_toe',
          'left_eye', 'right_eye', 'left_ear', 'right_ear')


@cache
def _index() -> np.ndarray:
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    return np.array([index[n] for n in _NAMES], np.int64)


_K = {n: i for i, n in enumerate(_NAMES)}
_DEFAULT = BoneLengths().array()
_J = {n: i for i, n in enumerate(JOINT_NAMES)}
_ARM = {'l': [_J['l_y_shoulder'], _J['l_p_shoulder'], _J['l_r_shoulder']],
        'r': [_J['r_y_shoulder'], _J['r_p_shoulder'], _J['r_r_shoulder']]}
_LEG = {'l': [_J['l_y_hip'], _J['l_p_hip'], _J['l_r_hip']],
        'r': [_J['r_y_hip'], _J['r_p_hip'], _J['r_r_hip']]}
_HEAD = [_J['r_head'], _J['y_head'], _J['p_head']]
#: Euler angles (a, b, c) of each chain times these signs are its joint angles.
_SIGNS = {'arm_l': np.array([-1.0, 1, 1]), 'arm_r': np.array([1.0, -1, -1]),
          'leg_l': np.array([-1.0, 1, -1]), 'leg_r': np.array([-1.0, -1, -1]),
          'head': np.array([1.0, 1, -1])}


#: The five chains' Euler sequences (intrinsic): arms 'ZXZ', legs 'ZXY', head 'XZY'. Per
#: chain, the flat 3x3 entries and signs of (sin or cos b, then a and c as arctan2 arguments).
_EULER_ENTRIES = np.array([[8, 2, 5, 6, 7]] * 2 + [[7, 1, 4, 6, 8]] * 2 + [[1, 7, 4, 2, 0]])
_EULER_SIGNS = np.array([[1.0, 1, -1, 1, 1]] * 2 + [[1.0, -1, 1, -1, 1]] * 2
                        + [[-1.0, 1, 1, 1, 1]])
_EULER_ZXZ = np.array([True, True, False, False, False])  # b = arccos (else arcsin)
_EULER_B2 = np.array([0.0, 0, np.pi, np.pi, np.pi])  # the second solution's b: this - b
_EULER_FLAT = np.arange(5)[:, None] * 9 + _EULER_ENTRIES  # in the five matrices, flattened
_EULER_SECOND_SIGN = np.array([[1.0, 1, 1], [1, -1, 1]])
_EULER_SECOND = np.zeros((5, 2, 3))
_EULER_SECOND[:, 1] = np.stack([np.full(5, np.pi), _EULER_B2, np.full(5, np.pi)], -1)


def _euler(m: np.ndarray) -> np.ndarray:
    """Both Euler solutions ``(B, 5, 2, 3)`` of the five chains' rotations ``m (B, 5, 3, 3)``."""
    g = m.reshape(-1, 45).take(_EULER_FLAT, 1) * _EULER_SIGNS  # (B, 5, 5)
    sb = clamp(g[..., 0], -1, 1)
    b = np.where(_EULER_ZXZ, np.arccos(sb), np.arcsin(sb))
    ac = np.arctan2(g[..., 1::2], g[..., 2::2])  # (B, 5, 2): a, c
    abc = np.concatenate([ac[..., :1], b[..., None], ac[..., 1:]], -1)[..., None, :]
    return wrap(abc * _EULER_SECOND_SIGN + _EULER_SECOND)  # (a, b, c), (a + pi, b2 - b, c + pi)


_SHIFTS = np.array([0.0, 2 * np.pi, -2 * np.pi])


def _into_range(th: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Angles ``(..., 3)`` moved by 2 pi where that takes them nearer their limits ``lo, hi``."""
    return _into_range_outside(th, lo, hi)[0]


def _into_range_outside(th: np.ndarray, lo: np.ndarray,
                        hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_into_range`, and how far the moved angles still lie outside (:func:`_outside`)."""
    # the shoulder and hip abduction reach 3.3 rad; ties keep the first of 0, +2 pi, -2 pi
    out = _outside(th + _SHIFTS.reshape((3,) + (1,) * th.ndim), lo, hi)
    return th + _SHIFTS.take(out.argmin(0)), out.min(0)


def _outside(th: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """How far (rad) each angle lies outside ``[lo, hi]`` (``lo <= hi``)."""
    return np.maximum(np.maximum(lo - th, th - hi), 0)


def _sum3(x: np.ndarray) -> np.ndarray:
    """Sum over a last axis of 3, in numpy's order, without a reduction's overhead."""
    return x[..., 0] + x[..., 1] + x[..., 2]


def _choose(cands: np.ndarray, lo: np.ndarray, hi: np.ndarray, prev: np.ndarray) -> np.ndarray:
    """Pick the candidate ``(..., 2, 3)`` least outside the limits, then nearest ``prev``."""
    lo, hi = lo[..., None, :], hi[..., None, :]
    cands, outside = _into_range_outside(cands, lo, hi)
    cost = _sum3(outside) + 0.05 * _sum3(np.abs(wrap(cands - prev[..., None, :])))
    first = cost[..., :1] <= cost[..., 1:]  # as argmin: a tie keeps the first
    return np.where(first, cands[..., 0, :], cands[..., 1, :])


_PAIRS = np.array([[_K[a], _K[b]] for a, b in (
    ('left_ear', 'right_ear'), ('left_shoulder', 'right_shoulder'),
    ('left_shoulder', 'left_elbow'), ('right_shoulder', 'right_elbow'),
    ('left_elbow', 'left_wrist'), ('right_elbow', 'right_wrist'), ('left_hip', 'right_hip'),
    ('left_hip', 'left_knee'), ('right_hip', 'right_knee'), ('left_knee', 'left_ankle'),
    ('right_knee', 'right_ankle'))])


def _mean2(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean of two arrays where both are finite, else the finite one (NaN if neither)."""
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, (a + b) / 2))


def measure_lengths(local: np.ndarray, head: np.ndarray | None = None,
                    sellion: np.ndarray | None = None) -> np.ndarray:
    """
    One frame's segment lengths ``(B, 9)`` (:data:`LENGTH_NAMES`; NaN unmeasured).

    ``local (B, 20, 3)``: this module's keypoints in the body frame; ``head (B, 3, 3)`` the
    head axes and ``sellion (B, 3)`` in the body frame, for the neck length. Sides are averaged.
    """
    d = local[:, _PAIRS[:, 0]] - local[:, _PAIRS[:, 1]]
    d = np.sqrt(np.einsum('bpi,bpi->bp', d, d))
    mid_sh = (local[:, _K['left_shoulder']] + local[:, _K['right_shoulder']]) / 2
    out = np.stack([d[:, 0] / 2, np.full(len(local), np.nan), d[:, 1] / 2,
                    _mean2(d[:, 2], d[:, 3]), _mean2(d[:, 4], d[:, 5]), mid_sh[:, 2], d[:, 6],
                    _mean2(d[:, 7], d[:, 8]), _mean2(d[:, 9], d[:, 10])], -1)
    if head is not None and sellion is not None:
        r = np.where(np.isfinite(out[:, 0]), out[:, 0], _DEFAULT[0])
        offset = np.einsum('bij,bj->bi', head, np.stack([r / 2, np.zeros_like(r), r], -1))
        out[:, 1] = (sellion - offset)[:, 2] - out[:, 5]
    # gross outliers (a swapped or misplaced keypoint) are not measurements
    with np.errstate(invalid='ignore'):
        bad = ~((out > 0.3 * _DEFAULT) & (out < 3.0 * _DEFAULT))
        bad[:, 1] = ~((out[:, 1] > -0.1) & (out[:, 1] < 0.3))
    out[bad] = np.nan
    return out


@contextmanager
def _quiet():
    """Silence numpy's warnings of all-NaN means and medians (the result is NaN, as meant)."""
    with warnings.catch_warnings(), np.errstate(invalid='ignore'):
        warnings.simplefilter('ignore', RuntimeWarning)
        yield


def _estimate(samples: list, cfg: KinematicsConfig) -> tuple[np.ndarray, bool]:
    """Lengths ``(9,)`` from a calibrating track's measurements; True when they freeze."""
    s = np.asarray(samples).reshape(-1, 9)
    counts = np.isfinite(s).sum(0)
    with _quiet():
        est = np.nanmedian(s, 0) if len(s) else np.full(9, np.nan)
    known = np.isfinite(est)
    if known.any():  # unmeasured lengths: the default proportions at the measured scale
        scale = float(np.median(est[known] / _DEFAULT[known]))
        est = np.where(known, est, _DEFAULT * scale)
    else:
        est = _DEFAULT.copy()
    return est, bool((counts >= cfg.calibration_frames).all()
                     or len(s) >= cfg.max_calibration_frames)


#: Columns of a track's state row: smoothed angles, each upper arm's last bend direction, the
#: stamp, position and velocity (camera frame), frozen lengths (NaN while calibrating).
_ANGLES, _SIDES, _STAMP, _POS, _VEL, _LENGTHS = (
    slice(0, 20), slice(20, 26), 26, slice(27, 30), slice(30, 33), slice(33, 42))
_NEW_TRACK = np.r_[np.full(26, np.nan), -np.inf, np.full(3, np.nan), np.zeros(3),
                   np.full(9, np.nan)]


@dataclass
class KinematicsFrame:
    """One frame's body kinematics; rows are bodies (tracked, with a metric torso)."""

    ids: np.ndarray  # (B,) track ids
    rows: np.ndarray  # (B,) rows of the People these came from
    position: np.ndarray  # (B, 3) body origin (hip centre), camera frame, m
    orientation: np.ndarray  # (B, 4) body_<id> axes in the camera frame, x y z w
    rotation: np.ndarray  # (B, 3, 3) the same axes as matrix columns (x, y, z)
    velocity: np.ndarray  # (B, 3) m/s in body_<id> (TwistStamped.linear)
    joint_positions: np.ndarray  # (B, 20) rad, humanoid.JOINT_NAMES order
    measured: np.ndarray  # (B, 20) bool: solved this frame (else held from before / rest)
    lengths: np.ndarray  # (B, 9) m, humanoid.LENGTH_NAMES order
    calibrated: np.ndarray  # (B,) bool: lengths frozen (the URDF is final)
    #: (B, 26, 4, 4) each joint's child in its parent link (TF as robot_state_publisher sends
    #: it), humanoid.JOINTS order
    joint_transforms: np.ndarray
    new_urdf: list[int]  # tracks whose lengths froze this frame: publish their URDF now

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @cached_property
    def link_poses(self) -> np.ndarray:
        """``(B, 27, 4, 4)`` each link in body_<id>, humanoid.LINK_NAMES order (on first use)."""
        return links_from_joints(self.joint_transforms)


class BodyKinematics:
    """
    Per-camera, per-track body kinematics: ``update(ids, xyz, stamp, ...) -> KinematicsFrame``.

    ``urdf(track, body_id)`` gives a track's URDF once its lengths are known (None before).
    """

    def __init__(self, config: KinematicsConfig | None = None) -> None:
        self.config = config or KinematicsConfig()
        self.reset()

    def reset(self) -> None:
        """Forget every track."""
        self._row: dict[int, int] = {}  # track id -> row of _state
        self._state = np.zeros((0, len(_NEW_TRACK)))  # one row per track, see _NEW_TRACK
        self._samples: dict[int, list] = {}  # calibrating tracks' length measurements

    @property
    def tracks(self) -> KeysView[int]:
        """Return the ids of the tracks that have state."""
        return self._row.keys()

    def urdf(self, track: int, body_id: str) -> str | None:
        """Return the URDF of ``track`` named ``body_id``, once its lengths are frozen."""
        lengths = self.lengths(track)
        return None if lengths is None else humanoid_urdf(body_id, lengths)

    def lengths(self, track: int) -> BoneLengths | None:
        """Return the frozen lengths of ``track`` (None while calibrating or unknown)."""
        row = self._row.get(int(track))
        if row is None or np.isnan(self._state[row, _LENGTHS][0]):
            return None
        return BoneLengths.from_array(self._state[row, _LENGTHS].copy())

    def update(self, ids: np.ndarray, xyz: np.ndarray | None, stamp: float,
               head: np.ndarray | None = None, head_valid: np.ndarray | None = None,
               sellion: np.ndarray | None = None,
               live: np.ndarray | None = None) -> KinematicsFrame:
        """
        Solve one frame of a camera.

        ``ids (P,)`` and ``xyz (P, 308, 3)`` camera-frame metres (NaN unknown) are the People's
        ``ids`` and ``xyz`` (pass None when not ``xyz_metric``); ``head (P, 3, 3)``,
        ``head_valid (P,)`` and ``sellion (P, 3)`` the :class:`~.faces.Faces` ``rotation``,
        ``pose_valid`` and ``position`` (optional: without them the head joints hold); ``live``
        the ids of every live track (``People.tracks``): others are dropped.
        """
        cfg = self.config
        self._forget(stamp, live)
        ids = np.asarray(ids, np.int64).reshape(-1)
        if xyz is None or not len(ids):
            return _empty()
        xyz = np.asarray(xyz)
        rot, ok = torso_axes(xyz)
        ok &= ids >= 0
        rows = ok.nonzero()[0]
        if not len(rows):
            return _empty()
        R = rot.take(rows, 0)
        pts = xyz.take(rows, 0).take(_index(), 1).astype(np.float64, copy=False)
        origin = (pts[:, _K['left_hip']] + pts[:, _K['right_hip']]) / 2
        local = (pts - origin[:, None]) @ R  # R^T (p - o)
        head_b = None
        hv = np.zeros(len(rows), bool)
        have_head = head is not None and head_valid is not None and sellion is not None
        if have_head:
            hv = np.asarray(head_valid, bool).take(rows)
            head_b = R.swapaxes(-1, -2) @ np.asarray(head, np.float64).take(rows, 0)
        tids = ids[rows].tolist()
        new = [i for i in tids if i not in self._row]
        if new:
            self._row.update({i: len(self._state) + k for k, i in enumerate(new)})
            self._state = np.concatenate([self._state, np.tile(_NEW_TRACK, (len(new), 1))])
        slots = np.array([self._row[i] for i in tids], np.int64)
        state = self._state.take(slots, 0)  # (B, 42)
        lengths, new_urdf = state[:, _LENGTHS], []
        calibrated = np.isfinite(lengths[:, 0])
        if not all_of(calibrated):  # still calibrating: this frame's lengths
            sell_b = None
            if have_head:
                sell_b = np.einsum('bji,bj->bi', R,
                                   np.asarray(sellion, np.float64)[rows] - origin)
                sell_b[~hv] = np.nan
            measured = measure_lengths(local, head_b, sell_b)
            for b in np.flatnonzero(~calibrated):
                samples = self._samples.setdefault(tids[b], [])
                if np.isfinite(measured[b]).any():
                    samples.append(measured[b])
                lengths[b], calibrated[b] = _estimate(samples, cfg)
                if calibrated[b]:
                    self._state[slots[b], _LENGTHS] = lengths[b]
                    del self._samples[tids[b]]
                    new_urdf.append(tids[b])

        prev, last = state[:, _ANGLES], state[:, _SIDES].reshape(-1, 2, 3)
        angles, solved, sides = _solve(local, head_b, hv, prev, last)
        if not all_of(solved):  # held: the last angles (a new track: 0)
            angles = np.where(solved, angles, np.where(np.isfinite(prev), prev, 0.0))
        out = clamp(angles, LOWER, UPPER)
        dt = stamp - state[:, _STAMP]
        moved = dt > 0
        pos, vel = state[:, _POS], state[:, _VEL]
        # the two filters' gains (a time constant of 0: not filtered)
        gain = 1.0 - np.exp(-dt[:, None] / np.array([cfg.smoothing or 1.0,
                                                     cfg.velocity_smoothing or 1.0]))
        if cfg.smoothing > 0:  # between two angles within the limits
            a = gain[:, :1]
            out = np.where((moved & np.isfinite(prev[:, 0]))[:, None], prev + a * (out - prev),
                           out)
        raw = (origin - pos) / np.where(moved, dt, np.inf)[:, None]  # (used where moved)
        a = gain[:, 1:] if cfg.velocity_smoothing else 1
        vel = np.where((moved & np.isfinite(pos[:, 0]))[:, None], vel + a * (raw - vel), vel)
        velocity = (vel[:, None, :] @ R)[:, 0]  # R^T v
        self._state[slots, :_LENGTHS.start] = np.concatenate(
            [out, sides.reshape(-1, 6), np.full((len(rows), 1), float(stamp)), origin, vel], 1)
        local = joint_transforms(lengths, out)
        return KinematicsFrame(ids[rows], rows, origin, matrix_to_quat(R), R, velocity, out,
                               solved, lengths, calibrated, local, new_urdf)

    def _forget(self, stamp: float, live: np.ndarray | None) -> None:
        keep = stamp - self._state[:, _STAMP] <= self.config.forget
        if live is not None:
            alive = set(np.asarray(live).reshape(-1).tolist())
            if not self._row.keys() <= alive:
                keep &= np.array([i in alive for i in self._row], bool).reshape(-1)
        if all_of(keep):
            return
        ids = list(self._row)
        rows = np.flatnonzero(keep)
        self._row = {ids[r]: k for k, r in enumerate(rows)}
        self._state = self._state[rows]
        self._samples = {i: v for i, v in self._samples.items() if i in self._row}


def _empty() -> KinematicsFrame:
    z = np.zeros
    return KinematicsFrame(z(0, np.int64), z(0, np.int64), z((0, 3)), z((0, 4)), z((0, 3, 3)),
                           z((0, 3)), z((0, 20)), z((0, 20), bool), z((0, 9)), z(0, bool),
                           z((0, len(LINK_NAMES) - 1, 4, 4)), [])


#: Keypoints (root, middle, end) of the left and right arms, then legs.
_LIMBS = np.array([[_K[f'{s}_{n}'] for n in names] for names in
                   (('shoulder', 'elbow', 'wrist'), ('hip', 'knee', 'ankle'))
                   for s in ('left', 'right')])
_TOES = np.array([[_K[f'{s}_big_toe'], _K[f'{s}_small_toe']] for s in ('left', 'right')])
_MIDDLE = np.array([_J['l_elbow'], _J['r_elbow'], _J['l_knee'], _J['r_knee']])
#: Chains: left and right arm, left and right leg, head; their joints, signs, limits.
_COLS = np.array([_ARM['l'], _ARM['r'], _LEG['l'], _LEG['r'], _HEAD])
_SIGN5 = np.stack([_SIGNS['arm_l'], _SIGNS['arm_r'], _SIGNS['leg_l'], _SIGNS['leg_r'],
                   _SIGNS['head']])[:, None]  # (5, 1, 3)
_LO, _HI = LOWER[_COLS], UPPER[_COLS]
_BEND_SIGN = np.array([1.0, 1, -1, -1])[:, None]  # legs: the shin bends to -x
_FWD = np.array([1.0, 0, 0])
_ROLL = np.array([1.0, -1.0])
_ONES9, _EYE3 = np.ones(9), np.eye(3)
#: Joint angles from the chains' (15), the elbows' and knees' (4), the waist's
_ORDER = np.argsort(np.r_[_COLS.ravel(), _MIDDLE, _J['waist']])
#: Whether each joint angle was solved, from the limbs' (4), the head's and True (the waist)
_SOLVED = np.r_[np.arange(4).repeat(3), [4] * 3, np.arange(4), 5].take(_ORDER)
_BEND_SIGNS = _BEND_SIGN[:, 0]


def _solve(local: np.ndarray, head: np.ndarray | None, head_valid: np.ndarray,
           prev: np.ndarray, last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Joint angles ``(B, 20)``, which were solved ``(B, 20)``, each arm's bend ``(B, 2, 3)``.

    Angles not solved are any value (NaN included). ``prev (B, 20)``: the track's last angles
    (NaN: a new track); ``last (B, 2, 3)``: each upper arm's last bend direction (NaN: none).
    """
    B = len(local)
    has_prev = np.isfinite(prev[:, 0])  # a track's angles are all finite or all NaN
    last = np.where(np.isfinite(last), last, _FWD)  # (B, 2, 3)
    pts = local.take(_LIMBS, 1)  # (B, 4, 3, 3): arms then legs, both sides at once
    uf = unit(pts[:, :, 1:] - pts[:, :, :2])  # (B, 4, 2, 3): the upper and lower segments
    u, f = uf[:, :, 0], uf[:, :, 1]
    toes = local.take(_TOES, 1)
    toes = (toes[:, :, 0] + toes[:, :, 1]) / 2 - pts[:, 2:, 2]
    foot = np.where(np.isfinite(toes), toes, _FWD)
    # the bend: the lower segment off the upper one's line; while nearly straight, the fallback
    # off it too (the arm's last bend, the leg's foot)
    g = np.concatenate([f[:, :, None], np.concatenate([last, -foot], 1)[:, :, None]], 2)
    gu = dot(g, u[:, :, None])  # (B, 4, 2, 1): its first is u . f
    g = g - gu * u[:, :, None]
    n = np.sqrt(dot(g, g))  # (B, 4, 2, 1)
    w = 0.1 * clamp(1 - n[:, :, 0] / 0.1, 0, 1)
    bend = g[:, :, 0] + w * (g[:, :, 1] / np.maximum(n[:, :, 1], 1e-9))
    # arms: R = Rz(-r y) Rx(r p) Rz(r roll): the upper arm along -z, the elbow bends to +x;
    # legs: R = Rz(-y) Rx(r p) Ry(-flex): the thigh along -z, the shin bends to -x. Each
    # limb's frame, columns: the bend side s (already across the aim), a x s, the aim a = -u
    a = -u
    s_ = unit(_BEND_SIGN * bend)
    m = np.empty((B, 5, 3, 3))  # the four limbs' frames, then the head's
    m[:, :4, :, 0], m[:, :4, :, 1], m[:, :4, :, 2] = s_, cross(a, s_), a
    m[:, 4] = _EYE3 if head is None else head
    ok = np.isfinite(m.reshape(B, 5, 9)[:, :4] @ _ONES9)  # (B, 4): the frame is finite
    m = np.where(np.isnan(m), 0.0, m)
    # head: R = Rx(roll) Rz(yaw) Ry(-pitch), in the torso (= body) frame
    cand = _euler(m)
    p = np.where(has_prev[:, None, None], prev.take(_COLS, 1), 0.0)  # (B, 5, 3)
    th = _choose(cand * _SIGN5, _LO, _HI, p)  # (B, 5, 3)
    if any_of(np.abs(np.sin(th[:, :2, 1])) < 0.1):  # an arm near straight down
        ref = np.where(has_prev[:, None], p[:, :2, 0], th[:, :2, 0])  # new track: as measured
        th[:, :2] = _into_range(_unsingular(m[:, :2], th[:, :2], ref, _ROLL), _LO[:2], _HI[:2])
    sides = np.where(ok[:, :2, None], s_[:, :2], last)  # (the arms' bend sign is +1)
    bent = np.arccos(clamp(gu[:, :, 0, 0], -1, 1))
    # the body frame follows the torso: the waist is always 0, and solved
    angles = np.concatenate([th.reshape(B, 15), bent * _BEND_SIGNS, np.zeros((B, 1))], 1)
    solved = np.concatenate([ok, head_valid[:, None], np.ones((B, 1), bool)], 1)
    return angles.take(_ORDER, 1), solved.take(_SOLVED, 1), sides


def _unsingular(m: np.ndarray, th: np.ndarray, yaw_ref: np.ndarray,
                r: np.ndarray) -> np.ndarray:
    """
    Arm angles ``(..., 3)`` near the arm-down singularity: the yaw is held towards ``yaw_ref``.

    With the arm nearly straight down, yaw and roll turn about the same axis and only their
    difference is measured; the yaw blends to its reference and the rest is solved exactly.
    ``m (..., 3, 3)``; ``r (...,)``: +1 left arm, -1 right arm (broadcast).
    """
    near = np.abs(np.sin(th[..., 1])) < 0.1
    w = np.abs(np.sin(th[near, 1])) / 0.1
    yaw = yaw_ref[near] + w * wrap(th[near, 0] - yaw_ref[near])
    r = np.broadcast_to(r, near.shape)[near]
    c, s = np.cos(r * yaw), np.sin(r * yaw)
    rz = np.zeros((len(yaw), 3, 3))
    rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = c, -s, s, c, 1
    M = rz @ m[near]  # = Rx(r p) Rz(r roll)
    out = th.copy()
    out[near, 0] = yaw
    out[near, 1] = r * np.arctan2(-M[:, 1, 2], M[:, 2, 2])
    out[near, 2] = r * np.arctan2(-M[:, 0, 1], M[:, 0, 0])
    return out


__all__ = ['BodyKinematics', 'KinematicsConfig', 'KinematicsFrame', 'LENGTH_NAMES',
           'measure_lengths']
