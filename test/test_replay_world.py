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
``replay --world-frame``: the node's persons over a two-camera bag, TF from the bag (issue 26).

The bag is what a robot records: two cameras' images and camera_info, ``/tf_static`` with both
optical frames in ``base_link`` and ``/tf`` with ``base_link`` driving in ``odom``. Real weights
cannot be had here, so **the test's pointmap model puts every pixel on the optical axis at a
depth the test chooses** (a stand-in for the pointmap runner), set per camera through its
camera_info focal length so that both cameras place the person at one point of ``odom``: the
replay must then find one person, at that point, with five-letter ids, and write ``/tf``,
``/humans/persons/tracked``, the matches and the markers that ``stats`` lists.
"""

from pathlib import Path

import numpy as np
import pytest
from replay_bags import BASE_NS, frames, image_msg, STEP_NS, typestore, write_bag

tf2_ros = pytest.importorskip('tf2_ros')
pytest.importorskip('hri_msgs.msg')

from sapiens_ros.core.people.hri_ids import is_hri_id  # noqa: E402, I100
from sapiens_ros.core.people.triangulate import look_at  # noqa: E402
from sapiens_ros.core.processing.heads.pointmap import CANONICAL_FOCAL  # noqa: E402
from sapiens_ros.core.processing.letterbox import Letterbox  # noqa: E402
from sapiens_ros.replay.loop import replay, ReplayOptions  # noqa: E402
from sapiens_ros.replay.source import InputBag  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402
import torch  # noqa: E402

INPUT_SIZE = (256, 192)
SIZE = (160, 160)
MEET = np.array([3.0, 0.0, 1.0])  # where both cameras look, in base_link (metres)
CAMERAS = {'front': look_at([0.0, 0.0, 1.2], MEET), 'side': look_at([3.0, -3.5, 1.2], MEET)}
FX = 150.0  # the front camera's; the side camera's is scaled to put the person at MEET
DRIVE = 0.2  # m/s: base_link along odom's x


class AxisPointmap:
    """The test's pointmap model: every pixel at (0, 0, DEPTH) before the metric scale."""

    DEPTH = 10.0

    def __init__(self, runner) -> None:
        self._runner = runner

    def __getattr__(self, name):
        return getattr(self._runner, name)

    def __call__(self, images: torch.Tensor) -> dict:
        out = self._runner(images)
        maps = torch.zeros_like(out['pointmaps'])
        maps[:, 2] = self.DEPTH
        return {**out, 'pointmaps': maps}


def _fx(camera: str) -> float:
    """Focal length that puts the axis point at the camera's distance to MEET (metric scale)."""
    ratio = Letterbox.fit(SIZE, INPUT_SIZE).ratio
    distance = np.linalg.norm(CAMERAS[camera][:3, 3] - MEET)
    return distance * CANONICAL_FOCAL / (AxisPointmap.DEPTH * ratio)  # metric = DEPTH / scale


