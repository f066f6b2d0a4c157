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

"""Merge the outputs of a bag's time ranges (in time order) into one output bag."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
import shutil

from .sink import OutputBag
from .source import InputBag
from ..ros.topics import INFO_TOPICS


def merge_parts(parts: Sequence[Path], out: Path, storage: str = 'mcap') -> int:
    """
    Copy ``parts`` (consecutive time ranges) into the bag ``out``; return the messages copied.

    The latched ``*_info`` topics are kept once. The bag is written as ``out.merging`` and
    renamed when closed, so a killed merge leaves the parts and no half-merged bag.
    """
    tmp = out.with_name(out.name + '.merging')
    if tmp.exists():
        shutil.rmtree(tmp)
    bag = OutputBag(tmp, storage)
    copied = 0
    latched_done: set[str] = set()
    for part in parts:
        with InputBag(part) as src:
            connections = {c.topic: bag.add_copy(c) for c in src.connections}
            latched = {c.topic for c in src.connections
                       if any(c.topic.endswith('/' + s) for s in INFO_TOPICS.values())}
            for conn, time_ns, raw in src.messages():
                if connections.get(conn.topic) is None or conn.topic in latched_done:
                    continue
                bag.write(conn.topic, time_ns, raw)
                copied += 1
            latched_done |= latched
    bag.close()
    tmp.rename(out)
    return copied
