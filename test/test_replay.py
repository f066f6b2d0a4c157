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

"""Replay real bags (rosbags-written, several storages and distros) through tiny real models."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from rclpy.serialization import serialize_message
from replay_bags import BASE_NS, camera_bag, frames, jpeg_msg, STEP_NS, typestore, write_bag
from sapiens_ros.core.people.state import PeopleState
from sapiens_ros.replay.loop import replay, ReplayOptions
from sapiens_ros.replay.rosbag2 import BagError
from sapiens_ros.replay.source import InputBag
from sapiens_ros.ros.array_msgs import cloud_field
from sapiens_ros.ros.messages import build_messages
from sapiens_ros.ros.render_plan import MessageOptions
from sapiens_ros.ros.topics import task_outputs
import yaml

INPUT_SIZE = (256, 192)


@pytest.fixture(scope='module')
def pose_seg(model_dir):
    """Pose + seg (the cheaper heads) through the real loader."""
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    return load_pipeline('pose,seg', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=INPUT_SIZE))


def read_rosbags(path: Path) -> dict[str, list]:
    """``topic -> [(time_ns, raw, msg)]`` read back with rosbags."""
    out: dict[str, list] = {}
    with InputBag(path) as bag:
        for conn, t, raw in bag.messages():
            out.setdefault(conn.topic, []).append((t, bytes(raw),
                                                   bag.deserialize(raw, conn.msgtype)))
    return out


def read_mcap(path: Path) -> dict[str, list]:
    """``topic -> [(log_time, raw, decoded)]`` read with the independent mcap readers."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    (file,) = Path(path).glob('*.mcap')
    out: dict[str, list] = {}
    with open(file, 'rb') as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            out.setdefault(channel.topic, []).append((message.log_time, message.data, decoded))
    return out


def canonical(raw: bytes, suffix: str) -> bytes:
    """
    CDR bytes with zeroed alignment padding (rosbags round trip).

    rclpy's serializer leaves padding bytes uninitialised (two serializations of one message
    can differ there), so "identical" is checked on everything but the padding.
    """
    from sapiens_ros.replay.sink import msgtype_of, runtime_typestore
    from sapiens_ros.ros.topic_types import TOPIC_TYPES

    ts = runtime_typestore()
    msgtype = msgtype_of(TOPIC_TYPES[suffix])
    return bytes(ts.serialize_cdr(ts.deserialize_cdr(raw, msgtype), msgtype))


def same_as_node(stored: list[bytes], msg, suffix: str) -> bool:
    """Return whether the bag holds exactly the node's message for this frame."""
    raw = serialize_message(msg)
    return len(stored) == 1 and len(stored[0]) == len(raw) and \
        canonical(stored[0], suffix) == canonical(raw, suffix)


def expected_topics(tasks, prefix='/sapiens'):
    return {f'{prefix}/{s}' for s in task_outputs(tasks)}


