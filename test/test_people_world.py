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

"""PeopleWorld, the node's few lines: /tf from depth, REP-155 on demand."""

import numpy as np
import pytest

tf2 = pytest.importorskip('tf2_msgs.msg')
hri = pytest.importorskip('hri_msgs.msg')

import rclpy  # noqa: E402
from ros_graph import qos  # noqa: E402
from sapiens_ros.core.people.body_frames import body_id  # noqa: E402
from sapiens_ros.core.people.state import PeopleState  # noqa: E402
from sapiens_ros.ros.people_world import PeopleWorld, WorldOptions  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_body_frames import BODY, frame_facing_camera, K, SIZE  # noqa: E402
from world_scenes import camera_people  # noqa: E402

DEPTH = np.full((240, 320), 2000, np.uint16)


def test_people_world_publishes_what_its_options_say(graph):
    node = graph.add(rclpy.create_node('world', context=graph.context))
    world = PeopleWorld(node, WorldOptions(tf_joints=True))
    header = Header(frame_id='front_optical')
    header.stamp.sec = 5
    tf = graph.collect(tf2.TFMessage, '/tf', qos(depth=100))
    assert graph.wait(lambda: node.count_subscribers('/tf'))
    state = PeopleState()
    frame = frame_facing_camera([-0.4, 0.5])
    image = np.zeros(SIZE + (3,), np.uint8)
    people = state.update(frame, 5.0, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', header, frame, people, image)
    assert graph.wait(lambda: tf)
    children = {t.child_frame_id: t for t in tf[0].transforms}
    b1, b2 = body_id(1), body_id(2)
    assert {f'body_{b1}', f'body_{b2}', f'head_{b1}', f'r_knee_{b2}'} <= set(children)
    assert children[f'body_{b1}'].header.frame_id == 'front_optical'
    assert abs(children[f'body_{b1}'].transform.translation.z - 2.0) < 0.02
    assert world.hri is None and node.count_publishers('/humans/bodies/tracked') == 0
    world.options.hri = True  # a runtime parameter change: from the next frame
    tracked = graph.collect(hri.IdsList, '/humans/bodies/tracked')
    people = state.update(frame, 5.1, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', header, frame, people, image)
    assert world.hri is not None and world.hri.bodies == [b1, b2]
    assert graph.wait(lambda: node.count_subscribers('/humans/bodies/tracked'))
    people = state.update(frame, 5.2, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', header, frame, people, image)
    assert graph.wait(lambda: tracked and tracked[-1].ids == [b1, b2])
    assert graph.wait(lambda: len(tf) >= 3)  # one /tf message per frame with depth
    count = len(tf)
    without_depth = state.update(frame, 5.3)  # predicted pointmap scale or none: no frames
    world.publish('front', header, frame, without_depth, image)
    later = Header(frame_id='front_optical')
    later.stamp.sec = 6
    people = state.update(frame, 5.4, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', later, frame, people, image)
    # One writer delivers in order: the next /tf after `count` is the later frame's.
    assert graph.wait(lambda: len(tf) > count)
    assert tf[count].transforms[0].header.stamp.sec == 6
    world.close()
    assert graph.wait(lambda: graph.tester.count_publishers(f'/humans/bodies/{b1}/roi') == 0 and
                      graph.tester.count_publishers('/tf') == 0)


# --- persons in the world frame (issue 26): real tf2 over Fast DDS -------------------------

def _stamp(t: float) -> Header:
    header = Header()
    header.stamp.sec, header.stamp.nanosec = int(t), int(round(t % 1 * 1e9))
    return header


def test_two_cameras_two_people_make_two_persons_in_the_world(graph):
    """
    Two cameras, two people: two persons, each with person_<id> on /tf at its place.

    Static front and side cameras in odom both see the two people; one walks out of the front
    camera's view and into the side camera's with a new body id a second later, and keeps its
    person id.
    """
    tf2_ros = pytest.importorskip('tf2_ros')
    from rclpy.duration import Duration
    from rclpy.time import Time
    from sapiens_ros.core.people.hri_ids import is_hri_id
    from sapiens_ros.core.people.triangulate import look_at
    from sapiens_ros.core.people.world_skeleton import joint_names
    from sapiens_ros.core.processing.intrinsics import Intrinsics
    from sapiens_ros.ros.tf_frames import transform

    cams = {'front': look_at([0.0, 0.0, 1.2], [3.0, 0.0, 1.0]),
            'side': look_at([3.0, -3.5, 1.2], [3.0, 0.0, 1.0])}
    static = tf2_ros.StaticTransformBroadcaster(graph.tester)
    static.sendTransform([transform(Header(), 'odom', f'{name}_optical', pose[:3, 3],
                                    Rotation.from_matrix(pose[:3, :3]).as_quat())
                          for name, pose in cams.items()])
    node = graph.add(rclpy.create_node('world_persons', context=graph.context))
    world = PeopleWorld(node, WorldOptions(world_frame='odom', person_joints_tf=True))
    assert world.persons is not None
    tracked = graph.collect(hri.IdsList, '/humans/persons/tracked')
    matches = graph.collect(hri.IdsMatch, '/humans/candidate_matches', qos(depth=50))
    buffer = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buffer, graph.tester, spin_thread=False)
    assert graph.wait(lambda: world.persons.frame.buffer.can_transform(
        'odom', 'side_optical', Time()), 10.0), 'static transforms not heard'
    intrinsics = Intrinsics(K[0, 0], K[1, 1], K[0, 2], K[1, 2])
    image = np.full(SIZE + (3,), 128, np.uint8)
    a, b = np.array([3.0, 0.5, 1.0]), np.array([3.2, -0.6, 1.0])

    def frame(camera: str, t: float, persons: dict) -> None:
        result, people = camera_people(cams[camera], persons)
        header = _stamp(t)
        header.frame_id = f'{camera}_optical'
        world.publish(camera, header, result, people, image, intrinsics)

    t = 100.0
    for _ in range(15):  # 0.5 s: both cameras see both, 20 ms apart (not synchronised)
        frame('front', t, {1: a, 2: b})
        frame('side', t + 0.02, {3: a, 4: b})
        t += 1 / 30
    persons = world.persons.world.fusion.persons()
    assert len(persons) == 2 and all(is_hri_id(p.person_id) for p in persons)
    by_place = {('a' if np.linalg.norm(p.position[:2] - a[:2]) < 0.25 else 'b'): p
                for p in persons}
    assert set(by_place) == {'a', 'b'}
    person_a = by_place['a'].person_id
    assert graph.wait(lambda: tracked and sorted(tracked[-1].ids) == sorted(
        p.person_id for p in persons))
    assert tracked[-1].header.frame_id == 'odom'
    for name, truth in (('a', a), ('b', b)):
        person = by_place[name].person_id
        assert graph.wait(lambda p=person: buffer.can_transform(
            'odom', f'person_{p}', Time(), Duration(seconds=0.1)), 10.0), person
        at = buffer.lookup_transform('odom', f'person_{person}', Time()).transform.translation
        # the torso centre (shoulders and hips), not the mid-hips: 0.25 m higher
        assert np.linalg.norm(np.array([at.x, at.y, at.z]) - truth - [0, 0, 0.25]) < 0.15
        assert buffer.can_transform(f'person_{person}', f'left_wrist_{person}', Time())
    # the fused skeleton: joints both cameras see are triangulated from the 2D keypoints
    person = by_place['a']
    views = [(v.camera, v.body_id) for v in person.bodies]
    skel = world.persons.world.skeletons.skeleton(person.person_id, views)
    assert skel.views == 2 and skel.triangulated.sum() >= 12
    wrist = joint_names().index('left_wrist')
    truth = Rotation.from_euler('z', 180, degrees=True).apply(BODY['left_wrist']) + a
    assert skel.triangulated[wrist] and np.linalg.norm(skel.xyz[wrist] - truth) < 0.01
    assert graph.wait(lambda: {(m.id1_type, m.id2_type) for m in matches} == {
        (hri.IdsMatch.BODY, hri.IdsMatch.PERSON)} and len({m.id1 for m in matches}) == 4)
    # A walks out of the front camera's view; 1 s later the side camera sees it again, with a
    # new track id (its tracker lost it): the same person
    for _ in range(15):
        a = a + [0.0, 0.5 / 30, 0.0]
        frame('front', t, {1: a, 2: b})
        frame('side', t + 0.02, {4: b})
        t += 1 / 30
    for _ in range(30):  # nobody sees A for 1 s; it walks on
        a = a + [0.0, 0.5 / 30, 0.0]
        frame('front', t, {2: b})
        frame('side', t + 0.02, {4: b})
        t += 1 / 30
    for _ in range(10):
        a = a + [0.0, 0.5 / 30, 0.0]
        frame('front', t, {2: b})
        frame('side', t + 0.02, {5: a, 4: b})
        t += 1 / 30
    persons = {p.person_id: p for p in world.persons.world.fusion.persons()}
    assert len(persons) == 2 and person_a in persons
    assert np.linalg.norm(persons[person_a].position[:2] - a[:2]) < 0.25
    assert persons[person_a].best_body.body_id == body_id(5)
    diag = world.diagnostics()
    assert diag['world.frame'] == 'odom' and diag['world.persons'] == 2
    assert diag['world.persons_created'] == 2 and diag['world.tf_found'] > 0
    # A camera without a transform: its people stay out, counted, nothing else changes
    header = _stamp(t)
    header.frame_id = 'rear_optical'
    result, people = camera_people(np.eye(4), {6: a})
    world.publish('rear', header, result, people, image, intrinsics)
    assert world.diagnostics()['world.tf_missing'] == 1
    assert len(world.persons.world.fusion.persons()) == 2
    world.close()
    assert graph.wait(lambda: tracked and tracked[-1].ids == [])
    listener.unregister()


def test_no_world_frame_means_no_persons(graph):
    node = graph.add(rclpy.create_node('no_world', context=graph.context))
    world = PeopleWorld(node, WorldOptions())
    assert world.persons is None and world.diagnostics() == {}
    assert world.demand() == (False, False)  # nobody listens to /tf, no hri
    assert node.count_publishers('/humans/persons/tracked') == 0
    world.close()


def test_without_tf2_ros_a_world_frame_is_said_once_and_cameras_keep_their_people(
        graph, monkeypatch, capfd):
    """No tf2_ros (monkeypatched: this venv has it): one line, body frames as before."""
    import sapiens_ros.ros.people_world as people_world
    import sapiens_ros.ros.tf_frames as tf_frames

    monkeypatch.setattr(people_world, 'TF2_ROS_ERROR', 'ModuleNotFoundError: tf2_ros')
    monkeypatch.setattr(tf_frames, 'TransformBroadcaster', None)  # /tf by hand, as before
    node = graph.add(rclpy.create_node('world_no_tf2', context=graph.context))
    world = PeopleWorld(node, WorldOptions(world_frame='odom'))
    assert world.persons is None and world.diagnostics() == {}
    assert 'needs tf2_ros' in capfd.readouterr().err
    tf = graph.collect(tf2.TFMessage, '/tf', qos(depth=100))
    assert graph.wait(lambda: node.count_subscribers('/tf'))
    header = Header(frame_id='front_optical')
    header.stamp.sec = 5
    frame = frame_facing_camera([-0.4, 0.5])
    people = PeopleState().update(frame, 5.0, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', header, frame, people, None)
    assert graph.wait(lambda: tf)
    assert {t.child_frame_id for t in tf[0].transforms} == {f'body_{body_id(1)}',
                                                            f'body_{body_id(2)}'}
    assert node.count_publishers('/humans/persons/tracked') == 0
    world.close()
