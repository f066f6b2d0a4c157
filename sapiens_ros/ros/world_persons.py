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
One person across every camera, in the robot's world frame: the node's side of the fusion.

:class:`WorldPersons` looks each camera frame's optical frame up in ``world_frame`` with tf2 at
the frame's stamp (:class:`.world_frame.WorldFrame`), hands the frame's people to the core's
:class:`~sapiens_ros.core.people.world_people.WorldPeople` and publishes the world:

- REP-155 persons (:class:`.hri_persons.HriPersons`, with ``hri_msgs``);
- ``person_<id>`` on ``/tf`` in the world frame (and, with ``person_joints_tf``, the fused
  joints as ``<joint>_<id>`` under it), sent only for stamps newer than the last sent, so two
  cameras with one stamp never repeat a transform (tf2 warns of repeated data);
- ``persons/markers``: the fused skeletons (``MarkerArray`` in the world frame).

A frame whose camera has no transform at its stamp leaves its people out (counted, one
throttled line naming both frames); a camera's stamp going back (a bag loop) forgets every
person, with one line. When every camera goes silent, :meth:`WorldPersons.expire` (the node's
timer) ends the persons after ``max_unseen``.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from std_msgs.msg import Header
from visualization_msgs.msg import MarkerArray

from .hri_lists import HRI_MSGS_ERROR
from .hri_persons import HriPersons
from .messages import person_markers
from .qos import output_qos
from .stamps import stamp_seconds
from .tf_frames import person_transforms, TfOut
from .world_frame import LOOKUPS, WorldFrame
from ..core.people.state import People
from ..core.people.world import WorldConfig
from ..core.people.world_people import WorldPeople, WorldState
from ..core.people.world_skeleton import limbs
from ..core.processing.intrinsics import Intrinsics

#: The fused skeletons' topic (node-relative, like the camera outputs).
MARKERS_TOPIC = 'persons/markers'


def camera_matrix(intrinsics: Intrinsics | None) -> np.ndarray | None:
    """Return the 3x3 K of ``intrinsics`` (None without)."""
    if intrinsics is None:
        return None
    return np.array([[intrinsics.fx, 0.0, intrinsics.cx], [0.0, intrinsics.fy, intrinsics.cy],
                     [0.0, 0.0, 1.0]])


class WorldPersons:
    """Persons in ``world_frame`` from every camera of a node; see the module docstring."""

    def __init__(self, node, world_frame: str, tf: TfOut | None,
                 config: WorldConfig | None = None) -> None:
        self._node = node
        self.world_frame = world_frame
        self.frame = WorldFrame(node, world_frame)  # raises without tf2_ros
        self.world = WorldPeople(config)
        self.hri = HriPersons(node) if HRI_MSGS_ERROR is None else None
        self._tf = tf
        self._markers = node.create_publisher(MarkerArray, MARKERS_TOPIC, output_qos(1))
        self._lock = threading.Lock()
        self._tf_stamp = -np.inf
        self._updated = time.monotonic()

    def update(self, camera: str, header: Header, people: People, image: np.ndarray | None,
               intrinsics: Intrinsics | None, joints_tf: bool = False) -> None:
        """Fold one camera frame's people into the persons and publish the world."""
        stamp = stamp_seconds(header.stamp)
        pose = self.frame.camera_to_world(header.frame_id, header.stamp)
        with self._lock:
            self._updated = time.monotonic()
            resets = self.world.resets
            state = self.world.update(camera, stamp, pose, people, image,
                                      camera_matrix(intrinsics))
            if self.world.resets != resets:
                self._tf_stamp = -np.inf
                self._node.get_logger().warning(
                    f'{camera or "camera"}: stamp went back (a bag loop or a clock reset): '
                    'every person of the world is forgotten')
            if state is not None:
                self._publish(Header(stamp=header.stamp, frame_id=self.world_frame), state,
                              joints_tf)

    def _publish(self, world: Header, state: WorldState, joints_tf: bool) -> None:
        if self.hri is not None:
            self.hri.update(world, state.persons, state.stamp)
        markers = self._markers.get_subscription_count() > 0
        send_tf = self._tf is not None and state.stamp > self._tf_stamp and state.persons
        skeletons = self.world.skeletons_of(state.persons) \
            if markers or (send_tf and joints_tf) else None
        if send_tf:
            self._tf_stamp = state.stamp
            self._tf.send(person_transforms(world, state.persons,
                                            skeletons if joints_tf else None))
        if markers:
            self._markers.publish(person_markers(world, skeletons, limbs()))

    def expire(self) -> None:
        """
        End every person when no camera frame came for ``max_unseen`` (wall time).

        Persons age with the frames' stamps; when every camera went silent no stamp comes, so
        the node's timer calls this: the REP-155 lists empty and the per-person topics go.
        """
        with self._lock:
            if not len(self.world.fusion) or \
                    time.monotonic() - self._updated <= self.world.fusion.config.max_unseen:
                return
            self.world.reset()
            if self.hri is not None:
                self.hri.update(Header(frame_id=self.world_frame), [], 0.0)

    def forget(self, camera: str) -> None:
        """Drop a camera that stopped: its views (its bodies' persons age out by time)."""
        with self._lock:
            self.world.forget(camera)

    def diagnostics(self) -> dict:
        """Counters of the fusion and the TF lookups, for the node's diagnostics."""
        out = {'world.frame': self.world_frame}
        out.update({f'world.{k}': v for k, v in self.world.diagnostics().items()})
        out.update({f'world.tf_{k}': self.frame.counters[k] for k in LOOKUPS})
        return out

    def close(self) -> None:
        """Destroy the publishers and stop listening to /tf."""
        if self.hri is not None:
            self.hri.close()
        self._node.destroy_publisher(self._markers)
        self.frame.close()


__all__ = ['MARKERS_TOPIC', 'WorldPersons', 'camera_matrix']
