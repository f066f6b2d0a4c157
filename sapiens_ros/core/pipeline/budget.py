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
Per-task rate budgets: run a head at most ``rate`` times a second, on average exactly that.

:func:`rate_error` is the one rule for what a rate may be; the node's parameters, the launch's
``rates:=`` and the CLI's ``--rates`` all ask it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
import math
from numbers import Real

#: Most runs per second a rate may ask for (a camera is far slower; a typo like 50000 is not).
MAX_RATE_HZ = 1000.0
#: A camera's own rate that means "the node's rate for this task" (``<camera>.rates.<task>``).
INHERIT_RATE = -1.0


def rate_error(value, name: str = 'rate', allow_inherit: bool = False) -> str | None:
    """
    Say why ``value`` is not a legal rate, or None.

    A rate is a number of Hz from 0 (every frame) to :data:`MAX_RATE_HZ`; with
    ``allow_inherit`` (a camera's own rate) :data:`INHERIT_RATE` too.
    """
    number = isinstance(value, Real) and not isinstance(value, bool)
    if number and (allow_inherit and value == INHERIT_RATE or 0 <= value <= MAX_RATE_HZ):
        return None
    inherit = f"{INHERIT_RATE:g} (the node's rate) or " if allow_inherit else ''
    return (f'{name} must be {inherit}>= 0 Hz (0: every frame) and <= {MAX_RATE_HZ:g} Hz, '
            f'got {value!r}')


def check_rate(value, name: str = 'rate', allow_inherit: bool = False) -> float:
    """Return ``value`` as a float rate (Hz); raise ValueError when :func:`rate_error` objects."""
    reason = rate_error(value, name, allow_inherit)
    if reason:
        raise ValueError(reason)
    return float(value)


class RateBudget:
    """
    When each task may run next, for one camera.

    A rate of 0 (or none) means every frame. Otherwise a task is due once a frame's stamp reaches
    its next due time, which then advances by one period from the due time (not from the frame),
    so the long-run rate is exactly ``rate`` whatever the frame timing. A task idle for over a
    period restarts its schedule (no burst to catch up), and a stamp that goes back (a bag loop)
    restarts every schedule.
    """

    def __init__(self, rates: Mapping[str, float] | None = None) -> None:
        self.rates: dict[str, float] = {}
        self._next: dict[str, float] = {}
        self._last_stamp = -math.inf
        self.set_rates(rates or {})

    def set_rates(self, rates: Mapping[str, float]) -> None:
        """Replace the rates (Hz; 0: every frame); schedules of changed tasks restart."""
        for task, rate in rates.items():
            rate = check_rate(rate, f'rate of {task}')
            if self.rates.get(task, 0.0) != rate:
                self._next.pop(task, None)
            self.rates[task] = rate

    def period(self, task: str) -> float:
        """Seconds between runs of ``task`` (0: every frame)."""
        rate = self.rates.get(task, 0.0)
        return 1.0 / rate if rate > 0 else 0.0

    def due(self, task: str, stamp: float) -> bool:
        """Tell whether ``task`` may run on a frame stamped ``stamp`` (seconds)."""
        if stamp < self._last_stamp - 1e-9:
            self._next.clear()
        period = self.period(task)
        return period == 0.0 or stamp >= self._next.get(task, -math.inf) - 1e-6

    def consume(self, tasks: Iterable[str], stamp: float) -> None:
        """Record that ``tasks`` ran on the frame stamped ``stamp``."""
        if stamp < self._last_stamp - 1e-9:
            self._next.clear()
        self._last_stamp = stamp
        for task in tasks:
            period = self.period(task)
            if period == 0.0:
                continue
            nxt = self._next.get(task, -math.inf)
            self._next[task] = nxt + period if stamp - nxt <= period else stamp + period


def parse_rates(text: str, name: str = '--rates') -> dict[str, float]:
    """Parse ``seg=5,normal=2`` (Hz per task; 0: every frame) into ``{task: Hz}``."""
    from ..models.registry import PERCEPTION_TASKS

    out = {}
    for part in (p.strip() for p in text.split(',') if p.strip()):
        task, _, rate = part.partition('=')
        try:
            value = float(rate)
        except ValueError:
            value = math.nan
        if task.strip() not in PERCEPTION_TASKS or rate_error(value) is not None:
            raise ValueError(f'{name} {text!r}: each entry must be TASK=HZ with a task of '
                             f'{", ".join(PERCEPTION_TASKS)} and HZ from 0 (every frame) to '
                             f'{MAX_RATE_HZ:g}, e.g. seg=5,normal=2')
        out[task.strip()] = value
    return out
