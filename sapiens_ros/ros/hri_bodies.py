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
REP-155 (ROS4HRI) bodies: ``/humans/bodies/tracked`` and one namespace per body.

One :class:`HriBodies` per process serves all its cameras: the topics are global, so the list
of tracked bodies is the union over the cameras, and body ids (five letters, a function of the
track id: ``body_frames.body_id``) are unique because the cameras share one track id source.
Per body, ``/humans/bodies/<id>/roi`` (``NormalizedRegionOfInterest2D``), ``/cropped``
(``Image``), ``/skeleton2d`` (``Skeleton2D``), ``/joint_states`` (``JointState``),
``/position`` (``PointStamped``), ``/velocity`` (``TwistStamped``) and ``/urdf``
(``String``, latched) are published while its track lives (seen within ``track_max_age``,
also by wall time: :meth:`HriBodies.expire`) and destroyed when it is dropped, as
``hri_body_detect`` does. The ``body_<id>`` and link TF frames come from ``people_world``.
``hri_msgs`` is optional: without it :data:`HRI_MSGS_ERROR` says why and nothing here can be
built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from geometry_msgs.msg import PointStamped, TwistStamped
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Header, String

from .array_msgs import image_msg
from .body_messages import body_position, body_velocity, joint_state
from .hri_lists import (destroyable_publisher, HRI_MSGS_ERROR, HriList, IdsList, IdsMatch,
                        NormalizedRegionOfInterest2D, Skeleton2D)
from .qos import HRI_LATCHED_QOS, HRI_QOS
from ..core.models.keypoint_formats import keypoint_format
from ..core.people.body_frames import body_id
from ..core.people.body_models import BodyModelFrame
from ..core.people.kinematics import KinematicsFrame
from ..core.people.state import People
from ..core.pipeline.pipeline import FrameResult


#: REP-155's body namespace (global).
BODIES_NS = '/humans/bodies'


@dataclass
class _Body:
    track: int
    roi: object
    cropped: object
    skeleton: object
    joint_states: object
    position: object
    velocity: object
    urdf: object
    urdf_sent: bool = False

    @property
    def publishers(self) -> tuple:
        return (self.roi, self.cropped, self.skeleton, self.joint_states, self.position,
                self.velocity, self.urdf)


def skeleton2d(header: Header, uv: np.ndarray, scores: np.ndarray,
               image_size: tuple[int, int]) -> Skeleton2D:
    """
    ``Skeleton2D`` of one person: the 18 REP-155 points of its 308, normalised to ``[0, 1]``.

    ``uv`` ``(308, 2)`` pixels, ``scores`` ``(308,)``; the neck is the mid-point of the
    shoulders; ``c`` is the keypoint score (0 for a point outside the image, clipped onto it).
    """
    fmt = keypoint_format('rep155')
    h, w = image_size
    xy = fmt.points(np.asarray(uv, np.float64)) / np.array([w, h], np.float64)
    c = np.clip(np.nan_to_num(fmt.scores(np.asarray(scores, np.float64))), 0.0, 1.0)
    inside = np.isfinite(xy).all(-1) & (xy >= 0).all(-1) & (xy <= 1).all(-1)
    c[~inside] = 0.0
    xy = np.clip(np.nan_to_num(xy), 0.0, 1.0)
    msg = Skeleton2D(header=header)
    for point, (x, y), conf in zip(msg.skeleton, xy.tolist(), c.tolist(), strict=True):
        point.x, point.y, point.c = x, y, conf
    return msg


def normalized_roi(header: Header, box: np.ndarray, score: float,
                   image_size: tuple[int, int]) -> NormalizedRegionOfInterest2D:
    """``NormalizedRegionOfInterest2D`` of an xyxy pixel box, clipped to ``[0, 1]``."""
    h, w = image_size
    x0, y0, x1, y1 = np.clip(np.asarray(box, np.float64) / [w, h, w, h], 0.0, 1.0).tolist()
    return NormalizedRegionOfInterest2D(header=header, xmin=x0, ymin=y0, xmax=x1, ymax=y1,
                                        c=float(np.clip(score, 0.0, 1.0)))


def cropped_image(header: Header, image: np.ndarray, box: np.ndarray) -> Image | None:
    """Return the input pixels inside an xyxy box as ``rgb8``; None if nothing is inside."""
    h, w = image.shape[:2]
    x0, y0 = (int(np.floor(max(v, 0.0))) for v in box[:2])
    x1, y1 = int(np.ceil(min(box[2], w))), int(np.ceil(min(box[3], h)))
    if x1 <= x0 or y1 <= y0:
        return None
    return image_msg(header, image[y0:y1, x0:x1], 'rgb8')