def test_mcap_jazzy_outputs_equal_node_messages(tmp_path, pipeline, astronaut):
    """All four heads, batch 2: node-identical bytes, stamps, QoS, v8, both readers agree."""
    rgb = frames(astronaut, 3)
    src = camera_bag(tmp_path / 'in', rgb, 'mcap', 'jazzy')
    seen = {}
    summary = replay(pipeline, ReplayOptions(
        str(src), str(tmp_path / 'out'), batch=2, progress=False,
        on_result=lambda item, result: seen.setdefault(item.time_ns, (item.header, result))))
    assert (summary.read, summary.processed, summary.failed) == (3, 3, 0)

    meta = yaml.safe_load((tmp_path / 'out' / 'metadata.yaml').read_text())
    info = meta['rosbag2_bagfile_information']
    assert info['version'] == 8 and info['storage_identifier'] == 'mcap'
    for topic in info['topics_with_message_count']:
        qos = yaml.safe_load(topic['topic_metadata']['offered_qos_profiles'])
        assert qos[0]['reliability'] == 1  # reliable, as the node offers
        name = topic['topic_metadata']['name']
        latched = name.endswith(('keypoint_info', 'label_info_json', 'label_info'))
        assert qos[0]['durability'] == (1 if latched else 2)

    ours, theirs = read_rosbags(tmp_path / 'out'), read_mcap(tmp_path / 'out')
    want = expected_topics(('pose', 'seg', 'normal', 'pointmap'))
    assert want <= set(ours) and set(ours) == set(theirs)
    assert {'/sapiens/pose/keypoint_info', '/sapiens/seg/label_info_json'} <= set(ours)
    for topic in want:
        assert [m[0] for m in ours[topic]] == [BASE_NS + i * STEP_NS for i in range(3)]
        assert [m[1] for m in ours[topic]] == [m[1] for m in theirs[topic]]
        for t, _raw, decoded in theirs[topic]:
            if topic.endswith('people/ids'):  # JSON: the stamp and frame_id are in the text
                header = SimpleNamespace(**json.loads(decoded.data))
                header.stamp = SimpleNamespace(**header.stamp)
            else:
                header = decoded.header if hasattr(decoded, 'header') else \
                    decoded.markers[0].header
            assert header.frame_id == 'camera_optical'
            assert header.stamp.sec * 10**9 + header.stamp.nanosec == t
    people = PeopleState()  # the node's per-camera people, fed the frames in order
    for t, (header, result) in sorted(seen.items()):  # the node's messages for the same result
        tracked = people.update(result, header.stamp.sec + header.stamp.nanosec * 1e-9)
        node = build_messages(header, result, MessageOptions(), result_image(rgb, t), tracked)
        assert {'people/poses', 'people/ids'} <= set(node)
        for suffix, msg in node.items():
            stored = [raw for tt, raw, _ in ours[f'/sapiens/{suffix}'] if tt == t]
            assert same_as_node(stored, msg, suffix), suffix


def result_image(rgb, t):
    return rgb[(t - BASE_NS) // STEP_NS]


def test_sqlite3_humble_jpeg_matches_an_independent_run(tmp_path, pose_seg, astronaut):
    """Humble sqlite3 JPEG bag -> sqlite3 output; bytes equal a separate per-frame node run."""
    rgb = frames(astronaut, 3, (120, 160))
    src = camera_bag(tmp_path / 'in', rgb, 'sqlite3', 'humble', '/cam/image/compressed',
                     compressed=True)
    summary = replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'out'), batch=1,
                                             storage='sqlite3', progress=False,
                                             video=str(tmp_path / 'v.mp4')))
    assert (summary.read, summary.processed, summary.failed) == (3, 3, 0)
    assert list((tmp_path / 'out').glob('*.db3'))
    ours = read_rosbags(tmp_path / 'out')
    ts = typestore('humble')
    people = PeopleState()
    for i in range(3):
        t = BASE_NS + i * STEP_NS
        data = jpeg_msg(ts, rgb[i], t).data.tobytes()
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        result = pose_seg(bgr, color_order='bgr')[0]
        from std_msgs.msg import Header

        header = Header(frame_id='camera_optical')
        header.stamp.sec, header.stamp.nanosec = t // 10**9, t % 10**9
        tracked = people.update(result, header.stamp.sec + header.stamp.nanosec * 1e-9)
        node = build_messages(header, result, MessageOptions(), bgr[..., ::-1].copy(), tracked)
        for suffix, msg in node.items():
            stored = [raw for tt, raw, _ in ours[f'/sapiens/{suffix}'] if tt == t]
            assert same_as_node(stored, msg, suffix), suffix
    cap = cv2.VideoCapture(str(tmp_path / 'v.mp4'))
    count = 0
    while cap.read()[0]:
        count += 1
    assert count == summary.video_frames == 3


