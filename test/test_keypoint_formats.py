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

"""Keypoint formats: every point is the 308 point of the same name (neck: mid-shoulders)."""

from importlib import resources
import json

import numpy as np
import pytest
from sapiens_ros.core.models.keypoint_formats import keypoint_format, KEYPOINT_FORMATS
from sapiens_ros.core.models.metadata import keypoint_info

NAMES = keypoint_info().names


def _random_308(seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 500, (3, 308, 3)).astype(np.float32), \
        rng.uniform(0, 1, (3, 308)).astype(np.float32)


@pytest.mark.parametrize('name', ['coco17', 'openpose18', 'rep155'])
def test_points_equal_the_308_points_of_the_same_name(name):
    fmt = keypoint_format(name)
    xyz, scores = _random_308()
    out, out_scores = fmt.points(xyz), fmt.scores(scores)
    assert out.shape == (3, len(fmt), 3) and out_scores.shape == (3, len(fmt))
    for i, n in enumerate(fmt.names):
        if n == 'neck':  # OpenPose / ROS4HRI: the mid-point of the shoulders, not 308's neck
            ls, rs = NAMES.index('left_shoulder'), NAMES.index('right_shoulder')
            np.testing.assert_allclose(out[:, i], (xyz[:, ls] + xyz[:, rs]) / 2, rtol=1e-6)
            np.testing.assert_array_equal(out_scores[:, i],
                                          np.minimum(scores[:, ls], scores[:, rs]))
        else:
            np.testing.assert_array_equal(out[:, i], xyz[:, NAMES.index(n)])
            np.testing.assert_array_equal(out_scores[:, i], scores[:, NAMES.index(n)])


def test_coco17_is_the_shipped_coco_map_and_the_coco_skeleton():
    fmt = keypoint_format('coco17')
    raw = json.loads(resources.files('sapiens_ros').joinpath('data', 'keypoints308.json')
                     .read_text())
    assert fmt.sources[:, 0].tolist() == raw['coco17_to_308'] == fmt.sources[:, 1].tolist()
    links = {frozenset((fmt.names[a], fmt.names[b])) for a, b in fmt.skeleton.tolist()}
    assert len(links) == 19  # the COCO person skeleton, taken from the 308 one
    assert frozenset(('left_elbow', 'left_wrist')) in links
    assert frozenset(('left_hip', 'right_hip')) in links


def test_flip_pairs_swap_left_and_right_names():
    for name in ('coco17', 'openpose18'):
        fmt = keypoint_format(name)
        pairs = [(fmt.names[a], fmt.names[b]) for a, b in fmt.flip_pairs.tolist()]
        assert len(pairs) == 8  # eyes, ears, shoulders, elbows, wrists, hips, knees, ankles
        for a, b in pairs:
            assert a.replace('left', 'right') == b or b.replace('left', 'right') == a


def test_openpose18_order_and_limbs():
    fmt = keypoint_format('openpose18')
    assert fmt.names[:2] == ('nose', 'neck') and fmt.names[-1] == 'left_ear'
    assert len(fmt.skeleton) == 17 and fmt.skeleton.max() < 18


def test_nan_sources_and_identity():
    xyz, scores = _random_308()
    xyz[0, NAMES.index('left_shoulder')] = np.nan
    out = keypoint_format('openpose18').points(xyz)
    assert np.isnan(out[0, 1]).all() and np.isfinite(out[1:, 1]).all()  # neck needs both
    same = keypoint_format('sapiens308')
    assert same.points(xyz) is xyz and same.scores(scores) is scores and len(same) == 308
    assert json.loads(same.to_json())['names'] == list(NAMES)


def test_unknown_formats_are_refused():
    assert KEYPOINT_FORMATS == ('sapiens308', 'coco17', 'openpose18')
    with pytest.raises(ValueError, match='keypoint_format must be one of'):
        keypoint_format('wholebody133')
    # why there is no COCO-WholeBody: its 68-point face needs the jaw line, which 308 lacks
    assert not any('jaw' in n or 'contour' in n or 'cheek' in n for n in NAMES)
