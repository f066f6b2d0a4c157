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
``--world-frame``: the node's persons over a replayed multi-camera bag (issue 26).

:class:`BagWorld` reads the bag's ``/tf`` and ``/tf_static`` (every ``tf2_msgs/TFMessage``
topic) into a tf2 buffer that spans the whole bag, keeps each camera's latest ``camera_info``
(the sibling ``camera_info`` topic of its image topic), and runs the core's
:class:`~sapiens_ros.core.people.world_people.WorldPeople` on every processed frame, exactly as
the live node's ``world_frame`` does: the camera's optical frame looked up at the frame's stamp,
the frame's tracked people fused into persons. Each fused frame gives the messages the node
publishes, to write into the output bag: ``/tf`` (``person_<id>`` in the world frame),
``/humans/persons/tracked``, ``/humans/candidate_matches`` and ``<namespace>/persons/markers``.
"""

from __future__ import annotations

import logging
from pathlib import PurePosixPath

import numpy as np
from rclpy.serialization import deserialize_message
from sensor_msgs.msg import CameraInfo
from std_msgs.msg import Header

from .rosbag2 import BagError
from ..core.people.state import People
from ..core.people.world_people import WorldPeople
from ..core.people.world_skeleton import limbs
from ..ros.hri_bodies import HRI_MSGS_ERROR, IdsList
from ..ros.hri_persons import MATCHES_TOPIC, MatchPacer, PERSONS_NS
from ..ros.messages import person_markers
from ..ros.tf_frames import person_transforms, TF_TOPIC, TFMessage
from ..ros.world_frame import LOOKUPS, TF2_ROS_ERROR, WorldFrame

log = logging.getLogger(__name__)

#: The TF message type in a bag.
TF_TYPE = 'tf2_msgs/msg/TFMessage'
#: The persons' tracked list in the output bag.
TRACKED_TOPIC = f'{PERSONS_NS}/tracked'


def info_topic(image_topic: str) -> str:
    """Return the camera_info topic beside an image topic (``/cam/image_raw`` -> ``/cam/...``)."""
    parent = PurePosixPath(image_topic).parent
    if parent.name == 'compressed':  # /cam/image/compressed
        parent = parent.parent
    return str(parent / 'camera_info')


class BagWorld:
    """Persons in ``world_frame`` over one bag; see the module docstring."""

    def __init__(self, bag, world_frame: str, cameras: list[str], markers_topic: str) -> None:
        if TF2_ROS_ERROR is not None or TFMessage is None:
            raise BagError(f'--world-frame needs tf2_ros and tf2_msgs ({TF2_ROS_ERROR}): '
                           'install ros-$ROS_DISTRO-tf2-ros-py')
        tf_conns = [c for c in bag.connections if c.msgtype == TF_TYPE]
        if not tf_conns:
            raise BagError(f'--world-frame {world_frame} needs /tf or /tf_static in the bag, '
                           f'and {bag.path} records no {TF_TYPE} topic')
        span = max(0.0, (bag.end_ns - bag.start_ns) / 1e9) + 10.0
        self.frame = WorldFrame(None, world_frame, cache_s=span, warn=log.warning)
        self.transforms = 0
        for conn, _, raw in bag.messages(tf_conns):
            static = conn.topic.rstrip('/').endswith('tf_static')
            for t in deserialize_message(raw, TFMessage).transforms:
                if static:
                    self.frame.buffer.set_transform_static(t, 'bag')
                else:
                    self.frame.buffer.set_transform(t, 'bag')
                self.transforms += 1
        self.world_frame = world_frame
        self.world = WorldPeople()
        self.pacer = MatchPacer()
        self.markers_topic = markers_topic
        names = {c.topic for c in bag.connections}
        self.info_topics = {info_topic(t): t for t in cameras if info_topic(t) in names}
        self._k: dict[str, np.ndarray] = {}
        self._tf_stamp = -np.inf

    def topics(self) -> dict[str, type]:
        """Return the output topics and their message types (REP-155 ones with hri_msgs)."""
        from visualization_msgs.msg import MarkerArray

        out = {TF_TOPIC: TFMessage, self.markers_topic: MarkerArray}
        if HRI_MSGS_ERROR is None:
            from ..ros.hri_bodies import IdsMatch

            out.update({TRACKED_TOPIC: IdsList, MATCHES_TOPIC: IdsMatch})
        return out

    def camera_info(self, topic: str, raw: bytes) -> None:
        """Keep the newest K of a camera (triangulation, a metric pointmap) from its info."""
        info = deserialize_message(raw, CameraInfo)
        k = np.asarray(info.k, np.float64).reshape(3, 3)
        if np.isfinite(k).all() and k[0, 0] > 0 and k[1, 1] > 0:
            self._k[self.info_topics[topic]] = k

    def focal_length(self, camera: str) -> float | None:
        """Return a camera's calibrated fx (pixels), or None before its first camera_info."""
        k = self._k.get(camera)
        return None if k is None else float(k[0, 0])

    def update(self, camera: str, header: Header, people: People,
               image: np.ndarray | None) -> list[tuple[str, object]]:
        """Fuse one processed frame; return the ``(topic, message)`` pairs to write."""
        pose = self.frame.camera_to_world(header.frame_id, header.stamp)
        stamp = header.stamp.sec + header.stamp.nanosec * 1e-9
        resets = self.world.resets
        state = self.world.update(camera, stamp, pose, people, image, self._k.get(camera))
        if self.world.resets != resets:  # the bag's time went back: /tf starts over too
            self._tf_stamp = -np.inf
        if state is None:
            return []
        world = Header(stamp=header.stamp, frame_id=self.world_frame)
        out: list[tuple[str, object]] = []
        if state.persons and state.stamp > self._tf_stamp:
            self._tf_stamp = state.stamp
            out.append((TF_TOPIC, TFMessage(transforms=person_transforms(world, state.persons))))
        out.append((self.markers_topic, person_markers(
            world, self.world.skeletons_of(state.persons), limbs())))
        if HRI_MSGS_ERROR is None:
            out.append((TRACKED_TOPIC, IdsList(header=world,
                                               ids=[p.person_id for p in state.persons])))
            out += [(MATCHES_TOPIC, m) for m in self.pacer.due(state.persons, stamp)]
        return out

    def diagnostics(self) -> dict:
        """Return the fusion's counters and the lookups, for the summary."""
        out = dict(self.world.diagnostics())
        out.update({f'tf_{k}': self.frame.counters[k] for k in LOOKUPS})
        return out


__all__ = ['BagWorld', 'TF_TYPE', 'TRACKED_TOPIC', 'info_topic']
