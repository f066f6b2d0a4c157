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
from pathlib import Path

from ..core.errors import SapiensError

#: Camera message types the replay reads, and what each one is.
IMAGE_TYPES = {'sensor_msgs/msg/Image': 'raw', 'sensor_msgs/msg/CompressedImage': 'compressed'}

#: Typestores by ROS 2 distro (bags without message definitions, the running distro's CDR).
_STORES = {'humble': 'ROS2_HUMBLE', 'iron': 'ROS2_IRON', 'jazzy': 'ROS2_JAZZY',
           'kilted': 'ROS2_KILTED'}


def typestore_of(distro: str, fallback: str = 'jazzy'):
    """Return the rosbags typestore of a ROS 2 distro name (``fallback`` for unknown names)."""
    from rosbags.typesys import get_typestore, Stores

    name = _STORES.get(distro.strip().lower()) or _STORES[fallback]
    return get_typestore(getattr(Stores, name))


class BagError(SapiensError):
    """The input or output bag cannot be used (missing, corrupt, truncated, wrong topics)."""


def bag_dir(path: str | Path) -> Path:
    """Return the rosbag2 directory for ``path`` (the directory, or a storage file inside it)."""
    path = Path(path)
    if not path.exists():
        raise BagError(f'input bag {str(path)!r} does not exist')
    if path.is_file():
        if path.suffix in ('.mcap', '.db3') and (path.parent / 'metadata.yaml').is_file():
            return path.parent
        if path.suffix == '.bag':
            raise BagError(f'{path} is a ROS 1 bag; replay reads rosbag2 bags (sqlite3, mcap)')
        raise BagError(f'{path} is not a rosbag2 bag: give the bag directory (with '
                       f'metadata.yaml)')
    if not (path / 'metadata.yaml').is_file():
        raise BagError(f'{path} has no metadata.yaml: not a rosbag2 bag, or one that was never '
                       f'closed (the recorder was killed)')
    return path


def _default_typestore(path: Path):
    """Typestore for bags without embedded definitions, picked by the bag's ``ros_distro``."""
    distro = 'humble'
    try:
        for line in (path / 'metadata.yaml').read_text(errors='replace').splitlines():
            if line.strip().startswith('ros_distro:'):
                distro = line.split(':', 1)[1].strip().strip('\'"') or distro
    except OSError:
        pass
    return typestore_of(distro, fallback='humble')


class InputBag:
    """A rosbag2 bag opened for reading; every rosbags failure becomes a :class:`BagError`."""

    def __init__(self, path: str | Path) -> None:
        from rosbags.highlevel import AnyReader

        self.path = bag_dir(path)
        try:
            self.reader = AnyReader([self.path], default_typestore=_default_typestore(self.path))
            self.reader.open()
        except Exception as exc:  # noqa: BLE001 - rosbags raises many kinds on bad files
            raise BagError(f'cannot open input bag {self.path}: {type(exc).__name__}: '
                           f'{exc}') from None
        self.connections = list(self.reader.connections)

    def __enter__(self) -> InputBag:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close the reader (safe to call twice)."""
        if self.reader is not None and self.reader.stack is not None:
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
        """Yield ``(connection, time_ns, raw)`` in time order; a broken file raises BagError."""
        it = self.reader.messages(connections=connections, start=start, stop=stop)
        while True:
            try:
                item = next(it)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - truncated chunks, bad sqlite pages...
                raise BagError(f'input bag {self.path} is corrupt or truncated: '
                               f'{type(exc).__name__}: {exc}') from None
            yield item

    def deserialize(self, raw: bytes, msgtype: str):
        """Deserialize one message (raises the rosbags error on bad bytes)."""
        return self.reader.deserialize(raw, msgtype)
