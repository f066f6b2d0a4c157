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

"""Contract messages built from a real (tiny, random) pipeline result on a real photo."""

import dataclasses
import json

import numpy as np
import pytest

pytest.importorskip('sensor_msgs.msg')

from ros_fixtures import tiny_pipeline  # noqa: E402
from sapiens_ros.ros import messages as M  # noqa: E402
from skimage import data as skdata  # noqa: E402


@pytest.fixture(scope='module')
def frame():
    """Run the tiny 4-head pipeline once on the astronaut photo (RGB)."""
    image = skdata.astronaut()[::2, ::2].copy()
    pipe = tiny_pipeline(box_source='full', foreground_only=False)
    return image, pipe(image)[0]


def _header():
    from std_msgs.msg import Header

    header = Header(frame_id='camera_optical')
    header.stamp.sec, header.stamp.nanosec = 12, 345
    return header


def _cloud(msg):
    names = [f.name for f in msg.fields]
    formats = ['<f4' if f.datatype == 7 else '<u4' for f in msg.fields]
    dtype = np.dtype({'names': names, 'formats': formats,
                      'offsets': [f.offset for f in msg.fields], 'itemsize': msg.point_step})
    return np.frombuffer(msg.data, dtype).reshape(msg.height, msg.width)


def test_every_output_and_header(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, M.MessageOptions(score_threshold=0.0), image)
    assert set(msgs) == {s for suffixes in M.TASK_OUTPUTS.values() for s in suffixes}
    msgs.update(M.build_messages(_header(), result, M.MessageOptions(
        outputs=set(M.COMPRESSED_OUTPUTS)), image))
    metadata = {'diagnostics', *M.INFO_TOPICS.values()}
    assert set(msgs) == set(M.OUTPUT_TASK) == set(M.TOPIC_TYPES) - metadata
    for suffix, msg in msgs.items():
        assert isinstance(msg, M.TOPIC_TYPES[suffix])
        inner = msg.markers if suffix == 'pose/markers' else [msg]
        for m in inner:
            assert m.header.frame_id == 'camera_optical'
            assert (m.header.stamp.sec, m.header.stamp.nanosec) == (12, 345)


def test_keypoints_and_persons(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, M.MessageOptions(), image)
    kp = msgs['pose/keypoints']
    assert (kp.height, kp.width, kp.point_step) == (len(result.pose), 308, 24)
    assert [f.name for f in kp.fields] == ['u', 'v', 'score', 'x', 'y', 'z']
    cloud = _cloud(kp)
    np.testing.assert_allclose(cloud['u'], result.pose.keypoints[..., 0])
    np.testing.assert_allclose(cloud['score'], result.pose.scores)
    np.testing.assert_allclose(cloud['z'], result.keypoints_xyz[..., 2])
    persons = _cloud(msgs['pose/persons'])
    np.testing.assert_allclose(persons['x_max'][0], result.pose.boxes[:, 2])


def test_images_and_pointcloud(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, M.MessageOptions(), image)
    labels = msgs['seg/labels']
    assert (labels.encoding, labels.step) == ('mono8', image.shape[1])
    assert np.array_equal(np.frombuffer(labels.data, np.uint8).reshape(image.shape[:2]),
                          result.seg.labels)
    assert msgs['seg/overlay'].encoding == 'bgr8'
    normal = msgs['normal/image']
    assert (normal.encoding, normal.step) == ('32FC3', image.shape[1] * 12)
    np.testing.assert_array_equal(
        np.frombuffer(normal.data, np.float32).reshape(image.shape), result.normal.normals)
    assert msgs['normal/overlay'].encoding == 'rgb8'
    points = _cloud(msgs['pointmap/points'])
    assert [f.name for f in msgs['pointmap/points'].fields] == ['x', 'y', 'z', 'rgb', 'label']
    np.testing.assert_array_equal(points['x'][0], result.pointmap.points[:, 0])
    rgb = points['rgb'][0].view(np.uint32)
    assert np.array_equal((rgb >> 16) & 255, result.pointmap.colors[:, 0])
    depth = msgs['pointmap/depth']
    assert depth.encoding == '32FC1'
    d = np.frombuffer(depth.data, np.float32).reshape(depth.height, depth.width)
    assert np.isnan(d[result.seg.labels == 0]).all()


def test_markers_2d_and_3d(frame):
    _, result = frame
    opts = M.MessageOptions(score_threshold=-1.0)
    markers = M.skeleton_markers(_header(), result, opts).markers
    assert markers[0].action == markers[0].DELETEALL
    assert markers[1].ns == 'skeleton3d/keypoints'  # the pointmap gave keypoint XYZ
    assert len(markers[1].points) == np.isfinite(result.keypoints_xyz).all(-1).sum()
    flat = dataclasses.replace(result, keypoints_xyz=None)
    markers = M.skeleton_markers(_header(), flat, opts).markers
    assert markers[1].ns == 'skeleton2d/keypoints'
    assert markers[1].points[5].x == pytest.approx(result.pose.keypoints[0, 5, 0] * 0.001)
    assert len(markers[1].points) == result.pose.scores.size
    assert markers[2].type == markers[2].LINE_LIST and len(markers[2].points) % 2 == 0


def test_output_selection_and_info():
    info = M.info_messages(['pose', 'seg'])
    assert len(json.loads(info['pose/keypoint_info'].data)['names']) == 308
    assert len(json.loads(info['seg/label_info'].data)['names']) == 29


def test_only_requested_outputs(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, M.MessageOptions(outputs={'seg/labels'}), image)
    assert list(msgs) == ['seg/labels']
    assert 'seg/overlay' not in M.build_messages(_header(), result, None, image=None)
