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

from ros_fixtures import OUTPUT_TASKS, tiny_pipeline  # noqa: E402
from ros_graph import cloud_array  # noqa: E402
from sapiens_ros.core.models.keypoint_formats import keypoint_format  # noqa: E402
from sapiens_ros.core.people.body_frames import body_id  # noqa: E402
from sapiens_ros.core.people.state import PeopleState  # noqa: E402
from sapiens_ros.ros import messages as M  # noqa: E402
from sapiens_ros.ros.render_plan import MessageOptions  # noqa: E402
from sapiens_ros.ros.topic_types import TOPIC_TYPES  # noqa: E402
from sapiens_ros.ros.topics import (COMPRESSED_OUTPUTS, INFO_TOPICS, OUTPUT_TASK,  # noqa: E402
                                    PEOPLE_OUTPUTS)
from skimage import data as skdata  # noqa: E402


@pytest.fixture(scope='module')
def frame():
    """Run the tiny pipeline of every output head once on the astronaut photo (RGB)."""
    image = skdata.astronaut()[::2, ::2].copy()
    pipe = tiny_pipeline(OUTPUT_TASKS, box_source='full', foreground_only=False)
    return image, pipe(image)[0]


def _header():
    from std_msgs.msg import Header

    header = Header(frame_id='camera_optical')
    header.stamp.sec, header.stamp.nanosec = 12, 345
    return header


def test_every_output_and_header(frame):
    image, result = frame
    people = PeopleState().update(result, 12.000000345)
    msgs = M.build_messages(_header(), result, MessageOptions(score_threshold=0.0), image,
                            people)
    raw = set(OUTPUT_TASK) - set(COMPRESSED_OUTPUTS)
    assert set(msgs) == raw
    assert set(M.build_messages(_header(), result, None, image)) == \
        raw - set(PEOPLE_OUTPUTS)  # without people: as before
    msgs.update(M.build_messages(_header(), result, MessageOptions(
        outputs=set(COMPRESSED_OUTPUTS)), image))
    metadata = {'diagnostics', *INFO_TOPICS.values()}
    assert set(msgs) == set(OUTPUT_TASK) == set(TOPIC_TYPES) - metadata
    for suffix, msg in msgs.items():
        assert isinstance(msg, TOPIC_TYPES[suffix])
        if suffix == 'people/ids':  # std_msgs/String has no header: the JSON carries it
            data = json.loads(msg.data)
            assert data['frame_id'] == 'camera_optical'
            assert data['stamp'] == {'sec': 12, 'nanosec': 345}
            continue
        inner = msg.markers if suffix == 'pose/markers' else [msg]
        for m in inner:
            assert m.header.frame_id == 'camera_optical'
            assert (m.header.stamp.sec, m.header.stamp.nanosec) == (12, 345)


def test_keypoints_and_persons(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, MessageOptions(), image)
    kp = msgs['pose/keypoints']
    assert (kp.height, kp.width, kp.point_step) == (len(result.pose), 308, 28)
    assert [f.name for f in kp.fields] == ['u', 'v', 'score', 'x', 'y', 'z', 'id']
    cloud = cloud_array(kp)
    np.testing.assert_allclose(cloud['u'], result.pose.keypoints[..., 0])
    np.testing.assert_allclose(cloud['score'], result.pose.scores)
    np.testing.assert_allclose(cloud['z'], result.keypoints_xyz[..., 2])
    assert (cloud['id'] == -1).all()  # no people: untracked
    persons = cloud_array(msgs['pose/persons'])
    np.testing.assert_allclose(persons['x_max'][0], result.pose.boxes[:, 2])
    assert [f.name for f in msgs['pose/persons'].fields][-1] == 'id'


def test_images_and_pointcloud(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, MessageOptions(), image)
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
    points = cloud_array(msgs['pointmap/points'])
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
    opts = MessageOptions(score_threshold=-1.0)
    markers = M.skeleton_markers(_header(), result, opts).markers
    assert markers[0].action == markers[0].DELETEALL
    assert markers[1].ns == 'skeleton3d/keypoints'  # the pointmap gave keypoint XYZ
    assert len(markers[1].points) == np.isfinite(result.keypoints_xyz).all(-1).sum()
    assert not any(m.type == m.TEXT_VIEW_FACING for m in markers)  # untracked: no id text
    flat = dataclasses.replace(result, keypoints_xyz=None)
    markers = M.skeleton_markers(_header(), flat, opts).markers
    assert markers[1].ns == 'skeleton2d/keypoints'
    assert markers[1].points[5].x == pytest.approx(result.pose.keypoints[0, 5, 0] * 0.001)
    assert len(markers[1].points) == result.pose.scores.size
    assert markers[2].type == markers[2].LINE_LIST and len(markers[2].points) % 2 == 0


