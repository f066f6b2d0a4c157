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
The node's RGB-D input: colour/depth pairing by time stamp and forwarding core log records.

Pairing uses ``message_filters.ApproximateTimeSynchronizer`` where it is installed, otherwise
:class:`sapiens_ros.core.sync.ApproximateTimeSync`, the same policy without ROS.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
import threading

from .messages import stamp_seconds
from ..core.sync import ApproximateTimeSync

try:  # a ROS install has it; the pip wheels here do not
    import message_filters
except ImportError:  # pragma: no cover - depends on the install
    message_filters = None

#: Core loggers whose records (the backwards-time reset line) the node repeats in its log.
CORE_LOGGERS = ('sapiens_ros.core.tracking', 'sapiens_ros.core.people')


class DepthPairer:
    """
    Pair colour and depth messages by header stamp; ``on_pair(image, depth)`` gets each match.

    ``add_image``/``add_depth`` must be called from one thread at a time (the node's input
    callback group). ``images``, ``depths`` and ``paired`` count messages; colour frames never
    paired are ``images - paired``.
    """

    def __init__(self, slop: float, queue_size: int,
                 on_pair: Callable[[object, object], None]) -> None:
        self.on_pair = on_pair
        self.images = self.depths = self.paired = 0
        self._last_image = None
        self.backend = 'message_filters' if message_filters is not None else 'core.sync'
        if message_filters is not None:
            self._inputs = [message_filters.SimpleFilter(), message_filters.SimpleFilter()]
            sync = message_filters.ApproximateTimeSynchronizer(self._inputs, queue_size, slop)
            sync.registerCallback(self._paired)
            self._sync = sync
        else:
            self._sync = ApproximateTimeSync(2, queue_size, slop, self._paired)

    def _paired(self, image, depth) -> None:
        self.paired += 1
        self.on_pair(image, depth)

    def add_image(self, msg) -> None:
        """Queue a colour frame; a stamp older than the previous one clears the queues."""
        self.images += 1
        self._add(0, msg)

    def add_depth(self, msg) -> None:
        """Queue a depth image."""
        self.depths += 1
        self._add(1, msg)

    def _add(self, index: int, msg) -> None:
        stamp = stamp_seconds(msg.header.stamp)
        if index == 0:
            if self._last_image is not None and stamp < self._last_image:
                self.clear()  # a bag loop: old stamps would match nothing until pushed out
            self._last_image = stamp
        if message_filters is not None:
            self._inputs[index].signalMessage(msg)
        else:
            self._sync.add(index, stamp, msg)

    def clear(self) -> None:
        """Forget every queued message."""
        if message_filters is None:
            self._sync.clear()
        else:  # pragma: no cover - message_filters is not installed here
            for queue in getattr(self._sync, 'queues', ()):
                queue.clear()

    def counters(self) -> dict[str, int]:
        """Counters for the diagnostics."""
        return {'depth.images': self.images, 'depth.received': self.depths,
                'depth.paired': self.paired, 'depth.unpaired_images': self.images - self.paired}


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