class HriBodies(HriList):
    """
    Publishes REP-155 bodies for the cameras of one node: ``update(camera, header, ...)``.

    Create it at configure (it creates ``/humans/bodies/tracked``), call :meth:`update` per
    frame that ran pose, :meth:`forget` when a camera stops, :meth:`expire` from a timer and
    :meth:`close` at cleanup (:class:`.hri_lists.HriList`). Thread-safe: cameras may update
    from their own threads.
    """

    def __init__(self, node: Node) -> None:
        super().__init__(node, f'{BODIES_NS}/tracked')

    @property
    def bodies(self) -> list[str]:
        """Return the body ids with publishers, in track order."""
        with self._lock:
            return sorted(self._entries, key=lambda b: self._entries[b].track)

    def update(self, camera: str, header: Header, result: FrameResult, people: People,
               image: np.ndarray | None = None, models: BodyModelFrame | None = None,
               urdf: Callable[[int, str], str | None] | None = None) -> None:
        """
        Publish one frame of ``camera``: the tracked list, and each visible body's topics.

        ``people`` is that frame's ``PeopleState.update``; its live tracks make the camera's
        bodies (a body hidden for a moment keeps its topics). ``image`` (HxWx3 RGB uint8) is
        needed for ``/cropped``; ``models`` (the frame's body models) for ``joint_states``,
        ``position`` and ``velocity``, and ``urdf(track, body id)`` gives a body's URDF once
        its bone lengths froze (latched, sent once). Every per-body message is built only for
        subscribers.
        """
        pose = result.pose
        size = result.image_size
        with self._lock:
            live = {body_id(t): int(t) for t in people.tracks.tolist()}
            self._set_live(camera, live)
            if pose is not None and len(people) == len(pose.boxes):
                rows = np.flatnonzero(people.ids >= 0)
                kin_row = {} if models is None else \
                    {int(r): k for k, r in enumerate(models.kinematics.rows.tolist())}
                for row in rows.tolist():
                    track = int(people.ids[row])
                    live.setdefault(body_id(track), track)
                    body = self._publish_body(header, track, result, people, row, image, size)
                    if row in kin_row:
                        self._publish_kinematics(header, body, models.kinematics,
                                                 kin_row[row], urdf)
            self._drop_lost()
            self._publish_tracked(header)

    def _publish_body(self, header: Header, track: int, result: FrameResult, people: People,
                      row: int, image: np.ndarray | None, size: tuple[int, int]) -> _Body:
        name = body_id(track)
        body = self._entries.get(name)
        if body is None:
            ns = f'{BODIES_NS}/{name}'
            body = self._entries[name] = _Body(
                track, self._publisher(NormalizedRegionOfInterest2D, f'{ns}/roi'),
                self._publisher(Image, f'{ns}/cropped'),
                self._publisher(Skeleton2D, f'{ns}/skeleton2d'),
                self._publisher(JointState, f'{ns}/joint_states'),
                self._publisher(PointStamped, f'{ns}/position'),
                self._publisher(TwistStamped, f'{ns}/velocity'),
                destroyable_publisher(self._node, String, f'{ns}/urdf', HRI_LATCHED_QOS))
        pose = result.pose
        if body.roi.get_subscription_count():
            body.roi.publish(normalized_roi(header, pose.boxes[row],
                                            float(pose.box_scores[row]), size))
        if body.skeleton.get_subscription_count():
            body.skeleton.publish(skeleton2d(header, people.smoothed[row], pose.scores[row],
                                             size))
        if image is not None and body.cropped.get_subscription_count():
            crop = cropped_image(header, image, pose.boxes[row])
            if crop is not None:
                body.cropped.publish(crop)
        return body

    def _publish_kinematics(self, header: Header, body: _Body, kin: KinematicsFrame, k: int,
                            urdf: Callable[[int, str], str | None] | None) -> None:
        name = body_id(body.track)
        if body.joint_states.get_subscription_count():
            body.joint_states.publish(joint_state(header, name, kin.joint_positions[k]))
        if body.position.get_subscription_count():
            body.position.publish(body_position(header, kin.position[k]))
        if body.velocity.get_subscription_count():
            body.velocity.publish(body_velocity(header, name, kin.velocity[k]))
        if not body.urdf_sent and urdf is not None:
            text = urdf(body.track, name)
            if text is not None:
                body.urdf.publish(String(data=text))
                body.urdf_sent = True

    def _publisher(self, msg_type: type, topic: str):
        return destroyable_publisher(self._node, msg_type, topic, HRI_QOS)


__all__ = ['BODIES_NS', 'HRI_MSGS_ERROR', 'HRI_QOS', 'HriBodies', 'IdsList', 'IdsMatch',
           'NormalizedRegionOfInterest2D', 'Skeleton2D', 'cropped_image', 'destroyable_publisher',
           'normalized_roi', 'skeleton2d']
