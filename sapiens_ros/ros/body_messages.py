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
Messages of a body's kinematics, avatar rig and face (issue 27): builders, no publishers.

- ``joint_states`` (``sensor_msgs/JointState``), ``position`` (``PointStamped``, the camera's
  optical frame) and ``velocity`` (``TwistStamped`` in ``body_<id>``), as hri_body_detect
  publishes them per body;
- the humanoid's link frames (what robot_state_publisher would send from the same URDF and
  ``joint_states``): each joint's child link in its parent link, ``<link>_<id>``;
- the VRM avatar rig: ``vrm_<id>`` under ``body_<id>`` (model axes: X left, Y up, Z forward),
  then ``vrm_<bone>_<id>`` per bone under its parent bone, its rotation the bone's VRM
  normalized local rotation and its translation the T-pose offset (``core.people.avatar``);
- the face: ``face_<id>`` in the optical frame (REP-155: x the gaze, y left, z up).
"""

from __future__ import annotations

from geometry_msgs.msg import PointStamped, TransformStamped, TwistStamped
import numpy as np
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from .tf_frames import transform
from ..core.people.avatar import bone_offsets, bone_parents
from ..core.people.humanoid import joint_names, JOINTS
from ..core.people.kinematics import KinematicsFrame
from ..core.people.rig import BONE_NAMES, MODEL_FROM_BODY, RigPose

#: The rig's model axes in ``body_<id>`` (x y z w).
_MODEL_IN_BODY = Rotation.from_matrix(MODEL_FROM_BODY).as_quat()


def joint_state(header: Header, body_id: str, positions: np.ndarray) -> JointState:
    """``joint_states`` of a body: the humanoid's 20 revolute joints (rad)."""
    return JointState(header=Header(stamp=header.stamp), name=joint_names(body_id),
                      position=[float(v) for v in positions])


def body_position(header: Header, position: np.ndarray) -> PointStamped:
    """``position``: the body origin (hip centre) in the camera's optical frame."""
    msg = PointStamped(header=header)
    msg.point.x, msg.point.y, msg.point.z = (float(v) for v in position)
    return msg


def body_velocity(header: Header, body_id: str, velocity: np.ndarray) -> TwistStamped:
    """``velocity``: the body's linear velocity (m/s) in ``body_<id>``."""
    msg = TwistStamped(header=Header(stamp=header.stamp, frame_id=f'body_{body_id}'))
    msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(v) for v in velocity)
    return msg


def _pose_transform(header: Header, parent: str, child: str,
                    matrix: np.ndarray) -> TransformStamped:
    return transform(header, parent, child, matrix[:3, 3],
                     Rotation.from_matrix(matrix[:3, :3]).as_quat())


def link_transforms(header: Header, body_id: str, kinematics: KinematicsFrame,
                    row: int) -> list[TransformStamped]:
    """Return the humanoid's links of body ``row``: ``<child>_<id>`` in its parent link."""
    return [_pose_transform(header, f'{j.parent}_{body_id}', f'{j.child}_{body_id}', m)
            for j, m in zip(JOINTS, kinematics.joint_transforms[row], strict=True)]


def rig_transforms(header: Header, body_id: str, rig: RigPose,
                   row: int) -> list[TransformStamped]:
    """Return the VRM rig of body ``row`` of ``rig`` as frames (see the module docstring)."""
    root = f'vrm_{body_id}'
    out = [transform(header, f'body_{body_id}', root, (0.0, 0.0, 0.0), _MODEL_IN_BODY)]
    for name, parent, offset, quat in zip(BONE_NAMES, bone_parents(), bone_offsets(),
                                          rig.local[row], strict=True):
        out.append(transform(header, f'vrm_{parent}_{body_id}' if parent else root,
                             f'vrm_{name}_{body_id}', offset, quat))
    return out


def face_transform(header: Header, face_id: str, position: np.ndarray,
                   orientation: np.ndarray) -> TransformStamped:
    """``face_<id>`` in the optical frame: the sellion, REP-155 axes (x the gaze)."""
    return transform(header, header.frame_id, f'face_{face_id}', position, orientation)


__all__ = ['body_position', 'body_velocity', 'face_transform', 'joint_state',
           'link_transforms', 'rig_transforms']
