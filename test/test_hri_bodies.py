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

"""REP-155 bodies over Fast DDS: the tracked list, per-body topics that live with their body."""

import threading
import time

import numpy as np
import pytest

hri = pytest.importorskip('hri_msgs.msg')

import rclpy  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from ros_graph import switching_threads_often  # noqa: E402
from sapiens_ros.core.models.keypoint_formats import keypoint_format  # noqa: E402
from sapiens_ros.core.people.body_frames import body_id  # noqa: E402
from sapiens_ros.core.people.state import PeopleState  # noqa: E402
from sapiens_ros.core.people.tracking import IdAllocator  # noqa: E402
from sapiens_ros.ros.hri_bodies import BODIES_NS, HriBodies  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_body_frames import frame_facing_camera, NAMES, SIZE  # noqa: E402

B1, B2, B3, B4 = (body_id(t) for t in range(1, 5))  # tracks 1..4
IMAGE = np.random.default_rng(0).integers(0, 255, SIZE + (3,), np.uint8)


def _header(t):
    header = Header(frame_id='cam_optical')
    header.stamp.sec, header.stamp.nanosec = int(t), int(t % 1 * 1e9)
    return header


def test_skeleton2d_order_is_the_message_constants():
    fmt = keypoint_format('rep155')
    constants = {n: getattr(hri.Skeleton2D, n) for n in dir(hri.Skeleton2D)
                 if n.isupper() and isinstance(getattr(hri.Skeleton2D, n), int)}
    assert len(constants) == 18 == len(fmt.names)
    assert {n.lower(): i for n, i in constants.items()} == \
        {n: i for i, n in enumerate(fmt.names)}


def _publishers(graph, topic):
    return graph.tester.count_publishers(topic)


def test_bodies_appear_publish_and_stop_with_their_track(graph):
    node = graph.add(rclpy.create_node('hri_bodies', context=graph.context))
    bodies = HriBodies(node)
    tracked = graph.collect(hri.IdsList, f'{BODIES_NS}/tracked')
    skel = graph.collect(hri.Skeleton2D, f'{BODIES_NS}/{B2}/skeleton2d')
    roi = graph.collect(hri.NormalizedRegionOfInterest2D, f'{BODIES_NS}/{B2}/roi')
    crop = graph.collect(Image, f'{BODIES_NS}/{B2}/cropped')
    state = PeopleState()
    both, left_only = frame_facing_camera([-0.4, 0.5]), frame_facing_camera([-0.4])
    t = 1.0
    people = state.update(both, t)
    assert people.ids.tolist() == [1, 2]
    bodies.update('front', _header(t), both, people, IMAGE)
    assert bodies.bodies == [B1, B2]
    for name in (B1, B2):
        for sub in ('roi', 'cropped', 'skeleton2d'):
            assert graph.wait(lambda n=name, s=sub: _publishers(
                graph, f'{BODIES_NS}/{n}/{s}') == 1), (name, sub)
    assert graph.wait(lambda: graph.tester.count_subscribers(f'{BODIES_NS}/{B2}/cropped') and
                      node.count_subscribers(f'{BODIES_NS}/{B2}/skeleton2d') and
                      node.count_subscribers(f'{BODIES_NS}/{B2}/roi') and
                      node.count_publishers(f'{BODIES_NS}/tracked'))

    def step(frame):
        nonlocal t, people
        t += 1 / 30
        people = state.update(frame, t)
        bodies.update('front', _header(t), frame, people, IMAGE)

    step(both)
    assert graph.wait(lambda: skel and roi and crop and tracked)
    assert tracked[-1].ids == [B1, B2] and tracked[-1].header.frame_id == 'cam_optical'
    row = people.ids.tolist().index(2)
    sk = np.array([[p.x, p.y, p.c] for p in skel[-1].skeleton])
    assert sk.shape == (18, 3) and skel[-1].header.frame_id == 'cam_optical'
    uv = people.smoothed[row] / [SIZE[1], SIZE[0]]
    ls, rs = NAMES.index('left_shoulder'), NAMES.index('right_shoulder')
    np.testing.assert_allclose(sk[hri.Skeleton2D.NECK, :2], (uv[ls] + uv[rs]) / 2, atol=1e-6)
    np.testing.assert_allclose(sk[hri.Skeleton2D.LEFT_WRIST, :2],
                               uv[NAMES.index('left_wrist')], atol=1e-6)
    rep = keypoint_format('rep155').points(uv)
    inside = ((rep >= 0) & (rep <= 1)).all(1)
    assert not inside.all()  # the ankles are below the image: clipped onto it, confidence 0
    np.testing.assert_allclose(sk[:, 2], np.where(inside, 0.9, 0.0), atol=1e-6)
    assert ((sk[:, :2] >= 0) & (sk[:, :2] <= 1)).all()
    box = both.pose.boxes[row]
    np.testing.assert_allclose([roi[-1].xmin, roi[-1].ymin, roi[-1].xmax, roi[-1].ymax],
                               np.clip(box / [SIZE[1], SIZE[0], SIZE[1], SIZE[0]], 0, 1),
                               atol=1e-6)
    x0, y0 = int(np.floor(max(box[0], 0))), int(np.floor(max(box[1], 0)))
    assert crop[-1].encoding == 'rgb8' and (crop[-1].width, crop[-1].height) == (
        int(np.ceil(min(box[2], SIZE[1]))) - x0, int(np.ceil(min(box[3], SIZE[0]))) - y0)
    first = np.frombuffer(bytes(crop[-1].data), np.uint8)[:3]
    np.testing.assert_array_equal(first, IMAGE[y0, x0])

    for _ in range(10):  # b2 hidden for 0.33 s: still tracked, its topics stay
        step(left_only)
    assert tracked[-1].ids == [B1, B2] and _publishers(graph, f'{BODIES_NS}/{B2}/roi') == 1
    for _ in range(25):  # hidden past track_max_age (1 s): the body is lost
        step(left_only)
    assert graph.wait(lambda: tracked[-1].ids == [B1])
    for sub in ('roi', 'cropped', 'skeleton2d'):
        assert graph.wait(lambda s=sub: _publishers(graph, f'{BODIES_NS}/{B2}/{s}') == 0), sub
    assert bodies.bodies == [B1] and _publishers(graph, f'{BODIES_NS}/{B1}/roi') == 1
    bodies.close()
    assert graph.wait(lambda: _publishers(graph, f'{BODIES_NS}/{B1}/roi') == 0)


