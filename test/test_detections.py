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

"""External person boxes: filtering, clipping, bad entries counted; Detection2DArray over DDS."""

import numpy as np
import pytest
from sapiens_ros.core.processing.detections import DetectorBoxes, person_boxes

SIZE = (480, 640)


def boxes(rows):
    """``rows``: (cx, cy, w, h, theta, [(class, score), ...])."""
    return DetectorBoxes(np.array([r[:2] for r in rows], float).reshape(-1, 2),
                         np.array([r[2:4] for r in rows], float).reshape(-1, 2),
                         np.array([r[4] for r in rows], float),
                         [[c for c, _ in r[5]] for r in rows],
                         [[s for _, s in r[5]] for r in rows])


def test_kept_boxes_are_clipped_xyxy_in_message_order():
    # clipped to the pixel edges (-0.5 .. W - 0.5), as every box source is
    det = boxes([(100, 200, 80, 240, 0.0, [('person', 0.9)]),
                 (620, 300, 80, 200, 0.0, [('dog', 0.99), ('person', 0.6)]),  # sticks out
                 (300, 240, 50, 100, 0.0, [('person', 0.7)])])
    out = person_boxes(det, SIZE, classes=('person',), min_score=0.5)
    np.testing.assert_array_equal(out.boxes, np.float32([[60, 80, 140, 320],
                                                         [580, 200, 639.5, 400],
                                                         [275, 190, 325, 290]]))
    np.testing.assert_allclose(out.scores, [0.9, 0.6, 0.7])  # the person hypothesis' score
    assert out.rows.tolist() == [0, 1, 2] and not out.rejected
    top2 = person_boxes(det, SIZE, classes=('person',), min_score=0.5, max_boxes=2)
    assert top2.rows.tolist() == [0, 2]  # the best two, still in message order


def test_bad_and_filtered_entries_are_counted_by_kind():
    det = boxes([(np.nan, 200, 80, 240, 0.0, [('person', 0.9)]),
                 (100, 200, 80, np.inf, 0.0, [('person', 0.9)]),
                 (100, 200, 0, 240, 0.0, [('person', 0.9)]),
                 (100, 200, -5, 240, 0.0, [('person', 0.9)]),
                 (100, 200, 80, 240, 0.0, [('person', float('nan'))]),
                 (100, 200, 80, 240, 0.0, [('car', 0.9)]),
                 (100, 200, 80, 240, 0.0, [('person', 0.2)]),
                 (-300, 200, 80, 240, 0.0, [('person', 0.9)]),
                 (100, 900, 80, 240, 0.0, [('person', 0.9)]),
                 (100, 200, 80, 240, 0.0, [('person', 0.9)])])
    out = person_boxes(det, SIZE, classes=('person',), min_score=0.5)
    assert out.rows.tolist() == [9]
    assert dict(out.rejected) == {'nan': 3, 'size': 2, 'class': 1, 'score': 1, 'outside': 2}
    assert len(person_boxes(boxes([]), SIZE)) == 0


def test_rotated_boxes_become_their_axis_aligned_bounds_and_any_class_passes():
    det = boxes([(300, 240, 100, 20, np.pi / 2, [('7', 0.8)]), (50, 50, 10, 10, 0.0, [])])
    out = person_boxes(det, SIZE, classes=None, min_score=0.5)
    np.testing.assert_allclose(out.boxes[0], [290, 190, 310, 290], atol=1e-4)
    assert out.scores[1] == 1.0  # no hypothesis: taken as given
    assert person_boxes(det, SIZE, classes=('0',)).rejected['class'] == 2


def test_detection2darray_over_dds_gives_exactly_these_person_boxes(graph):
    vision = pytest.importorskip('vision_msgs.msg')
    from ros_fixtures import tiny_pipeline
    from sapiens_ros.ros.messages import build_messages
    from sapiens_ros.ros.render_plan import MessageOptions
    from sapiens_ros.ros.vision_messages import detector_boxes
    from std_msgs.msg import Header

    received = graph.collect(vision.Detection2DArray, 'detections')
    pub = graph.publisher(vision.Detection2DArray, 'detections')
    graph.wait_for_subscribers(pub)
    msg = vision.Detection2DArray(header=Header(frame_id='cam'))
    # floats: rclpy serialises an int in a float64 field as 0.0 (no check on Jazzy)
    for (cx, cy, w, h), cls, score in (((100.5, 120.25, 60, 150), 'person', 0.93),
                                       ((400, 130, 90, 200), 'person', 0.88),
                                       ((250, 100, 40, 40), 'ball', 0.99),
                                       ((250, 100, 0, 40), 'person', 0.99)):
        det = vision.Detection2D()
        det.bbox.center.position.x, det.bbox.center.position.y = float(cx), float(cy)
        det.bbox.size_x, det.bbox.size_y = float(w), float(h)
        hyp = vision.ObjectHypothesisWithPose()
        hyp.hypothesis.class_id, hyp.hypothesis.score = cls, score
        det.results.append(hyp)
        msg.detections.append(det)
    pub.publish(msg)
    assert graph.wait(lambda: received)
    image = np.random.default_rng(0).integers(0, 255, (240, 450, 3), np.uint8)
    out = person_boxes(detector_boxes(received[0]), image.shape[:2], ('person',), 0.5)
    assert dict(out.rejected) == {'class': 1, 'size': 1}
    expected = np.float32([[70.5, 45.25, 130.5, 195.25], [355, 30, 445, 230]])
    np.testing.assert_array_equal(out.boxes, expected)
    result = tiny_pipeline(('pose',), box_source='full')(image, boxes=[out.boxes])[0]
    assert result.seg is None  # pose without a seg forward
    np.testing.assert_array_equal(result.pose.boxes, expected)
    persons = build_messages(Header(frame_id='cam'), result,
                             MessageOptions(outputs={'pose/persons'}))['pose/persons']
    fields = np.frombuffer(bytes(persons.data), np.float32).reshape(2, 6)
    np.testing.assert_array_equal(fields[:, :4], expected)  # pose/persons: exactly these
