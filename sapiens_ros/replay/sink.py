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
Write the output rosbag2 bag: metadata version 8 (Humble plays it), offered QoS per topic.

The bag is crash-safe: :meth:`OutputBag.checkpoint` makes everything written so far durable
(mcap: the open chunk is written and fsynced; sqlite3: the transaction is committed), so a
killed run leaves a readable prefix that ends at a checkpoint. A failed write (disk full,
unwritable output) drops what came after the last checkpoint and closes the bag with the room a
reserve file kept for its index and ``metadata.yaml``. Each checkpoint carries the caller's tag
(its counts of frames); :attr:`OutputBag.kept` is the tag of what the bag really holds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
import errno
from io import BytesIO
import os
from pathlib import Path

from .rosbag2 import BagError, register_packages, typestore_of
from ..ros.topic_types import type_name as msgtype_of  # noqa: F401 - the one rule, named here

#: Storage plugins by ``--storage`` name.
STORAGES = ('mcap', 'sqlite3')
#: Message packages of the outputs that a distro's typestore lacks, registered by name from
#: their ``.msg`` files (``rosbag2.register_packages``): ``pose/detections``, ``seg/label_info``
#: (vision_msgs), the REP-155 outputs (hri_msgs).
OUTPUT_PACKAGES = ('vision_msgs', 'hri_msgs')


class OutputError(BagError):
    """The output bag cannot be written (unwritable directory, full disk)."""


def runtime_typestore(packages: Iterable[str] = ()):
    """
    Typestore of the running ROS distro (ROS_DISTRO, else Jazzy): the rclpy messages' CDR.

    ``packages`` it lacks are registered from their ``.msg`` files when installed.
    """
    store = typestore_of(os.environ.get('ROS_DISTRO', 'jazzy'))
    register_packages(store, packages)
    return store


def bag_qos(profile):
    """
    Return the offered QoS a recorder keeps for a publisher with rclpy ``profile``.

    The node's own profiles (``ros.qos``), so a replayed output bag offers what the node does.
    """
    from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness,
                                    QosReliability, QosTime)

    zero = QosTime(0, 0)  # no deadline, lifespan or lease: as rclpy's defaults
    return Qos(QosHistory(profile.history.value), profile.depth,
               QosReliability(profile.reliability.value), QosDurability(profile.durability.value),
               zero, zero, QosLiveliness.AUTOMATIC, zero, False)


