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

"""Start ROS programs as a user would (own process group) and stop them as a terminal would."""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import threading
import time

from ros_fixtures import session_domain_id

ROOT = Path(__file__).resolve().parents[1]

#: How a user (or a supervisor) stops a program.
STOPS = {
    # Ctrl-C in a terminal signals the whole foreground process group; then a second Ctrl-C.
    'ctrl-c twice': ('group', [signal.SIGINT, signal.SIGINT]),
    'ctrl-c': ('group', [signal.SIGINT]),
    'sigterm': ('leader', [signal.SIGTERM]),  # systemd, docker stop, timeout
    'sigint': ('leader', [signal.SIGINT]),  # kill -INT to one process
}


#: Exec ``argv[1:]`` with SIGINT at its default, as a terminal starts a program. A background job
#: of a non-interactive shell (e.g. a CI script started with ``&``) inherits SIGINT *ignored*,
#: and Python and ``ros2 launch`` keep ignoring it: Ctrl-C would then test nothing.
_TERMINAL = ('import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); '
             'os.execvp(sys.argv[1], sys.argv[1:])')


def ros_env(**extra: str) -> dict:
    """Environment of a child: this session's domain, the checkout importable, unbuffered."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(session_domain_id()), PYTHONUNBUFFERED='1',
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]),
               OMP_NUM_THREADS='1')
    env.update(extra)
    return env


class Proc:
    """A child in its own session (process group), its output collected line by line."""

    def __init__(self, cmd: list[str], env: dict | None = None) -> None:
        self.cmd = cmd
        self.popen = subprocess.Popen([sys.executable, '-c', _TERMINAL, *cmd],
                                      env=env or ros_env(), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True,
                                      start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.popen.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        """Everything printed so far (stdout and stderr)."""
        return ''.join(self.lines)

    def wait_for(self, text: str, timeout: float) -> bool:
        """Wait until ``text`` was printed (False on timeout or if the process ended)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.popen.poll() is None:
            if text in self.output:
                return True
            time.sleep(0.05)
        return text in self.output

    def family(self) -> list:
        """Return the process and all its descendants (psutil), e.g. what ros2 launch started."""
        import psutil

        try:
            leader = psutil.Process(self.popen.pid)
            return [leader] + leader.children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self, how: str, gap: float = 0.3, timeout: float = 30.0) -> tuple:
        """
        Stop the program as ``how`` (a key of :data:`STOPS`) says.

        Return ``(returncode, seconds until it exited, processes of its family still alive)``.
        """
        import psutil

        family = self.family()
        target, signals = STOPS[how]
        t0 = time.monotonic()
        for i, sig in enumerate(signals):
            if i:
                time.sleep(gap)
            try:
                if target == 'group':
                    os.killpg(self.popen.pid, sig)
                else:
                    self.popen.send_signal(sig)
            except ProcessLookupError:
                pass
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
        seconds = time.monotonic() - t0
        end = time.monotonic() + 5.0  # children of a launch may exit just after it
        left = family[1:]
        while left and time.monotonic() < end:
            left = [p for p in left if _alive(p, psutil)]
            time.sleep(0.1)
        self._reader.join(5.0)
        return rc, seconds, left

    def kill(self) -> None:
        """Kill whatever is left of the group (test cleanup)."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            pass


def _alive(proc, psutil) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def python_module(module: str, *args: str) -> list[str]:
    """Command running ``python -m module args`` with this interpreter."""
    return [sys.executable, '-m', module, *args]
