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
One camera's inputs and their health: subscriptions, pairing, calibration, bad-input accounting.

The colour image comes serialised and is size-checked before any pixel is copied; side streams
(aligned depth, a detector's person boxes) are paired with it by stamp, and a frame with its
side messages waits in the camera's newest-frame slot as a :class:`ReceivedFrame` until the
inference worker takes it. Every bad input is counted and logged here, throttled per kind.
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

from .runtime import FrameSlots, NodeStats, Problem, Throttle
from .stamps import stamp_seconds
from .topic_check import existing_type_conflict, resolved, topic_problem
from .vision_messages import Detection2DArray
from .wire import read_image
from ..core.errors import FrameError
from ..core.pipeline.sync import FramePairing, Refusal, SideStream
from ..core.processing.intrinsics import Intrinsics

#: What a colour frame does without each side stream (log lines and docs).
WITHOUT = {'depth': 'frame processed without depth',
           'detections': "pose on the tracker's boxes, else the fallback box source"}

#: Seconds after activation before an input that delivered nothing is looked up in the graph.
TOPIC_CHECK_AFTER_S = 2.0


@dataclasses.dataclass
class ReceivedFrame:
    """A colour message in a camera's slot, not decoded yet: when it came, its side messages."""

    msg: object
    received_at: float  # time.monotonic()
    sides: dict = dataclasses.field(default_factory=dict)  # 'depth', 'detections' -> message


class CameraInputs:
    """
    Subscriptions, pairing, camera_info and bad-input counters of one camera.

    ``topic`` names a suffix in the camera's namespace, ``label`` prefixes its log lines, and
    received frames go into ``slots`` under ``name``.
    """

    def __init__(self, node, name: str, topic: Callable[[str], str], label: str,
                 slots: FrameSlots, param: Callable[[str], object], stats: NodeStats) -> None:
        self.node = node
        self.name = name
        self.topic = topic
        self.label = label
        self.slots = slots
        self.param = param
        self.stats = stats
        self.throttle = Throttle(2.0)
        self.subs: list = []
        self.subscribed: dict[str, tuple[str, type]] = {}  # suffix -> (resolved topic, type)
        self.problems: dict[str, str] = {}  # suffix -> why it delivers nothing
        self.lost: Counter = Counter()  # messages lost before the callback, per input
        self.activated = 0.0  # time.monotonic() of the last subscribe
        self.pairing: FramePairing | None = None
        self.camera_info: CameraInfo | None = None
        self.camera_info_time = 0.0

    # ------------------------------------------------------------------ subscriptions
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
        self.problems.clear()
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
                self.subscribed[suffix] = (sub.topic_name, msg_type)
                return True
        self.problems[suffix] = problem
        without = WITHOUT.get(suffix, 'not subscribed')
        self.node.get_logger().error(f'{self.label}{suffix}: {problem} ({without})')
        return False

    def _on_lost(self, suffix: str, count: int) -> None:
        self.lost[suffix] += count
        if suffix == self.image_suffix:
            self.stats.on_lost(count)

    def describe(self) -> str:
        """Name the subscribed topics for the log."""
        topics = [topic for suffix, (topic, _) in self.subscribed.items()
                  if suffix != 'camera_info']
        if not topics:
            return f'{self.label}nothing (see the error above)'
        paired = f' and {", ".join(topics[1:])} (paired by stamp)' if topics[1:] else ''
        return f'{topics[0]}{paired}'

    def unsubscribe(self) -> None:
        """Destroy the subscriptions and forget the pairing."""
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.subs.clear()
        self.subscribed.clear()
        self.pairing = None

    # ------------------------------------------------------------------ frames and pairing
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
            self.bad(f'{stream}_missing', f'{reason} on {self.subscribed[stream][0]}',
                     WITHOUT[stream])
        for refusal in self.pairing.add_frame(stamp_seconds(msg.header.stamp), msg):
            self._refused(refusal)

    def on_side(self, stream: str, msg) -> None:
        """Take a side-stream message; refuse it (counted, said) when its stamp is off."""
        refusal = self.pairing.add_side(stream, stamp_seconds(msg.header.stamp), msg)
        if refusal is not None:
            self._refused(refusal)

    def _refused(self, refusal: Refusal) -> None:
        self.bad(f'{refusal.stream}_stamp',
                 f'{refusal} (on {self.subscribed[refusal.stream][0]})', 'message refused')

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

    # ------------------------------------------------------------------ calibration
    def on_camera_info(self, msg: CameraInfo) -> None:
        """Keep the newest camera_info."""
        self.camera_info = msg
        self.camera_info_time = time.monotonic()

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

    def intrinsics(self, size: tuple[int, int]) -> Intrinsics | None:
        """Return the intrinsics of a fresh, valid camera_info for ``size``, or None."""
        try:
            return self._calibration(size, 'calibrated mode')[1]
        except FrameError:
            return None

    # ------------------------------------------------------------------ health
    def check(self) -> None:
        """
        Look up, once the graph had time to form, why an input delivered nothing (said once).

        Run from the diagnostics timer: a topic nobody publishes, or one of another type, is
        named with the topics of the expected type that exist.
        """
        if not self.subs or time.monotonic() - self.activated < TOPIC_CHECK_AFTER_S:
            return
        for suffix, (topic, msg_type) in self.subscribed.items():
            if self._delivered(suffix) or (suffix == 'camera_info' and not (
                    self.param('calibrated') or self.param('use_depth'))):
                self.problems.pop(suffix, None)
                continue
            problem = topic_problem(self.node, topic, msg_type)
            if problem is None:
                self.problems.pop(suffix, None)
            elif self.problems.get(suffix) != problem:
                self.problems[suffix] = problem
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
        topic = self.subscribed[image][0] if image in self.subscribed else self.topic(image)
        state, reason = self.stats.rate.judge(stale_after)
        why = f': {self.problems[image]}' if image in self.problems else ''
        if state != 'ok':
            level = DiagnosticStatus.STALE if state == 'stale' else DiagnosticStatus.WARN
            out.append(Problem(level, f'{topic}: {reason}{why}'))
        elif why:
            out.append(Problem(DiagnosticStatus.WARN, f'{topic}{why}'))
        down = self.pairing.down() if self.pairing is not None else {}
        for stream, reason in down.items():
            out.append(Problem(DiagnosticStatus.WARN,
                               f'{self.subscribed[stream][0]} does not pair: {reason} '
                               f'({WITHOUT[stream]})', f'{stream}_missing'))
        for suffix, problem in self.problems.items():
            if suffix != image and suffix not in down:
                out.append(Problem(DiagnosticStatus.WARN, f'{suffix}: {problem}'))
        return out

    def pairing_counters(self) -> dict:
        """Counters of the colour/side-stream pairing (none without side streams)."""
        return self.pairing.counters() if self.pairing is not None else {}
