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
from sapiens_ros.core.people.depth import torso_poses
from sapiens_ros.core.people.state import People
from sapiens_ros.core.pipeline.pipeline import FrameResult
from sapiens_ros.core.processing.heads.pose import PoseResult
from scipy.spatial.transform import Rotation
from test_body_frames import canonical_body, project, SIZE


def camera_people(camera_to_world, persons: dict, image_size=SIZE):
    """
    Return what one camera's tracker gives for people standing at world points.

    ``persons`` is ``{track: xyz}``. Each person is the canonical body (facing -x of the
    world, REP-103 z up), its mid-hips at the world point; returns the frame's FrameResult
    and People (measured-depth 3D).
    """
    tracks = list(persons)
    facing = Rotation.from_euler('z', 180, degrees=True)  # body x (forward) along world -x
    world_to_cam = np.linalg.inv(camera_to_world)
    xyz = []
    for i, track in enumerate(tracks):
        body = facing.apply(canonical_body(i)) + persons[track]
        xyz.append(body @ world_to_cam[:3, :3].T + world_to_cam[:3, 3])
    xyz = np.stack(xyz).astype(np.float32)
    uv = project(xyz.astype(np.float64)).astype(np.float32)
    scores = np.full(uv.shape[:2], 0.9, np.float32)
    boxes = np.concatenate([uv.min(1) - 10, uv.max(1) + 10], 1).astype(np.float32)
    result = FrameResult(image_size, pose=PoseResult(uv, scores, boxes,
                                                     np.ones(len(uv), np.float32)))
    position, orientation, valid = torso_poses(xyz)
    ids = np.asarray(tracks, np.int64)
    people = People(0.0, ids, uv, uv, scores, xyz, xyz, 'depth', position, orientation, valid,
                    None, True, ids)
    return result, people
