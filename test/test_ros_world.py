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
People in the robot's world from the live node: detector boxes in, vision_msgs out, /tf, REP-155.

Real rclpy + Fast DDS, the message packages built by ../shared/ros-tools/install-msgs.sh (or a
ROS install); tiny random checkpoints, so geometry is judged against what was given (detector
boxes, a depth plane), never against expected model outputs.
"""

import sys
import textwrap
import time

import cv2
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
vision = pytest.importorskip('vision_msgs.msg', reason='vision_msgs: run install-msgs.sh')
tf2 = pytest.importorskip('tf2_msgs.msg', reason='tf2_msgs: run install-msgs.sh')
hri = pytest.importorskip('hri_msgs.msg', reason='hri_msgs: run install-msgs.sh')

from ros_fixtures import HIDE_OPTIONAL_PACKAGES  # noqa: E402, I100
from ros_graph import cloud_array, qos  # noqa: E402
from sapiens_ros.core.people.hri_ids import is_hri_id  # noqa: E402
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo, camera_info_for  # noqa: E402
from sapiens_ros.ros.topic_types import TOPIC_TYPES  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

SIZE = 160
PHOTO = cv2.resize(bundled_photo(), (SIZE, SIZE), interpolation=cv2.INTER_AREA)  # BGR


def _header(graph) -> Header:
    header = Header(frame_id='camera_optical_frame')
    header.stamp = graph.tester.get_clock().now().to_msg()
    return header


def _detection(cx, cy, w, h, cls='person', score=0.9):
    det = vision.Detection2D()
    det.bbox.center.position.x, det.bbox.center.position.y = float(cx), float(cy)
    det.bbox.size_x, det.bbox.size_y = float(w), float(h)
    hyp = vision.ObjectHypothesisWithPose()
    hyp.hypothesis.class_id, hyp.hypothesis.score = cls, float(score)
    det.results.append(hyp)
    return det


def _rgbd_camera(graph) -> dict:
    """Return the tester's image, depth and camera_info publishers, matched to the node."""
    pubs = {name: graph.publisher(t, name) for name, t in
            (('image', Image), ('depth', Image), ('camera_info', CameraInfo))}
    for pub in pubs.values():
        graph.wait_for_subscribers(pub)
    return pubs


def _diag(node) -> dict:
    return {kv.key: kv.value for kv in node.publish_diagnostics().status[0].values}


def test_detector_boxes_used_exactly_and_detections_out(graph):
    """box_source detections: pose/persons holds the given boxes, no seg forward; ids out."""
    node = graph.perception(tasks='pose,seg', box_source='detections', detections_timeout=1.0)
    persons = graph.collect(TOPIC_TYPES['pose/persons'], 'pose/persons')
    out = graph.collect(vision.Detection2DArray, 'pose/detections')
    image = graph.publisher(Image, 'image')
    dets = graph.publisher(vision.Detection2DArray, 'detections')
    for pub in (image, dets):
        graph.wait_for_subscribers(pub)
    given = [_detection(60, 80, 50, 120, score=0.8),  # x 35-85, y 20-140
             _detection(150, 60, 40, 60, score=0.7),  # sticks out: x 130-159.5 (right edge)
             _detection(40, 40, 20, 20, cls='car'),  # another class: filtered
             _detection(float('nan'), 40, 20, 20),  # broken: rejected, counted
             _detection(90, 90, 30, 30, score=0.2)]  # below detection_min_score
    sent = []
    end = time.monotonic() + 30
    while time.monotonic() < end and not (persons and out):
        header = _header(graph)
        msg = vision.Detection2DArray(header=header, detections=given)
        dets.publish(msg)
        image.publish(image_msg(header, PHOTO, 'bgr8'))
        sent.append(header.stamp)
        graph.wait(lambda: persons and out, 0.3)
    assert persons and out, _diag(node)
    cloud = cloud_array(persons[0])[0]
    boxes = np.stack([cloud[k] for k in ('x_min', 'y_min', 'x_max', 'y_max')], 1)
    np.testing.assert_allclose(boxes, [[35, 20, 85, 140], [130, 30, 159.5, 90]], atol=1e-4)
    np.testing.assert_allclose(cloud['score'], [0.8, 0.7], atol=1e-6)
    assert persons[0].header.stamp in sent
    assert node.stats.tasks_run == ('pose',)  # the detector's boxes: no seg forward
    match = next(m for m in out if m.header.stamp == persons[0].header.stamp)
    assert [d.id for d in match.detections] == [str(i) for i in cloud['id']]
    assert all(int(d.id) >= 1 for d in match.detections)  # tracked
    assert [d.results[0].hypothesis.class_id for d in match.detections] == ['person'] * 2
    diag = _diag(node)
    assert int(diag['detections.rejected_class']) >= 1
    assert int(diag['detections.rejected_score']) >= 1
    assert int(diag['bad_input.detections']) >= 1  # the NaN box, named in the log
    # The detector stops: after detections_timeout frames run on the fallback (seg) boxes.
    done = len(persons)
    time.sleep(1.2)
    end = time.monotonic() + 30
    while time.monotonic() < end and len(persons) <= done + 1:
        image.publish(image_msg(_header(graph), PHOTO, 'bgr8'))
        graph.wait(lambda: len(persons) > done + 1, 0.3)
    assert len(persons) > done + 1
    assert 'seg' in node.stats.tasks_run
    assert int(_diag(node)['bad_input.detections_missing']) >= 1


