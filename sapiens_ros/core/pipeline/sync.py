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
Colour frames paired with side streams (aligned depth, a detector's boxes) by stamp, ROS-free.

Why not ``message_filters.ApproximateTimeSynchronizer``: its full queue drops the *oldest*
stamp, so a burst of messages stamped in the future stays queued for good and every good message
is dropped on arrival, and a colour frame that never pairs is never emitted: one bad side stream
stops its camera in silence. Here:

* **Every colour frame goes on.** It waits for its side messages only as long as they have
  recently taken to arrive (:attr:`WAIT_FACTOR` times the slowest of the last pairs, plus
  :data:`WAIT_MARGIN_S`; at most :data:`MAX_WAIT_S` and half the stream's timeout), and not at
  all for a stream that is down. It is released with whatever paired.
* **A stream is down** when none of its messages paired for its ``timeout`` (time since the last
  *pair*, not since the last message): a silent stream and one whose stamps never match (a zero
  stamp, a skewed clock) alike. It is up again as soon as one of its messages pairs, also with a
  frame that has already gone on, so it recovers within one message. Such a message is offered
  to the newest released frame (``on_late``: the caller attaches it when that frame still waits
  for inference); otherwise it is counted ``late``.
* **A side message stamped further than ``max_offset`` from the newest colour frame** (ahead or
  behind) is refused and returned as a :class:`Refusal` naming the offset and its likely cause;
  it never enters a queue. Queues are pruned by stamp, so nothing can poison them.
* A colour stamp that goes back by more than ``max_offset`` (a bag loop) starts the pairing
  afresh.

Side messages are expected in stamp order per stream: one stamped past a waiting frame tells that
frame's own will not come, and the frame goes on at once.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
import math
import time
from typing import Any

#: Longest a colour frame waits for a side message (s), whatever the stream's history.
MAX_WAIT_S = 0.5
#: A frame waits this many times the slowest recent arrival delay of a stream, ...
WAIT_FACTOR = 1.5
#: ... plus this margin (s).
WAIT_MARGIN_S = 0.02
#: Pairs whose delays set the wait.
WAIT_HISTORY = 16
#: Released colour stamps kept to recognise a late side message (one that missed its frame).
RECENT_FRAMES = 64


@dataclass(frozen=True)
class SideStream:
    """One side stream: its name, the largest stamp difference that pairs, its timeout (s)."""

    name: str
    slop: float = 0.05
    timeout: float = 1.0  # no pair for this long: frames stop waiting for it (0: never)


@dataclass(frozen=True)
class Refusal:
    """A side message refused for its stamp: how far from the colour frames, and why likely."""

    stream: str
    stamp: float
    offset: float  # its stamp minus the newest colour frame's (s)
    max_offset: float

    @property
    def cause(self) -> str:
        """Name the likely cause of the offset."""
        if self.stamp == 0:
            return 'its header stamp is 0: the publisher leaves it unset instead of copying ' \
                   "the image's"
        return ('a clock skew between machines (check NTP/PTP), use_sim_time set on one node '
                "only, or a publisher that stamps its own time instead of copying the image's")

    def __str__(self) -> str:
        return (f'{self.stream} message stamped {self.offset:+.3f} s from the colour frames '
                f'(more than max_stamp_offset {self.max_offset:g} s): {self.cause}')


@dataclass
class _Held:
    stamp: float
    msg: Any
    arrived: float
    sides: dict = field(default_factory=dict)


class _Side:
    """The state of one side stream."""

    def __init__(self, spec: SideStream, now: float) -> None:
        self.spec = spec
        self.queue: dict[float, tuple[Any, float]] = {}  # stamp -> (message, arrival)
        self.last_message: float | None = None
        self.last_pair = now  # the timeout counts from the start
        self.newest = -math.inf  # newest accepted stamp
        self.offset: float | None = None  # last accepted message's stamp - newest colour stamp
        self.refused: Refusal | None = None
        self.last_refused = False  # the last message was refused
        self.delays: deque = deque(maxlen=WAIT_HISTORY)
        self.counts: Counter = Counter()

    def up(self, now: float) -> bool:
        return self.spec.timeout <= 0 or now - self.last_pair <= self.spec.timeout

    def wait(self) -> float:
        cap = MAX_WAIT_S if self.spec.timeout <= 0 else min(MAX_WAIT_S, self.spec.timeout / 2)
        if not self.delays:
            return cap
        return min(cap, WAIT_FACTOR * max(self.delays) + WAIT_MARGIN_S)

    def paired(self, now: float, delay: float, count: str = 'paired') -> None:
        """Record a match ``delay`` s after its frame arrived (counted as ``count``)."""
        self.last_pair = now
        self.delays.append(max(0.0, delay))
        self.counts[count] += 1

    def refuse(self, stamp: float, offset: float, max_offset: float) -> Refusal:
        """Record and return the refusal of a message ``offset`` s from the colour frames."""
        self.refused = Refusal(self.spec.name, stamp, offset, max_offset)
        self.last_refused = True
        self.counts['refused'] += 1
        return self.refused

    def nearest(self, stamp: float) -> float | None:
        """Return the queued stamp nearest ``stamp`` within the slop, or None."""
        best = min(self.queue, key=lambda s: abs(s - stamp), default=None)
        return best if best is not None and abs(best - stamp) <= self.spec.slop else None


class FramePairing:
    """
    Pair colour frames with side streams; ``on_frame(msg, {stream: side_msg})`` per colour frame.

    Calls come from one thread at a time (``add_frame``, ``add_side``, ``flush``); ``flush``
    must also be called periodically (every 10-20 ms) to release frames whose wait is over when
    no message arrives. ``on_late(frame_msg, stream, side_msg) -> bool`` may attach a side message
    that matches the newest frame after its release (True: attached, counted as paired).
    ``clock`` is monotonic seconds (injectable for tests).
    """

    def __init__(self, streams: Sequence[SideStream], on_frame: Callable[[Any, dict], None], *,
                 max_offset: float = 1.0, queue_size: int = 10,
                 on_late: Callable[[Any, str, Any], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_offset <= 0 or queue_size < 1:
            raise ValueError('need max_offset > 0 and queue_size >= 1')
        self.on_frame = on_frame
        self.on_late = on_late
        self.max_offset = max_offset
        self.queue_size = queue_size
        self.clock = clock
        now = clock()
        self.sides = {s.name: _Side(s, now) for s in streams}
        self._held: deque[_Held] = deque()
        self._recent: deque = deque(maxlen=RECENT_FRAMES)  # (stamp, arrival) of released frames
        self._released: tuple[float, Any] | None = None  # the newest released frame
        self._newest: float | None = None  # newest colour stamp
        self.frames = 0
        self.restarts = 0

    # ------------------------------------------------------------------ input
    def add_frame(self, stamp: float, msg: Any) -> list[Refusal]:
        """
        Take a colour frame: pair it with queued side messages, release what is due.

        Returns the refusals of side messages queued before the first colour frame (nothing to
        judge them by then) that lie too far from this one.
        """
        now = self.clock()
        self.frames += 1
        if self._newest is not None and stamp < self._newest - self.max_offset:
            self._restart()  # a bag loop: nothing queued can pair again
        first = self._newest is None  # the queues hold messages nothing judged yet
        self._newest = stamp if first else max(self._newest, stamp)
        held = _Held(stamp, msg, now)
        refusals = []
        for name, side in self.sides.items():
            for old in [s for s in side.queue if abs(s - stamp) > self.max_offset]:
                del side.queue[old]
                if first:
                    refusals.append(side.refuse(old, old - stamp, self.max_offset))
                else:
                    side.counts['expired'] += 1
            best = side.nearest(stamp)
            if best is not None:
                held.sides[name], _ = side.queue.pop(best)
                side.paired(now, 0.0)
        self._held.append(held)
        self.flush(now)
        return refusals

    def add_side(self, name: str, stamp: float, msg: Any) -> Refusal | None:
        """Take a side message; return a :class:`Refusal` when its stamp is refused."""
        now = self.clock()
        side = self.sides[name]
        side.counts['received'] += 1
        side.last_message = now
        side.last_refused = False
        if self._newest is not None:
            offset = stamp - self._newest
            if abs(offset) > self.max_offset:
                return side.refuse(stamp, offset, self.max_offset)
            side.offset = offset
        side.newest = max(side.newest, stamp)
        waiting = [h for h in self._held if name not in h.sides and
                   abs(h.stamp - stamp) <= side.spec.slop]
        if waiting:
            held = min(waiting, key=lambda h: abs(h.stamp - stamp))
            held.sides[name] = msg
            side.paired(now, now - held.arrived)
        else:
            late = [(s, arrived) for s, arrived in self._recent
                    if abs(s - stamp) <= side.spec.slop]
            if late:  # its frame went on without it: the stream is fine, only slow
                frame_stamp, arrived = min(late, key=lambda r: abs(r[0] - stamp))
                newest = self._released
                attached = newest is not None and newest[0] == frame_stamp and \
                    self.on_late is not None and self.on_late(newest[1], name, msg)
                side.paired(now, now - arrived, 'paired' if attached else 'late')
                side.counts['frames_without'] -= attached
            else:
                side.queue[stamp] = (msg, now)
                while len(side.queue) > self.queue_size:
                    del side.queue[min(side.queue)]
                    side.counts['expired'] += 1
        self.flush(now)
        return None

    def flush(self, now: float | None = None) -> None:
        """Release, in order, the waiting frames that have all they wait for or waited enough."""
        now = self.clock() if now is None else now
        while self._held and (len(self._held) > self.queue_size or
                              self._complete(self._held[0], now)):
            self._release(self._held.popleft(), now)

    def _complete(self, held: _Held, now: float) -> bool:
        for name, side in self.sides.items():
            if name in held.sides or not side.up(now):
                continue
            if side.newest > held.stamp + side.spec.slop:
                continue  # a later message came: this frame's will not
            if now - held.arrived < side.wait():
                return False
        return True

    def _release(self, held: _Held, now: float) -> None:
        for name, side in self.sides.items():
            if name not in held.sides:
                side.counts['frames_without'] += 1
        self._recent.append((held.stamp, held.arrived))
        self._released = (held.stamp, held.msg)
        self.on_frame(held.msg, held.sides)

    def _restart(self) -> None:
        now = self.clock()
        while self._held:
            self._release(self._held.popleft(), now)
        self._recent.clear()
        self._released = None
        for side in self.sides.values():
            side.queue.clear()
            side.newest = -math.inf
        self._newest = None
        self.restarts += 1

    # ------------------------------------------------------------------ state
    def down(self, now: float | None = None) -> dict[str, str]:
        """Return the streams without a pair for their timeout, each with the reason."""
        now = self.clock() if now is None else now
        return {name: self._reason(side, now) for name, side in self.sides.items()
                if not side.up(now)}

    def _reason(self, side: _Side, now: float) -> str:
        name = side.spec.name
        if side.last_message is None:
            return f'no {name} message received (for {now - side.last_pair:.1f} s)'
        unpaired = f'no {name} message paired for {now - side.last_pair:.1f} s'
        last = f'the last one came {now - side.last_message:.1f} s ago'
        if side.last_refused:
            return f'{unpaired}; {last}, refused: {side.refused}'
        if now - side.last_message > side.spec.timeout:
            return f'{unpaired}; {last}'
        return (f'{unpaired}: they arrive stamped {side.offset:+.3f} s from the newest colour '
                f'frame, none within {side.spec.slop:g} s (slop) of a colour stamp')

    def counters(self) -> dict[str, int | str]:
        """Counters for the diagnostics, per stream, and the current wait (ms)."""
        out: dict[str, int | str] = {'pairing.frames': self.frames,
                                     'pairing.restarts': self.restarts}
        for name, side in self.sides.items():
            for key in ('received', 'paired', 'late', 'refused', 'expired', 'frames_without'):
                out[f'pairing.{name}_{key}'] = side.counts[key]
            out[f'pairing.{name}_wait_ms'] = f'{1000 * side.wait():.0f}'
        return out


__all__ = ['FramePairing', 'MAX_WAIT_S', 'Refusal', 'SideStream']
