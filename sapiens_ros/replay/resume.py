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

Frames are keyed by their position in the input: ``(camera topic, index)``, the index counting
that topic's messages from the start of the bag. A failed frame's error record names its index.
Outputs carry only the input's bag time, so a frame's outputs are found by bag time and, for
frames sharing one bag time, by order: the writer writes frames in input order and the readers
return equal times in write order, so the k-th complete set of outputs at time t belongs to the
k-th frame at t that has no error record. A frame counts as done when every one of its outputs
is there (a hard stop can cut a frame short: it is processed again).

The partial bag may be closed (Ctrl-C, SIGTERM), never closed (kill -9, power cut: its readable
prefix is read record by record) or a ``.resume`` bag of an earlier resume that was itself cut
short; :func:`best_partial` picks whichever holds the most frames. rosbag2 writers cannot
append, so the done frames are copied into a new bag that the run then continues;
:func:`swap_in` puts it in place of the old one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
import logging
from pathlib import Path
import shutil

from .records import record_values
from .rosbag2 import BagError
from .source import InputBag
from ..ros.array_msgs import cloud_field
from ..ros.topics import INFO_TOPICS

#: The output whose ``id`` field holds each person's track id.
PERSONS = 'pose/persons'

log = logging.getLogger(__name__)


class PartialRun:
    """What a partial output bag holds, keyed by ``(input topic, index)``."""

    def __init__(self, path: str | Path, outputs: dict[str, str], errors_topic: str) -> None:
        """Index the bag: ``outputs`` maps each output topic to its input (camera) topic."""
        self.path = Path(path)
        self.outputs = outputs
        self.errors_topic = errors_topic
        try:
            self.bag = InputBag(self.path, salvage=True)
        except BagError as exc:
            raise BagError(f'cannot resume from {self.path}: {exc}') from None
        per_input: dict[str, set] = defaultdict(set)
        for out, inp in outputs.items():
            per_input[inp].add(out)
        groups: dict[tuple[str, int], Counter] = defaultdict(Counter)
        #: The highest person track id the bag holds per camera (a resume never reuses one).
        self.max_track_id: Counter = Counter()
        self.failed: set[tuple[str, int]] = set()
        self.copied: Counter = Counter()
        self.latched = {c.topic for c in self.bag.connections
                        if any(c.topic.endswith('/' + s) for s in INFO_TOPICS.values())}
        try:
            for conn, time_ns, raw in self.bag.messages():
                if conn.topic in outputs:
                    groups[(outputs[conn.topic], time_ns)][conn.topic] += 1
                    if conn.topic.endswith('/' + PERSONS):
                        self._note_ids(outputs[conn.topic], raw, conn.msgtype)
                elif conn.topic == errors_topic:
                    key = self._failed_frame(raw, conn.msgtype)
                    if key is not None:
                        self.failed.add(key)
                elif conn.topic not in self.latched:
                    self.copied[(conn.topic, time_ns)] += 1
        except BagError as exc:  # the unfinished tail of a killed run: the prefix counts
            log.warning('resuming from what %s holds up to its last checkpoint (%s)',
                        self.path, str(exc).split(': ', 1)[-1])
        #: Frames with all outputs, per (input topic, bag time).
        self.complete = {key: min(counts[o] for o in per_input[key[0]])
                         for key, counts in groups.items()}
        self._taken: Counter = Counter()
        self._copies_taken: Counter = Counter()

    def _note_ids(self, topic: str, raw: bytes, msgtype: str) -> None:
        """Raise :attr:`max_track_id` of ``topic`` to the ids of a ``pose/persons`` cloud."""
        ids = cloud_field(self.bag.deserialize(raw, msgtype), 'id')
        if ids is not None and ids.size:
            self.max_track_id[topic] = max(self.max_track_id[topic], int(ids.max()))

    def _failed_frame(self, raw: bytes, msgtype: str) -> tuple[str, int] | None:
        """``(topic, index)`` of an error record; None for a record of where input broke."""
        values = record_values(self.bag.deserialize(raw, msgtype))
        if values.get('kind') == 'input' or 'topic' not in values:
            return None
        return values['topic'], int(values.get('frame_index', -1))

    @property
    def frames(self) -> int:
        """Frames the bag holds (complete outputs or an error record)."""
        return sum(self.complete.values()) + len(self.failed)

    def held(self, topic: str, index: int, time_ns: int) -> str | None:
        """
        Return 'processed' or 'failed' if the bag holds this frame, else None.

        Call it once per frame, in input order (the ordinal among equal bag times counts).
        """
        if (topic, index) in self.failed:
            return 'failed'
        key = (topic, time_ns)
        if self._taken[key] < self.complete.get(key, 0):
            self._taken[key] += 1
            return 'processed'
        return None

    def take_copy(self, topic: str, time_ns: int) -> bool:
        """Return whether a copied input message (``--copy-inputs``) is already in the bag."""
        key = (topic, time_ns)
        if self._copies_taken[key] < self.copied[key]:
            self._copies_taken[key] += 1
            return True
        return False

    def copy_into(self, out) -> int:
        """Copy the done frames, their error records and the other topics into ``out``."""
        copied = 0
        connections = {c.topic: out.add_copy(c) for c in self.bag.connections}
        kept: Counter = Counter()
        try:
            for conn, time_ns, raw in self.bag.messages():
                if connections.get(conn.topic) is None:
                    continue
                if conn.topic in self.outputs:
                    key = (conn.topic, time_ns)
                    if kept[key] >= self.complete.get((self.outputs[conn.topic], time_ns), 0):
                        continue  # a frame cut short by a hard stop: it is processed again
                    kept[key] += 1
                elif conn.topic == self.errors_topic and \
                        self._failed_frame(raw, conn.msgtype) is None:
                    continue  # where an earlier run's input broke: this run reads it again
                out.write(conn.topic, time_ns, raw)
                copied += 1
        except BagError:
            pass  # the same damaged tail as in __init__
        return copied

    def close(self) -> None:
        """Close the partial bag."""
        self.bag.close()


