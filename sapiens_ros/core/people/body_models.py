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
One call per camera frame for the body models: faces, REP-155 kinematics, avatar rotations.

:class:`BodyModels` (one per camera, beside its
:class:`~sapiens_ros.core.people.state.PeopleState`) takes the frame's
:class:`~sapiens_ros.core.people.state.People` and returns a :class:`BodyModelFrame`: the
:class:`~.faces.Faces` of every row, the :class:`~.kinematics.KinematicsFrame` of the tracked
bodies with a metric torso, and their :class:`~.rig.RigPose` (same rows as the kinematics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .faces import Faces, faces
from .kinematics import BodyKinematics, KinematicsConfig, KinematicsFrame
from .rig import rig_pose, RigPose
from .state import People


@dataclass
class BodyModelFrame:
    """Faces (rows of the People), kinematics and rig (rows: ``kinematics.rows``)."""

    faces: Faces
    kinematics: KinematicsFrame
    rig: RigPose


class BodyModels:
    """``update(people, image_size) -> BodyModelFrame``; ``kinematics`` holds per-track state."""

    def __init__(self, config: KinematicsConfig | None = None, min_score: float = 0.3) -> None:
        self.kinematics = BodyKinematics(config)
        self.min_score = min_score

    def reset(self) -> None:
        """Forget every track (with the camera's PeopleState reset)."""
        self.kinematics.reset()

    def update(self, people: People, image_size: tuple[int, int]) -> BodyModelFrame:
        """Faces, kinematics and rig rotations of a frame's people (image ``(height, width)``)."""
        xyz = people.xyz if people.xyz_metric and len(people) else None
        fc = faces(people.ids, people.smoothed if len(people) else np.zeros((0, 308, 2)),
                   people.scores if len(people) else np.zeros((0, 308)), xyz, image_size,
                   self.min_score)
        kin = self.kinematics.update(people.ids, xyz, people.stamp, fc.rotation, fc.pose_valid,
                                     fc.position, live=people.tracks)
        rows = kin.rows
        if len(rows):
            rig = rig_pose(np.asarray(xyz).take(rows, 0), kin.rotation, kin.position,
                           fc.rotation.take(rows, 0), fc.pose_valid.take(rows, 0))
        else:
            from .rig import BONES
            n = len(BONES)
            rig = RigPose(np.zeros((0, n, 4)), np.zeros((0, n, 3, 3)), np.zeros((0, n), bool))
        return BodyModelFrame(fc, kin, rig)


__all__ = ['BodyModelFrame', 'BodyModels']
