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

"""Node building blocks without a graph: parameter checks, latest-frame slot, throttle, stats."""

import threading

import pytest

pytest.importorskip('rcl_interfaces.msg')

from sapiens_ros.ros.node_params import PARAM_BY_NAME, PARAMS, parse_outputs, validate  # noqa
from sapiens_ros.ros.runtime import LatestSlot, NodeStats, Throttle  # noqa: E402


def test_every_parameter_has_a_descriptor():
    for spec in PARAMS:
        desc = spec.descriptor()
        assert desc.description and desc.name == spec.name
    for name in ('model_size', 'model_dir', 'models.pose', 'backend', 'device', 'dtype',
                 'input_size'):
        assert PARAM_BY_NAME[name].descriptor().read_only, name
    assert PARAM_BY_NAME['score_threshold'].descriptor().floating_point_range[0].to_value == 1.0
    assert PARAM_BY_NAME['output_depth'].descriptor().integer_range[0].to_value == 5


def test_validate():
    assert validate('score_threshold', 0.5) is None
    assert 'in [0.0, 1.0]' in validate('score_threshold', 2.0)
    assert 'one of' in validate('box_source', 'nope')
    assert 'needs the seg head' in validate('box_source', 'seg', ('pose',))
    assert validate('box_source', 'seg', ('pose', 'seg')) is None
    assert 'unknown outputs' in validate('force_outputs', 'pose/keypoints, foo')
    assert parse_outputs(' pose/keypoints,/seg/labels ') == {'pose/keypoints', 'seg/labels'}


def test_latest_slot_keeps_only_the_newest():
    slot = LatestSlot()
    for i in range(5):
        slot.put(i)
    assert slot.take(0.0) == 4 and slot.dropped == 4
    assert slot.take(0.01) is None
    got = []
    thread = threading.Thread(target=lambda: got.append(slot.take(2.0)))
    thread.start()
    slot.put('late')
    thread.join()
    assert got == ['late'] and slot.dropped == 4


def test_throttle_counts_suppressed():
    throttle = Throttle(60.0)
    assert throttle.check('image') == 0
    assert throttle.check('image') is None and throttle.check('image') is None
    assert throttle.check('camera_info') == 0  # kinds are throttled separately
    throttle.period = 0.0
    assert throttle.check('image') == 2


def test_stats_snapshot():
    stats = NodeStats()
    for _ in range(4):
        stats.on_received()
    stats.on_processed(10.0, {'total': 5.0}, ('seg',))
    stats.on_processed(30.0, {'total': 6.0}, ('seg',))
    stats.on_bad('image')
    snap = stats.snapshot(dropped=2)
    assert snap['received'] == 4 and snap['processed'] == 2 and snap['dropped'] == 2
    assert snap['latency_p50_ms'] == pytest.approx(20.0)
    assert snap['bad_inputs'] == {'image': 1} and snap['stage_ms'] == {'total': 6.0}