def _two_cameras_see_one_scene(graph, name: str):
    """Return the HriBodies of a node whose front and rear cameras see two people (4 bodies)."""
    node = graph.add(rclpy.create_node(name, context=graph.context))
    bodies = HriBodies(node)
    tracked = graph.collect(hri.IdsList, f'{BODIES_NS}/tracked')
    assert graph.wait(lambda: node.count_subscribers(f'{BODIES_NS}/tracked'))
    ids = IdAllocator()
    front, rear = PeopleState(ids=ids), PeopleState(ids=ids)
    frame = frame_facing_camera([-0.4, 0.5])
    bodies.update('front', _header(1), frame, front.update(frame, 1.0), IMAGE)
    bodies.update('rear', _header(1), frame, rear.update(frame, 1.0), IMAGE)
    return bodies, tracked, rear, frame


def test_cameras_of_one_node_share_the_tracked_list_with_unique_ids(graph):
    bodies, tracked, _, _ = _two_cameras_see_one_scene(graph, 'hri_cameras')
    assert graph.wait(lambda: len(tracked) >= 2)
    assert tracked[-1].ids == [B1, B2, B3, B4]  # the same scene, four people
    bodies.forget('front')
    assert graph.wait(lambda: tracked[-1].ids == [B3, B4])
    assert graph.wait(lambda: _publishers(graph, f'{BODIES_NS}/{B1}/roi') == 0)
    bodies.close()


def test_bodies_come_and_go_from_a_worker_thread_under_any_executor(graph):
    # The node updates bodies from its step worker while an executor spins in another thread.
    # Destroying a lost body's publishers there must not break the executor, even a plain
    # rclpy one (a user composing the node): rclpy raises InvalidHandle in the spinning thread
    # when a publisher's event handler is destroyed between the executor listing it and adding
    # it to its wait set (ros2/rclpy#1284). Our own executors also survive that (test_executors).
    node = rclpy.create_node('hri_churn', context=graph.context)
    executor = MultiThreadedExecutor(num_threads=2, context=graph.context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        bodies = HriBodies(node)
        tracked = graph.collect(hri.IdsList, f'{BODIES_NS}/tracked')
        assert graph.wait(lambda: node.count_subscribers(f'{BODIES_NS}/tracked'))
        frame, state = frame_facing_camera([-0.4, 0.5]), PeopleState()
        with switching_threads_often():
            for i in range(150):  # 900 publishers created and destroyed under the executor
                people = state.update(frame, 1.0 + i)
                bodies.update('front', _header(1 + i), frame, people, IMAGE)
                bodies.forget('front')
        assert spinner.is_alive(), 'the executor thread died'
        count = len(tracked)
        bodies.update('front', _header(200), frame, state.update(frame, 200.0), IMAGE)
        assert graph.wait(lambda: len(tracked) > count and tracked[-1].header.stamp.sec == 200)
        bodies.close()
    finally:
        executor.shutdown()
        spinner.join(10)
        node.destroy_node()


def test_a_silent_camera_empties_the_tracked_list_within_track_max_age(graph):
    """Bodies age by time: no frame for max_age, the camera's bodies and topics go."""
    bodies, tracked, rear, frame = _two_cameras_see_one_scene(graph, 'hri_silent')
    assert graph.wait(lambda: tracked and tracked[-1].ids == [B1, B2, B3, B4])
    assert bodies.expire(60.0) == []  # both sent within a minute: nothing goes
    time.sleep(0.3)
    bodies.update('rear', _header(1.3), frame, rear.update(frame, 1.3), IMAGE)
    assert bodies.expire(0.2) == ['front']  # front silent for 0.3 s
    assert graph.wait(lambda: tracked[-1].ids == [B3, B4])
    assert graph.wait(lambda: _publishers(graph, f'{BODIES_NS}/{B1}/roi') == 0)
    bodies.close()  # consumers keep the last list: an empty one goes out first
    assert graph.wait(lambda: tracked[-1].ids == [])
