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
ROS-free approximate time synchronisation (the ``message_filters`` policy, for any inputs).

Same semantics as ``message_filters.ApproximateTimeSynchronizer`` (ROS 2 Python): each input
keeps at most ``queue_size`` messages keyed by stamp (a repeated stamp replaces the message, the
oldest stamp is dropped when full); when a message arrives, the other inputs' stamps within
``slop`` of it are tried nearest first, and the first combination whose stamps all lie within
``slop`` of each other (strictly, as there) is emitted once and removed from the queues.
"""

from __future__ import annotations

from collections.abc import Callable
import itertools
from typing import Any


class ApproximateTimeSync:
    """
    Match messages of ``num_inputs`` inputs by time stamp (seconds).

    ``add(index, stamp, msg)`` returns the matched tuple (one message per input, in input
    order) and also passes it to ``callback`` when one was given; None when nothing matched.
    """

    def __init__(self, num_inputs: int, queue_size: int, slop: float,
                 callback: Callable[..., Any] | None = None) -> None:
        if num_inputs < 1 or queue_size < 1 or slop < 0:
            raise ValueError('need num_inputs >= 1, queue_size >= 1 and slop >= 0')
        self.queue_size = queue_size
        self.slop = slop
        self.callback = callback
        self.queues: list[dict[float, Any]] = [{} for _ in range(num_inputs)]
        self.matched = 0
        self.dropped = 0  # messages pushed out of a full queue unmatched

    def add(self, index: int, stamp: float, msg: Any) -> tuple | None:
        """Queue ``msg`` of input ``index`` stamped ``stamp``; emit a match if one is complete."""
        queue = self.queues[index]
        queue[stamp] = msg
        while len(queue) > self.queue_size:
            del queue[min(queue)]
            self.dropped += 1
        candidates = []
        for i, other in enumerate(self.queues):
            if i == index:
                continue
            near = sorted((abs(s - stamp), s) for s in other if abs(s - stamp) <= self.slop)
            if not near:
                return None
            candidates.append([s for _, s in near])
        for combo in itertools.product(*candidates):
            stamps = list(combo)
            stamps.insert(index, stamp)
            if max(stamps) - min(stamps) < self.slop and all(
                    s in q for q, s in zip(self.queues, stamps, strict=True)):
                msgs = tuple(q.pop(s) for q, s in zip(self.queues, stamps, strict=True))
                self.matched += 1
                if self.callback is not None:
                    self.callback(*msgs)
                return msgs
        return None

    def clear(self) -> None:
        """Drop every queued message (e.g. on a backwards time jump)."""
        for queue in self.queues:
            queue.clear()


__all__ = ['ApproximateTimeSync']
