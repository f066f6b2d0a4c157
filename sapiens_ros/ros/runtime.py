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

"""ROS-free building blocks of the node: frame slots, input health, stats, throttling, logs."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable
import logging
import threading
import time
from typing import Any, NamedTuple

import numpy as np

#: Core loggers whose records (the backwards-time reset line) the node repeats in its log.
CORE_LOGGERS = ('sapiens_ros.core.people.tracking', 'sapiens_ros.core.people.state')


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

    def update(self, key: str, change: Callable[[Any], bool]) -> bool:
        """Apply ``change`` to ``key``'s frame while it still waits; its answer, else False."""
        with self._cond:
            item = self._items.get(key)
            return item is not None and bool(change(item))

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


class Problem(NamedTuple):
    """
    One reason a camera is not fine: its diagnostics level and text.

    ``explains``: the bad-input kind it accounts for (a side stream that does not pair explains
    ``<stream>_missing``), so the diagnostics do not say it twice.
    """

    level: bytes
    text: str
    explains: str = ''


class InputRate:
    """
    When one input's frames arrived: its usual rate, its rate now and how long it is silent.

    The usual rate is the median frame interval of the last :attr:`HISTORY_S` seconds. The input
    is *slow* when nothing came for ``max(1 s, 4 usual intervals)``, or when the last
    ``max(2 s, 4 usual intervals)`` held fewer than half the frames the usual rate gives; it is
    *stale* when nothing came for ``stale_after``.
    """

    HISTORY_S = 30.0
    #: Seconds without a frame before a silent input is a warning, at least (also the grace
    #: after the start, for discovery and the first frame).
    SILENT_S = 1.0

    def __init__(self, now: float | None = None) -> None:
        self.started = time.monotonic() if now is None else now
        self._times: deque = deque(maxlen=2048)
        self._lock = threading.Lock()

    def on_arrival(self, now: float | None = None) -> None:
        """Record one frame."""
        now = time.monotonic() if now is None else now
        with self._lock:
            self._times.append(now)
            while self._times[0] < now - self.HISTORY_S:
                self._times.popleft()

    def judge(self, stale_after: float, now: float | None = None) -> tuple[str, str]:
        """Return ``('ok' | 'slow' | 'stale', reason)``; ``stale_after`` 0 never goes stale."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = np.asarray(self._times, np.float64)
        silent = now - (times[-1] if times.size else self.started)
        if stale_after > 0 and silent >= stale_after:
            since = 'for' if times.size else 'since the start, for'
            return 'stale', f'no frame {since} {silent:.1f} s (stale after {stale_after:g} s)'
        if not times.size:
            return ('slow', f'no frame yet ({silent:.1f} s)') \
                if silent >= self.SILENT_S else ('ok', '')
        usual = float(np.median(np.diff(times))) if times.size >= 3 else 0.0
        if silent >= max(self.SILENT_S, 4 * usual):
            rate = f' (usually {1 / usual:.1f} Hz)' if usual > 0 else ''
            return 'slow', f'no frame for {silent:.1f} s{rate}'
        window = max(2.0, 4 * usual)
        if usual <= 0 or now - times[0] < window:
            return 'ok', ''
        recent = int(np.count_nonzero(times > now - window))
        if recent >= 0.5 * window / usual:
            return 'ok', ''
        return 'slow', (f'input at {recent / window:.1f} Hz, under half its usual '
                        f'{1 / usual:.1f} Hz')


class NodeStats:
    """
    Counters and windows the diagnostics report (thread-safe, cheap to update).

    A bad input either cost its frame (``skipped``: a corrupt image, a failed inference) or only
    degraded it (the frame was processed without a side stream, a metric scale, some boxes).
    """

    def __init__(self, window: int = 50) -> None:
        self._lock = threading.Lock()
        self.received = 0
        self.processed = 0
        self.lost = 0  # lost before the callback: the transport's QoS "message lost" events
        self.idle_skipped = 0  # frames with no subscribed output
        self.abandoned = 0  # results dropped because the node stopped while they were in flight
        self.bad_inputs: Counter = Counter()
        self.failed = 0  # bad inputs that cost their frame
        self.last_error = ''  # the latest bad input of any kind
        self.last_failed = self.last_degraded = ''  # the latest of each sort
        self.last_degraded_kind = ''
        self.rate = InputRate()
        self.latencies_ms: deque = deque(maxlen=window)
        self.stage_ms: dict[str, float] = {}
        self.tasks_run: tuple[str, ...] = ()
        self.box_origins: Counter = Counter()  # where each processed frame's pose boxes came from
        self._mark = (time.monotonic(), 0, 0, 0, 0, 0, 0)

    def on_received(self) -> None:
        """Count one input frame."""
        with self._lock:
            self.received += 1
        self.rate.on_arrival()

    def on_lost(self, count: int) -> None:
        """Count frames the transport lost before the callback."""
        with self._lock:
            self.lost += count

    def on_bad(self, kind: str, text: str = '', skipped: bool = True) -> None:
        """Count one bad input of ``kind``; ``skipped``: it cost the frame. Keep the reason."""
        reason = f'{kind}: {text}' if text else kind
        with self._lock:
            self.bad_inputs[kind] += 1
            self.last_error = reason
            if skipped:
                self.failed += 1
                self.last_failed = reason
            else:
                self.last_degraded, self.last_degraded_kind = reason, kind

    def on_processed(self, latency_ms: float | None, stages: dict[str, float],
                     tasks: tuple[str, ...], box_origin: str = '') -> None:
        """Record one processed frame (``box_origin``: where its pose boxes came from)."""
        with self._lock:
            self.processed += 1
            if box_origin:
                self.box_origins[box_origin] += 1
            if latency_ms is not None:
                self.latencies_ms.append(latency_ms)
            self.stage_ms = dict(stages)
            self.tasks_run = tasks

    def snapshot(self, dropped: int) -> dict[str, Any]:
        """Rates since the previous snapshot, totals, and percentiles of the last latencies."""
        with self._lock:
            now = time.monotonic()
            t0, rec0, proc0, drop0, failed0, bad0, lost0 = self._mark
            bad = sum(self.bad_inputs.values())
            dt = max(now - t0, 1e-6)
            lat = np.asarray(self.latencies_ms, np.float64)
            out = {
                'input_rate_hz': (self.received - rec0) / dt,
                'processed_rate_hz': (self.processed - proc0) / dt,
                'dropped_rate_hz': (dropped - drop0) / dt,
                'failed_rate_hz': (self.failed - failed0) / dt,
                'degraded_rate_hz': (bad - self.failed - (bad0 - failed0)) / dt,
                'lost_rate_hz': (self.lost - lost0) / dt,
                'last_error': self.last_error, 'last_failed': self.last_failed,
                'last_degraded': self.last_degraded,
                'last_degraded_kind': self.last_degraded_kind,
                'received': self.received, 'processed': self.processed, 'dropped': dropped,
                'lost': self.lost, 'idle_skipped': self.idle_skipped,
                'abandoned': self.abandoned,
                'latency_p50_ms': float(np.percentile(lat, 50)) if lat.size else float('nan'),
                'latency_p95_ms': float(np.percentile(lat, 95)) if lat.size else float('nan'),
                'stage_ms': dict(self.stage_ms), 'bad_inputs': dict(self.bad_inputs),
                'box_origins': dict(self.box_origins),
                'tasks_run': self.tasks_run,
            }
            self._mark = (now, self.received, self.processed, dropped, self.failed, bad,
                          self.lost)
            return out


class ThreadLogForwarder(logging.Handler):
    """Repeat ``logging`` records emitted on one thread (a node's worker) in an rclpy logger."""

    def __init__(self, ros_logger, thread: Callable[[], threading.Thread | None]) -> None:
        super().__init__(logging.INFO)
        self.ros_logger = ros_logger
        self.thread = thread

    def emit(self, record: logging.LogRecord) -> None:
        """Log ``record`` through the node when its own thread emitted it."""
        owner = self.thread()
        if owner is None or record.thread != owner.ident:
            return
        text = f'{record.name}: {record.getMessage()}'
        if record.levelno >= logging.ERROR:
            self.ros_logger.error(text)
        elif record.levelno >= logging.WARNING:
            self.ros_logger.warning(text)
        else:
            self.ros_logger.info(text)

    def attach(self) -> None:
        """Listen to :data:`CORE_LOGGERS`."""
        for name in CORE_LOGGERS:
            logging.getLogger(name).addHandler(self)

    def detach(self) -> None:
        """Stop listening."""
        for name in CORE_LOGGERS:
            logging.getLogger(name).removeHandler(self)
