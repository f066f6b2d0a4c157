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
import threading
import time

from geometry_msgs.msg import PointStamped, TwistStamped
import numpy as np
from rclpy.node import Node
try:
    from rclpy.event_handler import PublisherEventCallbacks
except ImportError:  # Humble: the same class, under its old module name
    from rclpy.qos_event import PublisherEventCallbacks
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Header, String

from .array_msgs import image_msg
from .body_messages import body_position, body_velocity, joint_state
from .optional_msgs import import_error, message_types
from .qos import HRI_LATCHED_QOS, HRI_QOS
from ..core.models.keypoint_formats import keypoint_format
from ..core.people.body_frames import body_id
from ..core.people.body_models import BodyModelFrame
from ..core.people.kinematics import KinematicsFrame
from ..core.people.state import People
from ..core.pipeline.pipeline import FrameResult

IdsList, NormalizedRegionOfInterest2D, Skeleton2D, IdsMatch = message_types('hri_msgs')
HRI_MSGS_ERROR = import_error('hri_msgs')

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


def destroyable_publisher(node: Node, msg_type: type, topic: str, qos):
    """
    Create a publisher that any thread may destroy while an executor spins.

    Bodies and persons come and go in the worker's threads. A publisher's QoS event handlers
    sit in the executor's wait set, and destroying one there between the executor listing it
    and waiting on it raises ``InvalidHandle`` in the executor's thread, which stops the node.
    Without handlers the publisher is never in the wait set (a subscriber with incompatible QoS
    still gets its own warning). See ros2/rclpy#1284 and ``ros.executors``.
    """
    return node.create_publisher(
        msg_type, topic, qos, event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))


class HriBodies:
    """
    Publishes REP-155 bodies for the cameras of one node: ``update(camera, header, ...)``.

    Create it at configure (it creates ``/humans/bodies/tracked``), call :meth:`update` per
    frame that ran pose, :meth:`forget` when a camera stops and :meth:`close` at cleanup.
    Thread-safe: cameras may update from their own threads.
    """

    def __init__(self, node: Node) -> None:
        if HRI_MSGS_ERROR is not None:
            raise RuntimeError(f'hri_msgs is not available ({HRI_MSGS_ERROR})')
        self._node = node
        self._lock = threading.Lock()
        self._bodies: dict[str, _Body] = {}
        self._live: dict[str, dict[str, int]] = {}  # camera -> body id -> track id
        self._seen: dict[str, float] = {}  # camera -> monotonic time of its last frame
        self._tracked = self._publisher(IdsList, f'{BODIES_NS}/tracked')

    @property
    def bodies(self) -> list[str]:
        """Return the body ids with publishers, in track order."""
        with self._lock:
            return sorted(self._bodies, key=lambda b: self._bodies[b].track)

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
            self._seen[camera] = time.monotonic()
            self._live[camera] = {body_id(t): int(t) for t in people.tracks.tolist()}
            if pose is not None and len(people) == len(pose.boxes):
                rows = np.flatnonzero(people.ids >= 0)
                kin_row = {} if models is None else \
                    {int(r): k for k, r in enumerate(models.kinematics.rows.tolist())}
                for row in rows.tolist():
                    track = int(people.ids[row])
                    self._live[camera].setdefault(body_id(track), track)
                    body = self._publish_body(header, track, result, people, row, image, size)
                    if row in kin_row:
                        self._publish_kinematics(header, body, models.kinematics,
                                                 kin_row[row], urdf)
            self._drop_lost()
            self._publish_tracked(header)

    def forget(self, camera: str, header: Header | None = None) -> None:
        """Drop a camera's bodies (it stopped); publish the list without them."""
        with self._lock:
            self._live.pop(camera, None)
            self._seen.pop(camera, None)
            self._drop_lost()
            self._publish_tracked(header or self._now())

    def expire(self, max_age: float) -> list[str]:
        """
        Drop the bodies of cameras that sent no frame for ``max_age`` s (wall time).

        Tracks age with their camera's frames; a camera that goes silent sends none, so the
        node's timer calls this: its bodies leave ``/tracked`` and their topics go within
        ``track_max_age`` (plus the timer's period). Returns the cameras dropped.
        """
        with self._lock:
            now = time.monotonic()
            silent = [c for c, t in self._seen.items() if now - t > max_age and self._live.get(c)]
            for camera in silent:
                self._live.pop(camera, None)
            if silent:
                self._drop_lost()
                self._publish_tracked(self._now())
            return silent

    def close(self) -> None:
        """Publish an empty list (consumers keep the last one), destroy every publisher."""
        with self._lock:
            self._live.clear()
            self._drop_lost()
            try:
                self._publish_tracked(self._now())
            except Exception:  # noqa: BLE001 - a signal already shut the context down
                pass
            self._node.destroy_publisher(self._tracked)

    def _now(self) -> Header:
        return Header(stamp=self._node.get_clock().now().to_msg())

    def _publish_body(self, header: Header, track: int, result: FrameResult, people: People,
                      row: int, image: np.ndarray | None, size: tuple[int, int]) -> None:
        name = body_id(track)
        body = self._bodies.get(name)
        if body is None:
            ns = f'{BODIES_NS}/{name}'
            body = self._bodies[name] = _Body(
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

    def _drop_lost(self) -> None:
        live = set().union(*self._live.values()) if self._live else set()
        for name in [b for b in self._bodies if b not in live]:
            body = self._bodies.pop(name)
            for pub in body.publishers:
                self._node.destroy_publisher(pub)

    def _publish_tracked(self, header: Header) -> None:
        tracks: dict[str, int] = {}
        for live in self._live.values():
            tracks.update(live)
        ids = sorted(tracks, key=tracks.__getitem__)
        self._tracked.publish(IdsList(header=header, ids=ids))


__all__ = ['BODIES_NS', 'HRI_MSGS_ERROR', 'HRI_QOS', 'HriBodies', 'IdsList', 'IdsMatch',
           'NormalizedRegionOfInterest2D', 'Skeleton2D', 'cropped_image', 'destroyable_publisher',
           'normalized_roi', 'skeleton2d']
