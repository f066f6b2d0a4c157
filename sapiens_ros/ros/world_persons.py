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

:class:`WorldPersons` takes each camera frame's tracked people (any camera, in the order the
worker publishes them), looks the camera's optical frame up in ``world_frame`` with tf2 at the
frame's stamp (:class:`.world_frame.WorldFrame`), and folds the bodies into the persons
(:class:`~sapiens_ros.core.people.world.WorldFusion`: a body's position from measured depth or
the metric pointmap, its appearance from the clothes' colours at its keypoints). It publishes:

- REP-155 persons (:class:`.hri_persons.HriPersons`, with ``hri_msgs``);
- ``person_<id>`` on ``/tf`` in the world frame (and, with ``person_joints_tf``, the fused
  joints as ``<joint>_<id>`` under it), sent only for stamps newer than the last sent, so two
  cameras with one stamp never repeat a transform (tf2 warns of repeated data);
- ``persons/markers``: the fused skeletons (``MarkerArray`` in the world frame).

A frame whose camera has no transform at its stamp leaves its people out (counted, one
throttled line naming both frames); a camera's stamp going back by more than
:data:`TIME_BACK_RESET_S` (a bag loop) forgets every person, with one line.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from std_msgs.msg import Header
from visualization_msgs.msg import MarkerArray

from .hri_bodies import HRI_MSGS_ERROR
from .hri_persons import HriPersons
from .messages import person_markers
from .qos import output_qos
from .stamps import stamp_seconds
from .tf_frames import joint_transforms, TfOut, transform
from .world_frame import LOOKUPS, WorldFrame
from ..core.people.appearance import keypoint_colours
from ..core.people.body_frames import body_id
from ..core.people.hri_ids import FiveLetterIds
from ..core.people.state import People
from ..core.people.triangulate import projection_matrix
from ..core.people.world import BodyObservation, WorldConfig, WorldFusion
from ..core.people.world_skeleton import body_views, joint_names, limbs, SkeletonFusion
from ..core.processing.intrinsics import Intrinsics

#: A camera whose stamp goes back by more than this (s) restarted (a bag loop): start over.
TIME_BACK_RESET_S = 3.0
#: The fused skeletons' topic (node-relative, like the camera outputs).
MARKERS_TOPIC = 'persons/markers'


def camera_matrix(intrinsics: Intrinsics) -> np.ndarray:
    """Return the 3x3 K of ``intrinsics``."""
    return np.array([[intrinsics.fx, 0.0, intrinsics.cx], [0.0, intrinsics.fy, intrinsics.cy],
                     [0.0, 0.0, 1.0]])


class WorldPersons:
    """Persons in ``world_frame`` from every camera of a node; see the module docstring."""

    def __init__(self, node, world_frame: str, tf: TfOut | None,
                 config: WorldConfig | None = None) -> None:
        self._node = node
        self.world_frame = world_frame
        self.frame = WorldFrame(node, world_frame)  # raises without tf2_ros
        self.fusion = WorldFusion(config, ids=FiveLetterIds())
        self.skeletons = SkeletonFusion()
        self.hri = HriPersons(node) if HRI_MSGS_ERROR is None else None
        self._tf = tf
        self._markers = node.create_publisher(MarkerArray, MARKERS_TOPIC, output_qos(1))
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}  # camera -> its newest stamp
        self._tf_stamp = -np.inf
        self._updated = time.monotonic()
        self.resets = 0

    def update(self, camera: str, header: Header, people: People, image: np.ndarray | None,
               intrinsics: Intrinsics | None, joints_tf: bool = False) -> None:
        """Fold one camera frame's people into the persons and publish the world."""
        stamp = stamp_seconds(header.stamp)
        pose = self.frame.camera_to_world(header.frame_id, header.stamp)
        with self._lock:
            self._updated = time.monotonic()
            self._check_time(camera, stamp)
            rows = np.flatnonzero((people.ids >= 0) & people.torso_valid) \
                if people.xyz_metric else np.zeros(0, np.intp)
            names = [body_id(t) for t in people.ids[rows].tolist()]
            looks = keypoint_colours(image, people.smoothed[rows], people.scores[rows]) \
                if image is not None and len(rows) else None
            source = 'depth' if people.xyz_source == 'depth' else 'pointmap'
            bodies = [BodyObservation(name, people.torso_position[row], source,
                                      None if looks is None else looks[i])
                      for i, (name, row) in enumerate(zip(names, rows.tolist(), strict=True))]
            fused = self.fusion.update(camera, stamp, pose, bodies)
            if fused.status != 'fused':
                return
            projection = None if intrinsics is None else \
                projection_matrix(camera_matrix(intrinsics), pose)
            views = body_views(stamp, people.smoothed[rows], people.scores[rows],
                               None if people.xyz is None else people.xyz[rows], pose,
                               projection)
            self.skeletons.observe(camera, names, views)
            self._publish(header, stamp, joints_tf)

    def _check_time(self, camera: str, stamp: float) -> None:
        last = self._last.get(camera)
        self._last[camera] = stamp
        if last is not None and stamp < last - TIME_BACK_RESET_S:
            self.fusion.reset()
            self.skeletons.reset()
            self._last = {camera: stamp}
            self._tf_stamp = -np.inf
            self.resets += 1
            self._node.get_logger().warning(
                f'{camera or "camera"}: stamp went back {last - stamp:.1f} s (a bag loop or a '
                'clock reset): every person of the world is forgotten')

    def _publish(self, header: Header, stamp: float, joints_tf: bool) -> None:
        persons = self.fusion.persons(stamp)
        world = Header(stamp=header.stamp, frame_id=self.world_frame)
        skeletons = [self.skeletons.skeleton(p.person_id, [(b.camera, b.body_id)
                                                           for b in p.bodies])
                     for p in persons]
        if self.hri is not None:
            self.hri.update(world, persons, stamp)
        if self._tf is not None and stamp > self._tf_stamp and persons:
            self._tf_stamp = stamp
            out = []
            for person, skel in zip(persons, skeletons, strict=True):
                frame = f'person_{person.person_id}'
                out.append(transform(world, self.world_frame, frame, person.position))
                if joints_tf:
                    out += joint_transforms(world, frame, person.person_id, joint_names(),
                                            skel.xyz - person.position)
            self._tf.send(out)
        if self._markers.get_subscription_count():
            self._markers.publish(person_markers(world, skeletons, limbs()))

    def expire(self) -> None:
        """
        End every person when no camera frame came for ``max_unseen`` (wall time).

        Persons age with the frames' stamps; when every camera went silent no stamp comes, so
        the node's timer calls this: the REP-155 lists empty and the per-person topics go.
        """
        with self._lock:
            if not len(self.fusion) or \
                    time.monotonic() - self._updated <= self.fusion.config.max_unseen:
                return
            self.fusion.reset()
            self.skeletons.reset()
            if self.hri is not None:
                self.hri.update(Header(frame_id=self.world_frame), [], 0.0)

    def forget(self, camera: str) -> None:
        """Drop a camera that stopped: its views (its bodies' persons age out by time)."""
        with self._lock:
            self.skeletons.forget(camera)
            self._last.pop(camera, None)

    def diagnostics(self) -> dict:
        """Counters of the fusion and the TF lookups, for the node's diagnostics."""
        out = {'world.frame': self.world_frame, 'world.resets': self.resets}
        out.update({f'world.{k}': v for k, v in self.fusion.diagnostics().items()})
        out.update({f'world.tf_{k}': self.frame.counters[k] for k in LOOKUPS})
        return out

    def close(self) -> None:
        """Destroy the publishers and stop listening to /tf."""
        if self.hri is not None:
            self.hri.close()
        self._node.destroy_publisher(self._markers)
        self.frame.close()


__all__ = ['MARKERS_TOPIC', 'TIME_BACK_RESET_S', 'WorldPersons', 'camera_matrix']
