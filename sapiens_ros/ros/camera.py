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
:class:`~sapiens_ros.core.pipeline.scheduler.Camera`) and counters. The node creates one per
camera; the inference worker turns its newest frame into a
:class:`~sapiens_ros.core.pipeline.scheduler.FrameRequest`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
import dataclasses
import time

from diagnostic_msgs.msg import DiagnosticStatus
try:
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble: the same class, under its old module name
    from rclpy.qos_event import SubscriptionEventCallbacks
from rclpy.qos import QoSProfile
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Header, String

from .messages import info_messages
from .qos import LATCHED_QOS
from .render_plan import MessageOptions, render_request
from .runtime import FrameSlots, NodeStats, Problem, Throttle
from .stamps import stamp_seconds
from .topic_check import existing_type_conflict, resolved, topic_problem
from .topic_types import optional_outputs, TOPIC_TYPES
from .topics import COMPRESSED_OUTPUTS, INFO_TOPICS, task_outputs, tasks_for
from .vision_messages import (Detection2DArray, detector_boxes, label_info_msg, LABEL_INFO_TOPIC,
                              LabelInfo, VISION_MSGS_ERROR)
from .wire import read_image
from ..core.errors import FrameError
from ..core.media.image_codec import decode_message, Frame
from ..core.people.depth import decode_depth, valid_fraction
from ..core.pipeline.scheduler import Camera, FrameRequest
from ..core.pipeline.sync import FramePairing, Refusal, SideStream
from ..core.processing.detections import person_boxes
from ..core.processing.intrinsics import Intrinsics
from ..core.processing.render import RenderRequest

#: Fewer valid depth pixels than this fraction: the depth image is counted as invalid, not used.
MIN_VALID_DEPTH = 0.01

#: Detector boxes rejected as broken (counted as a bad input); ``class`` and ``score`` are
#: filtering, only counted.
_BROKEN_DETECTIONS = ('nan', 'size', 'outside')

#: What a colour frame does without each side stream (log lines and docs).
_WITHOUT = {'depth': 'frame processed without depth',
            'detections': "pose on the tracker's boxes, else the fallback box source"}

#: Seconds after activation before an input that delivered nothing is looked up in the graph.
TOPIC_CHECK_AFTER_S = 2.0


@dataclasses.dataclass
class ReceivedFrame:
    """A colour message in a camera's slot, not decoded yet: when it came, its side messages."""

    msg: object
    received_at: float  # time.monotonic()
    sides: dict = dataclasses.field(default_factory=dict)  # 'depth', 'detections' -> message


