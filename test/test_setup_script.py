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
``scripts/setup.sh`` on this venv: which ROS kit steps it runs, with and without a sourced ROS.

The kit (``SAPIENS_ROS_TOOLS``) is replaced by one whose scripts only record how they were called;
everything else is the real script on the venv that runs these tests (already set up, so its pip
steps find everything installed).
"""

import os
from pathlib import Path
import subprocess
import sys

import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)

pytestmark = pytest.mark.skipif(
    sys.prefix == sys.base_prefix or not (VENV / 'bin' / 'python').is_file(),
    reason='setup.sh works on a venv: run the tests from one (bash scripts/setup.sh)')


def _kit(tmp_path: Path) -> tuple[Path, Path]:
    kit, log = tmp_path / 'kit', tmp_path / 'calls.log'
    kit.mkdir()
    for name in ('install.sh', 'install-msgs.sh', 'install-tf2.sh'):
        (kit / name).write_text(f'echo "{name} $*" >> {log}\n')
    return kit, log


def _setup(kit: Path, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    """Run setup.sh; return its result and pip's log of every pip call it made."""
    pip_log = kit / 'pip.log'
    full = {k: v for k, v in os.environ.items() if k not in ('ROS_DISTRO', 'PYTHON')}
    full.update(VENV=str(VENV), SAPIENS_ROS_TOOLS=str(kit), PYTHON=sys.executable,
                PIP_LOG=str(pip_log), **env)
    run = subprocess.run(['bash', str(ROOT / 'scripts' / 'setup.sh')], env=full,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return run, pip_log.read_text()


def test_without_ros_setup_builds_the_message_packages_and_tf2_with_the_kit(tmp_path):
    kit, log = _kit(tmp_path)
    run, pip_log = _setup(kit)
    assert log.is_file(), run.stdout + run.stderr
    calls = log.read_text().splitlines()
    assert f'install-msgs.sh {VENV}' in calls and f'install-tf2.sh {VENV}' in calls, calls
    assert calls.index(f'install-msgs.sh {VENV}') < calls.index(f'install-tf2.sh {VENV}')
    assert 'ros-jazzy-rclpy' in pip_log  # the ROS core as wheels
    assert 'setup: ready' in run.stdout


def test_with_a_sourced_ros_setup_installs_no_ros_wheel(tmp_path):
    """ROS_DISTRO set and rclpy importable: the kit is never run, no ros-* wheel installed."""
    pytest.importorskip('rclpy')
    kit, log = _kit(tmp_path)
    run, pip_log = _setup(kit, ROS_DISTRO='jazzy')
    assert 'found a sourced ROS 2 jazzy' in run.stdout, run.stdout
    assert not log.exists(), log.read_text()
    assert 'transformers' in pip_log and 'ros-jazzy' not in pip_log
