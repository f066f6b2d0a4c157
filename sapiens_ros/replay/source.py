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

"""Open an input rosbag2 bag, find its camera topics and read the selected messages in order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
import logging
from pathlib import Path

from .rosbag2 import BagError, storage_files, typestore_of
from .scan import ScanBag

#: Camera message types the replay reads, and what each one is.
log = logging.getLogger(__name__)

IMAGE_TYPES = {'sensor_msgs/msg/Image': 'raw', 'sensor_msgs/msg/CompressedImage': 'compressed'}


def bag_dir(path: str | Path, unclosed: bool = False) -> Path:
    """
    Return the rosbag2 directory for ``path`` (the directory, or a storage file inside it).

    ``unclosed`` also accepts a directory whose writer was killed before it wrote
    ``metadata.yaml`` (it still holds its ``.mcap`` / ``.db3`` file).
    """
    path = Path(path)
    if not path.exists():
        raise BagError(f'input bag {str(path)!r} does not exist')
    if path.is_file():
        if path.suffix in ('.mcap', '.db3') and \
                (unclosed or (path.parent / 'metadata.yaml').is_file()):
            return path.parent
        if path.suffix == '.bag':
            raise BagError(f'{path} is a ROS 1 bag; replay reads rosbag2 bags (sqlite3, mcap)')
        raise BagError(f'{path} is not a rosbag2 bag: give the bag directory (with '
                       f'metadata.yaml)')
    if not (path / 'metadata.yaml').is_file() and \
            not (unclosed and storage_files(path)):
        raise BagError(f'{path} has no metadata.yaml: not a rosbag2 bag, or one that was never '
                       f'closed (the recorder was killed)')
    return path


def _distro_of(path: Path, default: str = 'humble') -> str:
    """Return the ``ros_distro`` of a bag's metadata.yaml (``default`` if it has none)."""
    try:
        for line in (path / 'metadata.yaml').read_text(errors='replace').splitlines():
            if line.strip().startswith('ros_distro:'):
                return line.split(':', 1)[1].strip().strip('\'"') or default
    except OSError:
        pass
    return default


def _default_typestore(path: Path):
    """Typestore for bags without embedded definitions, picked by the bag's ``ros_distro``."""
    return typestore_of(_distro_of(path), fallback='humble')


class InputBag:
    """
    A rosbag2 bag opened for reading; every rosbags failure becomes a :class:`BagError`.

    With ``salvage`` a bag rosbags cannot open (a truncated mcap, one whose writer was killed
    before it wrote the summary or ``metadata.yaml``) is read by :class:`ScanBag` up to its
    first damaged record instead; ``salvaged`` then says why.
    """

    def __init__(self, path: str | Path, salvage: bool = False) -> None:
        from rosbags.highlevel import AnyReader

        self.path = bag_dir(path, unclosed=salvage)
        self.salvaged: str | None = None
        self.reader = None
        if not (self.path / 'metadata.yaml').is_file():
            self._scan('it has no metadata.yaml (its writer never closed it)')
        else:
            try:
                self.reader = AnyReader([self.path],
                                        default_typestore=_default_typestore(self.path))
                self.reader.open()
            except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds on bad files
                self.reader = None
                if not salvage or not storage_files(self.path):
                    raise BagError(f'cannot open input bag {self.path}: {type(exc).__name__}: '
                                   f'{exc}') from None
                self._scan(f'rosbags cannot open it: {type(exc).__name__}: {exc}')
        self.connections = list(self.reader.connections)

    def _scan(self, why: str) -> None:
        """Read the bag record by record (its readable prefix)."""
        self.reader = ScanBag(self.path, _distro_of(self.path))
        self.salvaged = why
        log.warning('%s: %s; reading what it holds record by record', self.path, why)

    def __enter__(self) -> InputBag:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the reader (safe to call twice)."""
        if self.reader is not None and getattr(self.reader, 'stack', True) is not None:
            try:
                self.reader.close()
            except Exception:  # noqa: BLE001, S110 - closing a corrupt file must not mask
                pass

    @property
    def start_ns(self) -> int:
        """First message time of the bag (ns)."""
        return int(self.reader.start_time) if self.connections else 0

    @property
    def end_ns(self) -> int:
        """Last message time of the bag (ns)."""
        return int(self.reader.end_time) if self.connections else 0

    def image_topics(self) -> dict[str, str]:
        """Return every Image / CompressedImage topic of the bag with its message type."""
        return {c.topic: c.msgtype for c in self.connections if c.msgtype in IMAGE_TYPES}

    def select(self, names: Sequence[str] | None = None) -> list:
        """Return the connections of the camera topics ``names`` (all camera topics if empty)."""
        found = self.image_topics()
        if not found and self.salvaged:
            damage = getattr(self.reader, 'damage', None)
            raise BagError(f'input bag {self.path} is corrupt or truncated and holds no readable '
                           f'camera message: {damage.text() if damage else self.salvaged}')
        if not names:
            if not found:
                have = ', '.join(f'{c.topic} ({c.msgtype})' for c in self.connections)
                raise BagError(f'{self.path} has no sensor_msgs/Image or CompressedImage topic '
                               f'(topics: {have or "none"})')
            names = sorted(found)
        by_topic = {c.topic: c for c in self.connections}
        for name in names:
            if name not in by_topic:
                raise BagError(f'topic {name!r} is not in {self.path}; camera topics: '
                               f'{", ".join(sorted(found)) or "none"}')
            if name not in found:
                raise BagError(f'topic {name!r} is {by_topic[name].msgtype}, not '
                               f'sensor_msgs/msg/Image or CompressedImage')
        return [c for c in self.connections if c.topic in set(names)]

    def count(self, connections: Sequence) -> int:
        """Message count of ``connections`` from the bag index."""
        return sum(int(c.msgcount) for c in connections)

    def messages(self, connections: Sequence = (), start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple]:
        """
        Yield ``(connection, time_ns, raw)``; a broken file raises BagError saying where.

        rosbags yields time order (ties in write order); a salvaged bag yields write order.
        """
        it = self.reader.messages(connections=connections, start=start, stop=stop)
        count, last = 0, None
        while True:
            try:
                item = next(it)
            except StopIteration:
                break
            except Exception as exc:  # noqa: BLE001 - truncated chunks, bad sqlite pages...
                where = f'after {count} messages' + \
                    (f' (last bag time {last} ns)' if last is not None else '')
                raise BagError(f'input bag {self.path} is corrupt or truncated: reading '
                               f'stopped {where}: {type(exc).__name__}: {exc}') from None
            count, last = count + 1, item[1]
            yield item
        damage = getattr(self.reader, 'damage', None)
        if damage is not None:
            raise BagError(f'input bag {self.path} is corrupt or truncated: {damage.text()}')

    def deserialize(self, raw: bytes, msgtype: str):
        """Deserialize one message (raises the rosbags error on bad bytes)."""
        return self.reader.deserialize(raw, msgtype)