@dataclasses.dataclass
class DecodedFrame:
    """A received frame decoded for a step: what the publish stage needs besides the result."""

    received: ReceivedFrame
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
        self.inputs: dict[str, tuple[str, type]] = {}  # suffix -> (resolved topic, type)
        self.input_problems: dict[str, str] = {}  # suffix -> why it delivers nothing
        self.lost: Counter = Counter()  # messages lost before the callback, per input
        self.activated = 0.0  # time.monotonic() of the last subscribe
        self.pairing: FramePairing | None = None
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
    @property
    def image_suffix(self) -> str:
        """Return the colour input's suffix: ``image`` or ``image/compressed``."""
        return 'image/compressed' if self.param('compressed') else 'image'

    def subscribe(self, in_qos: QoSProfile, group, detections: bool = False) -> None:
        """
        Subscribe to the image (or image/compressed), camera_info and the side streams.

        The image comes serialised (``raw``): its size is checked before any pixel is copied.
        Side streams: ``depth`` with use_depth, ``detections`` (``Detection2DArray``) when
        ``detections`` (box_source detections and vision_msgs imports); both paired by stamp
        (:class:`~sapiens_ros.core.pipeline.sync.FramePairing`). An input whose topic carries
        another type is left out, said once in the log and in the diagnostics.
        """
        self.activated = time.monotonic()
        self.input_problems.clear()
        compressed = self.param('compressed')
        if not self._subscribe(CompressedImage if compressed else Image, self.image_suffix,
                               self.on_image, in_qos, group, raw=True):
            return
        self._subscribe(CameraInfo, 'camera_info', self.on_camera_info, in_qos, group)
        sides = []
        if self.param('use_depth'):
            sides.append((Image, SideStream('depth', self.param('depth_slop'),
                                            self.param('depth_timeout'))))
        if detections:
            sides.append((Detection2DArray, SideStream(
                'detections', self.param('detections_slop'), self.param('detections_timeout'))))
        streams = [spec for msg_type, spec in sides if self._subscribe(
            msg_type, spec.name, lambda msg, s=spec.name: self.on_side(s, msg), in_qos, group)]
        if streams:
            self.pairing = FramePairing(streams, self.on_paired,
                                        max_offset=self.param('max_stamp_offset'),
                                        queue_size=self.param('depth_queue_size'),
                                        on_late=self.on_late)

    def _subscribe(self, msg_type, suffix: str, callback, qos: QoSProfile, group,
                   raw: bool = False) -> bool:
        """Subscribe ``suffix``; on a type conflict say why once and return False."""
        topic = resolved(self.node, self.topic(suffix))
        problem = existing_type_conflict(self.node, topic, msg_type)
        if problem is None:
            events = SubscriptionEventCallbacks(
                message_lost=lambda info, s=suffix: self._on_lost(s, info.total_count_change))
            try:
                sub = self.node.create_subscription(
                    msg_type, self.topic(suffix), callback, qos, callback_group=group, raw=raw,
                    event_callbacks=events)
            except Exception as exc:  # noqa: BLE001 - rclpy's RCLError (a type that appeared
                problem = f'cannot subscribe {topic}: {exc}'  # meanwhile), an unsupported event
            else:
                self.subs.append(sub)
                self.inputs[suffix] = (sub.topic_name, msg_type)
                return True
        self.input_problems[suffix] = problem
        without = _WITHOUT.get(suffix, 'not subscribed')
        self.node.get_logger().error(f'{self.label}{suffix}: {problem} ({without})')
        return False

    def _on_lost(self, suffix: str, count: int) -> None:
        self.lost[suffix] += count
        if suffix == self.image_suffix:
            self.stats.on_lost(count)

    def describe_input(self) -> str:
        """Name the subscribed topics for the log."""
        topics = [topic for suffix, (topic, _) in self.inputs.items() if suffix != 'camera_info']
        if not topics:
            return f'{self.label}nothing (see the error above)'
        paired = f' and {", ".join(topics[1:])} (paired by stamp)' if topics[1:] else ''
        return f'{topics[0]}{paired}'

    def unsubscribe(self) -> None:
        """Destroy the subscriptions and forget the pairing."""
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.subs.clear()
        self.inputs.clear()
        self.pairing = None

    def on_image(self, raw: bytes) -> None:
        """Take a serialised colour frame: refuse it when oversized, else pair it and slot it."""
        self.stats.on_received()
        try:
            msg = read_image(raw, self.param('compressed'), self.param('max_pixels'))
        except FrameError as exc:
            self.bad('compressed' if self.param('compressed') else 'image', str(exc))
            return
        if self.pairing is None:
            self.slots.put(self.name, ReceivedFrame(msg, time.monotonic()))
            return
        for stream, reason in self.pairing.down().items():  # colour goes on without it
            self.bad(f'{stream}_missing', f'{reason} on {self.inputs[stream][0]}',
                     _WITHOUT[stream])
        for refusal in self.pairing.add_frame(stamp_seconds(msg.header.stamp), msg):
            self._refused(refusal)

    def on_side(self, stream: str, msg) -> None:
        """Take a side-stream message; refuse it (counted, said) when its stamp is off."""
        refusal = self.pairing.add_side(stream, stamp_seconds(msg.header.stamp), msg)
        if refusal is not None:
            self._refused(refusal)

    def _refused(self, refusal: Refusal) -> None:
        self.bad(f'{refusal.stream}_stamp', f'{refusal} (on {self.inputs[refusal.stream][0]})',
                 'message refused')

    def flush_pairing(self) -> None:
        """Release the frames whose wait for their side messages is over."""
        if self.pairing is not None:
            self.pairing.flush()

    def on_paired(self, msg, sides: dict) -> None:
        """Put a colour frame and its matched side-stream messages into the newest-frame slot."""
        self.slots.put(self.name, ReceivedFrame(msg, time.monotonic(), sides))

    def on_late(self, frame_msg, stream: str, side_msg) -> bool:
        """Attach a side message that came after its frame, if the frame still waits its step."""
        def attach(received: ReceivedFrame) -> bool:
            if received.msg is not frame_msg or stream in received.sides:
                return False
            received.sides[stream] = side_msg
            return True
        return self.slots.update(self.name, attach)

    def on_camera_info(self, msg: CameraInfo) -> None:
        """Keep the newest camera_info."""
        self.camera_info = msg
        self.camera_info_time = time.monotonic()

    def bad(self, kind: str, text: str, consequence: str | None = None) -> None:
        """
        Count a bad input of ``kind`` and log it, throttled per kind.

        ``consequence`` None: the frame was skipped; otherwise what was done instead (the frame
        was still processed, or only a side message was refused).
        """
        self.stats.on_bad(kind, text, skipped=consequence is None)
        suppressed = self.throttle.check(kind)
        if suppressed is not None:
            more = f' ({suppressed} more since the last report)' if suppressed else ''
            self.node.get_logger().error(f'{self.label}bad input ({kind}): {text}; '
                                         f'{consequence or "frame skipped"}{more}')

    # ------------------------------------------------------------------ health
    def check_inputs(self) -> None:
        """
        Look up, once the graph had time to form, why an input delivered nothing (said once).

        Run from the diagnostics timer: a topic nobody publishes, or one of another type, is
        named with the topics of the expected type that exist.
        """
        if not self.subs or time.monotonic() - self.activated < TOPIC_CHECK_AFTER_S:
            return
        for suffix, (topic, msg_type) in self.inputs.items():
            if self._delivered(suffix) or (suffix == 'camera_info' and not (
                    self.param('calibrated') or self.param('use_depth'))):
                self.input_problems.pop(suffix, None)
                continue
            problem = topic_problem(self.node, topic, msg_type)
            if problem is None:
                self.input_problems.pop(suffix, None)
            elif self.input_problems.get(suffix) != problem:
                self.input_problems[suffix] = problem
                self.node.get_logger().warning(f'{self.label}{suffix}: nothing received: '
                                               f'{problem}')

    def _delivered(self, suffix: str) -> bool:
        if suffix == 'camera_info':
            return self.camera_info is not None
        if suffix in ('image', 'image/compressed'):
            return self.stats.received > 0
        return self.pairing is not None and self.pairing.sides[suffix].counts['received'] > 0

    def health(self, stale_after: float) -> list[Problem]:
        """
        Return the problems of this camera's inputs, each with its level.

        A stale, silent or slow image, a side stream that does not pair, an input whose topic
        delivers nothing.
        """
        out = []
        image = self.image_suffix
        topic = self.inputs[image][0] if image in self.inputs else self.topic(image)
        state, reason = self.stats.rate.judge(stale_after)
        why = f': {self.input_problems[image]}' if image in self.input_problems else ''
        if state != 'ok':
            level = DiagnosticStatus.STALE if state == 'stale' else DiagnosticStatus.WARN
            out.append(Problem(level, f'{topic}: {reason}{why}'))
        elif why:
            out.append(Problem(DiagnosticStatus.WARN, f'{topic}{why}'))
        down = self.pairing.down() if self.pairing is not None else {}
        for stream, reason in down.items():
            out.append(Problem(DiagnosticStatus.WARN, f'{self.inputs[stream][0]} does not pair: '
                               f'{reason} ({_WITHOUT[stream]})', f'{stream}_missing'))
        for suffix, problem in self.input_problems.items():
            if suffix != image and suffix not in down:
                out.append(Problem(DiagnosticStatus.WARN, f'{suffix}: {problem}'))
        return out

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

    def person_boxes(self, msg, size: tuple[int, int], max_boxes: int,
                     frame_id: str = '') -> tuple[object, object] | tuple[None, None]:
        """
        Return a paired detector message's person boxes and scores (None, None if bad).

        A detection array of another frame than the image's (both named) is refused.
        """
        theirs = msg.header.frame_id
        if theirs and frame_id and theirs.lstrip('/') != frame_id.lstrip('/'):
            self.bad('detections_frame', f'detections in frame {theirs!r}, the image in '
                     f'{frame_id!r}: is the detector remapped to another camera?',
                     "refused: pose on the tracker's boxes, else the fallback box source")
            return None, None
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

    def request(self, received: ReceivedFrame, loaded: tuple[str, ...], forced: set[str],
                options: MessageOptions, max_persons: int = 8,
                world: tuple[bool, bool] = (False, False)) -> FrameRequest | None:
        """
        Decode a frame into a request for the scheduler; None when unwanted or bad (counted).

        ``loaded`` are the pipeline's heads, ``options`` the node's message options, ``world``
        whether /tf or REP-155 consumers want people (and 3D) beyond the subscribed outputs.
        """
        outputs = self.wanted_outputs(forced)
        people, people_3d = world
        wanted = tasks_for(outputs) | ({'pose'} if people else set())
        wanted &= frozenset(loaded)
        if not wanted:
            self.stats.idle_skipped += 1
            return None
        msg = received.msg
        try:
            fmt = self.param('compressed_format')
            frame = decode_message(msg, self.param('max_pixels'), None if fmt == 'any' else fmt)
        except FrameError as exc:
            self.bad('compressed' if hasattr(msg, 'format') else 'image', str(exc))
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
        stamp = stamp_seconds(msg.header.stamp) or received.received_at
        boxes = scores = None
        if 'detections' in received.sides and 'pose' in wanted and \
                self.param('box_source') == 'detections':
            boxes, scores = self.person_boxes(received.sides['detections'], size, max_persons,
                                              msg.header.frame_id)
        intrinsics = self.intrinsics(size) if 'pointmap/camera_info' in outputs else None
        return FrameRequest(
            self.camera, frame.pixels, stamp, wanted, color_order=frame.color_order, fx=fx,
            boxes=boxes, box_scores=scores, people_3d=people_3d or 'people/poses' in outputs,
            depth=self.depth_input(received.sides.get('depth'), size), render=render,
            context=DecodedFrame(received, frame, options, render, intrinsics))

    def diagnostics(self) -> dict:
        """Counters of the colour/depth pairing and the tracked people of this camera."""
        out = {}
        people = self.camera.people
        if people is not None:
            for key, value in people.diagnostics().items():
                out[f'people.{key}'] = '' if value is None else \
                    (f'{value:.4f}' if isinstance(value, float) else value)
        if self.pairing is not None:
            out.update(self.pairing.counters())
        out.update({f'detections.{k}': n for k, n in self.detections.items()})
        out.update({f'lost.{k}': n for k, n in self.lost.items()})
        return out