def test_marker_points_are_the_points_the_constructor_makes():
    """``_points`` fills ``Point``'s slots: equal to, and serialised as, constructed points."""
    from geometry_msgs.msg import Point
    from rclpy.serialization import deserialize_message, serialize_message
    from visualization_msgs.msg import Marker

    xyz = np.array([[0.5, -1.25, 3.0], [np.nan, 1e-30, -0.0]])
    fast = M._points(xyz)
    made = [Point(x=x, y=y, z=z) for x, y, z in xyz.tolist()]
    assert M._FAST_POINTS  # the layout of the rclpy here: the fast path runs in this test
    assert str(fast) == str(made) and fast[0] == made[0]
    # Read back (CDR's alignment padding is left uninitialised by Fast CDR, so no byte compare).
    read = deserialize_message(serialize_message(Marker(points=fast)), Marker).points
    assert str(read) == str(made)  # str: NaN equals NaN there
    fast[0].x = 2.0  # the properties work on them as on any point
    assert fast[0].x == 2.0 and fast[0] != made[0]


def test_output_selection_and_info():
    info = M.info_messages(['pose', 'seg'])
    assert len(json.loads(info['pose/keypoint_info'].data)['names']) == 308
    assert len(json.loads(info['seg/label_info_json'].data)['names']) == 29
    coco = json.loads(M.info_messages(['pose'], 'coco17')['pose/keypoint_info'].data)
    assert coco['format'] == 'coco17' and len(coco['names']) == 17
    assert coco['from_308'] == [[i, i] for i in json.loads(
        info['pose/keypoint_info'].data)['coco17_to_308']]


def test_only_requested_outputs(frame):
    image, result = frame
    msgs = M.build_messages(_header(), result, MessageOptions(outputs={'seg/labels'}), image)
    assert list(msgs) == ['seg/labels']
    assert 'seg/overlay' not in M.build_messages(_header(), result, None, image=None)


def _two_people(result):
    """Return the photo's person and a copy shifted 60 px right: two rows for the tracker."""
    pose = result.pose
    shift = np.float32([60.0, 0.0])
    two = dataclasses.replace(
        pose, boxes=np.concatenate([pose.boxes, pose.boxes + np.tile(shift, 2)]),
        keypoints=np.concatenate([pose.keypoints, pose.keypoints + shift]),
        scores=np.concatenate([pose.scores, pose.scores]),
        box_scores=np.concatenate([pose.box_scores, pose.box_scores]))
    return dataclasses.replace(result, pose=two, keypoints_xyz=None)


def test_people_ids_markers_and_smoothing_selection(frame):
    """Ids per row in both clouds, id-coloured markers with text, raw or smoothed keypoints."""
    _, result = frame
    result = _two_people(result)
    state = PeopleState()
    state.update(result, 1.0)
    rng = np.random.default_rng(0)
    noisy = dataclasses.replace(result, pose=dataclasses.replace(
        result.pose, keypoints=result.pose.keypoints + rng.normal(0, 2, (2, 308, 2)).astype(
            np.float32)))
    people = state.update(noisy, 1.1)
    assert sorted(people.ids.tolist()) == [1, 2]
    msgs = M.build_messages(_header(), noisy, MessageOptions(score_threshold=-1.0), None,
                            people)
    kp = cloud_array(msgs['pose/keypoints'])
    assert (kp['id'] == people.ids[:, None]).all()
    np.testing.assert_array_equal(kp['u'], noisy.pose.keypoints[..., 0])  # raw by default
    assert (cloud_array(msgs['pose/persons'])['id'][0] == people.ids).all()
    smooth = M.build_messages(_header(), noisy, MessageOptions(smooth_keypoints=True), None,
                              people)
    kp_smooth = cloud_array(smooth['pose/keypoints'])
    np.testing.assert_array_equal(kp_smooth['u'], people.smoothed[..., 0])
    still = result.pose.keypoints[..., 0]
    assert np.abs(kp_smooth['u'] - still).mean() < np.abs(kp['u'] - still).mean()
    markers = msgs['pose/markers'].markers
    texts = [m for m in markers if m.type == m.TEXT_VIEW_FACING]
    assert sorted(m.text for m in texts) == ['1', '2']
    points = [m for m in markers if m.type == m.POINTS]
    assert len(points) == 2 and points[0].color != points[1].color  # one colour per id
    np.testing.assert_allclose(points[0].points[3].x, people.smoothed[0, 3, 0] * 0.001,
                               rtol=1e-5)  # markers smoothed by default
    raw_opts = MessageOptions(score_threshold=-1.0, smooth_markers=False)
    raw = M.skeleton_markers(_header(), noisy, raw_opts, people)
    raw_points = [m for m in raw.markers if m.type == m.POINTS]
    np.testing.assert_allclose(raw_points[0].points[3].x, noisy.pose.keypoints[0, 3, 0] * 0.001,
                               rtol=1e-5)