def test_label_info_is_latched_vision_msgs(graph):
    graph.perception(tasks='seg')
    time.sleep(0.5)  # published at activate; a late subscriber still gets it (transient local)
    box = graph.collect(vision.LabelInfo, 'seg/label_info', qos(latched=True))
    json_box = graph.collect(String, 'seg/label_info_json', qos(latched=True))
    assert graph.wait(lambda: box and json_box, 10.0)
    names = [c.class_name for c in box[0].class_map]
    assert len(names) == 29 and names[0] == 'Background'
    assert [c.class_id for c in box[0].class_map] == list(range(29))


def test_body_frames_on_tf_at_the_measured_depth(graph):
    """body_<id> on /tf in the camera frame, on a depth plane at 2 m: within 2 cm, REP-155."""
    # xyz_min_score 0.2: the tiny random head scores one shoulder of this photo 0.27
    graph.perception(tasks='pose', box_source='full', use_depth=True, depth_timeout=0.0,
                     publish_tf=True, tf_joints=True, keypoint_format='coco17',
                     xyz_min_score=0.2)
    tfs = graph.collect(tf2.TFMessage, '/tf', qos(depth=100))
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    pubs = _rgbd_camera(graph)
    wall = np.full((SIZE // 2, SIZE // 2), 2000, np.uint16)  # 2 m, 16UC1 mm, half resolution

    def body(msg):
        return [t for t in msg.transforms if t.child_frame_id.startswith('body_')]

    end = time.monotonic() + 40
    while time.monotonic() < end and not any(body(m) for m in tfs):
        header = _header(graph)
        info = camera_info_for(header, SIZE, SIZE, 60.0)
        pubs['camera_info'].publish(info)
        pubs['depth'].publish(image_msg(header, wall, '16UC1'))
        pubs['image'].publish(image_msg(header, PHOTO, 'bgr8'))
        graph.wait(lambda: any(body(m) for m in tfs), 0.3)
    frames = [t for m in tfs for t in body(m)]
    assert frames, 'no body frame on /tf'
    for t in frames:
        assert t.header.frame_id == 'camera_optical_frame'
        assert is_hri_id(t.child_frame_id[5:])  # body_<five letters>
        assert abs(t.transform.translation.z - 2.0) <= 0.02
        q = t.transform.rotation
        rot = Rotation.from_quat([q.x, q.y, q.z, q.w]).as_matrix()
        # A torso on a plane facing the camera: x (forward, out of the body) along the optical
        # axis, z (towards the head) and y in the image plane.
        assert abs(abs(rot[2, 0]) - 1.0) < 1e-3 and abs(rot[2, 2]) < 1e-3
    joints = [t for m in tfs for t in m.transforms if t.header.frame_id.startswith('body_')]
    assert joints and all(t.child_frame_id.rsplit('_', 1)[1] == t.header.frame_id[5:]
                          for t in joints)  # <joint>_<id>, a child of body_<id>
    assert 'l_shoulder' in {t.child_frame_id.rsplit('_', 1)[0] for t in joints}
    assert kps and kps[0].width == 17  # keypoint_format coco17


def test_rep155_bodies_from_the_node(graph):
    """hri: /humans/bodies/tracked lists the tracked bodies; each has its roi topic."""
    graph.perception(tasks='pose', box_source='full', hri=True)
    tracked = graph.collect(hri.IdsList, '/humans/bodies/tracked')
    image = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(image)
    end = time.monotonic() + 30
    while time.monotonic() < end and not any(m.ids for m in tracked):
        image.publish(image_msg(_header(graph), PHOTO, 'bgr8'))
        graph.wait(lambda: any(m.ids for m in tracked), 0.3)
    ids = next(m.ids for m in tracked if m.ids)
    assert all(is_hri_id(i) for i in ids)
    topics = dict(graph.tester.get_topic_names_and_types())
    assert f'/humans/bodies/{ids[0]}/roi' in topics, sorted(topics)


NO_PACKAGES = HIDE_OPTIONAL_PACKAGES + textwrap.dedent("""
    from sapiens_ros.ros.perception_node import main
    main()
""")


def test_node_without_the_optional_packages_serves_every_standard_output(graph, tmp_path):
    """vision_msgs, tf2_msgs and hri_msgs hidden: standard outputs flow, one line says why."""
    script = tmp_path / 'node.py'
    script.write_text(NO_PACKAGES)
    from ros_fixtures import tiny_model_dir
    from ros_procs import Proc

    proc = Proc([sys.executable, str(script), '--ros-args', '-r', '__ns:=/bare',
                 '-p', f'model_dir:={tiny_model_dir()}', '-p', 'input_size:=192x256',
                 '-p', 'cpu_threads:=1', '-p', 'hri:=true'])
    try:
        assert proc.wait_for('active: listening', 60.0), proc.output
        outputs = {s: graph.collect(TOPIC_TYPES[s], f'/bare/{s}') for s in
                   ('pose/keypoints', 'seg/labels', 'normal/image', 'pointmap/points')}
        image = graph.publisher(Image, '/bare/image')
        graph.wait_for_subscribers(image)
        end = time.monotonic() + 60
        while time.monotonic() < end and not all(outputs.values()):
            image.publish(image_msg(_header(graph), PHOTO, 'bgr8'))
            graph.wait(lambda: all(outputs.values()), 0.5)
        assert all(outputs.values()), ({s: len(b) for s, b in outputs.items()}, proc.output)
        for package in ('vision_msgs', 'tf2_msgs', 'hri_msgs'):
            assert proc.output.count(f'{package} does not import') == 1, proc.output
        rc, _, _ = proc.stop('ctrl-c')
        assert rc == 0 and 'Traceback' not in proc.output, proc.output
    finally:
        proc.kill()


@pytest.mark.parametrize('bad', ['', '/camera_optical_frame'])
def test_a_frame_id_tf2_rejects_is_counted_and_parents_no_tf_frame(graph, bad):
    """An empty or /-led image frame_id: frames still processed, counted, no body frames."""
    node = graph.perception(tasks='pose', box_source='full', use_depth=True, depth_timeout=0.0,
                            publish_tf=True)
    tfs = graph.collect(tf2.TFMessage, '/tf', qos(depth=100))
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    pubs = _rgbd_camera(graph)
    wall = np.full((SIZE // 2, SIZE // 2), 2000, np.uint16)
    end = time.monotonic() + 30
    while time.monotonic() < end and len(kps) < 3:
        header = _header(graph)
        header.frame_id = bad
        pubs['camera_info'].publish(camera_info_for(header, SIZE, SIZE, 60.0))
        pubs['depth'].publish(image_msg(header, wall, '16UC1'))
        pubs['image'].publish(image_msg(header, PHOTO, 'bgr8'))
        graph.wait(lambda: len(kps) >= 3, 0.3)
    assert len(kps) >= 3 and all(m.header.frame_id == bad for m in kps)  # outputs go on
    assert int(_diag(node)['bad_input.frame_id']) >= 3
    assert not [t for m in tfs for t in m.transforms if t.child_frame_id.startswith('body_')]


def test_the_frame_id_parameter_names_every_output(graph):
    node = graph.perception(tasks='pose', box_source='full', cameras='front',
                            frame_id='{camera}_color_optical_frame')
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'front/pose/keypoints')
    image = graph.publisher(Image, 'front/image')
    graph.wait_for_subscribers(image)
    end = time.monotonic() + 30
    while time.monotonic() < end and not kps:
        header = _header(graph)
        header.frame_id = ''
        image.publish(image_msg(header, PHOTO, 'bgr8'))
        graph.wait(lambda: kps, 0.3)
    assert kps and kps[0].header.frame_id == 'front_color_optical_frame'
    assert int(_diag(node).get('bad_input.frame_id', 0)) == 0