def _transform(ts, parent: str, child: str, pose: np.ndarray, time_ns: int):
    T = ts.types
    stamp = T['builtin_interfaces/msg/Time'](sec=time_ns // 10**9, nanosec=time_ns % 10**9)
    q = Rotation.from_matrix(pose[:3, :3]).as_quat()
    return T['geometry_msgs/msg/TransformStamped'](
        header=T['std_msgs/msg/Header'](stamp=stamp, frame_id=parent), child_frame_id=child,
        transform=T['geometry_msgs/msg/Transform'](
            translation=T['geometry_msgs/msg/Vector3'](x=pose[0, 3], y=pose[1, 3], z=pose[2, 3]),
            rotation=T['geometry_msgs/msg/Quaternion'](x=q[0], y=q[1], z=q[2], w=q[3])))


def _info(ts, camera: str, time_ns: int):
    T = ts.types
    fx = _fx(camera)
    c = (SIZE[1] - 1) / 2
    stamp = T['builtin_interfaces/msg/Time'](sec=time_ns // 10**9, nanosec=time_ns % 10**9)
    return T['sensor_msgs/msg/CameraInfo'](
        header=T['std_msgs/msg/Header'](stamp=stamp, frame_id=f'{camera}_optical'),
        height=SIZE[0], width=SIZE[1], distortion_model='plumb_bob', d=np.zeros(5),
        k=np.array([fx, 0, c, 0, fx, c, 0, 0, 1.0]), r=np.eye(3).ravel(),
        p=np.array([fx, 0, c, 0, 0, fx, c, 0, 0, 0, 1.0, 0]), binning_x=0, binning_y=0,
        roi=T['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0, width=0,
                                                  do_rectify=False))


def robot_bag(path: Path, astronaut, count: int = 8) -> Path:
    """Two cameras on a driving robot: images, camera_info, /tf_static and /tf."""
    ts = typestore('jazzy')
    tf = 'tf2_msgs/msg/TFMessage'
    msgs = [('/tf_static', tf, ts.types[tf](transforms=[
        _transform(ts, 'base_link', f'{cam}_optical', pose, BASE_NS)
        for cam, pose in CAMERAS.items()]), BASE_NS)]
    rgb = frames(astronaut, count, SIZE)
    for i in range(-1, count + 1):  # odom -> base_link from before the first frame to after
        t = BASE_NS + i * STEP_NS
        pose = np.eye(4)
        pose[0, 3] = DRIVE * i * STEP_NS / 1e9
        msgs.append(('/tf', tf, ts.types[tf](transforms=[
            _transform(ts, 'odom', 'base_link', pose, t)]), t))
    for i in range(count):
        for k, cam in enumerate(CAMERAS):
            t = BASE_NS + i * STEP_NS + k * 10_000_000  # side 10 ms later: not synchronised
            msgs.append((f'/{cam}/camera_info', 'sensor_msgs/msg/CameraInfo',
                         _info(ts, cam, t), t))
            msgs.append((f'/{cam}/image_raw', 'sensor_msgs/msg/Image',
                         image_msg(ts, rgb[i], t, f'{cam}_optical'), t))
    msgs.sort(key=lambda m: m[3])
    return write_bag(path, msgs)


@pytest.fixture(scope='module')
def pose_pointmap(model_dir):
    """Pose (boxes: the whole frame) + the test's pointmap model, through the real loader."""
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    pipe = load_pipeline('pose,pointmap', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=INPUT_SIZE, box_source='full'))
    pipe.runners['pointmap'] = AxisPointmap(pipe.runners['pointmap'])
    return pipe


def test_replay_fuses_two_cameras_into_one_person_with_the_bags_tf(
        tmp_path, pose_pointmap, astronaut):
    from rclpy.serialization import deserialize_message
    from hri_msgs.msg import IdsList, IdsMatch
    from tf2_msgs.msg import TFMessage

    src = robot_bag(tmp_path / 'robot', astronaut)
    out = tmp_path / 'out'
    summary = replay(pose_pointmap, ReplayOptions(
        str(src), str(out), world_frame='odom', hri=True, progress=False,
        topics=['/front/image_raw', '/side/image_raw']))
    assert summary.processed == 16 and summary.failed == 0
    got: dict[str, list] = {}
    with InputBag(out) as bag:
        types = {c.topic: c.msgtype for c in bag.connections}
        for conn, t, raw in bag.messages():
            got.setdefault(conn.topic, []).append((t, raw))
    assert types['/tf'] == 'tf2_msgs/msg/TFMessage'
    assert types['/humans/persons/tracked'] == 'hri_msgs/msg/IdsList'
    assert types['/sapiens/persons/markers'] == 'visualization_msgs/msg/MarkerArray'
    tracked = [deserialize_message(r, IdsList) for _, r in got['/humans/persons/tracked']]
    assert len(tracked) == 16 and all(m.header.frame_id == 'odom' for m in tracked)
    persons = {i for m in tracked for i in m.ids}
    assert len(persons) == 1 and all(is_hri_id(p) for p in persons)  # two views, one person
    (person,) = persons
    matches = [m for m in (deserialize_message(r, IdsMatch)
                           for _, r in got['/humans/candidate_matches'])
               if m.id2_type == IdsMatch.PERSON]  # body <-> person (face <-> body: --hri)
    assert {m.id2 for m in matches} == {person} and len({m.id1 for m in matches}) == 2
    # person_<id> in odom: where both cameras look, as the robot drove (base_link moved in x)
    every = [t for _, r in got['/tf'] for t in deserialize_message(r, TFMessage).transforms]
    tfs = [t for t in every if t.child_frame_id.startswith('person_')]
    assert tfs and all(t.header.frame_id == 'odom' and t.child_frame_id == f'person_{person}'
                       for t in tfs)
    # --hri: the REP-155 bodies of both cameras, as the node's hri:=true, and their frames
    bodies = [deserialize_message(r, IdsList) for _, r in got['/humans/bodies/tracked']]
    names = {b for m in bodies for b in m.ids}
    assert len(names) == 2 and all(is_hri_id(b) for b in names)
    assert names == {m.id1 for m in matches}  # the bodies the person is matched with
    for name in names:
        assert f'/humans/bodies/{name}/skeleton2d' in types
        assert types[f'/humans/bodies/{name}/roi'] == 'hri_msgs/msg/NormalizedRegionOfInterest2D'
    # (no body_<id> frames: this pointmap puts the whole torso on one point, no axes)
    from sapiens_ros.replay.stats import bag_stats, format_stats

    listed = format_stats(bag_stats(str(out)), only_topics=True)  # sapiens-ros stats
    for topic in ('/tf', '/humans/bodies/tracked', '/humans/persons/tracked',
                  '/humans/candidate_matches', '/sapiens/persons/markers'):
        assert topic in listed, topic
    last = tfs[-1]
    stamp = last.header.stamp.sec + last.header.stamp.nanosec * 1e-9
    drove = DRIVE * (stamp - BASE_NS / 1e9)
    at = np.array([last.transform.translation.x, last.transform.translation.y,
                   last.transform.translation.z])
    # the axis point is the surface a camera sees; the centre is 0.1 m beyond it (both rays)
    assert np.linalg.norm(at - MEET - [drove, 0, 0]) < 0.15, (at, drove)
