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
Each camera's optical frame in the robot's world frame, from a tf2 ``Buffer``, at a frame's stamp.

Robots move, so a camera is looked up at the stamp of the frame it took, never at "latest": a
transform that is missing, or that would have to be extrapolated, leaves that camera's people out
of the world for that frame. Each such frame is counted by why (``missing``, ``extrapolation``,
``frame_id``), with one throttled log line naming both frames. ``tf2_ros`` is optional: without
it :data:`TF2_ROS_ERROR` says why and nothing here can be built (the node then keeps its
per-camera behaviour).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
from rclpy.duration import Duration
from rclpy.time import Time
from scipy.spatial.transform import Rotation

from .runtime import Throttle
from .tf_frames import TF2_ROS_ERROR, valid_frame_id

if TF2_ROS_ERROR is None:  # tf_frames decides once whether tf2_ros imports
    from tf2_ros import (Buffer, ConnectivityException, ExtrapolationException,
                         InvalidArgumentException, LookupException, TransformListener)
else:  # optional: a ROS install has it, the node runs without it
    Buffer = TransformListener = None
    ConnectivityException = ExtrapolationException = InvalidArgumentException = \
        LookupException = LookupError

#: How lookups end, as counted: found, or why not.
LOOKUPS = ('found', 'missing', 'extrapolation', 'frame_id')
#: Seconds of transforms the buffer keeps (tf2's default): the oldest frame it can place.
CACHE_S = 10.0


def transform_matrix(translation, rotation) -> np.ndarray:
    """Return the 4x4 of a ``geometry_msgs/Transform`` (translation, x/y/z/w quaternion)."""
    out = np.eye(4)
    out[:3, :3] = Rotation.from_quat([rotation.x, rotation.y, rotation.z, rotation.w]).as_matrix()
    out[:3, 3] = translation.x, translation.y, translation.z
    return out


class WorldFrame:
    """
    Look cameras up in ``world_frame`` (``odom``, ``map``, ``base_link``...) with tf2.

    With a ``node``, a ``TransformListener`` on it fills the buffer from /tf and /tf_static
    (the node's executor spins it); without (replay), the caller fills :attr:`buffer` and
    ``warn`` takes the throttled lines.
    """

    def __init__(self, node, world_frame: str, cache_s: float = CACHE_S,
                 warn: Callable[[str], None] | None = None) -> None:
        if TF2_ROS_ERROR is not None:
            raise RuntimeError(f'the world frame needs tf2_ros ({TF2_ROS_ERROR}); install '
                               'ros-$ROS_DISTRO-tf2-ros-py')
        if not world_frame or world_frame.startswith('/'):
            raise ValueError(f'world_frame must be a tf2 frame id (no leading /), got '
                             f'{world_frame!r}')
        self.world_frame = world_frame
        self.buffer = Buffer(cache_time=Duration(seconds=cache_s))
        self._warn = warn or (lambda line: node.get_logger().warning(line))
        # Spun by the node's executor (no thread of its own), /tf and /tf_static as tf2 QoS.
        self.listener = TransformListener(self.buffer, node, spin_thread=False) \
            if node is not None else None
        self.counters: Counter = Counter()
        self._throttle = Throttle(5.0)

    def camera_to_world(self, frame_id: str, stamp) -> np.ndarray | None:
        """
        Return the 4x4 pose of ``frame_id`` in the world frame at ``stamp`` (a message stamp).

        None, counted and said (throttled) when the frame id is not one tf2 takes, or the
        transform is missing or would be extrapolated at that stamp.
        """
        if not valid_frame_id(frame_id):
            return self._refuse('frame_id', frame_id, f'frame_id {frame_id!r} is not a tf2 '
                                'frame id (empty, or a leading /): fix the camera driver')
        try:
            t = self.buffer.lookup_transform(self.world_frame, frame_id, Time.from_msg(stamp))
        except ExtrapolationException as exc:
            return self._refuse('extrapolation', frame_id, f'{exc}'.strip())
        except (LookupException, ConnectivityException, InvalidArgumentException) as exc:
            return self._refuse('missing', frame_id, f'{exc}'.strip())
        self.counters['found'] += 1
        return transform_matrix(t.transform.translation, t.transform.rotation)

    def _refuse(self, kind: str, frame_id: str, why: str) -> None:
        self.counters[kind] += 1
        suppressed = self._throttle.check(f'{kind}:{frame_id}')
        if suppressed is not None:
            more = f' ({suppressed} more)' if suppressed else ''
            self._warn(f'no transform {frame_id!r} -> {self.world_frame!r} ({kind}): {why}; '
                       f"that camera's people stay out of the world for this frame{more}")
        return None

    def close(self) -> None:
        """Stop listening to /tf (before the node is destroyed)."""
        if self.listener is not None:
            self.listener.unregister()


__all__ = ['CACHE_S', 'LOOKUPS', 'TF2_ROS_ERROR', 'WorldFrame', 'transform_matrix']
