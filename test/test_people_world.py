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
from sapiens_ros.core.people.state import PeopleState  # noqa: E402
from sapiens_ros.ros.people_world import PeopleWorld, WorldOptions  # noqa: E402
from std_msgs.msg import Header  # noqa: E402
from test_body_frames import frame_facing_camera, K, SIZE  # noqa: E402

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
    assert {'body_b1', 'body_b2', 'head_b1', 'r_knee_b2'} <= set(children)
    assert children['body_b1'].header.frame_id == 'front_optical'
    assert abs(children['body_b1'].transform.translation.z - 2.0) < 0.02
    assert world.hri is None and node.count_publishers('/humans/bodies/tracked') == 0
    world.options.hri = True  # a runtime parameter change: from the next frame
    tracked = graph.collect(hri.IdsList, '/humans/bodies/tracked')
    people = state.update(frame, 5.1, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', header, frame, people, image)
    assert world.hri is not None and world.hri.bodies == ['b1', 'b2']
    assert graph.wait(lambda: node.count_subscribers('/humans/bodies/tracked'))
    people = state.update(frame, 5.2, depth=DEPTH, K=K, depth_encoding='16UC1')
    world.publish('front', header, frame, people, image)
    assert graph.wait(lambda: tracked and tracked[-1].ids == ['b1', 'b2'])
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
    assert graph.wait(lambda: graph.tester.count_publishers('/humans/bodies/b1/roi') == 0 and
                      graph.tester.count_publishers('/tf') == 0)
