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

"""Cameras in the world frame with the real tf2 (the kit's tf2_ros) over Fast DDS, at stamps."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

pytest.importorskip('tf2_ros')

from geometry_msgs.msg import TransformStamped  # noqa: E402, I100
from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster  # noqa: E402

#: The camera's optical frame on the robot (z ahead, x right, y down) in base_link (x ahead, z up).
CAMERA_IN_BASE = Rotation.from_euler('xyz', [-90, 0, -90], degrees=True)
CAMERA_AT = np.array([0.2, 0.0, 1.1])


def _stamped(parent: str, child: str, sec: int, xyz, rotation: Rotation) -> TransformStamped:
    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = parent, child
    t.header.stamp.sec = sec
    t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = \
        (float(v) for v in xyz)
    q = rotation.as_quat()
    t.transform.rotation.x, t.transform.rotation.y, t.transform.rotation.z, \
        t.transform.rotation.w = (float(v) for v in q)
    return t


def _pose(xyz, rotation: Rotation) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = rotation.as_matrix(), xyz
    return out


def _stamp(sec: float):
    from builtin_interfaces.msg import Time

    return Time(sec=int(sec), nanosec=int(round((sec % 1) * 1e9)))


def test_a_camera_is_looked_up_at_its_frame_stamp(graph):
    import rclpy
    from sapiens_ros.ros.world_frame import WorldFrame

    static, moving = StaticTransformBroadcaster(graph.tester), TransformBroadcaster(graph.tester)
    node = graph.add(rclpy.create_node('world', context=graph.context))
    world = WorldFrame(node, 'odom')
    static.sendTransform(_stamped('base_link', 'cam_optical', 0, CAMERA_AT, CAMERA_IN_BASE))
    # The robot drives 1 m along x and turns 90 degrees between t=10 and t=12.
    turn = Rotation.from_euler('z', 90, degrees=True)
    start, end = _pose([0, 0, 0], Rotation.identity()), _pose([1, 0, 0], turn)
    camera = _pose(CAMERA_AT, CAMERA_IN_BASE)
    twelve = rclpy.time.Time(seconds=12)

    def sent_and_heard() -> bool:  # /tf is volatile: send until the listener has both stamps
        moving.sendTransform([_stamped('odom', 'base_link', 10, [0, 0, 0], Rotation.identity()),
                              _stamped('odom', 'base_link', 12, [1, 0, 0], turn)])
        return world.buffer.can_transform('odom', 'cam_optical', twelve)

    assert graph.wait(sent_and_heard, timeout=60, period=0.2)  # holds on a loaded machine
    np.testing.assert_allclose(world.camera_to_world('cam_optical', _stamp(10)), start @ camera,
                               atol=1e-9)
    np.testing.assert_allclose(world.camera_to_world('cam_optical', _stamp(12)), end @ camera,
                               atol=1e-9)
    middle = world.camera_to_world('cam_optical', _stamp(11))  # interpolated, not the latest
    half = _pose([0.5, 0, 0], Rotation.from_euler('z', 45, degrees=True))
    np.testing.assert_allclose(middle, half @ camera, atol=1e-9)
    assert world.counters['found'] == 3

    # The failures leave the camera out and are counted by why.
    assert world.camera_to_world('cam_optical', _stamp(30)) is None  # beyond the newest
    assert world.camera_to_world('rear_optical', _stamp(11)) is None  # nobody publishes it
    assert world.camera_to_world('', _stamp(11)) is None
    assert world.camera_to_world('/cam_optical', _stamp(11)) is None
    assert world.counters == {'found': 3, 'extrapolation': 1, 'missing': 1, 'frame_id': 2}
    world.close()


def test_a_world_frame_must_be_a_frame_id(graph):
    import rclpy
    from sapiens_ros.ros.world_frame import WorldFrame

    node = graph.add(rclpy.create_node('world_bad', context=graph.context))
    for bad in ('', '/odom'):
        with pytest.raises(ValueError, match='world_frame'):
            WorldFrame(node, bad)


def test_transform_matrix_matches_scipy():
    from geometry_msgs.msg import Quaternion, Vector3
    from sapiens_ros.ros.world_frame import transform_matrix

    rotation = Rotation.from_euler('zyx', [30, -20, 75], degrees=True)
    x, y, z, w = rotation.as_quat()
    got = transform_matrix(Vector3(x=1.0, y=2.0, z=3.0), Quaternion(x=x, y=y, z=z, w=w))
    np.testing.assert_allclose(got, _pose([1, 2, 3], rotation), atol=1e-12)