class OutputBag:
    """A rosbag2 writer with one connection per topic, created on first use."""

    def __init__(self, path: str | Path, storage: str = 'mcap',
                 packages: Iterable[str] = OUTPUT_PACKAGES) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer

        if storage not in STORAGES:
            raise BagError(f'storage must be one of {", ".join(STORAGES)}, got {storage!r}')
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f'output {self.path} exists already')
        plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
        self.writer = Writer(self.path, version=8, storage_plugin=plugin)
        self.typestore = runtime_typestore(packages)
        self.connections: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self.reserve = self.path / RESERVE_NAME
        self._saved: tuple | None = None
        #: The tag of the last durable checkpoint: what the bag holds after :meth:`abandon`.
        self.kept = None
        self._storage_closed = False
        try:
            self.writer.open()
            self.checkpoint()
        except Exception as exc:  # noqa: BLE001 - permissions, missing parent, full disk...
            raise OutputError(f'cannot create output bag {self.path}: {describe(exc)}') from None

    def knows(self, msgtype: str) -> bool:
        """Tell whether :meth:`add` can write ``msgtype`` (its package registered or built in)."""
        return msgtype in self.typestore.types

    def register(self, *packages: str) -> list[str]:
        """Register message packages by name (``'hri_msgs'``); return those not installed."""
        return register_packages(self.typestore, packages)

    def add(self, topic: str, msgtype: str, offered_qos) -> object:
        """Create (once) the connection of an output topic, its definition from the distro."""
        if topic not in self.connections:
            self.connections[topic] = self.writer.add_connection(
                topic, msgtype, typestore=self.typestore, offered_qos_profiles=[offered_qos])
            self.counts[topic] = 0
        return self.connections[topic]

    def add_copy(self, connection) -> object | None:
        """Create (once) a connection mirroring an input one (definition, hash and QoS kept)."""
        topic = connection.topic
        if topic in self.connections:
            return self.connections[topic]
        msgdef = connection.msgdef.data if connection.msgdef.data else None
        digest = connection.digest or None
        profiles = list(getattr(connection.ext, 'offered_qos_profiles', []) or [])
        try:
            if msgdef is None or digest is None:
                conn = self.writer.add_connection(topic, connection.msgtype,
                                                  typestore=self.typestore,
                                                  offered_qos_profiles=profiles)
            else:
                conn = self.writer.add_connection(topic, connection.msgtype, msgdef=msgdef,
                                                  rihs01=digest, offered_qos_profiles=profiles)
        except Exception:  # noqa: BLE001 - an unknown type without definition is not copied
            return None
        self.connections[topic] = conn
        self.counts[topic] = 0
        return conn

    def write(self, topic: str, time_ns: int, data: bytes) -> None:
        """Write one serialized message on a topic created with :meth:`add`."""
        self.writer.write(self.connections[topic], int(time_ns), data)
        self.counts[topic] += 1

    # ------------------------------------------------------------------ crash safety
    def checkpoint(self, tag=None) -> None:
        """
        Make everything written so far durable and remember this state for :meth:`abandon`.

        ``tag`` (the caller's counts) becomes :attr:`kept` once the state is durable. The
        reserve grows first, so a full disk fails before anything of this checkpoint is
        committed and the bag stays at the previous one. Raises the OSError of a full disk.
        """
        storage, writer = self.writer.storage, self.writer
        if storage is None:
            return
        if hasattr(storage, 'close_chunk'):  # mcap: a chunk ends at every checkpoint
            pending = bool(storage.chunk.bio.tell())
            self._grow_reserve(len(storage.chunks) + pending)
            if pending:
                storage.close_chunk()
            storage.bio.flush()
            os.fsync(storage.bio.fileno())
            state = (storage.bio.tell(), len(storage.chunks), dict(storage.channel_stats),
                     storage.message_start_time, storage.message_end_time)
        elif hasattr(storage, 'conn'):  # sqlite3: one transaction per checkpoint
            self._grow_reserve(0)
            storage.conn.commit()
            state = None
        else:
            return
        self._saved = (state, dict(writer.counts), writer.min_timestamp, writer.max_timestamp,
                       dict(self.counts))
        if tag is not None:
            self.kept = tag

    def _grow_reserve(self, chunks: int) -> None:
        """Keep room for the index (about 256 bytes per chunk) and metadata.yaml."""
        size = RESERVE_BASE + 256 * chunks
        have = self.reserve.stat().st_size if self.reserve.exists() else 0
        if size > have:
            with open(self.reserve, 'ab') as f:
                f.write(bytes(size - have))
                f.flush()
                os.fsync(f.fileno())

    def abandon(self) -> str | None:
        """
        After a failed write: drop everything since the last checkpoint, then close the bag.

        Return ``None`` when the bag was closed (valid, indexed, with metadata.yaml), else why
        not; the storage file then still ends at the checkpoint (``--resume`` reads it).
        """
        storage, writer = self.writer.storage, self.writer
        if self._storage_closed:  # everything is in the storage file; only metadata.yaml failed
            return 'its metadata.yaml could not be written'
        if storage is None or self._saved is None:
            return 'the bag was never opened'
        state, counts, lo, hi, ours = self._saved
        if hasattr(storage, 'close_chunk'):
            offset, chunks, stats, start, end = state
            try:
                storage.bio.close()  # its buffer fails to flush again; the file is closed anyway
            except OSError:
                pass
            os.truncate(storage.path, offset)
            storage.bio = open(storage.path, 'r+b')  # noqa: SIM115 - the writer closes it
            storage.bio.seek(offset)
            del storage.chunks[chunks:]
            storage.channel_stats = _since(stats, storage.channel_stats)
            storage.message_start_time, storage.message_end_time = start, end
            storage.chunk = type(storage.chunk)(2**63 - 1, 0, BytesIO(), defaultdict(list))
        else:
            storage.conn.rollback()
        writer.counts = _since(counts, writer.counts)
        writer.min_timestamp, writer.max_timestamp = lo, hi
        self.counts = _since(ours, self.counts)
        self.reserve.unlink(missing_ok=True)  # its room is for the index and metadata.yaml
        try:
            writer.close()
        except Exception as exc:  # noqa: BLE001 - the disk is still full
            writer.storage = None
            if state is not None:
                os.truncate(storage.path, state[0])
            return f'closing it failed too ({describe(exc)})'
        return None

    def close(self, tag=None) -> None:
        """
        Write the index and metadata.yaml (the bag is valid only after this).

        A last checkpoint (tagged ``tag``) first writes the data, so the reserve's room is left
        for the index and metadata.yaml; if the disk is full, :meth:`abandon` then keeps the
        previous checkpoint, or everything when only metadata.yaml failed.
        """
        if self.writer.storage is None:
            return
        self.checkpoint(tag)
        self.reserve.unlink(missing_ok=True)
        try:
            self.writer.close()
        finally:
            self._storage_closed = self.writer.storage is None


#: The file in the bag directory that keeps room for closing the bag on a full disk.
RESERVE_NAME = '.sapiens_replay_reserve'
RESERVE_BASE = 256 * 1024


def _since(saved: dict, now: dict) -> dict:
    """Return the saved counts, with 0 for connections added since the checkpoint."""
    return {key: saved.get(key, 0) for key in now}


def describe(exc: BaseException) -> str:
    """Short text of a write failure; names a full disk plainly."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f'no space left on the device ({exc.strerror})'
    if 'disk is full' in str(exc) or 'database or disk is full' in str(exc):
        return f'no space left on the device ({exc})'
    return f'{type(exc).__name__}: {exc}'