def test_people_poses_from_depth_and_scaled_pointmap(frame):
    """
    people/poses at the torso from a real depth image; the published pointmap is depth-scaled.

    The tiny random pointmap predicts noise, so the fit is judged by the median ratio of the
    published foreground depth to the plane (test_depth.py checks the fit on a clean pointmap).
    """
    image, result = frame
    h, w = result.image_size
    fx = 300.0
    K = np.array([[fx, 0, w / 2], [0, fx, h / 2], [0, 0, 1.0]])
    depth_mm = np.full((h // 2, w // 2), 2000, np.uint16)  # a 2 m wall, half resolution
    people = PeopleState().update(result, 5.0, depth=depth_mm, K=K, depth_encoding='16UC1')
    assert people.xyz_source == 'depth' and people.torso_valid.all()
    msgs = M.build_messages(_header(), result, MessageOptions(), image, people)
    poses = msgs['people/poses'].poses
    ids = json.loads(msgs['people/ids'].data)['ids']
    assert ids == people.ids.tolist() and len(poses) == len(ids) == 1
    assert poses[0].position.z == pytest.approx(2.0, abs=1e-3)
    np.testing.assert_allclose([poses[0].position.x, poses[0].position.y],
                               people.torso_position[0, :2], rtol=1e-5)
    q = poses[0].orientation
    assert np.linalg.norm([q.x, q.y, q.z, q.w]) == pytest.approx(1.0, abs=1e-4)
    kp = cloud_array(msgs['pose/keypoints'])
    finite = np.isfinite(kp['z'])
    assert finite.any() and np.allclose(kp['z'][finite], 2.0, atol=1e-3)
    d = np.frombuffer(msgs['pointmap/depth'].data, np.float32)
    d = d[np.isfinite(d) & (d > 0)]
    assert np.median(d) == pytest.approx(2.0, rel=0.02)
    assert people.pointmap_scale is not None
    points = cloud_array(msgs['pointmap/points'])
    np.testing.assert_allclose(points['z'][0], result.pointmap.points[:, 2] *
                               np.float32(people.pointmap_scale), rtol=1e-6)


@pytest.mark.parametrize('name', ['coco17', 'openpose18'])
def test_keypoint_formats_equal_the_corresponding_308_points(frame, name):
    """pose/keypoints in another format: each point is the 308 point of its name."""
    _, result = frame
    people = PeopleState().update(result, 1.0)
    full = cloud_array(M.build_messages(_header(), result, MessageOptions(), None,
                                        people)['pose/keypoints'])
    opts = MessageOptions(keypoint_format=name, score_threshold=-1.0)
    msgs = M.build_messages(_header(), result, opts, None, people)
    cloud = cloud_array(msgs['pose/keypoints'])
    fmt = keypoint_format(name)
    assert cloud.shape == (len(people), len(fmt.names))
    names = list(keypoint_format().names)
    for i, n in enumerate(fmt.names):
        if n == 'neck':  # OpenPose: the mid-point of the shoulders
            sh = full[:, [names.index('left_shoulder'), names.index('right_shoulder')]]
            np.testing.assert_allclose(cloud['u'][:, i], sh['u'].mean(1), rtol=1e-6)
            np.testing.assert_allclose(cloud['z'][:, i], sh['z'].mean(1), rtol=1e-6)
            np.testing.assert_array_equal(cloud['score'][:, i], sh['score'].min(1))
            continue
        for field in ('u', 'v', 'score', 'x', 'y', 'z', 'id'):
            np.testing.assert_array_equal(cloud[field][:, i], full[field][:, names.index(n)])
    links = [m for m in msgs['pose/markers'].markers if m.type == m.LINE_LIST]
    assert len(links[0].points) <= 2 * len(fmt.skeleton)  # the format's links only
    points = [m for m in msgs['pose/markers'].markers if m.type == m.POINTS]
    assert len(points[0].points) <= len(fmt.names)
    with pytest.raises(ValueError, match='keypoint_format'):
        M.build_messages(_header(), result, MessageOptions(keypoint_format='coco133'))


def test_pose_overlay_draws_the_tracked_people_in_their_colours(frame):
    """``pose/overlay``: rgb8, each person's visible keypoints in its id colour's tint."""
    import cv2
    from sapiens_ros.core.media.visualize import id_color

    image, result = frame
    two = _two_people(result)
    people = PeopleState().update(two, 1.0)
    opts = MessageOptions(score_threshold=0.0, keypoint_format='coco17', smooth_markers=False,
                          outputs={'pose/overlay', 'pose/overlay/compressed'})
    msgs = M.build_messages(_header(), two, opts, image, people)
    msg = msgs['pose/overlay']
    assert (msg.encoding, msg.height, msg.width) == ('rgb8',) + image.shape[:2]
    assert msg.header.frame_id == 'camera_optical'
    out = np.frombuffer(msg.data, np.uint8).reshape(image.shape)
    points = keypoint_format('coco17').points(two.pose.keypoints)
    ids = people.ids.tolist()
    assert ids[0] != ids[1] and min(ids) >= 0
    drawn = M.pose_drawing(two, opts, people)
    assert drawn.labels == [body_id(i) for i in ids]  # the REP-155 body ids
    label_rows = np.zeros(image.shape[:2], bool)
    label_rows[:24] = True  # the id patches sit on the boxes' top edge
    hits = 0
    for row, track in enumerate(ids):
        tint = (np.round(np.array(id_color(track)) * 255).astype(int) + 255) // 2
        xy = np.round(points[row]).astype(int)
        inside = (xy[:, 0] >= 0) & (xy[:, 0] < image.shape[1]) & (xy[:, 1] >= 0) & \
            (xy[:, 1] < image.shape[0])
        for x, y in xy[inside]:
            other = np.round(points[1 - row]).astype(int)
            if label_rows[y, x] or (np.abs(other - (x, y)).max(1) <= 4).any():
                continue  # under a label or the other person's disc
            assert (out[y, x] == tint).all(), (row, x, y)
            hits += 1
    assert hits >= 10
    packed = msgs['pose/overlay/compressed']
    assert packed.format == 'rgb8; jpeg compressed bgr8'
    decoded = cv2.imdecode(np.frombuffer(packed.data, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    # the drawn picture as JPEG: nearer the overlay than the bare photo
    assert np.abs(decoded.astype(int) - out).mean() < np.abs(decoded.astype(int) - image).mean()


def test_matting_alpha_is_mono8_of_the_matte(frame):
    """``matting/alpha``: mono8 round(alpha * 255), same bytes rendered on the pipeline side."""
    import cv2

    image, result = frame
    opts = MessageOptions(outputs={'matting/alpha', 'matting/alpha/compressed'})
    msgs = M.build_messages(_header(), result, opts, image)
    alpha = msgs['matting/alpha']
    assert (alpha.encoding, alpha.step, alpha.height) == ('mono8', image.shape[1],
                                                          image.shape[0])
    assert alpha.header.frame_id == 'camera_optical'
    values = np.frombuffer(alpha.data, np.uint8).reshape(image.shape[:2])
    expected = np.round(np.clip(result.matting, 0, 1) * 255).astype(np.uint8)
    assert np.abs(values.astype(int) - expected).max() <= 1  # float32 vs float64 rounding
    packed = msgs['matting/alpha/compressed']
    assert packed.format == 'mono8; png compressed '
    assert np.array_equal(cv2.imdecode(np.frombuffer(packed.data, np.uint8),
                                       cv2.IMREAD_UNCHANGED), values)  # png: lossless