def test_bad_frames_become_error_records(tmp_path, pose_seg, astronaut):
    """Corrupt JPEG, wrong step, truncated CDR, bad encoding: records; good frames still work."""
    ts = typestore('jazzy')
    rgb = frames(astronaut, 2, (96, 128))
    good = [jpeg_msg(ts, rgb[0], BASE_NS), jpeg_msg(ts, rgb[1], BASE_NS + 5 * STEP_NS)]
    jpeg = good[0].data.tobytes()
    img = ts.types['sensor_msgs/msg/Image']
    hdr = good[0].header
    bad_step = img(header=hdr, height=4, width=4, encoding='rgb8', is_bigendian=0, step=5,
                   data=np.zeros(20, np.uint8))
    bad_enc = img(header=hdr, height=4, width=4, encoding='weird9', is_bigendian=0, step=12,
                  data=np.zeros(48, np.uint8))
    msgs = [('/c/image/compressed', 'sensor_msgs/msg/CompressedImage', good[0], BASE_NS),
            ('/c/image/compressed', 'sensor_msgs/msg/CompressedImage',
             jpeg_msg(ts, None, BASE_NS + STEP_NS, data=jpeg[:len(jpeg) // 2]),
             BASE_NS + STEP_NS),
            ('/c/image/compressed', 'sensor_msgs/msg/CompressedImage', good[0],
             BASE_NS + 2 * STEP_NS),  # replaced by truncated CDR bytes below
            ('/c/image/compressed', 'sensor_msgs/msg/CompressedImage', good[1],
             BASE_NS + 5 * STEP_NS),
            ('/c/image_raw', 'sensor_msgs/msg/Image', bad_step, BASE_NS + 3 * STEP_NS),
            ('/c/image_raw', 'sensor_msgs/msg/Image', bad_enc, BASE_NS + 4 * STEP_NS)]
    raw = {2: ts.serialize_cdr(good[0], 'sensor_msgs/msg/CompressedImage')[:30]}
    src = write_bag(tmp_path / 'in', msgs, 'mcap', 'jazzy', raw)
    summary = replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'out'), batch=2,
                                             progress=False))
    assert (summary.read, summary.processed, summary.failed) == (6, 2, 4)
    assert summary.failures == {'decode': 3, 'deserialize': 1}
    records = read_mcap(tmp_path / 'out')['/sapiens/errors']
    reasons = {t: d.status[0] for t, _, d in records}
    assert sorted(reasons) == [BASE_NS + i * STEP_NS for i in (1, 2, 3, 4)]
    assert 'truncated JPEG' in reasons[BASE_NS + STEP_NS].message
    assert 'step 5' in reasons[BASE_NS + 3 * STEP_NS].message
    assert 'weird9' in reasons[BASE_NS + 4 * STEP_NS].message
    assert 'deserialize' in reasons[BASE_NS + 2 * STEP_NS].message
    for t, _, d in records:  # the record sits at the frame and names it
        values = {kv.key: kv.value for kv in d.status[0].values}
        assert int(values['bag_time_ns']) == t and values['topic'].startswith('/c/')
    # Two cameras in one namespace (/c): each gets its whole topic as the output prefix.
    prefixes = {'/sapiens/c/image/compressed', '/sapiens/c/image_raw'}
    outputs = read_rosbags(tmp_path / 'out')
    assert len(outputs['/sapiens/c/image/compressed/pose/keypoints']) == 2
    with InputBag(tmp_path / 'out') as bag:  # every contract topic exists, even if empty
        assert {f'{p}/seg/labels' for p in prefixes} <= {c.topic for c in bag.connections}


def test_bad_bags_give_clear_errors(tmp_path, pose_seg, astronaut):
    """Missing, unclosed, corrupt and truncated bags; non-image topics."""
    with pytest.raises(BagError, match='does not exist'):
        InputBag(tmp_path / 'nope')
    (tmp_path / 'empty').mkdir()
    with pytest.raises(BagError, match='metadata.yaml'):
        InputBag(tmp_path / 'empty')
    ts = typestore('jazzy')
    text = ts.types['std_msgs/msg/String'](data='hi')
    src = camera_bag(tmp_path / 'in', frames(astronaut, 6, (96, 96)), 'mcap', 'jazzy',
                     extra=[('/chatter', 'std_msgs/msg/String', text, BASE_NS)])
    with InputBag(src) as bag:
        with pytest.raises(BagError, match='std_msgs/msg/String, not'):
            bag.select(['/chatter'])
        with pytest.raises(BagError, match='is not in'):
            bag.select(['/missing'])
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / 'metadata.yaml').write_text('rosbag2_bagfile_information: [not, a, bag\n')
    with pytest.raises(BagError, match='cannot open input bag'):
        InputBag(broken)
    # Truncated storage file: a clear error, or the frames before the damage plus a note.
    (mcap_file,) = src.glob('*.mcap')
    data = mcap_file.read_bytes()
    mcap_file.write_bytes(data[:len(data) * 2 // 3])
    try:
        summary = replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'out'),
                                                 progress=False))
    except BagError as exc:
        assert 'input bag' in str(exc)
    else:
        assert summary.input_error and 'corrupt or truncated' in summary.input_error
        assert summary.consistent
        assert len(read_mcap(tmp_path / 'out').get('/sapiens/pose/keypoints', [])) == \
            summary.processed


