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

from pathlib import Path
import threading

import pytest

pytest.importorskip('rcl_interfaces.msg')

from sapiens_ros.ros.node_params import (PARAM_BY_NAME, PARAMS, parse_cameras,  # noqa: E402
                                         parse_outputs, validate)
from sapiens_ros.ros.runtime import FrameSlots, InputRate, NodeStats, Throttle  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_every_parameter_has_a_descriptor():
    for spec in PARAMS:
        desc = spec.descriptor()
        assert desc.description and desc.name == spec.name
    for name in ('tasks', 'cameras', 'model_size', 'model_dir', 'models.pose', 'backend',
                 'device', 'dtype', 'input_size', 'input_sizes'):
        desc = PARAM_BY_NAME[name].descriptor()  # changeable while unconfigured, as in nav2
        assert not desc.read_only and 'applies at configure' in desc.description, name
    assert 'applies at activate' in PARAM_BY_NAME['compressed'].descriptor().description
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
    assert validate('input_size', '192x256') is None
    assert 'ambiguous' in validate('input_size', '256x192')
    assert 'width 192 x height 256' in validate('input_size', [256, 192])
    assert validate('input_sizes', 'seg=384x512,pointmap=656x912') is None
    assert 'TASK=WIDTHxHEIGHT' in validate('input_sizes', 'seg:384x512')
    assert parse_cameras('front, /rear/,left/wide') == ('front', 'rear', 'left/wide')
    assert parse_cameras(['a', 'b']) == ('a', 'b')
    assert 'more than once' in validate('cameras', 'a,b,a')
    assert 'relative ROS name' in validate('cameras', '1cam')
    assert 'relative ROS name' in validate('cameras', 'rates')


def test_frame_slots_keep_the_newest_per_camera():
    slots = FrameSlots()
    for i in range(5):
        slots.put('a', i)
    slots.put('b', 'b0')
    assert slots.take(0.0) == [('a', 4), ('b', 'b0')]
    assert slots.dropped == {'a': 4}  # only the camera whose frames were replaced
    assert slots.take(0.01) == []
    got = []
    thread = threading.Thread(target=lambda: got.append(slots.take(2.0)))
    thread.start()
    slots.put('b', 'late')
    thread.join()
    assert got == [[('b', 'late')]] and slots.dropped == {'a': 4}


def test_frame_slots_update_a_waiting_frame_only():
    slots = FrameSlots()
    slots.put('a', {'sides': {}})
    assert slots.update('a', lambda item: item['sides'].setdefault('det', 1) == 1)
    assert slots.take(0.0) == [('a', {'sides': {'det': 1}})]
    assert not slots.update('a', lambda item: True)  # taken: nothing waits


def test_frame_slots_serve_cameras_round_robin():
    """With a limit per step, every camera gets its share: none waits more than one round."""
    slots = FrameSlots()
    served = []
    for _ in range(6):
        for camera in 'abc':
            slots.put(camera, camera)
        served.append(''.join(k for k, _ in slots.take(0.0, limit=2)))
    assert served == ['ab', 'ca', 'bc', 'ab', 'ca', 'bc']


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
    stats.on_bad('camera_info', 'stale', skipped=False)  # the frame was still processed
    stats.on_lost(3)
    snap = stats.snapshot(dropped=2)
    assert snap['received'] == 4 and snap['processed'] == 2 and snap['dropped'] == 2
    assert snap['latency_p50_ms'] == pytest.approx(20.0)
    assert snap['bad_inputs'] == {'image': 1, 'camera_info': 1}
    assert snap['stage_ms'] == {'total': 6.0} and snap['lost'] == 3
    assert snap['last_failed'] == 'image' and snap['last_error'] == 'camera_info: stale'
    assert snap['failed_rate_hz'] > 0 and snap['degraded_rate_hz'] > 0
    again = stats.snapshot(dropped=2)  # rates since the last snapshot
    assert again['failed_rate_hz'] == again['degraded_rate_hz'] == again['lost_rate_hz'] == 0


def test_input_rate_judges_silence_slowness_and_staleness():
    rate = InputRate(now=0.0)
    assert rate.judge(5.0, now=0.5) == ('ok', '')  # grace for the first frame
    assert rate.judge(5.0, now=1.5) == ('slow', 'no frame yet (1.5 s)')
    assert rate.judge(5.0, now=6.0)[0] == 'stale'
    for k in range(100):  # 10 Hz for 10 s
        rate.on_arrival(now=1.0 + k / 10)
    assert rate.judge(5.0, now=11.0) == ('ok', '')
    for k in range(20):  # then 4 Hz: under half the usual 10 Hz within 2 s
        rate.on_arrival(now=11.0 + k / 4)
    state, reason = rate.judge(5.0, now=15.8)
    assert state == 'slow' and reason == 'input at 4.0 Hz, under half its usual 10.0 Hz'
    assert rate.judge(5.0, now=17.75) == ('slow', 'no frame for 2.0 s (usually 10.0 Hz)')
    assert rate.judge(5.0, now=21.0)[0] == 'stale'
    assert rate.judge(0.0, now=1000.0)[0] == 'slow'  # stale_after 0: never stale
    for k in range(400):  # 4 Hz for long: that is its usual rate now
        rate.on_arrival(now=1000.0 + k / 4)
    assert rate.judge(5.0, now=1100.0) == ('ok', '')


def test_the_launch_side_imports_neither_torch_nor_rclpy(tmp_path):
    """``ros2 launch`` reads the parameter table, sizes, rates and the params file light."""
    import subprocess
    import sys

    code = ('import sys\n'
            'from sapiens_ros.ros.launch_support import (check_params_file, '
            'parameter_arguments, parameter_overrides)\n'
            'parameter_arguments()\n'  # the launch arguments, from the parameter table
            "parameter_overrides({'input_size': '192x256', 'rates': 'seg=5', 'depth': 'd'})\n"
            "check_params_file('config/perception.yaml')\n"
            "print(sorted(m for m in ('torch', 'rclpy', 'transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.strip() == '[]', out
