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


"""One perception node serving several cameras, over real rclpy + Fast DDS on tiny models."""

import time

import cv2
import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402, I100
from ros_graph import qos  # noqa: E402
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

PHOTO = cv2.resize(bundled_photo(), (128, 160), interpolation=cv2.INTER_AREA)  # BGR


def _image(node, frame_id: str, stamp=None) -> Image:
    header = Header(frame_id=frame_id)
    header.stamp = stamp if stamp is not None else node.get_clock().now().to_msg()
    return image_msg(header, PHOTO, 'bgr8')


def test_cameras_share_the_models_and_keep_their_own_topics(graph):
    node = graph.perception(cameras='front,rear', tasks='pose,seg')
    assert node.loads == 1 and set(node.cameras) == {'front', 'rear'}
    labels = {c: graph.collect(Image, f'{c}/seg/labels') for c in ('front', 'rear')}
    info = {c: graph.collect(String, f'{c}/seg/label_info_json', qos(latched=True))
            for c in ('front', 'rear')}
    pubs = {c: graph.publisher(Image, f'{c}/image') for c in ('front', 'rear')}
    for pub in pubs.values():
        graph.wait_for_subscribers(pub)
    sent = {c: set() for c in pubs}
    end = time.monotonic() + 30
    while time.monotonic() < end and not all(len(b) >= 2 for b in labels.values()):
        for camera, pub in pubs.items():
            msg = _image(graph.tester, f'{camera}_optical')
            sent[camera].add((msg.header.stamp.sec, msg.header.stamp.nanosec))
            pub.publish(msg)
        graph.wait(lambda: all(len(b) >= 2 for b in labels.values()), 0.2)
    for camera, box in labels.items():
        assert len(box) >= 2 and info[camera], camera
        for msg in box:  # each output carries its own camera's input header
            assert msg.header.frame_id == f'{camera}_optical'
            assert (msg.header.stamp.sec, msg.header.stamp.nanosec) in sent[camera]
    assert node.batches.frames['seg'] > node.batches.calls['seg']  # frames batched per step
    diags = node.publish_diagnostics().status
    names = [s.name for s in diags]
    assert names == ['/perception_node: sapiens perception', '/perception_node: camera front',
                     '/perception_node: camera rear']
    shared = {kv.key: kv.value for kv in diags[0].values}
    assert shared['models_loaded'] == '1' and shared['cameras'] == 'front,rear'
    assert float(shared['batch.seg_frames_mean']) > 1.0
    for status in diags[1:]:
        values = {kv.key: kv.value for kv in status.values}
        assert int(values['frames_processed']) >= 2 and 'bad_input.image' not in values
    # A bad frame on one camera is counted there only; the other keeps running.
    bad = _image(graph.tester, 'rear_optical')
    bad.encoding = 'nope'
    done = len(labels['front'])
    for _ in range(3):
        pubs['rear'].publish(bad)
        pubs['front'].publish(_image(graph.tester, 'front_optical'))
        time.sleep(0.3)
    assert graph.wait(lambda: len(labels['front']) > done, 10)
    assert graph.wait(lambda: node.cameras['rear'].stats.bad_inputs['image'] >= 1, 10)
    assert not node.cameras['front'].stats.bad_inputs


def test_per_camera_rates(graph):
    """``rear.rates.seg`` limits one camera; stamps 0.1 s apart, sent one at a time."""
    node = graph.perception(cameras='front,rear', tasks='seg')
    assert node.set_parameters([Parameter('rear.rates.seg', value=2.0)])[0].successful
    assert not node.set_parameters([Parameter('rear.rates.seg', value=-3.0)])[0].successful
    labels = {c: graph.collect(Image, f'{c}/seg/labels') for c in ('front', 'rear')}
    pubs = {c: graph.publisher(Image, f'{c}/image', qos(depth=20)) for c in labels}
    for pub in pubs.values():
        graph.wait_for_subscribers(pub)
    frames = 20  # 2 s of stamps at 10 Hz
    for k in range(frames):
        stamp = rclpy.time.Time(seconds=1000 + k / 10).to_msg()
        before = {c: node.cameras[c].stats.processed + node.cameras[c].stats.idle_skipped
                  for c in labels}
        for camera, pub in pubs.items():
            pub.publish(_image(graph.tester, camera, stamp))
        assert graph.wait(lambda b=before: all(
            node.cameras[c].stats.processed + node.cameras[c].stats.idle_skipped > b[c]
            for c in labels), 20)
    time.sleep(0.5)
    assert len(labels['front']) == frames
    got = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in labels['rear']]
    assert len(got) == 4, got  # 2 Hz over 2 s of stamps
    values = {kv.key: kv.value for kv in node.publish_diagnostics().status[2].values}
    assert values['rates_hz'].startswith('pose=0,seg=2')


def test_tasks_and_input_size_change_while_unconfigured(graph):
    """As in nav2: cleanup, set the model parameters, configure serves the new ones."""
    node = graph.perception(tasks='seg')
    assert not node.set_parameters([Parameter('tasks', value='normal')])[0].successful
    node.trigger_deactivate()
    node.trigger_cleanup()
    results = node.set_parameters([Parameter('tasks', value='normal'),
                                   Parameter('input_size', value='128x128')])
    assert all(r.successful for r in results), results
    from rclpy.lifecycle import TransitionCallbackReturn

    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    assert node.pipeline.tasks == ('normal',) and node.loads == 2
    assert node.pipeline.config.size_of('normal') == (128, 128)
    normals = graph.collect(Image, 'normal/image')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    end = time.monotonic() + 20
    while not normals and time.monotonic() < end:
        pub.publish(_image(graph.tester, 'cam'))
        graph.wait(lambda: bool(normals), 0.3)
    assert normals and normals[0].encoding == '32FC3'


def test_diagnostics_say_why_configure_failed(graph):
    node = graph.perception(cameras='a,a', autostart=True)
    assert node.pipeline is None
    status = node.publish_diagnostics().status[0]
    assert 'more than once' in status.message
