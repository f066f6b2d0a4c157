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
``--resume``: find the frames a partial output bag already holds and carry them over.

A frame counts as done when the bag has all its outputs or its error record at the frame's bag
time. rosbag2 writers cannot append, so the done frames (and the copied inputs) are copied into
a new bag that the run then continues; :func:`swap_in` puts it in place of the old one.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
import shutil

from .records import record_values
from .source import BagError, InputBag
from ..ros.messages import INFO_TOPICS


class PartialRun:
    """What a partial output bag holds, keyed by ``(input topic, bag time ns)``."""

    def __init__(self, path: str | Path, outputs: dict[str, str], per_frame: int,
                 errors_topic: str) -> None:
        """Index the bag: ``outputs`` maps output topic -> input topic, ``per_frame`` each."""
        self.path = Path(path)
        self.outputs = outputs
        self.errors_topic = errors_topic
        try:
            self.bag = InputBag(self.path)
        except BagError as exc:
            raise BagError(f'cannot resume from {self.path}: {exc}') from None
        counts: Counter = Counter()
        self.done: set[tuple[str, int]] = set()
        self.copied: set[tuple[str, int]] = set()
        latched = {c.topic for c in self.bag.connections
                   if any(c.topic.endswith('/' + s) for s in INFO_TOPICS.values())}
        for conn, time_ns, raw in self.bag.messages():
            if conn.topic in outputs:
                counts[(outputs[conn.topic], time_ns)] += 1
            elif conn.topic == errors_topic:
                values = record_values(self.bag.deserialize(raw, conn.msgtype))
                if 'topic' in values:
                    self.done.add((values['topic'], int(values.get('bag_time_ns', time_ns))))
            elif conn.topic not in latched:
                self.copied.add((conn.topic, time_ns))
        self.done |= {key for key, n in counts.items() if n >= per_frame}
        self.latched = latched

    def copy_into(self, out) -> int:
        """Copy everything of the done frames, the error records and other topics into ``out``."""
        copied = 0
        connections = {c.topic: out.add_copy(c) for c in self.bag.connections}
        for conn, time_ns, raw in self.bag.messages():
            if connections.get(conn.topic) is None:
                continue
            if conn.topic in self.outputs and \
                    (self.outputs[conn.topic], time_ns) not in self.done:
                continue  # a frame cut short by a hard stop: it is processed again
            out.write(conn.topic, time_ns, raw)
            copied += 1
        return copied

    def close(self) -> None:
        """Close the partial bag."""
        self.bag.close()


def temp_path(path: str | Path) -> Path:
    """Where the continued bag is written before it replaces the partial one."""
    path = Path(path)
    return path.with_name(path.name + '.resume')


def swap_in(new: Path, old: Path) -> None:
    """Replace ``old`` by ``new``; the storage file keeps its name (metadata.yaml lists it)."""
    trash = old.with_name(old.name + '.replaced')
    if trash.exists():
        shutil.rmtree(trash)
    old.rename(trash)
    new.rename(old)
    shutil.rmtree(trash)
