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
Body frames on ``/tf`` as a ``tf2_msgs/TFMessage``, without tf2_ros.

``tf2_msgs`` is optional: without it :data:`TF2_MSGS_ERROR` says why and nothing is built.
"""

from __future__ import annotations

import math

from geometry_msgs.msg import TransformStamped
from std_msgs.msg import Header

from .optional_msgs import import_error, message_types
from .qos import TF_QOS
from ..core.people.body_frames import body_id, BODY_ID_PREFIX, BodyFrames

(TFMessage,) = message_types('tf2_msgs')
TF2_MSGS_ERROR = import_error('tf2_msgs')

#: The TF topic (absolute: body frames join the robot's one tree whatever the namespace).
TF_TOPIC = '/tf'


def body_frame_name(track_id: int, prefix: str = BODY_ID_PREFIX) -> str:
    """Return the TF frame of a track: ``body_<bodyID>`` (REP-155), e.g. ``body_b12``."""
    return f'body_{body_id(track_id, prefix)}'


def _transform(header: Header, parent: str, child: str, xyz, quat=(0.0, 0.0, 0.0, 1.0)
               ) -> TransformStamped:
    t = TransformStamped()
    t.header.stamp = header.stamp
    t.header.frame_id = parent
    t.child_frame_id = child
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = xyz
    r = t.transform.rotation
    r.x, r.y, r.z, r.w = quat
    return t


def body_tf_message(header: Header, frames: BodyFrames,
                    prefix: str = BODY_ID_PREFIX) -> TFMessage:
    """
    ``/tf``: ``body_<id>`` in ``header.frame_id`` (the camera's optical frame) at its stamp.

    With joint frames, ``<joint>_<id>`` (REP-155 names, ``head_b12``, ``l_wrist_b12``...)
    parented to ``body_<id>`` with its axes, for each joint whose keypoints are known.
    """
    msg = TFMessage()
    for row, track in enumerate(frames.ids.tolist()):
        body = body_frame_name(track, prefix)
        msg.transforms.append(_transform(header, header.frame_id, body,
                                         frames.position[row].tolist(),
                                         frames.orientation[row].tolist()))
        suffix = body_id(track, prefix)
        for name, at in zip(frames.joint_names, frames.joints[row].tolist(), strict=True):
            if all(math.isfinite(v) for v in at):  # NaN: joint not seen
                msg.transforms.append(_transform(header, body, f'{name}_{suffix}', at))
    return msg


__all__ = ['TF2_MSGS_ERROR', 'TF_QOS', 'TF_TOPIC', 'TFMessage', 'body_frame_name',
           'body_tf_message']
