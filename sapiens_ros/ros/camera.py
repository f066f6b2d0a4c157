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
One camera of the perception node: its topics, input pairing, bad-input counters and stats.

Every camera keeps its own namespace of topics (``<name>/image`` in, ``<name>/pose/keypoints``
out; no prefix for the node's single unnamed camera), its own ``camera_info``, pairing of side
streams (aligned depth, a detector's person boxes), tracked people (through its
:class:`~sapiens_ros.core.scheduler.Camera`) and counters. The node creates one per camera; the
inference worker turns its newest frame into a
:class:`~sapiens_ros.core.scheduler.FrameRequest`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
import dataclasses
import time

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Header, String

from .messages import (COMPRESSED_OUTPUTS, info_messages, INFO_TOPICS, MessageOptions,
                       OPTIONAL_OUTPUTS, optional_outputs, OUTPUT_TASK, render_request,
                       stamp_seconds, task_outputs, TOPIC_TYPES)
from .pairing import StreamPairer
from .runtime import FrameSlots, NodeStats, Throttle
from .vision_messages import (Detection2DArray, detector_boxes, label_info_msg, LABEL_INFO_TOPIC,
                              LabelInfo, VISION_MSGS_ERROR)
from ..core.depth import decode_depth, valid_fraction
from ..core.detections import person_boxes
from ..core.errors import FrameError
from ..core.image_codec import decode_message, Frame
from ..core.intrinsics import Intrinsics
from ..core.render import RenderRequest
from ..core.scheduler import Camera, FrameRequest

#: Which task produces each output, the optional ones (their packages may be missing) too.
_OUTPUT_TASK = {**OUTPUT_TASK, **OPTIONAL_OUTPUTS}

#: Fewer valid depth pixels than this fraction: the depth image is counted as invalid, not used.
MIN_VALID_DEPTH = 0.01

#: The latched metadata topics (``*_info``, LabelInfo): reliable, transient local, keep last 1.
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: Detector boxes rejected as broken (counted as a bad input); ``class`` and ``score`` are
#: filtering, only counted.
_BROKEN_DETECTIONS = ('nan', 'size', 'outside')


@dataclasses.dataclass
class Arrival:
    """A colour frame in a camera's slot: the message, when it came, its paired side streams."""

    msg: object
    received: float  # time.monotonic()
    sides: dict = dataclasses.field(default_factory=dict)  # 'depth', 'detections' -> message


@dataclasses.dataclass
class Decoded:
    """A frame taken for a step: what the publish stage needs besides the result."""

    arrival: Arrival
    frame: Frame
    options: MessageOptions
    render: RenderRequest  # what the pipeline renders for the wanted outputs
    intrinsics: Intrinsics | None = None  # of a fresh, valid camera_info (pointmap/camera_info)


class CameraChannel:
    """Topics, input and counters of one camera (``name`` '' is the node's own namespace)."""

    def __init__(self, node, name: str, camera: Camera, slots: FrameSlots,
                 param: Callable[[str], object]) -> None:
        self.node = node
        self.name = name
        self.camera = camera
        self.slots = slots
        self.param = param
        self.stats = NodeStats()
        self.throttle = Throttle(2.0)
        self.pubs: dict = {}
        self.info_pubs: dict = {}
        self.subs: list = []
        self.pairer: StreamPairer | None = None
        self.label_info = None  # vision_msgs/LabelInfo publisher (seg, when vision_msgs imports)
        self.camera_info: CameraInfo | None = None
        self.camera_info_time = 0.0
        self.detections = Counter()  # detector boxes: used, rejected by kind

    def topic(self, suffix: str) -> str:
        """Return this camera's name of ``suffix`` (relative: remappable, in the namespace)."""
        return f'{self.name}/{suffix}' if self.name else suffix

    @property
    def label(self) -> str:
        """Name the camera in log lines."""
        return f'camera {self.name}: ' if self.name else ''

    # ------------------------------------------------------------------ publishers
    def create_publishers(self, tasks: tuple[str, ...], out_qos: QoSProfile) -> None:
        """Create the output publishers of ``tasks`` (``<topic>/compressed`` too, info latched)."""
        compressed = {raw: c for c, raw in COMPRESSED_OUTPUTS.items()}
        for suffix in task_outputs(tasks):
            for name in (suffix, compressed.get(suffix)):
                if name is not None:  # <topic>/compressed only encoded when subscribed
                    self.pubs[name] = self.node.create_lifecycle_publisher(
                        TOPIC_TYPES[name], self.topic(name), out_qos)
        for suffix, msg_type in optional_outputs(tasks).items():  # built only when subscribed
            self.pubs[suffix] = self.node.create_lifecycle_publisher(
                msg_type, self.topic(suffix), out_qos)
        for task in tasks:
            if task in INFO_TOPICS:
                self.info_pubs[INFO_TOPICS[task]] = self.node.create_lifecycle_publisher(
                    String, self.topic(INFO_TOPICS[task]), LATCHED_QOS)
        if 'seg' in tasks and VISION_MSGS_ERROR is None:
            self.label_info = self.node.create_lifecycle_publisher(
                LabelInfo, self.topic(LABEL_INFO_TOPIC), LATCHED_QOS)

    def publish_info(self, tasks: tuple[str, ...], keypoint_format: str) -> None:
        """Publish the latched metadata topics (the JSON ones, and LabelInfo)."""
        for suffix, msg in info_messages(tasks, keypoint_format).items():
            self.info_pubs[suffix].publish(msg)
        if self.label_info is not None:
            self.label_info.publish(label_info_msg(Header(
                stamp=self.node.get_clock().now().to_msg(), frame_id=self.name)))

    def destroy_publishers(self) -> None:
        """Destroy every publisher (cleanup)."""
        destroy = getattr(self.node, 'destroy_lifecycle_publisher', self.node.destroy_publisher)
        for pub in [*self.pubs.values(), *self.info_pubs.values(), self.label_info]:
            if pub is not None:
                destroy(pub)
        self.pubs.clear()
        self.info_pubs.clear()
        self.label_info = None

    def wanted_outputs(self, forced: set[str]) -> set[str]:
        """Return the outputs with a subscriber, plus the forced ones."""
        if self.param('publish_all'):
            return set(self.pubs)
        subscribed = {s for s, pub in self.pubs.items() if pub.get_subscription_count() > 0}
        return subscribed | (forced & set(self.pubs))

    # ------------------------------------------------------------------ input
    def subscribe(self, in_qos: QoSProfile, group, detections: bool = False) -> None:
        """
        Subscribe to the image (or image/compressed), camera_info and the side streams.

        Side streams: ``depth`` with use_depth, ``detections`` (``Detection2DArray``) when
        ``detections`` (box_source detections and vision_msgs imports); both paired by stamp.
        """
        if self.param('compressed'):
            self.subs.append(self.node.create_subscription(
                CompressedImage, self.topic('image/compressed'), self.on_image, in_qos,
                callback_group=group))
        else:
            self.subs.append(self.node.create_subscription(
                Image, self.topic('image'), self.on_image, in_qos, callback_group=group))
        self.subs.append(self.node.create_subscription(
            CameraInfo, self.topic('camera_info'), self.on_camera_info, in_qos,
            callback_group=group))
        sides = {}
        if self.param('use_depth'):
            sides['depth'] = (Image, self.param('depth_slop'), self.param('depth_timeout'))
        if detections:
            sides['detections'] = (Detection2DArray, self.param('detections_slop'),
                                   self.param('detections_timeout'))
        if not sides:
            return
        self.pairer = StreamPairer(
            list(sides), max(slop for _, slop, _ in sides.values()),
            self.param('depth_queue_size'), {s: t for s, (_, _, t) in sides.items()},
            self.on_paired)
        for stream, (msg_type, _, _) in sides.items():
            self.subs.append(self.node.create_subscription(
                msg_type, self.topic(stream), lambda msg, s=stream: self.pairer.add(s, msg),
                in_qos, callback_group=group))

    def describe_input(self) -> str:
        """Name the subscribed topics for the log."""
        sides = [s.topic_name for s in self.subs[2:]]
        paired = f' and {", ".join(sides)} (pairing: {self.pairer.backend})' if sides else ''
        return f'{self.subs[0].topic_name}{paired}'

    def unsubscribe(self) -> None:
        """Destroy the subscriptions and forget the pairing."""
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.subs.clear()
        self.pairer = None

    def on_image(self, msg) -> None:
        """Store a colour frame (after pairing it with the side streams, when there are any)."""
        self.stats.on_received()
        if self.pairer is None:
            self.slots.put(self.name, Arrival(msg, time.monotonic()))
            return
        for stream, seconds in self.pairer.silent().items():  # colour goes on without it
            fallback = 'without depth' if stream == 'depth' else 'with the fallback box source'
            self.bad(f'{stream}_missing', f'no {stream} message for {seconds:.1f} s on '
                     f'{self.topic(stream)}', f'frame processed {fallback}')
        self.pairer.add_image(msg)

    def on_paired(self, msg, sides: dict) -> None:
        """Put a colour frame and its matched side-stream messages into the newest-frame slot."""
        self.slots.put(self.name, Arrival(msg, time.monotonic(), sides))

    def on_camera_info(self, msg: CameraInfo) -> None:
        """Keep the newest camera_info."""
        self.camera_info = msg
        self.camera_info_time = time.monotonic()

    def bad(self, kind: str, text: str, consequence: str = 'frame skipped') -> None:
        """Count a bad input of ``kind`` and log it, throttled per kind."""
        self.stats.on_bad(kind, text)
        suppressed = self.throttle.check(kind)
        if suppressed is not None:
            more = f' ({suppressed} more since the last report)' if suppressed else ''
            self.node.get_logger().error(
                f'{self.label}bad input ({kind}): {text}; {consequence}{more}')

    # ------------------------------------------------------------------ per frame
    def _calibration(self, size: tuple[int, int], why: str) -> tuple[CameraInfo, Intrinsics]:
        """Return a fresh, valid camera_info for an image of ``size`` and its intrinsics."""
        info = self.camera_info
        if info is None:
            raise FrameError(f'{why} but no camera_info received yet')
        age = time.monotonic() - self.camera_info_time
        timeout = self.param('camera_info_timeout')
        if timeout > 0 and age > timeout:
            raise FrameError(f'the last camera_info is {age:.1f} s old (camera_info_timeout '
                             f'{timeout:g} s): is the camera driver still publishing it?')
        return info, Intrinsics.from_k(info.k, (info.height, info.width), size)

    def camera_k(self, size: tuple[int, int], why: str = 'calibrated mode') -> list[float]:
        """Return K of a fresh, valid camera_info for an image of ``size``; else FrameError."""
        info, _ = self._calibration(size, why)
        return [float(v) for v in info.k]

    def depth_input(self, depth: Image | None, size: tuple[int, int]) -> dict:
        """Keyword arguments of ``PeopleState.update`` for a paired depth image; {} when bad."""
        if depth is None:
            return {}
        consequence = 'frame processed without depth'
        try:
            k = self.camera_k(size, 'use_depth')
        except FrameError as exc:
            self.bad('camera_info', str(exc), consequence)
            return {}
        try:
            array = decode_depth(depth.encoding, depth.height, depth.width, depth.step,
                                 depth.data, bool(depth.is_bigendian))
        except FrameError as exc:
            kind = 'depth_encoding' if 'encoding' in str(exc) else 'depth'
            self.bad(kind, str(exc), consequence)
            return {}
        valid = valid_fraction(array)
        if valid < MIN_VALID_DEPTH:  # all NaN, inf, zero or negative: a sensor fault
            self.bad('depth_invalid', f'only {100 * valid:.2f} % of the depth pixels hold a '
                     f'depth (finite, > 0; at least {100 * MIN_VALID_DEPTH:g} % needed)',
                     consequence)
            return {}
        return {'depth': array, 'K': k, 'depth_encoding': depth.encoding}

    def intrinsics(self, size: tuple[int, int]) -> Intrinsics | None:
        """Return the intrinsics of a fresh, valid camera_info for ``size``, or None."""
        try:
            return self._calibration(size, 'calibrated mode')[1]
        except FrameError:
            return None

    def person_boxes(self, msg, size: tuple[int, int],
                     max_boxes: int) -> tuple[object, object] | tuple[None, None]:
        """Return a paired detector message's person boxes and scores (None, None if bad)."""
        classes = [c.strip() for c in self.param('detection_classes').split(',') if c.strip()]
        try:
            found = person_boxes(detector_boxes(msg), size, classes or None,
                                 self.param('detection_min_score'), max_boxes)
        except (TypeError, ValueError) as exc:
            self.bad('detections', f'{type(exc).__name__}: {exc}',
                     'frame processed with the fallback box source')
            return None, None
        self.detections['messages'] += 1
        self.detections['boxes'] += len(found)
        self.detections.update({f'rejected_{k}': n for k, n in found.rejected.items()})
        broken = {k: found.rejected[k] for k in _BROKEN_DETECTIONS if found.rejected[k]}
        if broken:
            self.bad('detections', f'{sum(broken.values())} detector boxes rejected '
                     f'({", ".join(f"{k}: {n}" for k, n in broken.items())})',
                     'the other boxes are used')
        return found.boxes, found.scores

    def request(self, arrival: Arrival, loaded: tuple[str, ...], forced: set[str],
                options: MessageOptions, max_persons: int = 8,
                world: tuple[bool, bool] = (False, False)) -> FrameRequest | None:
        """
        Decode a frame into a request for the scheduler; None when unwanted or bad (counted).

        ``loaded`` are the pipeline's heads, ``options`` the node's message options, ``world``
        whether /tf or REP-155 consumers want people (and 3D) beyond the subscribed outputs.
        """
        outputs = self.wanted_outputs(forced)
        people, people_3d = world
        wanted = frozenset(_OUTPUT_TASK[s] for s in outputs) | ({'pose'} if people else set())
        wanted &= frozenset(loaded)
        if not wanted:
            self.stats.idle_skipped += 1
            return None
        msg = arrival.msg
        try:
            fmt = self.param('compressed_format')
            frame = decode_message(msg, self.param('max_pixels'), None if fmt == 'any' else fmt)
        except FrameError as exc:
            self.bad('compressed' if isinstance(msg, CompressedImage) else 'image', str(exc))
            return None
        size = frame.pixels.shape[:2]
        fx = None
        if self.param('calibrated') and 'pointmap' in loaded:
            try:
                fx = self.camera_k(size)[0]
            except FrameError as exc:  # only the metric scale needs it: the heads still run
                self.bad('camera_info', str(exc), 'pointmap and 3D keypoints use the '
                         'predicted scale for this frame')
        options = dataclasses.replace(options, outputs=outputs)
        render = render_request(outputs, options)
        stamp = stamp_seconds(msg.header.stamp) or arrival.received
        boxes = scores = None
        if 'detections' in arrival.sides and 'pose' in wanted and \
                self.param('box_source') == 'detections':
            boxes, scores = self.person_boxes(arrival.sides['detections'], size, max_persons)
        intrinsics = self.intrinsics(size) if 'pointmap/camera_info' in outputs else None
        return FrameRequest(
            self.camera, frame.pixels, stamp, wanted, color_order=frame.color_order, fx=fx,
            boxes=boxes, box_scores=scores, people_3d=people_3d or 'people/poses' in outputs,
            depth=self.depth_input(arrival.sides.get('depth'), size), render=render,
            context=Decoded(arrival, frame, options, render, intrinsics))

    def diagnostics(self) -> dict:
        """Counters of the colour/depth pairing and the tracked people of this camera."""
        out = {}
        people = self.camera.people
        if people is not None:
            for key, value in people.diagnostics().items():
                out[f'people.{key}'] = '' if value is None else \
                    (f'{value:.4f}' if isinstance(value, float) else value)
        if self.pairer is not None:
            out.update(self.pairer.counters())
        out.update({f'detections.{k}': n for k, n in self.detections.items()})
        return out
