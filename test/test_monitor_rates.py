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

"""The demo monitor's per-topic rates hold still when outputs are slower than its window."""

import time
import types

import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402, I100
from ros_fixtures import session_domain_id  # noqa: E402
from sapiens_ros.ros import monitor as monitor_module  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402


def _rates(text: str, suffix: str) -> list[float]:
    return [float(line.split()[1]) for line in text.splitlines()
            if line.strip().startswith(suffix)]


def test_slow_outputs_give_steady_rates_not_half_and_zero(monkeypatch, capsys):
    """
    seg/labels at 0.4 Hz, reported every 2 s (a slow CPU): 0.40 Hz in every report.

    On e159fec the reports flipped between 0.50 and 0.00 Hz (messages per 2 s window).
    The monitor node is real; its clock is simulated so 40 s pass in no time.
    """
    now = [1000.0]
    monkeypatch.setattr(monitor_module, 'time', types.SimpleNamespace(
        monotonic=lambda: now[0], strftime=time.strftime))
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=session_domain_id())
    try:
        node = monitor_module.Monitor(context=context, parameter_overrides=[
            Parameter('period', value=2.0), Parameter('tasks', value='seg')])
        capsys.readouterr()
        arrivals = [1000.0 + 2.5 * k for k in range(12)]  # 0.4 Hz
        for tick in range(1, 21):  # a report every 2 s
            until = 1000.0 + 2.0 * tick
            while arrivals and arrivals[0] <= until:
                now[0] = arrivals.pop(0)
                node._on_output('seg/labels', Image())
            now[0] = until
            node.report()
        rates = _rates(capsys.readouterr().out, 'seg/labels')
        assert len(rates) == 20
        assert all(abs(r - 0.40) < 0.011 for r in rates[1:13]), rates  # every report, 0.40
        assert rates[-1] == 0.0, rates  # silent for 12.5 s (five intervals): stopped
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
