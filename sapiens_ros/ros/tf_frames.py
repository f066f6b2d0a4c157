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
Frames on ``/tf``: through tf2_ros's ``TransformBroadcaster``, or a plain publisher without it.

:class:`TfOut` is the one ``/tf`` writer of a node. With ``tf2_ros`` (every ROS install) it is
a ``TransformBroadcaster``; where only ``tf2_msgs`` imports it publishes the same
``TFMessage`` on the same topic and QoS itself; with neither, :data:`TF_ERROR` says why and
nothing is sent. The builders here turn the core's body frames and the world's persons into
``TransformStamped`` lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import math

from geometry_msgs.msg import TransformStamped
from std_msgs.msg import Header

from .optional_msgs import import_error, message_types
from .qos import TF_QOS
from ..core.people.body_frames import body_id, BodyFrames
from ..core.people.world_skeleton import joint_names

(TFMessage,) = message_types('tf2_msgs')
TF2_MSGS_ERROR = import_error('tf2_msgs')
try:
    from tf2_ros import TransformBroadcaster
    TF2_ROS_ERROR: str | None = None
except ImportError as exc:  # optional: a ROS install has it; without, TFMessage by hand
    TransformBroadcaster = None
    TF2_ROS_ERROR = f'{type(exc).__name__}: {exc}'
#: Why nothing can go on /tf (neither tf2_ros nor tf2_msgs), or None.
TF_ERROR = TF2_MSGS_ERROR

#: The TF topic (absolute: body frames join the robot's one tree whatever the namespace).
TF_TOPIC = '/tf'


class TfOut:
    """The node's ``/tf`` writer: ``send(transforms)``; ``wanted()`` while someone listens."""

    def __init__(self, node) -> None:
        if TF_ERROR is not None:
            raise RuntimeError(f'/tf needs tf2_msgs ({TF_ERROR})')
        self._node = node
        if TransformBroadcaster is not None:
            self._broadcaster = TransformBroadcaster(node, TF_QOS)
            self._pub = self._broadcaster.pub_tf
        else:
            self._broadcaster = None
            self._pub = node.create_publisher(TFMessage, TF_TOPIC, TF_QOS)

    def wanted(self) -> bool:
        """Whether anything subscribes to ``/tf`` (a tf2 listener, RViz, a recorder)."""
        return self._pub.get_subscription_count() > 0

    def send(self, transforms: Sequence[TransformStamped]) -> None:
        """Send ``transforms`` (nothing when empty)."""
        if not transforms:
            return
        if self._broadcaster is not None:
            self._broadcaster.sendTransform(list(transforms))
        else:
            self._pub.publish(TFMessage(transforms=list(transforms)))

    def close(self) -> None:
        """Destroy the publisher."""
        self._node.destroy_publisher(self._pub)


def valid_frame_id(frame_id: str) -> bool:
    """Whether tf2 takes ``frame_id`` as a frame: not empty, no leading ``/``."""
    return bool(frame_id) and not frame_id.startswith('/')


def body_frame_name(track_id: int) -> str:
    """Return the TF frame of a track: ``body_<bodyID>`` (REP-155), e.g. ``body_kqzvb``."""
    return f'body_{body_id(track_id)}'


def transform(header: Header, parent: str, child: str, xyz: Iterable[float],
              quat: Iterable[float] = (0.0, 0.0, 0.0, 1.0)) -> TransformStamped:
    """Return ``child`` in ``parent`` at ``header.stamp``: ``xyz`` and x/y/z/w ``quat``."""
    t = TransformStamped()
    t.header.stamp = header.stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = (
        float(v) for v in xyz)
    r = t.transform.rotation
    r.x, r.y, r.z, r.w = (float(v) for v in quat)
    return t


def joint_transforms(header: Header, parent: str, suffix: str, names: Sequence[str],
                     joints) -> list[TransformStamped]:
    """``<joint>_<suffix>`` in ``parent`` for each joint whose position is finite."""
    return [transform(header, parent, f'{name}_{suffix}', at)
            for name, at in zip(names, joints.tolist(), strict=True)
            if all(math.isfinite(v) for v in at)]  # NaN: joint not seen


def body_transforms(header: Header, frames: BodyFrames) -> list[TransformStamped]:
    """
    ``body_<id>`` in ``header.frame_id`` (the camera's optical frame) at its stamp.

    With joint frames, ``<joint>_<id>`` (REP-155 names, ``head_kqzvb``, ``l_wrist_kqzvb``...)
    parented to ``body_<id>`` with its axes, for each joint whose keypoints are known.
    """
    out = []
    for row, track in enumerate(frames.ids.tolist()):
        body = body_frame_name(track)
        out.append(transform(header, header.frame_id, body, frames.position[row],
                             frames.orientation[row]))
        out += joint_transforms(header, body, body_id(track), frames.joint_names,
                                frames.joints[row])
    return out


def person_transforms(world: Header, persons: Sequence, skeletons: Sequence | None = None
                      ) -> list[TransformStamped]:
    """
    ``person_<id>`` in ``world.frame_id`` at its stamp, for each of ``persons`` (WorldPerson).

    With ``skeletons`` (FusedSkeleton per person), also the fused joints, ``<joint>_<id>``
    under ``person_<id>`` (world axes: the person frame has no orientation of its own).
    """
    out = []
    names = joint_names() if skeletons is not None else ()
    for k, person in enumerate(persons):
        frame = f'person_{person.person_id}'
        out.append(transform(world, world.frame_id, frame, person.position))
        if skeletons is not None:
            out += joint_transforms(world, frame, person.person_id, names,
                                    skeletons[k].xyz - person.position)
    return out


__all__ = ['TF2_MSGS_ERROR', 'TF2_ROS_ERROR', 'TF_ERROR', 'TF_QOS', 'TF_TOPIC', 'TFMessage',
           'TfOut', 'body_frame_name', 'body_transforms', 'joint_transforms', 'person_transforms',
           'transform', 'valid_frame_id']
