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
Where each tracked person is in the camera frame, as REP-155 body frames (ROS-free).

``body_<id>``: origin at the mid-point of the hips, x forward out of the body, z towards the
head, y to the person's left (the torso axes of ``people/poses``, origin moved to the hips),
in the camera's optical frame. Joint frames ``<joint>_<id>`` (REP-155's kinematic-model names)
sit at their keypoints, parented to ``body_<id>`` with its axes. Frames exist only for tracked
people whose keypoints are measured (depth) or metric (a calibrated or depth-fitted pointmap):
never at a guessed depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.spatial.transform import Rotation

from .depth import TORSO, torso_axes
from .hri_ids import TrackNames
from .state import People
from ..models.metadata import keypoint_info

#: Body ids of this process's tracks (one key per run; tests may replace it with a seeded one).
BODY_NAMES = TrackNames()

#: REP-155 joint frames and the 308 keypoints they sit at (the mean when two: the head is the
#: mid-point of the eyes, REP-155's approximation of the sellion).
JOINT_KEYPOINTS: dict[str, tuple[str, ...]] = {
    'head': ('left_eye', 'right_eye'),
    'l_shoulder': ('left_shoulder',), 'r_shoulder': ('right_shoulder',),
    'l_elbow': ('left_elbow',), 'r_elbow': ('right_elbow',),
    'l_wrist': ('left_wrist',), 'r_wrist': ('right_wrist',),
    'l_hip': ('left_hip',), 'r_hip': ('right_hip',),
    'l_knee': ('left_knee',), 'r_knee': ('right_knee',),
    'l_ankle': ('left_ankle',), 'r_ankle': ('right_ankle',),
}


def body_id(track_id: int) -> str:
    """
    REP-155 body id of a track: five lowercase letters, e.g. ``kqzvb``.

    Its TF frame is ``body_kqzvb``, its topics ``/humans/bodies/kqzvb/...`` (ROS4HRI's form:
    hri_rviz shows a frame only when it ends in such an id).
    """
    return BODY_NAMES(track_id)


@dataclass
class BodyFrames:
    """The body frames of one frame's people, in the camera's optical frame (metres)."""

    ids: np.ndarray  # (B,) int64 track ids
    position: np.ndarray  # (B, 3) float64 mid-hips
    orientation: np.ndarray  # (B, 4) float64 quaternion x, y, z, w of the body axes
    joint_names: tuple[str, ...]  # joint frames computed (empty: none asked for)
    joints: np.ndarray  # (B, J, 3) float64 joint positions in the body frame; NaN: unknown

    def __len__(self) -> int:
        return int(self.ids.shape[0])


@cache
def _joint_sources() -> tuple[np.ndarray, np.ndarray]:
    """Index pairs ``(J, 2)`` into the 308 keypoints per joint (a lone keypoint twice)."""
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    pairs = np.asarray([[index[k[0]], index[k[-1]]] for k in JOINT_KEYPOINTS.values()],
                       np.int64)
    pairs.flags.writeable = False  # shared by every call
    return pairs[:, 0], pairs[:, 1]


def body_frames(people: People, joints: bool = False) -> BodyFrames:
    """
    Body frames of the tracked people of a frame with metric 3D keypoints.

    Uses ``people.xyz`` (filtered, keypoints scored under ``min_score`` left out). A person
    gets a frame when tracked, its four torso keypoints are known and the 3D is
    ``people.xyz_metric``; with ``joints``, each joint whose keypoints are known gets its
    position in the body frame.
    """
    names = tuple(JOINT_KEYPOINTS) if joints else ()
    empty = BodyFrames(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 4)), names,
                       np.zeros((0, len(names), 3)))
    if people.xyz is None or not people.xyz_metric or not len(people):
        return empty
    xyz = np.asarray(people.xyz, np.float64)
    rot, ok = torso_axes(xyz)
    hips = (xyz[:, TORSO[2]] + xyz[:, TORSO[3]]) / 2  # ok: the four torso keypoints are finite
    keep = ok & (people.ids >= 0)
    if not keep.any():
        return empty
    rot, origin = rot[keep], hips[keep]
    frames = BodyFrames(people.ids[keep].astype(np.int64), origin,
                        Rotation.from_matrix(rot).as_quat(), names,
                        np.zeros((int(keep.sum()), len(names), 3)))
    if joints:
        a, b = _joint_sources()
        at = (xyz[keep][:, a] + xyz[keep][:, b]) / 2  # (B, J, 3) camera frame
        frames.joints = np.einsum('bij,bki->bkj', rot, at - origin[:, None, :])
    return frames


__all__ = ['BODY_NAMES', 'BodyFrames', 'JOINT_KEYPOINTS', 'body_frames', 'body_id']
