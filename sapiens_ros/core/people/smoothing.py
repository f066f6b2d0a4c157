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

"""One-Euro filtering of tracked keypoints (or XYZ), vectorised over tracks and keypoints."""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np

from .geometry import all_of, any_of


@dataclass
class OneEuroConfig:
    """
    Filter parameters (Casiez et al., CHI 2012).

    ``min_cutoff`` (Hz) sets the smoothing of a still point; ``beta`` (per unit of speed) how
    fast the cutoff rises with speed, i.e. how much lag is traded back for jitter when the point
    moves; ``d_cutoff`` (Hz) filters the speed estimate. ``forget`` (s): state of a track unseen
    this long is dropped. Speeds are in input units per second (pixels or metres).
    """

    min_cutoff: float = 1.0
    beta: float = 0.02
    d_cutoff: float = 1.0
    forget: float = 2.0


def _alpha(cutoff: np.ndarray, dt: np.ndarray) -> np.ndarray:
    tau = 1.0 / (2.0 * math.pi * cutoff)
    return 1.0 / (1.0 + tau / dt)


class OneEuroFilter:
    """
    One-Euro filters keyed by track id over arrays ``(P, K, D)`` (D = 2 pixels or 3 metres).

    ``__call__(ids, values, stamp)`` returns the filtered values. The cutoff is per point (from
    its speed, the norm over D). A new id, a point that was not finite before, or a non-positive
    time step passes the value through and restarts that point's filter; non-finite inputs come
    out unchanged and leave the state as it was. Ids must be unique; negative ids (untracked
    detections) pass through unfiltered.
    """

    def __init__(self, config: OneEuroConfig | None = None) -> None:
        self.config = config or OneEuroConfig()
        self._rows: dict[int, int] = {}
        self._x = np.zeros((0, 0, 0))
        self._dx = np.zeros((0, 0, 0))
        self._t = np.zeros((0,))

    def reset(self) -> None:
        """Forget every track."""
        self.__init__(self.config)

    def __len__(self) -> int:
        return len(self._rows)

    def __call__(self, ids: np.ndarray, values: np.ndarray, stamp: float) -> np.ndarray:
        """Filter ``values (P, K, D)`` of tracks ``ids (P,)`` observed at ``stamp`` (s)."""
        cfg = self.config
        values = np.asarray(values, np.float64)
        ids = np.asarray(ids, np.int64).reshape(-1)
        if any_of(ids < 0):  # untracked rows (tracking.UNTRACKED) have no history: raw
            out = values.copy()
            keep = ids >= 0
            out[keep] = self(ids[keep], values[keep], stamp)
            return out
        if self._x.shape[1:] != values.shape[1:]:
            self.reset()
            self._x = np.zeros((0,) + values.shape[1:])
            self._dx = np.zeros((0,) + values.shape[1:])
        self._forget(stamp)
        new = [int(i) for i in ids if int(i) not in self._rows]
        if new:
            start = len(self._t)
            self._rows.update({i: start + j for j, i in enumerate(new)})
            pad = np.full((len(new),) + values.shape[1:], np.nan)
            self._x = np.concatenate([self._x, pad])
            self._dx = np.concatenate([self._dx, np.zeros_like(pad)])
            self._t = np.concatenate([self._t, np.full(len(new), -np.inf)])
        rows = np.array([self._rows[int(i)] for i in ids], np.int64)
        x_prev, dx_prev = self._x[rows], self._dx[rows]
        dt = (stamp - self._t[rows])[:, None, None]
        ok = np.isfinite(values).all(-1, keepdims=True)
        restart = ~np.isfinite(x_prev).all(-1, keepdims=True) | ~(dt > 0)
        dt_safe = np.where(np.isfinite(dt) & (dt > 0), dt, 1.0)
        dx = (values - x_prev) / dt_safe
        dx_hat = dx_prev + _alpha(cfg.d_cutoff, dt_safe) * (dx - dx_prev)
        cutoff = cfg.min_cutoff + cfg.beta * np.linalg.norm(dx_hat, axis=-1, keepdims=True)
        x_hat = x_prev + _alpha(cutoff, dt_safe) * (values - x_prev)
        x_hat = np.where(restart, values, x_hat)
        dx_hat = np.where(restart, 0.0, dx_hat)
        self._x[rows] = np.where(ok, x_hat, x_prev)
        self._dx[rows] = np.where(ok, dx_hat, dx_prev)
        self._t[rows] = stamp
        return np.where(ok, x_hat, values)

    def _forget(self, stamp: float) -> None:
        keep = stamp - self._t <= self.config.forget
        if all_of(keep):
            return
        ids = sorted(self._rows, key=self._rows.get)
        rows = np.flatnonzero(keep)
        self._rows = {ids[r]: j for j, r in enumerate(rows)}
        self._x, self._dx, self._t = self._x[rows], self._dx[rows], self._t[rows]


__all__ = ['OneEuroConfig', 'OneEuroFilter']
