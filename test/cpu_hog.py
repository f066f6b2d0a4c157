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
A bounded CPU hog: busy processes beside a test, as a loaded robot computer has.

    with CpuHog():            # 2 busy processes per core, for at most 120 s
        ...                   # stop times, latencies: they must hold under load

or, in a test module, ``from cpu_hog import cpu_hog  # noqa: F401`` and ask for the ``cpu_hog``
fixture. Each process spins in its own session (a Ctrl-C sent to a test's process group does not
reach it), at the test's priority, ends by itself after ``limit`` seconds, and is killed when the
block or the test ends.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_SPIN = ('import time, sys\n'
         'end = time.monotonic() + float(sys.argv[1])\n'
         'while time.monotonic() < end:\n'
         '    sum(range(1000))\n')


class CpuHog:
    """``procs`` busy processes (default: 2 per core), each ending by itself after ``limit`` s."""

    def __init__(self, procs: int | None = None, limit: float = 120.0) -> None:
        self.procs = procs if procs is not None else 2 * (os.cpu_count() or 1)
        self.limit = limit
        self._children: list[subprocess.Popen] = []

    def __enter__(self) -> CpuHog:
        for _ in range(self.procs):
            self._children.append(subprocess.Popen(
                [sys.executable, '-c', _SPIN, str(self.limit)], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        return self

    def running(self) -> int:
        """Return how many hog processes are still spinning."""
        return sum(child.poll() is None for child in self._children)

    def __exit__(self, *exc) -> None:
        for child in self._children:
            if child.poll() is None:
                child.kill()
        for child in self._children:
            child.wait()
        self._children.clear()


@pytest.fixture
def cpu_hog():
    """Run the test beside a :class:`CpuHog` (2 busy processes per core, at most 120 s)."""
    with CpuHog() as hog:
        yield hog
