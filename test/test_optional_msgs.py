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

"""Without vision_msgs, tf2_msgs and hri_msgs every standard output is still built."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip('sensor_msgs.msg')

from ros_fixtures import HIDE_OPTIONAL_PACKAGES  # noqa: E402, I100

#: Runs in a fresh interpreter where the optional packages cannot be imported, as on a ROS
#: install without them (they are installed in this venv, so they are hidden, not removed).
SCRIPT = HIDE_OPTIONAL_PACKAGES + textwrap.dedent("""
    import json
    import numpy as np

    from sapiens_ros.core.processing.heads.pose import PoseResult
    from sapiens_ros.core.people.state import PeopleState
    from sapiens_ros.core.pipeline.pipeline import FrameResult
    from sapiens_ros.ros import messages as M
    from sapiens_ros.ros.render_plan import MessageOptions
    from sapiens_ros.ros.topic_types import optional_outputs
    from sapiens_ros.ros.hri_bodies import HriBodies
    from sapiens_ros.ros.optional_msgs import missing_packages
    from sapiens_ros.ros.tf_frames import TFMessage
    from std_msgs.msg import Header

    rng = np.random.default_rng(0)
    kps = rng.uniform(50, 150, (1, 308, 2)).astype(np.float32)
    pose = PoseResult(kps, np.full((1, 308), 0.9, np.float32),
                      np.float32([[40, 40, 160, 160]]), np.ones(1, np.float32))
    result = FrameResult((200, 200), pose=pose)
    people = PeopleState().update(result, 1.0)
    wanted = {'pose/keypoints', 'pose/persons', 'pose/markers', 'people/ids',
              'pose/detections'}
    msgs = M.build_messages(Header(frame_id='cam'), result, MessageOptions(outputs=wanted),
                            None, people)
    try:
        HriBodies(None)
        hri = 'built'
    except RuntimeError as exc:
        hri = str(exc)
    import rclpy
    from sapiens_ros.ros.people_world import PeopleWorld, WorldOptions
    rclpy.init()
    node = rclpy.create_node('no_optional_msgs')
    world = PeopleWorld(node, WorldOptions(publish_tf=True, tf_joints=True, hri=True))
    world.publish('front', Header(frame_id='cam'), result, people)  # nothing to publish: no error
    world.close()
    node.destroy_node()
    rclpy.shutdown()
    print(json.dumps({'built': sorted(msgs), 'optional': sorted(optional_outputs(['pose'])),
                      'missing': missing_packages(), 'tf': TFMessage is None, 'hri': hri,
                      'info': sorted(M.info_messages(['pose', 'seg']))}))
""")


def test_standard_outputs_without_the_optional_packages():
    from ros_fixtures import session_domain_id

    env = dict(os.environ, ROS_DOMAIN_ID=str(session_domain_id()))
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report['built'] == ['people/ids', 'pose/keypoints', 'pose/markers', 'pose/persons']
    assert report['optional'] == [] and report['tf']
    assert report['info'] == ['pose/keypoint_info', 'seg/label_info_json']
    assert 'hri_msgs is not available' in report['hri']
    missing = report['missing']
    assert sorted(missing) == ['hri_msgs', 'tf2_msgs', 'vision_msgs']
    assert missing['vision_msgs'].startswith('not publishing pose/detections')
    assert "No module named 'tf2_msgs" in missing['tf2_msgs']
    assert 'ros-$ROS_DISTRO-hri-msgs' in missing['hri_msgs']
    for line in missing.values():  # PeopleWorld logged each once
        assert out.stderr.count(line) == 1, out.stderr
