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

"""Replay keeps every output: vision_msgs ones, pose/overlay, matting/alpha; stats lists them."""

from __future__ import annotations

import pytest

pytest.importorskip('vision_msgs.msg')

from replay_bags import camera_bag, frames  # noqa: E402
from ros_fixtures import tiny_pipeline  # noqa: E402
from sapiens_ros.replay.loop import replay, ReplayOptions  # noqa: E402
from sapiens_ros.replay.rosbag2 import register_packages, typestore_of  # noqa: E402
from sapiens_ros.replay.source import InputBag  # noqa: E402
from sapiens_ros.replay.stats import bag_stats, format_stats  # noqa: E402
from sapiens_ros.ros.render_plan import MessageOptions  # noqa: E402


def test_packages_register_by_name_with_the_packages_they_use():
    store = typestore_of('jazzy')
    assert 'vision_msgs/msg/Detection2DArray' not in store.types  # rosbags lacks it
    assert register_packages(store, ['vision_msgs', 'hri_msgs', 'not_a_package_msgs']) == [
        'not_a_package_msgs']
    assert {'vision_msgs/msg/Detection2DArray', 'vision_msgs/msg/LabelInfo',
            'hri_msgs/msg/IdsList'} <= set(store.types)
    text, _ = store.generate_msgdef('vision_msgs/msg/Detection2DArray')
    assert 'MSG: vision_msgs/BoundingBox2D' in text  # nested types resolved
    assert register_packages(store, ['vision_msgs']) == []  # again: nothing to do


def test_a_replayed_bag_holds_detections_label_info_overlay_and_alpha(tmp_path, astronaut):
    pipe = tiny_pipeline(('pose', 'seg', 'matting'), box_source='full')
    src = camera_bag(tmp_path / 'in', frames(astronaut, 2), 'mcap', 'jazzy')
    outputs = frozenset({'pose/persons', 'pose/detections', 'pose/overlay/compressed',
                         'seg/labels', 'matting/alpha'})
    summary = replay(pipe, ReplayOptions(str(src), str(tmp_path / 'out'), progress=False,
                                         messages=MessageOptions(outputs=outputs)))
    assert (summary.processed, summary.failed) == (2, 0)

    got: dict[str, list] = {}
    with InputBag(tmp_path / 'out') as bag:  # read back with the bag's own definitions
        types = {c.topic: c.msgtype for c in bag.connections}
        for conn, _, raw in bag.messages():
            got.setdefault(conn.topic, []).append(bag.deserialize(raw, conn.msgtype))
    assert types['/sapiens/pose/detections'] == 'vision_msgs/msg/Detection2DArray'
    assert types['/sapiens/seg/label_info'] == 'vision_msgs/msg/LabelInfo'
    assert types['/sapiens/pose/overlay/compressed'] == 'sensor_msgs/msg/CompressedImage'
    assert len(got['/sapiens/pose/detections']) == 2
    for dets, persons in zip(got['/sapiens/pose/detections'], got['/sapiens/pose/persons'],
                             strict=True):
        assert len(dets.detections) == persons.width == 1  # one full-frame person
        assert dets.detections[0].id == '1'  # its track id
        assert dets.detections[0].results[0].hypothesis.class_id == 'person'
        assert dets.header.stamp == persons.header.stamp
    (info,) = got['/sapiens/seg/label_info']
    assert [c.class_name for c in info.class_map][:2] == ['Background', 'Apparel']
    assert len(info.class_map) == 29
    alpha = got['/sapiens/matting/alpha'][0]
    assert (alpha.encoding, alpha.height, alpha.width) == ('mono8', 160, 160)
    assert got['/sapiens/pose/overlay/compressed'][0].format.startswith('rgb8; jpeg')

    stats = bag_stats(str(tmp_path / 'out'))
    assert {'/sapiens/pose/detections', '/sapiens/seg/label_info',
            '/sapiens/pose/overlay/compressed', '/sapiens/matting/alpha'} <= set(stats.outputs)
    table = format_stats(stats, only_topics=True)
    assert 'vision_msgs/msg/Detection2DArray' in table and 'vision_msgs/msg/LabelInfo' in table


def test_replay_default_outputs_name_the_detections():
    from sapiens_ros.cli_replay import parse_outputs

    default = parse_outputs('default', ('pose', 'seg', 'matting'))
    assert {'pose/detections', 'matting/alpha', 'pose/keypoints'} <= default
    assert 'pose/detections' not in parse_outputs('default', ('seg',))
    assert parse_outputs('pose/detections,pose/overlay', ('pose',)) == {
        'pose/detections', 'pose/overlay'}


def test_an_output_without_a_message_definition_is_left_out(monkeypatch, caplog, tmp_path):
    """vision_msgs imports but its .msg files are not found: pose/detections is not written."""
    from sapiens_ros.replay import loop

    pipe = tiny_pipeline(('pose',), box_source='full')
    monkeypatch.setattr(loop, 'OUTPUT_PACKAGES', ())  # as if share/vision_msgs were missing
    options = ReplayOptions('in', str(tmp_path / 'out'), progress=False)
    replayer = loop.Replayer(pipe, options)
    assert 'pose/detections' not in replayer.suffixes and 'pose/keypoints' in replayer.suffixes
    assert 'no message definition of vision_msgs/msg/Detection2DArray' in caplog.text
    monkeypatch.undo()
    assert 'pose/detections' in loop.Replayer(pipe, options).suffixes
