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
topic) into a tf2 buffer that spans the whole bag, takes each camera's K from its latest
``camera_info`` (:class:`.camera_infos.CameraInfos`), and runs the core's
:class:`~sapiens_ros.core.people.world_people.WorldPeople` on every processed frame, exactly as
the live node's ``world_frame`` does: the camera's optical frame looked up at the frame's stamp,
the frame's tracked people fused into persons. Each fused frame gives the messages the node
publishes, to write into the output bag: ``/tf`` (``person_<id>`` in the world frame),
``/humans/persons/tracked``, ``/humans/candidate_matches`` and ``<namespace>/persons/markers``.
"""

from __future__ import annotations

import logging

import numpy as np
from rclpy.serialization import deserialize_message
from std_msgs.msg import Header

from .camera_infos import CameraInfos
from .rosbag2 import BagError
from ..core.people.state import People
from ..core.people.world_people import WorldPeople
from ..core.people.world_skeleton import limbs
from ..ros.hri_lists import HRI_MSGS_ERROR, IdsList
from ..ros.hri_persons import MATCHES_TOPIC, MatchPacer, PERSONS_NS
from ..ros.messages import person_markers
from ..ros.tf_frames import person_transforms, TF_TOPIC, TFMessage
from ..ros.world_frame import LOOKUPS, TF2_ROS_ERROR, WorldFrame

log = logging.getLogger(__name__)

#: The TF message type in a bag.
TF_TYPE = 'tf2_msgs/msg/TFMessage'
#: The persons' tracked list in the output bag.
TRACKED_TOPIC = f'{PERSONS_NS}/tracked'


class BagWorld:
    """Persons in ``world_frame`` over one bag; see the module docstring."""

    def __init__(self, bag, world_frame: str, infos: CameraInfos, markers_topic: str) -> None:
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
        self.infos = infos
        self._tf_stamp = -np.inf

    def update(self, camera: str, header: Header, people: People,
               image: np.ndarray | None) -> list[tuple[str, object]]:
        """Fuse one processed frame; return the ``(topic, message)`` pairs to write."""
        pose = self.frame.camera_to_world(header.frame_id, header.stamp)
        stamp = header.stamp.sec + header.stamp.nanosec * 1e-9
        resets = self.world.resets
        state = self.world.update(camera, stamp, pose, people, image, self.infos.k(camera))
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


__all__ = ['BagWorld', 'TF_TYPE', 'TRACKED_TOPIC']
