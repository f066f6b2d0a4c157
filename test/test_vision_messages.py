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

"""vision_msgs out over Fast DDS: pose/detections with track ids, latched seg LabelInfo."""

import dataclasses

import numpy as np
import pytest

vision = pytest.importorskip('vision_msgs.msg')

from ros_fixtures import tiny_pipeline  # noqa: E402
from ros_graph import qos  # noqa: E402
from sapiens_ros.core.models.metadata import seg_class_info  # noqa: E402
from sapiens_ros.core.people.state import PeopleState  # noqa: E402
from sapiens_ros.ros import messages as M  # noqa: E402
from sapiens_ros.ros.render_plan import MessageOptions  # noqa: E402
from sapiens_ros.ros.topic_types import optional_outputs  # noqa: E402
from sapiens_ros.ros.vision_messages import (DETECTIONS_OUTPUT, label_info_msg,  # noqa: E402
                                             LABEL_INFO_TOPIC)
from skimage import data as skdata  # noqa: E402
from std_msgs.msg import Header  # noqa: E402


@pytest.fixture(scope='module')
def two_people():
    """Run the tiny pose on the astronaut photo; add a copy 60 px to the right."""
    image = skdata.astronaut()[::2, ::2].copy()
    result = tiny_pipeline(('pose',), box_source='full')(image)[0]
    pose, shift = result.pose, np.float32([60.0, 0.0])
    two = dataclasses.replace(
        pose, boxes=np.concatenate([pose.boxes, pose.boxes + np.tile(shift, 2)]),
        keypoints=np.concatenate([pose.keypoints, pose.keypoints + shift]),
        scores=np.concatenate([pose.scores, pose.scores]),
        box_scores=np.float32([0.8, 0.6]))
    return dataclasses.replace(result, pose=two, keypoints_xyz=None)


def _header(sec=3):
    header = Header(frame_id='cam_optical')
    header.stamp.sec = sec
    return header


def test_pose_detections_over_dds_carry_track_ids(graph, two_people):
    result = two_people
    state = PeopleState()
    state.update(result, 2.9)
    people = state.update(result, 3.0)
    assert optional_outputs(('pose',)) == {DETECTIONS_OUTPUT: vision.Detection2DArray}
    assert DETECTIONS_OUTPUT not in M.build_messages(_header(), result, None, None, people)
    msgs = M.build_messages(_header(), result, MessageOptions(
        outputs={DETECTIONS_OUTPUT, 'pose/persons'}), None, people)
    assert set(msgs) == {DETECTIONS_OUTPUT, 'pose/persons'}
    received = graph.collect(vision.Detection2DArray, DETECTIONS_OUTPUT)
    pub = graph.publisher(vision.Detection2DArray, DETECTIONS_OUTPUT)
    graph.wait_for_subscribers(pub)
    pub.publish(msgs[DETECTIONS_OUTPUT])
    assert graph.wait(lambda: received)
    msg = received[0]
    assert msg.header.frame_id == 'cam_optical' and msg.header.stamp.sec == 3
    assert [d.id for d in msg.detections] == [str(i) for i in people.ids] == ['1', '2']
    for det, box, score in zip(msg.detections, result.pose.boxes, (0.8, 0.6), strict=True):
        assert det.header.frame_id == 'cam_optical'
        assert (det.bbox.center.position.x, det.bbox.center.position.y) == pytest.approx(
            ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2))
        size = (box[2] - box[0], box[3] - box[1])
        assert (det.bbox.size_x, det.bbox.size_y) == pytest.approx(size)
        assert [(r.hypothesis.class_id, r.hypothesis.score) for r in det.results] == \
            [('person', pytest.approx(score))]
    untracked = M.build_messages(_header(), result, MessageOptions(
        outputs={DETECTIONS_OUTPUT}))[DETECTIONS_OUTPUT]
    assert [d.id for d in untracked.detections] == ['', '']  # no people: no track ids


def test_label_info_is_latched_for_late_subscribers(graph):
    pub = graph.publisher(vision.LabelInfo, LABEL_INFO_TOPIC, qos(depth=1, latched=True))
    pub.publish(label_info_msg(_header()))
    received = graph.collect(vision.LabelInfo, LABEL_INFO_TOPIC, qos(depth=1, latched=True))
    assert graph.wait(lambda: received)  # subscribed after the publish: still delivered
    names = seg_class_info().names
    assert [(c.class_id, c.class_name) for c in received[0].class_map] == list(enumerate(names))
    assert len(names) == 29 and received[0].class_map[0].class_name == names[0]


def test_pointmap_camera_info_over_dds_matches_the_depth_image(graph):
    from sapiens_ros.core.processing.intrinsics import Intrinsics
    from sensor_msgs.msg import CameraInfo, Image

    image = skdata.astronaut()[::2, ::2].copy()
    result = tiny_pipeline(('pointmap',), pointmap_stride=4)(image)[0]
    K = Intrinsics(300.0, 310.0, 128.0, 120.0)
    msgs = M.build_messages(_header(), result, MessageOptions(
        outputs={'pointmap/depth', 'pointmap/camera_info'}), image, intrinsics=K)
    infos = graph.collect(CameraInfo, 'pointmap/camera_info')
    depths = graph.collect(Image, 'pointmap/depth')
    kinds = (('pointmap/camera_info', CameraInfo), ('pointmap/depth', Image))
    pubs = {s: graph.publisher(t, s) for s, t in kinds}
    for suffix, pub in pubs.items():
        graph.wait_for_subscribers(pub)
        pub.publish(msgs[suffix])
    assert graph.wait(lambda: infos and depths)
    info, depth = infos[0], depths[0]
    assert (info.height, info.width) == (depth.height, depth.width) == (64, 64)
    assert info.header == depth.header
    np.testing.assert_allclose(info.k, [75, 0, 32, 0, 77.5, 30, 0, 0, 1])
    np.testing.assert_allclose(info.p, [75, 0, 32, 0, 0, 77.5, 30, 0, 0, 0, 1, 0])
    # uncalibrated: the pointmap's own rays; a pinhole pointmap gives its camera back, and
    # depth_image_proc's back-projection of pointmap/depth with it gives the pointmap again
    v, u = np.mgrid[0:64, 0:64].astype(np.float32)
    z = 1.5 + 0.01 * u
    xyz = np.stack([(u - 30.0) / 90.0 * z, (v - 33.0) / 95.0 * z, z], -1)
    pinhole = dataclasses.replace(result, pointmap=dataclasses.replace(result.pointmap, xyz=xyz))
    own = M.pointmap_camera_info(_header(), pinhole)
    np.testing.assert_allclose(own.k, [90, 0, 30, 0, 95, 33, 0, 0, 1], atol=1e-3)
    k = np.asarray(own.k).reshape(3, 3)
    back = np.stack([(u - k[0, 2]) / k[0, 0] * z, (v - k[1, 2]) / k[1, 1] * z, z], -1)
    np.testing.assert_allclose(back, xyz, atol=1e-4)
