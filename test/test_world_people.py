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

"""WorldPeople (ROS-free): camera frames' People into persons and fused skeletons."""

import numpy as np
from sapiens_ros.core.people.body_frames import body_id
from sapiens_ros.core.people.triangulate import look_at
from sapiens_ros.core.people.world_people import TIME_BACK_RESET_S, WorldPeople
from sapiens_ros.core.people.world_skeleton import joint_names
from scipy.spatial.transform import Rotation
from test_body_frames import BODY, K
from world_scenes import camera_people

CAMERAS = {'front': look_at([0.0, 0.0, 1.2], [3.0, 0.0, 1.0]),
           'side': look_at([3.0, -3.5, 1.2], [3.0, 0.0, 1.0])}
A, B = np.array([3.0, 0.5, 1.0]), np.array([3.2, -0.6, 1.0])
IMAGE = np.full((480, 640, 3), 90, np.uint8)
FACING = Rotation.from_euler('z', 180, degrees=True)


def _frame(world, camera, t, persons, k=K, image=IMAGE, pose=None):
    _, people = camera_people(CAMERAS[camera] if pose is None else pose, persons)
    return world.update(camera, t, CAMERAS[camera], people, image, k), people


def test_two_views_give_one_person_each_and_triangulated_joints():
    world = WorldPeople()
    for step in range(5):
        t = 10.0 + step / 30
        _frame(world, 'front', t, {1: A, 2: B})
        state, _ = _frame(world, 'side', t + 0.01, {3: A, 4: B})
    assert len(state.persons) == 2 and state.frame.status == 'fused'
    bodies = {b.body_id for p in state.persons for b in p.bodies}
    assert bodies == {body_id(t) for t in range(1, 5)}
    skeletons = world.skeletons_of(state.persons)
    wrist = joint_names().index('left_wrist')
    for person, skel in zip(state.persons, skeletons, strict=True):
        truth = A if np.linalg.norm(person.position[:2] - A[:2]) < 0.3 else B
        assert skel.views == 2 and skel.triangulated[wrist]
        np.testing.assert_allclose(skel.xyz[wrist], FACING.apply(BODY['left_wrist']) + truth,
                                   atol=1e-6)  # exact keypoints: exact joints
    # one by one gives what the batch gives
    for person, skel in zip(state.persons, skeletons, strict=True):
        one = world.skeletons.skeleton(person.person_id, [(b.camera, b.body_id)
                                                          for b in person.bodies])
        np.testing.assert_allclose(one.xyz, skel.xyz, atol=1e-9)


def test_one_view_or_no_camera_info_takes_the_measured_3d():
    world = WorldPeople()
    state, people = _frame(world, 'front', 10.0, {1: A}, k=None)
    (skel,) = world.skeletons_of(state.persons)
    assert skel.views == 1 and not skel.triangulated.any()
    wrist = joint_names().index('left_wrist')
    np.testing.assert_allclose(skel.xyz[wrist], FACING.apply(BODY['left_wrist']) + A, atol=1e-5)


def test_guessed_3d_is_left_out_and_a_stamp_going_back_starts_over():
    world = WorldPeople()
    _, people = camera_people(CAMERAS['front'], {1: A})
    people.xyz_metric = False  # a pointmap at its predicted scale: no position to fuse
    state = world.update('front', 10.0, CAMERAS['front'], people, IMAGE, K)
    assert state is not None and state.persons == [] and world.diagnostics()['persons'] == 0
    _frame(world, 'front', 10.1, {1: A})
    _frame(world, 'front', 10.2, {1: A})
    assert world.diagnostics()['persons'] == 1
    state, _ = _frame(world, 'front', 10.2 - TIME_BACK_RESET_S - 1, {1: A})  # a bag loop
    assert world.resets == 1 and len(state.persons) == 1 and state.frame.created
    # a camera without a transform: counted, nothing fused
    _, people = camera_people(CAMERAS['side'], {5: B})
    assert world.update('side', 7.0, None, people, IMAGE, K) is None
    assert world.diagnostics()['no_transform'] == 1
