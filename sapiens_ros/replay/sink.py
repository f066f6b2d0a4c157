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

"""Write the output rosbag2 bag: metadata version 8 (Humble plays it), offered QoS per topic."""

from __future__ import annotations

import os
from pathlib import Path

from .source import BagError, typestore_of

#: Storage plugins by ``--storage`` name.
STORAGES = ('mcap', 'sqlite3')


def msgtype_of(msg_class: type) -> str:
    """ROS type name of an rclpy message class: ``sensor_msgs/msg/Image``."""
    return f"{msg_class.__module__.split('.')[0]}/msg/{msg_class.__name__}"


def runtime_typestore():
    """Typestore of the running ROS distro (ROS_DISTRO, else Jazzy): the rclpy messages' CDR."""
    return typestore_of(os.environ.get('ROS_DISTRO', 'jazzy'))


def qos(depth: int, latched: bool = False):
    """Offered QoS the node uses: reliable keep-last; transient-local for latched topics."""
    from rosbags.interfaces import (Qos, QosDurability, QosHistory, QosLiveliness,
                                    QosReliability, QosTime)

    zero = QosTime(0, 0)
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE,
               QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
               zero, zero, QosLiveliness.AUTOMATIC, zero, False)


class OutputBag:
    """A rosbag2 writer with one connection per topic, created on first use."""

    def __init__(self, path: str | Path, storage: str = 'mcap') -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer

        if storage not in STORAGES:
            raise BagError(f'storage must be one of {", ".join(STORAGES)}, got {storage!r}')
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f'output {self.path} exists already')
        plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
        self.writer = Writer(self.path, version=8, storage_plugin=plugin)
        self.typestore = runtime_typestore()
        self.connections: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        try:
            self.writer.open()
        except Exception as exc:  # noqa: BLE001 - permissions, missing parent...
            raise BagError(f'cannot create output bag {self.path}: {exc}') from None

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

    def close(self) -> None:
        """Write the index and metadata.yaml (the bag is valid only after this)."""
        if self.writer.storage is not None:
            self.writer.close()
