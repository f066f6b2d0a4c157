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
Which outputs a result can fill and what the pipeline should render on its device for them.

Overlays, 16-bit normals, depth, the matting alpha, the point-cloud records and the compressed
images are rendered on the pipeline's device when it was asked to (:func:`render_request`), so
building the messages copies no bulk data; whatever was not rendered there is rendered by
:mod:`.messages` with the same torch code (``core.processing.render``) on the CPU. The pose
overlay shows the track ids and colours, known after tracking: asked for, the pipeline keeps
the frame on its device and :mod:`.messages` draws the overlay there, after tracking.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from .topics import COMPRESSED_OUTPUTS, OUTPUT_TASK, TASK_OUTPUTS
from ..core.pipeline.pipeline import FrameResult
from ..core.processing.render import AFTER_TRACKING, RenderRequest

#: The rendered buffer behind each output (``core.processing.render`` names).
RENDERED = {'pose/overlay': 'pose_overlay', 'seg/overlay': 'seg_overlay',
            'normal/overlay': 'normal_overlay', 'pointmap/points': 'cloud',
            'pointmap/depth': 'depth', 'matting/alpha': 'matting_alpha'}
#: Compressed images always PNG (lossless): class ids, and the alpha an XR compositor blends by.
LOSSLESS = {'seg/labels': 'seg_labels', 'matting/alpha': 'matting_alpha'}


@dataclass
class MessageOptions:
    """How to render a result into messages (the node's runtime parameters)."""

    score_threshold: float = 0.3  # keypoints below it are left out of markers and overlay
    overlay_alpha: float = 0.5
    foreground_only: bool = True  # depth: NaN where seg says background
    pixel_scale: float = 0.001  # metres per pixel for 2D markers (no 3D available)
    marker_size: float = 0.01  # point size / line width of 3D markers, metres
    outputs: Collection[str] | None = None  # suffixes to build; None: every available raw one
    normal_encoding: str = '32FC3'  # normal/image: '32FC3' or '16SC3' (x 32767)
    compressed_format: str = 'jpeg'  # overlays' /compressed: 'jpeg' or 'png' (labels: png)
    jpeg_quality: int = 90
    smooth_markers: bool = True  # pose/markers from the One-Euro filtered people (with people)
    smooth_keypoints: bool = False  # pose/keypoints u, v, x, y, z filtered too (default raw)
    keypoint_format: str = 'sapiens308'  # pose/keypoints and pose/markers: KEYPOINT_FORMATS


def _kept_on_device(result: FrameResult) -> frozenset[str]:
    """Return the rendered names drawn on the frame the pipeline kept on its device, if any."""
    return AFTER_TRACKING if result.device_frame is not None else frozenset()


def available_outputs(result: FrameResult, image: np.ndarray | None = None) -> list[str]:
    """
    Raw suffixes ``result`` can fill; no compressed ones.

    Overlays need the input image, unless the pipeline rendered them, or kept its device frame
    for the pose overlay (drawn after tracking).
    """
    kept = _kept_on_device(result)
    out = []
    for task, suffixes in TASK_OUTPUTS.items():
        if getattr(result, task) is None:
            continue
        out.extend(s for s in suffixes if image is not None or not s.endswith('overlay')
                   or RENDERED[s] in result.rendered or RENDERED[s] in kept)
    return out


def needs_host_image(render: RenderRequest, result: FrameResult) -> bool:
    """
    Tell whether ``result``'s messages for ``render`` need the host frame.

    They do for an overlay the pipeline neither rendered nor kept its device frame for.
    """
    kept = _kept_on_device(result)
    return any(key.split('.')[0].endswith('overlay') and key.split('.')[0] not in kept
               for key in render.keys() - set(result.rendered))


def wanted_outputs(result: FrameResult, options: MessageOptions,
                   image: np.ndarray | None) -> list[str]:
    """Return the raw and compressed suffixes ``result`` can fill that ``options`` asks for."""
    raw = available_outputs(result, image)
    if options.outputs is None:
        return raw
    compressed = [c for c, s in COMPRESSED_OUTPUTS.items() if s in raw or
                  '.'.join(compressed_source(c, options)) in result.rendered]
    return [s for s in raw + compressed if s in options.outputs]


def render_request(outputs: Collection[str] | None,
                   options: MessageOptions | None = None) -> RenderRequest:
    """
    Say what the pipeline should render on its device for these suffixes (None: every raw).

    Pass it as ``pipeline(frames, render=...)``: the messages then copy no bulk data.
    """
    options = options or MessageOptions()
    wanted = set(OUTPUT_TASK if outputs is None else outputs)
    if outputs is None:
        wanted -= set(COMPRESSED_OUTPUTS)
    names = {RENDERED[s] for s in wanted if s in RENDERED}
    if 'normal/image' in wanted and options.normal_encoding == '16SC3':
        names.add('normal16')
    encode = {compressed_source(c, options) for c in COMPRESSED_OUTPUTS if c in wanted}
    return RenderRequest(frozenset(names), frozenset(encode), options.overlay_alpha,
                         options.foreground_only, options.jpeg_quality)


def compressed_source(suffix: str, options: MessageOptions) -> tuple[str, str]:
    """``(render name, format)`` of a compressed suffix: labels and alpha always png."""
    raw = COMPRESSED_OUTPUTS[suffix]
    if raw in LOSSLESS:
        return LOSSLESS[raw], 'png'
    return RENDERED[raw], options.compressed_format
