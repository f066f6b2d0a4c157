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
The people of a node's cameras in the robot's world: body frames on /tf, REP-155 bodies.

:class:`PeopleWorld` is what a node wires in: create it at configure, call
:meth:`PeopleWorld.publish` for every frame that ran pose (any camera, any thread), and
:meth:`PeopleWorld.close` at cleanup. It logs once per missing message package what it does
not publish, and otherwise needs nothing but the frame's header, result and people.
"""

from __future__ import annotations

from dataclasses import dataclass
import threading

import numpy as np
from rclpy.node import Node
from std_msgs.msg import Header

from .hri_bodies import HRI_MSGS_ERROR, HriBodies
from .optional_msgs import missing_packages
from .tf_frames import body_tf_message, TF2_MSGS_ERROR, TF_QOS, TF_TOPIC, TFMessage
from ..core.people.body_frames import body_frames
from ..core.people.state import People
from ..core.pipeline.pipeline import FrameResult


@dataclass
class WorldOptions:
    """The node's parameters for these outputs (read at every frame: runtime changes apply)."""

    publish_tf: bool = True  # body_<id> on /tf (when tf2_msgs imports)
    tf_joints: bool = False  # and the REP-155 joint frames
    hri: bool = False  # REP-155 bodies under /humans/bodies (when hri_msgs imports)


class PeopleWorld:
    """Body frames and REP-155 bodies of one node's cameras; see the module docstring."""

    def __init__(self, node: Node, options: WorldOptions | None = None) -> None:
        self.options = options or WorldOptions()
        self._node = node
        self._lock = threading.Lock()
        for line in missing_packages().values():
            node.get_logger().warning(line)
        self._tf = node.create_publisher(TFMessage, TF_TOPIC, TF_QOS) \
            if TF2_MSGS_ERROR is None else None
        self._hri: HriBodies | None = None

    @property
    def hri(self) -> HriBodies | None:
        """Return the REP-155 publisher, once ``hri`` was on for a frame."""
        return self._hri

    def demand(self) -> tuple[bool, bool]:
        """Tell whether these outputs want tracked people now, and whether they want 3D."""
        opts = self.options
        tf = opts.publish_tf and self._tf is not None and self._tf.get_subscription_count() > 0
        return tf or (opts.hri and HRI_MSGS_ERROR is None), tf

    def publish(self, camera: str, header: Header, result: FrameResult, people: People,
                image: np.ndarray | None = None) -> None:
        """
        Publish one frame of ``camera``: its body frames on /tf and, with ``hri``, its bodies.

        ``header`` is the input image's (stamp, optical frame); ``image`` (HxWx3 RGB uint8)
        feeds ``/humans/bodies/<id>/cropped``.
        """
        opts = self.options
        if opts.publish_tf and self._tf is not None and self._tf.get_subscription_count():
            frames = body_frames(people, joints=opts.tf_joints)
            if len(frames):
                self._tf.publish(body_tf_message(header, frames))
        if opts.hri and HRI_MSGS_ERROR is None:
            with self._lock:
                if self._hri is None:
                    self._hri = HriBodies(self._node)
            self._hri.update(camera, header, result, people, image)

    def forget(self, camera: str) -> None:
        """Drop a camera that stopped (its REP-155 bodies end)."""
        if self._hri is not None:
            self._hri.forget(camera)

    def close(self) -> None:
        """Destroy the publishers."""
        if self._hri is not None:
            self._hri.close()
            self._hri = None
        if self._tf is not None:
            self._node.destroy_publisher(self._tf)
            self._tf = None


__all__ = ['PeopleWorld', 'WorldOptions']