def temp_path(path: str | Path) -> Path:
    """Where the continued bag is written before it replaces the partial one."""
    path = Path(path)
    return path.with_name(path.name + '.resume')


def trash_path(path: str | Path) -> Path:
    """Where :func:`swap_in` moves the old bag before deleting it."""
    path = Path(path)
    return path.with_name(path.name + '.replaced')


def leftovers(path: str | Path) -> list[Path]:
    """Return the output bag and what an interrupted resume of it left, where they exist."""
    return [p for p in (Path(path), temp_path(path), trash_path(path)) if p.exists()]


def best_partial(path: Path, outputs: dict[str, str], errors_topic: str) -> PartialRun:
    """
    Open the partial run that holds the most frames, moved to ``path``; delete the others.

    A resume killed before its swap leaves ``path.resume`` (the done frames copied, then new
    ones) beside ``path``; each is a consistent state, so the larger one is kept.
    """
    runs = []
    for candidate in leftovers(path):
        try:
            runs.append(PartialRun(candidate, outputs, errors_topic))
        except BagError as exc:
            log.warning('ignoring %s: %s', candidate, exc)
    if not runs:
        raise BagError(f'cannot resume {path}: no readable partial output')
    best = max(runs, key=lambda r: r.frames)
    for run in runs:
        if run is not best:
            run.close()
            if run.path != path:
                shutil.rmtree(run.path)
    if best.path == path:
        return best
    best.close()
    if path.exists():
        shutil.rmtree(path)
    best.path.rename(path)
    return PartialRun(path, outputs, errors_topic)


def swap_in(new: Path, old: Path) -> None:
    """Replace ``old`` by ``new``; the storage file keeps its name (metadata.yaml lists it)."""
    trash = trash_path(old)
    if trash.exists():
        shutil.rmtree(trash)
    old.rename(trash)
    new.rename(old)
    shutil.rmtree(trash)
