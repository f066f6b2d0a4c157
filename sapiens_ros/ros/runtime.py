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

"""ROS-free building blocks of the node: newest-frame slots, rate/latency stats, throttling."""

from __future__ import annotations

from collections import Counter, deque
import threading
import time
from typing import Any

import numpy as np


class FrameSlots:
    """
    The newest frame of each camera, under one condition the inference worker waits on.

    ``put`` over a frame the worker has not taken replaces it and counts one drop for that
    camera only. ``take`` returns the newest frame of every camera that has one; with a
    ``limit`` it serves the cameras round-robin, so under overload each gets its share of steps.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: dict[str, Any] = {}
        self._order: list[str] = []  # round-robin order of the cameras seen so far
        self.dropped: Counter = Counter()

    def put(self, key: str, item: Any) -> None:
        """Store ``item`` as ``key``'s newest frame, replacing (and counting) an untaken one."""
        with self._cond:
            if key in self._items:
                self.dropped[key] += 1
            elif key not in self._order:
                self._order.append(key)
            self._items[key] = item
            self._cond.notify()

    def take(self, timeout: float = 0.1, limit: int = 0) -> list[tuple[str, Any]]:
        """Return ``[(key, item)]`` of the waiting frames (at most ``limit``), or [] on timeout."""
        with self._cond:
            if not self._items:
                self._cond.wait(timeout)
            keys = [k for k in self._order if k in self._items]
            if limit > 0:
                keys = keys[:limit]
            if keys and limit > 0:  # the cameras served now go to the back of the queue
                self._order = [k for k in self._order if k not in keys] + keys
            return [(k, self._items.pop(k)) for k in keys]

    def clear(self) -> None:
        """Forget every pending frame (not counted as dropped)."""
        with self._cond:
            self._items.clear()


class Throttle:
    """Allow one message per key every ``period`` seconds, counting the suppressed ones."""

    def __init__(self, period: float = 2.0) -> None:
        self.period = period
        self._last: dict[str, float] = {}
        self._suppressed: Counter = Counter()

    def check(self, key: str) -> int | None:
        """Return the number suppressed since the last allowed message, or None to stay quiet."""
        now = time.monotonic()
        if now - self._last.get(key, -1e9) < self.period:
            self._suppressed[key] += 1
            return None
        self._last[key] = now
        return self._suppressed.pop(key, 0)


class NodeStats:
    """Counters and windows the diagnostics report (thread-safe, cheap to update)."""

    def __init__(self, window: int = 50) -> None:
        self._lock = threading.Lock()
        self.received = 0
        self.processed = 0
        self.idle_skipped = 0  # frames with no subscribed output
        self.abandoned = 0  # results dropped because the node stopped while they were in flight
        self.bad_inputs: Counter = Counter()
        self.last_error = ''
        self.latencies_ms: deque = deque(maxlen=window)
        self.stage_ms: dict[str, float] = {}
        self.tasks_run: tuple[str, ...] = ()
        self._mark = (time.monotonic(), 0, 0, 0, 0)

    def on_received(self) -> None:
        """Count one input frame."""
        with self._lock:
            self.received += 1

    def on_bad(self, kind: str, text: str = '') -> None:
        """Count one rejected input (or failed frame) of ``kind``; keep the latest reason."""
        with self._lock:
            self.bad_inputs[kind] += 1
            self.last_error = f'{kind}: {text}' if text else kind

    def on_processed(self, latency_ms: float | None, stages: dict[str, float],
                     tasks: tuple[str, ...]) -> None:
        """Record one processed frame."""
        with self._lock:
            self.processed += 1
            if latency_ms is not None:
                self.latencies_ms.append(latency_ms)
            self.stage_ms = dict(stages)
            self.tasks_run = tasks

    def snapshot(self, dropped: int) -> dict[str, Any]:
        """Rates since the previous snapshot, totals, and percentiles of the last latencies."""
        with self._lock:
            now = time.monotonic()
            t0, rec0, proc0, drop0, bad0 = self._mark
            bad = sum(self.bad_inputs.values())
            dt = max(now - t0, 1e-6)
            lat = np.asarray(self.latencies_ms, np.float64)
            out = {
                'input_rate_hz': (self.received - rec0) / dt,
                'processed_rate_hz': (self.processed - proc0) / dt,
                'dropped_rate_hz': (dropped - drop0) / dt,
                'failed_rate_hz': (bad - bad0) / dt, 'last_error': self.last_error,
                'received': self.received, 'processed': self.processed, 'dropped': dropped,
                'idle_skipped': self.idle_skipped, 'abandoned': self.abandoned,
                'latency_p50_ms': float(np.percentile(lat, 50)) if lat.size else float('nan'),
                'latency_p95_ms': float(np.percentile(lat, 95)) if lat.size else float('nan'),
                'stage_ms': dict(self.stage_ms), 'bad_inputs': dict(self.bad_inputs),
                'tasks_run': self.tasks_run,
            }
            self._mark = (now, self.received, self.processed, dropped, bad)
            return out
