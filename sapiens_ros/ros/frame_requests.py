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
A received frame turned into the scheduler's request: decoded, with its depth, boxes and camera.

What runs is what the camera's subscribed (and forced) outputs need; the colour message is
decoded, a paired depth image and a detector's person boxes are checked and converted, and
the camera_info gives the metric scale. A bad input is counted by the camera's inputs
(:meth:`.camera_inputs.CameraInputs.bad`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
import dataclasses

from sensor_msgs.msg import Image

from .camera_inputs import CameraInputs, ReceivedFrame
from .camera_outputs import CameraOutputs
from .render_plan import MessageOptions, render_request
from .stamps import stamp_seconds
from .tf_frames import valid_frame_id
from .topics import tasks_for
from .vision_messages import detector_boxes
from ..core.errors import FrameError
from ..core.media.image_codec import decode_message, Frame
from ..core.people.depth import decode_depth, valid_fraction
from ..core.pipeline.scheduler import Camera, FrameRequest
from ..core.processing.detections import person_boxes
from ..core.processing.intrinsics import Intrinsics
from ..core.processing.render import RenderRequest

#: Fewer valid depth pixels than this fraction: the depth image is counted as invalid, not used.
MIN_VALID_DEPTH = 0.01

#: Detector boxes rejected as broken (counted as a bad input); ``class`` and ``score`` are
#: filtering, only counted.
_BROKEN_DETECTIONS = ('nan', 'size', 'outside')


@dataclasses.dataclass
class DecodedFrame:
    """A received frame decoded for a step: what the publish stage needs besides the result."""

    received: ReceivedFrame
    frame: Frame
    options: MessageOptions
    render: RenderRequest  # what the pipeline renders for the wanted outputs
    intrinsics: Intrinsics | None = None  # of a fresh, valid camera_info (pointmap/camera_info)


class RequestBuilder:
    """Turns one camera's received frames into :class:`FrameRequest` s for the scheduler."""

    def __init__(self, camera: Camera, inputs: CameraInputs, outputs: CameraOutputs,
                 param: Callable[[str], object]) -> None:
        self.camera = camera
        self.inputs = inputs
        self.outputs = outputs
        self.param = param
        self.detections = Counter()  # detector boxes: used, rejected by kind

    def request(self, received: ReceivedFrame, loaded: tuple[str, ...], forced: set[str],
                options: MessageOptions, max_persons: int = 8,
                world: tuple[bool, bool] = (False, False)) -> FrameRequest | None:
        """
        Decode a frame into a request for the scheduler; None when unwanted or bad (counted).

        ``loaded`` are the pipeline's heads, ``options`` the node's message options, ``world``
        whether /tf or REP-155 consumers want people (and 3D) beyond the subscribed outputs.
        """
        outputs = self.outputs.wanted(forced, self.param('publish_all'))
        people, people_3d = world
        wanted = tasks_for(outputs) | ({'pose'} if people else set())
        wanted &= frozenset(loaded)
        if not wanted:
            self.inputs.stats.idle_skipped += 1
            return None
        msg = received.msg
        self.check_frame_id(msg.header)
        try:
            fmt = self.param('compressed_format')
            frame = decode_message(msg, self.param('max_pixels'), None if fmt == 'any' else fmt)
        except FrameError as exc:
            self.inputs.bad('compressed' if hasattr(msg, 'format') else 'image', str(exc))
            return None
        size = frame.pixels.shape[:2]
        fx = None
        if self.param('calibrated') and 'pointmap' in loaded:
            try:
                fx = self.inputs.camera_k(size)[0]
            except FrameError as exc:  # only the metric scale needs it: the heads still run
                self.inputs.bad('camera_info', str(exc), 'pointmap and 3D keypoints use the '
                                'predicted scale for this frame')
        options = dataclasses.replace(options, outputs=outputs)
        render = render_request(outputs, options)
        stamp = stamp_seconds(msg.header.stamp) or received.received_at
        boxes = scores = None
        if 'detections' in received.sides and 'pose' in wanted and \
                self.param('box_source') == 'detections':
            boxes, scores = self.person_boxes(received.sides['detections'], size, max_persons,
                                              msg.header.frame_id)
        intrinsics = self.inputs.intrinsics(size) if 'pointmap/camera_info' in outputs else None
        return FrameRequest(
            self.camera, frame.pixels, stamp, wanted, color_order=frame.color_order, fx=fx,
            boxes=boxes, box_scores=scores, people_3d=people_3d or 'people/poses' in outputs,
            depth=self.depth_input(received.sides.get('depth'), size), render=render,
            context=DecodedFrame(received, frame, options, render, intrinsics))

    def check_frame_id(self, header) -> None:
        """
        Give the image header the ``frame_id`` parameter, or refuse a frame id tf2 rejects.

        With ``frame_id`` set (``{camera}`` stands for the camera name) every frame takes it,
        and every output copies it. Otherwise an empty or ``/``-led frame id, which every tf2
        listener rejects, is counted (``bad_input.frame_id``, one throttled line): the frame is
        processed and published with its header, but no TF frame is parented to it.
        """
        fixed = self.param('frame_id')
        if fixed:
            header.frame_id = fixed.replace('{camera}', self.camera.name)
        elif not valid_frame_id(header.frame_id):
            self.inputs.bad('frame_id', f'the image frame_id {header.frame_id!r} is not a tf2 '
                            'frame id (empty, or a leading /): every tf2 listener rejects it; '
                            'fix the camera driver or set the frame_id parameter',
                            'frame processed; no body, face or person frames on /tf for it')

    def depth_input(self, depth: Image | None, size: tuple[int, int]) -> dict:
        """Keyword arguments of ``PeopleState.update`` for a paired depth image; {} when bad."""
        if depth is None:
            return {}
        consequence = 'frame processed without depth'
        try:
            k = self.inputs.camera_k(size, 'use_depth')
        except FrameError as exc:
            self.inputs.bad('camera_info', str(exc), consequence)
            return {}
        try:
            array = decode_depth(depth.encoding, depth.height, depth.width, depth.step,
                                 depth.data, bool(depth.is_bigendian))
        except FrameError as exc:
            kind = 'depth_encoding' if 'encoding' in str(exc) else 'depth'
            self.inputs.bad(kind, str(exc), consequence)
            return {}
        valid = valid_fraction(array)
        if valid < MIN_VALID_DEPTH:  # all NaN, inf, zero or negative: a sensor fault
            self.inputs.bad('depth_invalid', f'only {100 * valid:.2f} % of the depth pixels '
                            f'hold a depth (finite, > 0; at least {100 * MIN_VALID_DEPTH:g} % '
                            f'needed)', consequence)
            return {}
        return {'depth': array, 'K': k, 'depth_encoding': depth.encoding}

    def person_boxes(self, msg, size: tuple[int, int], max_boxes: int,
                     frame_id: str = '') -> tuple[object, object] | tuple[None, None]:
        """
        Return a paired detector message's person boxes and scores (None, None if bad).

        A detection array of another frame than the image's (both named) is refused.
        """
        theirs = msg.header.frame_id
        if theirs and frame_id and theirs.lstrip('/') != frame_id.lstrip('/'):
            self.inputs.bad('detections_frame', f'detections in frame {theirs!r}, the image in '
                            f'{frame_id!r}: is the detector remapped to another camera?',
                            "refused: pose on the tracker's boxes, else the fallback box source")
            return None, None
        classes = [c.strip() for c in self.param('detection_classes').split(',') if c.strip()]
        try:
            found = person_boxes(detector_boxes(msg), size, classes or None,
                                 self.param('detection_min_score'), max_boxes)
        except (TypeError, ValueError) as exc:
            self.inputs.bad('detections', f'{type(exc).__name__}: {exc}',
                            'frame processed with the fallback box source')
            return None, None
        self.detections['messages'] += 1
        self.detections['boxes'] += len(found)
        self.detections.update({f'rejected_{k}': n for k, n in found.rejected.items()})
        broken = {k: found.rejected[k] for k in _BROKEN_DETECTIONS if found.rejected[k]}
        if broken:
            self.inputs.bad('detections', f'{sum(broken.values())} detector boxes rejected '
                            f'({", ".join(f"{k}: {n}" for k, n in broken.items())})',
                            'the other boxes are used')
        return found.boxes, found.scores