def test_two_cameras_every_window_copy_inputs(tmp_path, pose_seg, astronaut):
    """Two camera topics, --every 2, --start/--end, --copy-inputs (QoS and bytes kept)."""
    ts = typestore('kilted')
    rgb = frames(astronaut, 6, (96, 128))
    msgs = []
    for i, frame in enumerate(rgb):
        t = BASE_NS + i * STEP_NS
        from replay_bags import image_msg

        msgs.append(('/front/image_raw', 'sensor_msgs/msg/Image', image_msg(ts, frame, t), t))
        msgs.append(('/rear/image_raw', 'sensor_msgs/msg/Image',
                     image_msg(ts, frame, t + 1, 'rear', 'bgr8'), t + 1))
    msgs.append(('/chatter', 'std_msgs/msg/String', ts.types['std_msgs/msg/String'](data='x'),
                 BASE_NS + 1000))
    src = write_bag(tmp_path / 'in', msgs, 'mcap', 'kilted')
    summary = replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'out'), batch=3,
                                             every=2, start=0.0, end=0.45, copy_inputs=True,
                                             progress=False))
    # Window [0, 0.45 s) holds frames 0..4 of each camera; every 2nd: 0, 2, 4.
    assert (summary.read, summary.processed) == (6, 6)
    out = read_rosbags(tmp_path / 'out')
    front = [t for t, _, _ in out['/sapiens/front/pose/keypoints']]
    rear = out['/sapiens/rear/seg/labels']
    assert front == [BASE_NS + i * STEP_NS for i in (0, 2, 4)]
    assert [m.header.frame_id for _, _, m in rear] == ['rear'] * 3
    assert len(out['/front/image_raw']) == 5 and len(out['/chatter']) == 1
    inputs = read_rosbags(src)
    assert out['/front/image_raw'][0][1] == inputs['/front/image_raw'][0][1]


def test_resume_skips_done_frames(tmp_path, pose_seg, astronaut):
    """A run cut at --end, resumed over the whole bag: each frame exactly once."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 5, (96, 96)), 'mcap', 'jazzy')
    out = tmp_path / 'out'
    first = replay(pose_seg, ReplayOptions(str(src), str(out), end=0.15, progress=False))
    assert first.processed == 2
    with pytest.raises(BagError, match='--resume'):
        replay(pose_seg, ReplayOptions(str(src), str(out), progress=False))
    second = replay(pose_seg, ReplayOptions(str(src), str(out), resume=True, batch=2,
                                            progress=False))
    assert (second.already_done, second.read, second.processed) == (2, 3, 3)
    topics = read_mcap(out)
    for name in expected_topics(('pose', 'seg')):
        assert [t for t, _, _ in topics[name]] == [BASE_NS + i * STEP_NS for i in range(5)]
    assert len(topics['/sapiens/pose/keypoint_info']) == 1
    assert not (tmp_path / 'out.resume').exists()


def test_resume_continues_track_ids_above_the_partial_outputs(tmp_path, pose_seg, astronaut):
    """A resumed run tracks anew from where it starts, never reusing an id the bag holds."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 5), 'mcap', 'jazzy')
    out = tmp_path / 'out'
    first = replay(pose_seg, ReplayOptions(str(src), str(out), end=0.15, progress=False))
    assert first.processed == 2
    second = replay(pose_seg, ReplayOptions(str(src), str(out), resume=True, progress=False))
    assert second.processed == 3
    persons = read_rosbags(out)['/sapiens/pose/persons']
    ids = [cloud_field(m[2], 'id').reshape(-1).tolist() for m in persons]
    assert len(ids) == 5
    before = {i for frame in ids[:2] for i in frame}
    after = {i for frame in ids[2:] for i in frame}
    assert before and after and min(after) > max(before) >= 1, ids


