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

"""The benchmarks that start ROS processes run on the caller's ROS domain, or the one asked for."""

import importlib.util
from pathlib import Path
import subprocess
import sys

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / 'benchmarks'


def _bench_node():
    spec = importlib.util.spec_from_file_location('bench_node', BENCHMARKS / 'bench_node.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize('env, argv, domain', [('42', [], 42), ('42', ['--domain', '9'], 9),
                                               (None, ['--domain', '11'], 11)])
def test_bench_node_honours_ros_domain_id_and_domain(monkeypatch, env, argv, domain):
    """On e159fec bench_node always picked 60 + pid % 40, whatever the caller had set."""
    if env is None:
        monkeypatch.delenv('ROS_DOMAIN_ID', raising=False)
    else:
        monkeypatch.setenv('ROS_DOMAIN_ID', env)
    assert _bench_node().build_parser().parse_args(argv).domain == domain


def test_bench_host_takes_the_same_default(monkeypatch):
    """bench_host's --domain also defaults to $ROS_DOMAIN_ID (its --help shows the default)."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / 'bench_host.py'), '--help'],
                          capture_output=True, text=True, timeout=300,
                          env={'ROS_DOMAIN_ID': '23', 'PATH': '/usr/bin:/bin'})
    assert done.returncode == 0, done.stderr
    assert 'now 23)' in ' '.join(done.stdout.split())
