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
One camera of the perception node, made of three parts a frame passes through in order.

Every camera keeps its own namespace of topics (``<name>/image`` in, ``<name>/pose/keypoints``
out; no prefix for the node's single unnamed camera). A frame comes in through its
:class:`~.camera_inputs.CameraInputs` (subscriptions, pairing with the side streams,
camera_info, bad-input counters, input health) as a ``ReceivedFrame``; the inference worker
turns it into a :class:`~sapiens_ros.core.pipeline.scheduler.FrameRequest` with its
:class:`~.frame_requests.RequestBuilder` (decoding, depth, detector boxes, the wanted tasks);
the results go out through its :class:`~.camera_outputs.CameraOutputs` (publishers). Tracked
people live in its :class:`~sapiens_ros.core.pipeline.scheduler.Camera`. The node creates one
:class:`CameraChannel` per camera.
"""

from __future__ import annotations

from collections.abc import Callable

from rclpy.qos import QoSProfile

from .camera_inputs import CameraInputs, ReceivedFrame
from .camera_outputs import CameraOutputs
from .frame_requests import DecodedFrame, RequestBuilder
from .render_plan import MessageOptions
from .runtime import FrameSlots, NodeStats, Problem
from ..core.pipeline.scheduler import Camera, FrameRequest
from ..core.processing.pointmap_camera import PointmapCamera

__all__ = ['CameraChannel', 'DecodedFrame', 'ReceivedFrame']


class CameraChannel:
    """Inputs, request building and outputs of one camera (``name`` '' is the node's own)."""

    def __init__(self, node, name: str, camera: Camera, slots: FrameSlots,
                 param: Callable[[str], object]) -> None:
        self.name = name
        self.camera = camera
        self.stats = NodeStats()
        self.inputs = CameraInputs(node, name, self.topic, self.label, slots, param, self.stats)
        self.outputs = CameraOutputs(node, name, self.topic)
        self.requests = RequestBuilder(camera, self.inputs, self.outputs, param)
        self.pointmap_camera = PointmapCamera()  # pointmap/camera_info's fit, once per size

    def topic(self, suffix: str) -> str:
        """Return this camera's name of ``suffix`` (relative: remappable, in the namespace)."""
        return f'{self.name}/{suffix}' if self.name else suffix

    @property
    def label(self) -> str:
        """Name the camera in log lines."""
        return f'camera {self.name}: ' if self.name else ''

    # ------------------------------------------------------------------ in
    def subscribe(self, in_qos: QoSProfile, group, detections: bool = False) -> None:
        """Subscribe to the camera's inputs (:meth:`.camera_inputs.CameraInputs.subscribe`)."""
        self.inputs.subscribe(in_qos, group, detections)

    def unsubscribe(self) -> None:
        """Destroy the subscriptions and forget the pairing."""
        self.inputs.unsubscribe()

    def describe_input(self) -> str:
        """Name the subscribed topics for the log."""
        return self.inputs.describe()

    @property
    def pairing(self):
        """Return how colour frames wait for their side messages (None without side streams)."""
        return self.inputs.pairing

    def flush_pairing(self) -> None:
        """Release the frames whose wait for their side messages is over."""
        self.inputs.flush_pairing()

    def bad(self, kind: str, text: str, consequence: str | None = None) -> None:
        """Count and log a bad input (:meth:`.camera_inputs.CameraInputs.bad`)."""
        self.inputs.bad(kind, text, consequence)

    def check_inputs(self) -> None:
        """Say once why an input delivered nothing (from the diagnostics timer)."""
        self.inputs.check()

    def health(self, stale_after: float) -> list[Problem]:
        """Return the problems of this camera's inputs, each with its level."""
        return self.inputs.health(stale_after)

    # ------------------------------------------------------------------ through
    def request(self, received: ReceivedFrame, loaded: tuple[str, ...], forced: set[str],
                options: MessageOptions, max_persons: int = 8,
                world: tuple[bool, bool] = (False, False)) -> FrameRequest | None:
        """Decode a frame into the scheduler's input (:class:`.frame_requests.RequestBuilder`)."""
        return self.requests.request(received, loaded, forced, options, max_persons, world)

    # ------------------------------------------------------------------ out
    @property
    def pubs(self) -> dict:
        """Return the output publishers by suffix."""
        return self.outputs.pubs

    def create_publishers(self, tasks: tuple[str, ...], out_qos: QoSProfile) -> None:
        """Create the output publishers of ``tasks`` (``<topic>/compressed`` too, info latched)."""
        self.outputs.create(tasks, out_qos)

    def publish_info(self, tasks: tuple[str, ...], keypoint_format: str) -> None:
        """Publish the latched metadata topics (the JSON ones, and LabelInfo)."""
        self.outputs.publish_info(tasks, keypoint_format)

    def destroy_publishers(self) -> None:
        """Destroy every publisher (cleanup)."""
        self.outputs.destroy()

    # ------------------------------------------------------------------ counters
    def diagnostics(self) -> dict:
        """Counters of the colour/depth pairing and the tracked people of this camera."""
        out = {}
        people = self.camera.people
        if people is not None:
            for key, value in people.diagnostics().items():
                out[f'people.{key}'] = '' if value is None else \
                    (f'{value:.4f}' if isinstance(value, float) else value)
        out.update(self.inputs.pairing_counters())
        out.update({f'detections.{k}': n for k, n in self.requests.detections.items()})
        out.update({f'lost.{k}': n for k, n in self.inputs.lost.items()})
        return out
