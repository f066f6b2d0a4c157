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
The people of a node's cameras in the robot's world: body frames, REP-155 bodies, persons.

:class:`PeopleWorld` is what a node wires in: create it at configure, call
:meth:`PeopleWorld.publish` for every frame that ran pose (any camera, any thread), and
:meth:`PeopleWorld.close` at cleanup. It logs once per missing package what it does not
publish, and otherwise needs nothing but the frame's header, result and people. With
``world_frame`` set (and tf2_ros importable) it also runs :class:`.world_persons.WorldPersons`;
without tf2_ros it says so once and keeps the per-camera outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
import threading

import numpy as np
from rclpy.node import Node
from std_msgs.msg import Header

from .body_messages import face_transform, link_transforms, rig_transforms
from .hri_bodies import HRI_MSGS_ERROR, HriBodies
from .hri_faces import face_id, HriFaces
from .optional_msgs import missing_packages
from .tf_frames import body_transforms, TF_ERROR, TfOut, valid_frame_id
from .world_frame import TF2_ROS_ERROR
from .world_persons import WorldPersons
from ..core.people.body_frames import body_frames, body_id
from ..core.people.body_models import BodyModelFrame, BodyModels
from ..core.people.state import People
from ..core.pipeline.pipeline import FrameResult
from ..core.processing.intrinsics import Intrinsics


@dataclass
class WorldOptions:
    """The node's parameters for these outputs (read at every frame: runtime changes apply)."""

    publish_tf: bool = True  # body_<id> on /tf (when tf2_msgs imports)
    tf_joints: bool = False  # and the REP-155 joint frames
    hri: bool = False  # REP-155 bodies under /humans/bodies (when hri_msgs imports)
    world_frame: str = ''  # persons in this tf2 frame (configure); empty: off
    person_joints_tf: bool = False  # and each person's fused joints under person_<id>
    body_links: str = 'node'  # the humanoid's link frames: 'node' sends them, else rsp
    avatar_tf: bool = False  # the VRM rig's bone frames under body_<id>


class PeopleWorld:
    """Body frames, REP-155 bodies and world persons of one node's cameras; see the module."""

    def __init__(self, node: Node, options: WorldOptions | None = None) -> None:
        self.options = options or WorldOptions()
        self._node = node
        self._lock = threading.Lock()
        for line in missing_packages().values():
            node.get_logger().warning(line)
        self._tf = TfOut(node) if TF_ERROR is None else None
        self._hri: HriBodies | None = None
        self._faces: HriFaces | None = None
        self._models: dict[str, BodyModels] = {}  # per camera: kinematics, rig, faces
        self.persons: WorldPersons | None = None
        frame = self.options.world_frame
        if frame and TF2_ROS_ERROR is not None:
            node.get_logger().warning(
                f'world_frame {frame!r} needs tf2_ros ({TF2_ROS_ERROR}): install '
                'ros-$ROS_DISTRO-tf2-ros-py; each camera keeps its own people')
        elif frame:
            self.persons = WorldPersons(node, frame, self._tf)

    @property
    def hri(self) -> HriBodies | None:
        """Return the REP-155 publisher, once ``hri`` was on for a frame."""
        return self._hri

    def demand(self) -> tuple[bool, bool]:
        """Tell whether these outputs want tracked people now, and whether they want 3D."""
        if self.persons is not None:
            return True, True
        opts = self.options
        tf = opts.publish_tf and self._tf is not None and self._tf.wanted()
        return tf or (opts.hri and HRI_MSGS_ERROR is None), tf

    def wants_image(self) -> bool:
        """Whether :meth:`publish` uses the input pixels (REP-155 crops, world appearance)."""
        return self.persons is not None or (self.options.hri and HRI_MSGS_ERROR is None)

    def publish(self, camera: str, header: Header, result: FrameResult, people: People,
                image: np.ndarray | None = None, intrinsics: Intrinsics | None = None) -> None:
        """
        Publish one frame of ``camera``: its body frames on /tf, its bodies, the world's persons.

        ``header`` is the input image's (stamp, optical frame); ``image`` (HxWx3 RGB uint8)
        feeds ``/humans/bodies/<id>/cropped`` and the persons' appearance; ``intrinsics`` (a
        valid camera_info's) lets cameras triangulate joints together.
        """
        opts = self.options
        hri = opts.hri and HRI_MSGS_ERROR is None
        tf = opts.publish_tf and self._tf is not None and self._tf.wanted() and \
            valid_frame_id(header.frame_id)  # else refused and counted on the way in
        models = None
        if hri:
            with self._lock:
                if self._hri is None:
                    self._hri, self._faces = HriBodies(self._node), HriFaces(self._node)
                state = self._models.setdefault(camera, BodyModels())
            models = state.update(people, result.image_size)
            self._hri.update(camera, header, result, people, image, models,
                             state.kinematics.urdf)
            self._faces.update(camera, header, models.faces, image)
        if tf:
            out = body_transforms(header, body_frames(people, joints=opts.tf_joints))
            if models is not None:
                out += self._model_transforms(header, models)
            self._tf.send(out)
        if self.persons is not None:
            self.persons.update(camera, header, people, image, intrinsics,
                                opts.person_joints_tf)

    def _model_transforms(self, header: Header, models: BodyModelFrame) -> list:
        """Return the links (``body_links`` node), the rig (``avatar_tf``) and the faces."""
        out = []
        kin, rig, faces = models.kinematics, models.rig, models.faces
        for k, track in enumerate(kin.ids.tolist()):
            name = body_id(track)
            if self.options.body_links == 'node':
                out += link_transforms(header, name, kin, k)
            if self.options.avatar_tf:
                out += rig_transforms(header, name, rig, k)
        for k, track in enumerate(faces.ids.tolist()):
            if track >= 0 and faces.pose_valid[k]:
                out.append(face_transform(header, face_id(track), faces.position[k],
                                          faces.orientation[k]))
        return out

    def diagnostics(self) -> dict:
        """Return the world's counters (empty without a world frame)."""
        return self.persons.diagnostics() if self.persons is not None else {}

    def expire(self, track_max_age: float) -> None:
        """Age bodies and persons when cameras send nothing (the node's timer calls it)."""
        if self._hri is not None:
            self._hri.expire(track_max_age)
            self._faces.expire(track_max_age)
        if self.persons is not None:
            self.persons.expire()

    def forget(self, camera: str) -> None:
        """Drop a camera that stopped (its REP-155 bodies end)."""
        if self._hri is not None:
            self._hri.forget(camera)
            self._faces.forget(camera)
        self._models.pop(camera, None)
        if self.persons is not None:
            self.persons.forget(camera)

    def close(self) -> None:
        """Destroy the publishers."""
        if self._hri is not None:
            self._hri.close()
            self._faces.close()
            self._hri = self._faces = None
        if self.persons is not None:
            self.persons.close()
            self.persons = None
        if self._tf is not None:
            self._tf.close()
            self._tf = None


__all__ = ['PeopleWorld', 'WorldOptions']
