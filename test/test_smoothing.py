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

"""One-Euro filter: less jitter on a still point, little lag on a moving one, per track."""

import numpy as np
from sapiens_ros.core.people.smoothing import OneEuroConfig, OneEuroFilter


def test_still_point_jitter_is_reduced():
    rng = np.random.default_rng(0)
    f = OneEuroFilter(OneEuroConfig(min_cutoff=1.0, beta=0.02))
    truth = np.full((1, 308, 2), 200.0)
    raw, out = [], []
    for i in range(120):
        noisy = truth + rng.normal(0, 2.0, truth.shape)
        raw.append(noisy)
        out.append(f(np.array([1]), noisy, i / 30))
    raw_err = np.abs(np.array(raw[30:]) - truth).mean()
    out_err = np.abs(np.array(out[30:]) - truth).mean()
    assert out_err < 0.5 * raw_err


def test_moving_point_lags_little_and_tracks_are_independent():
    f = OneEuroFilter(OneEuroConfig(min_cutoff=1.0, beta=0.05))
    speed = 300.0  # px/s
    for i in range(60):
        t = i / 30
        values = np.stack([np.full((308, 2), 100 + speed * t), np.full((308, 2), 50.0)])
        out = f(np.array([3, 7]), values, t)
    lag_px = 100 + speed * t - out[0, 0, 0]
    assert 0 < lag_px < 0.1 * speed  # under 0.1 s of lag at speed
    assert np.allclose(out[1], 50.0)  # the still track is untouched by the moving one


def test_new_untracked_and_missing_values():
    f = OneEuroFilter()
    first = f(np.array([1]), np.ones((1, 4, 3)), 0.0)
    assert np.array_equal(first, np.ones((1, 4, 3)))  # a new track passes through
    values = np.full((2, 4, 3), 2.0)
    values[0, 1] = np.nan
    out = f(np.array([1, -1]), values, 0.1)
    assert np.isnan(out[0, 1]).all() and np.array_equal(out[1], values[1])  # untracked: raw
    assert ((out[0, 0] > 1) & (out[0, 0] < 2)).all()
    again = f(np.array([1]), np.full((1, 4, 3), 2.0), 0.2)
    assert np.isfinite(again).all()
    assert len(f) == 1
    f(np.array([2]), np.ones((1, 4, 3)), 10.0)  # track 1 unseen for > forget: dropped
    assert len(f) == 1


def test_time_going_back_restarts_instead_of_exploding():
    f = OneEuroFilter()
    f(np.array([1]), np.zeros((1, 2, 2)), 1.0)
    out = f(np.array([1]), np.ones((1, 2, 2)), 0.5)
    assert np.array_equal(out, np.ones((1, 2, 2)))
