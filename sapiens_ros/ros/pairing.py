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
A camera's side streams (aligned depth, a detector's boxes) paired with its colour frames.

Pairing is ``message_filters.ApproximateTimeSynchronizer`` where it is installed, otherwise
:class:`sapiens_ros.core.sync.ApproximateTimeSync`, the same policy without ROS. A side stream
silent for longer than its timeout leaves the pairing (colour frames go on without it, and the
camera counts it), and joins again with its next message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
import logging
import threading
import time

from .messages import stamp_seconds
from ..core.sync import ApproximateTimeSync

try:  # a ROS install has it; the kit builds it (../shared/ros-tools/install-msgs.sh)
    import message_filters
except ImportError:  # pragma: no cover - depends on the install
    message_filters = None

#: Core loggers whose records (the backwards-time reset line) the node repeats in its log.
CORE_LOGGERS = ('sapiens_ros.core.tracking', 'sapiens_ros.core.people')


class StreamPairer:
    """
    Pair colour frames with side streams by header stamp; ``on_frame(image, {stream: msg})``.

    ``streams`` names the side streams; ``timeouts[stream]`` is how long (s) it may be silent
    before frames go on without it (0: wait for it). ``add_image``/``add`` must be called from
    one thread at a time (the node's input callback group).
    """

    def __init__(self, streams: Sequence[str], slop: float, queue_size: int,
                 timeouts: Mapping[str, float],
                 on_frame: Callable[[object, dict], None]) -> None:
        self.streams = tuple(streams)
        self.slop, self.queue_size = slop, queue_size
        self.timeouts = dict(timeouts)
        self.on_frame = on_frame
        self.backend = 'message_filters' if message_filters is not None else 'core.sync'
        self.counts: Counter = Counter()
        now = time.monotonic()
        self._last = dict.fromkeys(self.streams, now)  # the timeouts count from now
        self._last_image: float | None = None
        self._live: tuple[str, ...] | None = None
        self._sync = self._inputs = None

    def silent(self, now: float | None = None) -> dict[str, float]:
        """Return the side streams silent past their timeout, with seconds of silence."""
        now = time.monotonic() if now is None else now
        return {s: now - self._last[s] for s in self.streams
                if self.timeouts.get(s, 0) > 0 and now - self._last[s] > self.timeouts[s]}

    def _pair_over(self, live: tuple[str, ...]) -> None:
        """Pair colour frames with the ``live`` streams from now on (queues start empty)."""
        self._live = live
        if not live:
            self._sync = self._inputs = None
        elif message_filters is not None:
            self._inputs = [message_filters.SimpleFilter() for _ in range(len(live) + 1)]
            self._sync = message_filters.ApproximateTimeSynchronizer(
                self._inputs, self.queue_size, self.slop)
            self._sync.registerCallback(self._paired)
        else:
            self._sync = ApproximateTimeSync(len(live) + 1, self.queue_size, self.slop,
                                             self._paired)

    def _paired(self, image, *sides) -> None:
        self.counts['paired'] += 1
        self.on_frame(image, dict(zip(self._live, sides, strict=True)))

    def add_image(self, msg) -> None:
        """Queue a colour frame (alone when no side stream is live)."""
        self.counts['images'] += 1
        live = tuple(s for s in self.streams if s not in self.silent())
        if live != self._live:
            self._pair_over(live)
        if not live:
            self.on_frame(msg, {})
            return
        stamp = stamp_seconds(msg.header.stamp)
        if self._last_image is not None and stamp < self._last_image:
            self._pair_over(live)  # a bag loop: old stamps would match nothing until pushed out
        self._last_image = stamp
        self._feed(0, stamp, msg)

    def add(self, stream: str, msg) -> None:
        """Queue a side-stream message."""
        self.counts[stream] += 1
        self._last[stream] = time.monotonic()
        if self._live is not None and stream in self._live:
            self._feed(1 + self._live.index(stream), stamp_seconds(msg.header.stamp), msg)

    def _feed(self, index: int, stamp: float, msg) -> None:
        if message_filters is not None:
            self._inputs[index].signalMessage(msg)
        else:
            self._sync.add(index, stamp, msg)

    def counters(self) -> dict[str, int]:
        """Counters for the diagnostics: received per stream, paired and unpaired images."""
        out = {f'pairing.{s}_received': self.counts[s] for s in self.streams}
        out.update({'pairing.images': self.counts['images'],
                    'pairing.paired': self.counts['paired'],
                    'pairing.unpaired_images': self.counts['images'] - self.counts['paired']})
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
