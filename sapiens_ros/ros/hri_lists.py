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
REP-155 tracked lists over a node's cameras and the lifetimes of their per-id topics.

``/humans/bodies/tracked`` and ``/humans/faces/tracked`` share this one place.

An id is live while a camera's latest frame lists it (its track seen within ``track_max_age``).
Each id's entry (its publishers) is created by the subclass on first use and destroyed when the
id leaves every camera's list; a camera that sends nothing for ``max_age`` (wall time:
:meth:`HriList.expire`, from the node's timer), one that stops (:meth:`HriList.forget`) and
:meth:`HriList.close` drop its ids, publishing the list without them (libhri keeps the last
list it got). Thread-safe: the subclass works under :attr:`HriList._lock`.
"""

from __future__ import annotations

import threading
import time

from rclpy.node import Node
try:
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:  # Humble: the same class, under its old module name
    from rclpy.qos_event import PublisherEventCallbacks
from std_msgs.msg import Header

from .optional_msgs import import_error, message_types
from .qos import HRI_QOS

IdsList, NormalizedRegionOfInterest2D, Skeleton2D, IdsMatch = message_types('hri_msgs')
HRI_MSGS_ERROR = import_error('hri_msgs')


def destroyable_publisher(node: Node, msg_type: type, topic: str, qos):
    """
    Create a publisher that any thread may destroy while an executor spins.

    Bodies, faces and persons come and go in the worker's threads. A publisher's QoS event
    handlers sit in the executor's wait set, and destroying one there between the executor
    listing it and waiting on it raises ``InvalidHandle`` in the executor's thread, which stops
    the node. Without handlers the publisher is never in the wait set (a subscriber with
    incompatible QoS still gets its own warning). See ros2/rclpy#1284 and ``ros.executors``.
    """
    return node.create_publisher(
        msg_type, topic, qos, event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))


class HriList:
    """The tracked list on ``topic`` and its entries (objects with a ``publishers`` tuple)."""

    def __init__(self, node: Node, topic: str) -> None:
        if HRI_MSGS_ERROR is not None:
            raise RuntimeError(f'hri_msgs is not available ({HRI_MSGS_ERROR})')
        self._node = node
        self._lock = threading.Lock()
        self._entries: dict[str, object] = {}
        self._live: dict[str, dict[str, int]] = {}  # camera -> id -> track (the list's order)
        self._seen: dict[str, float] = {}  # camera -> monotonic time of its last frame
        self._tracked = destroyable_publisher(node, IdsList, topic, HRI_QOS)

    def _set_live(self, camera: str, ids: dict[str, int]) -> None:
        """Note a frame of ``camera`` and its live ids (call under the lock)."""
        self._seen[camera] = time.monotonic()
        self._live[camera] = ids

    def expire(self, max_age: float) -> list[str]:
        """Drop the ids of cameras that sent no frame for ``max_age`` s; return those cameras."""
        with self._lock:
            now = time.monotonic()
            silent = [c for c, t in self._seen.items() if now - t > max_age and self._live.get(c)]
            for camera in silent:
                self._live.pop(camera, None)
            if silent:
                self._drop_lost()
                self._publish_tracked(self._now())
            return silent

    def forget(self, camera: str, header: Header | None = None) -> None:
        """Drop a camera's ids (it stopped); publish the list without them."""
        with self._lock:
            self._live.pop(camera, None)
            self._seen.pop(camera, None)
            self._drop_lost()
            self._publish_tracked(header or self._now())

    def close(self) -> None:
        """Publish an empty list (consumers keep the last one), destroy every publisher."""
        with self._lock:
            self._live.clear()
            self._drop_lost()
            try:
                self._publish_tracked(self._now())
            except Exception:  # noqa: BLE001 - a signal already shut the context down
                pass
            self._node.destroy_publisher(self._tracked)
            self._closed()

    def _closed(self) -> None:
        """Destroy the subclass's own shared publishers (none here)."""

    def _drop_lost(self) -> None:
        live = set().union(*self._live.values()) if self._live else set()
        for name in [n for n in self._entries if n not in live]:
            for pub in self._entries.pop(name).publishers:
                self._node.destroy_publisher(pub)

    def _publish_tracked(self, header: Header) -> None:
        order: dict[str, int] = {}
        for live in self._live.values():
            order.update(live)
        self._tracked.publish(IdsList(header=header, ids=sorted(order, key=order.__getitem__)))

    def _now(self) -> Header:
        return Header(stamp=self._node.get_clock().now().to_msg())


__all__ = ['HRI_MSGS_ERROR', 'HriList', 'IdsList', 'IdsMatch', 'NormalizedRegionOfInterest2D',
           'Skeleton2D', 'destroyable_publisher']
