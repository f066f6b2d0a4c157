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
``vision_msgs`` in and out: person detections, seg class names, an external detector's boxes.

``vision_msgs`` is optional: without it :data:`VISION_MSGS_ERROR` says why, the message types
are None and nothing here is built (the node logs it once and publishes the rest).
"""

from __future__ import annotations

import numpy as np
from std_msgs.msg import Header

from .optional_msgs import import_error, message_types
from .topics import DETECTIONS_OUTPUT, LABEL_INFO_TOPIC
from ..core.models.metadata import seg_class_info
from ..core.pipeline.pipeline import FrameResult
from ..core.processing.detections import DetectorBoxes

(Detection2D, Detection2DArray, LabelInfo, ObjectHypothesisWithPose,
 VisionClass) = message_types('vision_msgs')
VISION_MSGS_ERROR = import_error('vision_msgs')

#: Class id of every ``pose/detections`` result.
PERSON_CLASS = 'person'


def detections_msg(header: Header, result: FrameResult, ids: np.ndarray) -> Detection2DArray:
    """
    ``pose/detections``: one ``Detection2D`` per person row of ``pose/persons``, same order.

    ``bbox``: the person box (centre and size, pixels, theta 0); ``results``: one hypothesis,
    class ``person`` with the box score; ``id``: the track id ``ids[row]`` as a string (empty
    for -1, untracked).
    """
    pose = result.pose
    msg = Detection2DArray(header=header)
    boxes = np.asarray(pose.boxes, np.float64)
    for box, score, track in zip(boxes.tolist(), pose.box_scores.tolist(), ids.tolist(),
                                 strict=True):
        det = Detection2D(header=header, id=str(track) if track >= 0 else '')
        det.bbox.center.position.x = (box[0] + box[2]) / 2
        det.bbox.center.position.y = (box[1] + box[3]) / 2
        det.bbox.size_x, det.bbox.size_y = box[2] - box[0], box[3] - box[1]
        hypothesis = ObjectHypothesisWithPose()
        hypothesis.hypothesis.class_id = PERSON_CLASS
        hypothesis.hypothesis.score = float(score)
        hypothesis.pose.pose.orientation.w = 1.0
        det.results.append(hypothesis)
        msg.detections.append(det)
    return msg


def label_info_msg(header: Header) -> LabelInfo:
    """``seg/label_info``: class id (the ``seg/labels`` pixel value) to name, 29 classes."""
    msg = LabelInfo(header=header, threshold=0.0)
    msg.class_map = [VisionClass(class_id=i, class_name=name)
                     for i, name in enumerate(seg_class_info().names)]
    return msg


def detector_boxes(msg: Detection2DArray) -> DetectorBoxes:
    """Return a detector's ``Detection2DArray`` as raw boxes (``core.processing.detections``)."""
    dets = msg.detections
    centers = np.array([[d.bbox.center.position.x, d.bbox.center.position.y] for d in dets],
                       np.float64).reshape(-1, 2)
    sizes = np.array([[d.bbox.size_x, d.bbox.size_y] for d in dets], np.float64).reshape(-1, 2)
    thetas = np.array([d.bbox.center.theta for d in dets], np.float64)
    classes = [[r.hypothesis.class_id for r in d.results] for d in dets]
    scores = [[r.hypothesis.score for r in d.results] for d in dets]
    return DetectorBoxes(centers, sizes, thetas, classes, scores)


__all__ = ['DETECTIONS_OUTPUT', 'LABEL_INFO_TOPIC', 'PERSON_CLASS', 'VISION_MSGS_ERROR',
           'Detection2DArray', 'LabelInfo', 'detections_msg', 'detector_boxes',
           'label_info_msg']