def test_compressed_outputs_in_the_bag(tmp_path, pose_seg, astronaut):
    """``--outputs`` with /compressed variants: PNG labels in the bag equal the raw labels."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 2), 'mcap', 'jazzy')
    outputs = frozenset({'seg/labels', 'seg/labels/compressed', 'seg/overlay/compressed'})
    summary = replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'out'), progress=False,
                                             messages=MessageOptions(outputs=outputs)))
    assert summary.processed == 2
    ours = read_rosbags(tmp_path / 'out')
    assert {f'/sapiens/{s}' for s in outputs} <= set(ours)
    assert '/sapiens/seg/overlay' not in ours and '/sapiens/pose/keypoints' not in ours
    for (_, _, raw), (_, _, png) in zip(ours['/sapiens/seg/labels'],
                                        ours['/sapiens/seg/labels/compressed'], strict=True):
        assert png.format.startswith('mono8; png')
        decoded = cv2.imdecode(np.frombuffer(bytes(png.data), np.uint8), cv2.IMREAD_UNCHANGED)
        labels = np.frombuffer(bytes(raw.data), np.uint8).reshape(raw.height, raw.width)
        assert np.array_equal(decoded, labels)


class _Counting:
    """A real runner that records its batch sizes."""

    def __init__(self, runner) -> None:
        self.runner, self.batches = runner, []

    def __getattr__(self, name):
        return getattr(self.runner, name)

    def __call__(self, pixel_values):
        self.batches.append(int(pixel_values.shape[0]))
        return self.runner(pixel_values)


def _two_camera_bag(tmp_path, astronaut, count=4):
    from replay_bags import image_msg

    ts = typestore('jazzy')
    msgs = []
    for i, frame in enumerate(frames(astronaut, count, (96, 128))):
        t = BASE_NS + i * STEP_NS
        msgs.append(('/front/image_raw', 'sensor_msgs/msg/Image', image_msg(ts, frame, t), t))
        msgs.append(('/rear/image_raw', 'sensor_msgs/msg/Image',
                     image_msg(ts, frame[:, ::-1].copy(), t + 1, 'rear'), t + 1))
    return write_bag(tmp_path / 'in', msgs, 'mcap', 'jazzy')


def test_camera_topics_batch_across_topics_with_their_own_trackers(tmp_path, pose_seg,
                                                                   astronaut):
    """Each step is one frame per camera topic (the node's step); ids are each topic's own."""
    src = _two_camera_bag(tmp_path, astronaut)
    real = dict(pose_seg.runners)
    pose_seg.runners = {t: _Counting(r) for t, r in real.items()}
    try:
        replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'both'), progress=False))
        assert pose_seg.runners['seg'].batches == [2, 2, 2, 2]  # front + rear per forward
    finally:
        pose_seg.runners = real
    both = read_rosbags(tmp_path / 'both')
    seen = {}
    for topic in ('/front/image_raw', '/rear/image_raw'):
        replay(pose_seg, ReplayOptions(str(src), str(tmp_path / topic.split('/')[1]),
                                       topics=[topic], progress=False))
        alone = read_rosbags(tmp_path / topic.split('/')[1])
        name = f'/sapiens/{topic.split("/")[1]}/pose/persons'  # one topic alone: no prefix
        ids = [cloud_field(m, 'id').ravel().tolist() for _, _, m in both[name]]
        seen[topic] = set(sum(ids, []))
        # The same tracks as the topic alone (one id space for both topics: other numbers).
        assert _first_seen_order(ids) == _first_seen_order(
            [cloud_field(m, 'id').ravel().tolist() for _, _, m in alone['/sapiens/pose/persons']])
    assert not seen['/front/image_raw'] & seen['/rear/image_raw']  # an id names one person


def _first_seen_order(rows: list[list[int]]) -> list[list[int]]:
    """Relabel track ids by order of first appearance (the partition of rows into tracks)."""
    order: dict[int, int] = {}
    return [[order.setdefault(i, len(order)) if i >= 0 else -1 for i in row] for row in rows]


def test_rates_in_replay_run_seg_at_its_budget(tmp_path, pose_seg, astronaut):
    """Run seg at 5 Hz on a 10 Hz bag: seg outputs every other frame, pose on every frame."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 6, (96, 128)), 'mcap', 'jazzy')
    summary = replay(pose_seg, ReplayOptions(str(src), str(tmp_path / 'out'), progress=False,
                                             rates={'seg': 5.0}))
    assert summary.processed == 6 and summary.failed == 0
    out = read_rosbags(tmp_path / 'out')
    assert len(out['/sapiens/seg/labels']) == 3
    assert len(out['/sapiens/pose/keypoints']) == 6  # tracked boxes between seg frames
