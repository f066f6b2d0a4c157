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

"""People standing at world points, as one camera's tracker gives them (ROS-free test scenes)."""

import numpy as np
from sapiens_ros.core.people.synthetic import camera_people as people_seen
from sapiens_ros.core.pipeline.pipeline import FrameResult
from sapiens_ros.core.processing.heads.pose import PoseResult
from test_body_frames import K, SIZE


def camera_people(camera_to_world, persons: dict, image_size=SIZE):
    """
    Return the FrameResult and People of one camera frame of people standing at world points.

    ``persons`` is ``{track: xyz}`` (the mid-hips); each person faces -x of the world (REP-103,
    z up), seen through the tests' ``K`` (``core.people.synthetic.camera_people``).
    """
    people = people_seen(camera_to_world, K, persons)
    uv = people.keypoints
    boxes = np.concatenate([uv.min(1) - 10, uv.max(1) + 10], 1).astype(np.float32)
    pose = PoseResult(uv, people.scores, boxes, np.ones(len(uv), np.float32))
    return FrameResult(image_size, pose=pose), people
