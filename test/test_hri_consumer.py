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
A libhri-style consumer of the live node's REP-155 output (issue 27).

pyhri needs rclcpp, which this machine lacks, so :class:`HriListener` is written from libhri's
logic: it follows ``/humans/bodies/tracked`` and ``/humans/faces/tracked``, subscribes to each
new id's topics (``joint_states``, the latched ``urdf``, the face's ``roi``) and drops an id
when it leaves its list; the ``face_<id>`` frame is looked up with a tf2 buffer, as
``hri::Face::transform()`` does. The node runs on a real photo and a 2 m depth plane over Fast
DDS; real weights cannot be had here, so **the test's pose model puts the keypoints of a
standing person facing the camera** in the middle of the frame (``template_pose``).
"""

import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
hri = pytest.importorskip('hri_msgs.msg')
tf2_ros = pytest.importorskip('tf2_ros')

from ros_graph import qos  # noqa: E402, I100
from sapiens_ros.core.people.hri_ids import is_hri_id  # noqa: E402
from sapiens_ros.core.people.humanoid import JOINT_NAMES  # noqa: E402
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo, camera_info_for  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, JointState  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402
from template_pose import standing_template, TemplatePose  # noqa: E402

SIZE = 160


class HriListener:
    """What libhri keeps: the tracked ids, and per id the subscriptions of its topics."""

    def __init__(self, node) -> None:
        self.node = node
        self.bodies: dict[str, dict] = {}
        self.faces: dict[str, dict] = {}
        self.lists = {'bodies': [], 'faces': []}
        node.create_subscription(hri.IdsList, '/humans/bodies/tracked',
                                 lambda m: self._tracked('bodies', m), qos())
        node.create_subscription(hri.IdsList, '/humans/faces/tracked',
                                 lambda m: self._tracked('faces', m), qos())

    def _tracked(self, kind: str, msg) -> None:
        self.lists[kind].append(list(msg.ids))
        known = self.bodies if kind == 'bodies' else self.faces
        for gone in set(known) - set(msg.ids):
            for sub in known.pop(gone)['subs']:
                self.node.destroy_subscription(sub)
        for new in set(msg.ids) - set(known):
            entry = {'subs': [], 'joint_states': [], 'urdf': [], 'roi': []}
            ns = f'/humans/{kind}/{new}'
            topics = [('joint_states', JointState, qos()),
                      ('urdf', String, qos(latched=True))] if kind == 'bodies' else \
                [('roi', hri.NormalizedRegionOfInterest2D, qos())]
            for topic, kind_, profile in topics:
                entry['subs'].append(self.node.create_subscription(
                    kind_, f'{ns}/{topic}', entry[topic].append, profile))
            known[new] = entry


def test_a_libhri_consumer_sees_bodies_faces_kinematics_and_lists_that_empty(graph):
    node = graph.perception(tasks='pose', box_source='full', use_depth=True, depth_timeout=0.0,
                            hri=True, track_max_age=1.0)
    # half the crop tall: the whole person inside the frame (the crop window is 1.25x it)
    node.pipeline.runners['pose'] = TemplatePose(node.pipeline.runners['pose'],
                                                 standing_template(0.5))
    listener = HriListener(graph.tester)
    buffer = tf2_ros.Buffer()
    tf_listener = tf2_ros.TransformListener(buffer, graph.tester, spin_thread=False)
    pubs = {name: graph.publisher(t, name) for name, t in
            (('image', Image), ('depth', Image), ('camera_info', CameraInfo))}
    for pub in pubs.values():
        graph.wait_for_subscribers(pub)
    photo = np.ascontiguousarray(np.resize(bundled_photo(), (SIZE, SIZE, 3)))
    wall = np.full((SIZE // 2, SIZE // 2), 2000, np.uint16)  # 2 m, 16UC1, half resolution

    def ready() -> bool:
        bodies = [b for b in listener.bodies.values() if b['joint_states'] and b['urdf']]
        faces = [f for f in listener.faces.values() if f['roi']]
        return bool(bodies and faces and any(buffer.can_transform(
            'camera_optical_frame', f'face_{f}', rclpy.time.Time()) for f in listener.faces))

    end = time.monotonic() + 90
    while time.monotonic() < end and not ready():
        header = Header(frame_id='camera_optical_frame',
                        stamp=graph.tester.get_clock().now().to_msg())
        pubs['camera_info'].publish(camera_info_for(header, SIZE, SIZE, 60.0))
        pubs['depth'].publish(image_msg(header, wall, '16UC1'))
        pubs['image'].publish(image_msg(header, photo, 'rgb8'))
        graph.wait(ready, 0.2)
    assert ready(), (listener.lists, {b: {k: len(v) for k, v in e.items()} for b, e in
                                      [*listener.bodies.items(), *listener.faces.items()]})
    (body,) = [b for b in listener.bodies if listener.bodies[b]['joint_states']]
    assert is_hri_id(body) and all(is_hri_id(f) for f in listener.faces)
    states = listener.bodies[body]['joint_states'][-1]
    assert list(states.name) == [f'{j}_{body}' for j in JOINT_NAMES]
    assert np.isfinite(states.position).all()
    urdf = listener.bodies[body]['urdf'][-1].data
    assert urdf.startswith('<?xml') or '<robot' in urdf
    assert f'name="r_elbow_{body}"' in urdf
    face = next(f for f in listener.faces if buffer.can_transform(
        'camera_optical_frame', f'face_{f}', rclpy.time.Time()))
    at = buffer.lookup_transform('camera_optical_frame', f'face_{face}', rclpy.time.Time())
    assert abs(at.transform.translation.z - 2.0) < 0.3  # on the 2 m plane (the head's depth)
    # the link frames the node computes from the same URDF and joint_states
    assert buffer.can_transform(f'body_{body}', f'r_elbow_{body}', rclpy.time.Time())
    # the camera stops: every list empties within track_max_age (and the node's timer)
    stopped = time.monotonic()
    assert graph.wait(lambda: listener.lists['bodies'][-1] == [] and
                      listener.lists['faces'][-1] == [], 10.0)
    assert time.monotonic() - stopped < 10.0
    assert graph.wait(lambda: not listener.bodies and not listener.faces)
    tf_listener.unregister()
