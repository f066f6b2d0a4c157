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
End a local Ray's processes when the driver that started it dies, even by SIGKILL.

Ray's GCS and raylet share the driver's fate, but the raylet's ``DashboardAgent`` and
``RuntimeEnvAgent`` do not: after a ``kill -9`` of the driver each tries to report the raylet's
death to the dead GCS and lingers about a minute (85 MB each). This small process, started in
its own session before ``ray.init``, notes the driver's descendants every half second and kills
those still running once the driver is gone. Runs as ``python -m
sapiens_ros.replay.ray_watchdog DRIVER_PID``; it needs ``psutil`` (a dependency of Ray).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

#: Seconds between two looks at the driver's descendants.
POLL_S = 0.5


def start_watchdog() -> subprocess.Popen | None:
    """Start the watchdog of this process (None when psutil is missing: nothing to watch with)."""
    try:
        import psutil  # noqa: F401 - the watchdog's only dependency
    except ImportError:
        return None
    return subprocess.Popen(
        [sys.executable, '-m', 'sapiens_ros.replay.ray_watchdog', str(os.getpid())],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)  # outlives a kill of the driver's process group


def watch(driver_pid: int) -> int:
    """Note the driver's descendants until it exits; then kill those still running."""
    import psutil

    try:
        driver = psutil.Process(driver_pid)
    except psutil.Error:
        return 0
    me = os.getpid()
    seen: dict[int, psutil.Process] = {}
    while True:
        try:
            if driver.status() == psutil.STATUS_ZOMBIE:
                break
            for child in driver.children(recursive=True):
                if child.pid != me:
                    seen.setdefault(child.pid, child)
        except psutil.Error:  # the driver is gone
            break
        time.sleep(POLL_S)
    for proc in seen.values():
        try:
            if proc.is_running():  # the same process (psutil checks its start time)
                proc.kill()
        except psutil.Error:
            continue
    return 0


if __name__ == '__main__':
    sys.exit(watch(int(sys.argv[1])))
