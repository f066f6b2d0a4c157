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

"""Replay that never loses work: kill -9, duplicate bag times, truncated inputs, exit codes."""

from __future__ import annotations

from collections import Counter
import os
from pathlib import Path
import shutil
import signal

import pytest
from replay_bags import (BASE_NS, camera_bag, frames, image_msg, start_cli, STEP_NS, typestore,
                         wait_for_progress, write_bag)
from sapiens_ros.cli import main
from sapiens_ros.replay.loop import replay, ReplayOptions
from sapiens_ros.replay.records import record_values
from test_replay import canonical, read_mcap, read_rosbags

TOPICS = ('/sapiens/pose/keypoints', '/sapiens/pose/markers', '/sapiens/seg/labels')


def cli_args(src, out, model_dir, *extra):
    return ['replay', str(src), '--out', str(out), '--model-dir', str(model_dir),
            '--tasks', 'pose,seg', '--input-size', '192x256', *extra]


def read_out(path: Path, storage: str) -> dict[str, list]:
    """Read the outputs back: the independent mcap reader, or rosbags for sqlite3."""
    return read_mcap(path) if storage == 'mcap' else read_rosbags(path)


def assert_each_frame_once(out: dict, times: list[int]) -> None:
    """Every output topic holds one message per input frame: the same multiset of bag times."""
    for topic in TOPICS:
        assert sorted(t for t, _, _ in out.get(topic, [])) == sorted(times), topic
    assert '/sapiens/errors' not in out or not out['/sapiens/errors']


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_kill9_then_resume_every_frame_once(tmp_path, model_dir, astronaut, storage):
    """SIGKILL a real replay (no metadata.yaml, no index); --resume recovers it and finishes."""
    count = 200  # several seconds of work even on an idle machine: the kill lands mid-run
    src = camera_bag(tmp_path / 'in', frames(astronaut, count, (96, 96)), 'mcap', 'jazzy')
    out = tmp_path / 'out'
    proc = start_cli(cli_args(src, out, model_dir, '--storage', storage))
    try:
        wait_for_progress(proc, lines=2)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip('the replay finished before it could be killed')
    assert proc.returncode == -signal.SIGKILL
    assert not (out / 'metadata.yaml').exists()  # a hard kill: never closed
    assert main(['stats', str(out)]) == 0  # its checkpointed part can be inspected already
    args = cli_args(src, out, model_dir, '--storage', storage, '--resume', '--no-progress')
    resumed = start_cli(args)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    held = int(stdout.split('frames already in the resumed bag: ')[1].split()[0])
    assert 0 < held < count  # the killed run's checkpointed frames were kept, not redone
    read = int(stdout.split('frames read ')[1].split()[0])
    assert held + read == count
    final = read_out(out, storage)
    assert_each_frame_once(final, [BASE_NS + i * STEP_NS for i in range(count)])
    assert len(final['/sapiens/pose/keypoint_info']) == 1
    assert not any(p.name.startswith('out.') for p in tmp_path.iterdir())


def duplicate_time_bag(path: Path, astronaut, storage: str) -> tuple[Path, list[int]]:
    """Twelve different frames, two per bag time (what a recorder does with a coarse clock)."""
    ts = typestore('jazzy')
    rgb = frames(astronaut, 12, (96, 96))
    times = [BASE_NS + (i // 2) * STEP_NS for i in range(12)]
    msgs = [('/camera/image_raw', 'sensor_msgs/msg/Image', image_msg(ts, f, t), t)
            for f, t in zip(rgb, times, strict=True)]
    return write_bag(path, msgs, storage), times


def stop_after(frames_done: int):
    """on_result callback: SIGINT this process after ``frames_done`` frames (a real Ctrl-C)."""
    seen = Counter()

    def callback(item, result):
        seen['n'] += 1
        if seen['n'] == frames_done:
            os.kill(os.getpid(), signal.SIGINT)
    return callback


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_duplicate_bag_times_resume_exactly_once(tmp_path, pose_seg, astronaut, storage):
    """Frames sharing a bag time, cut at several points and resumed: each frame once, its own."""
    src, times = duplicate_time_bag(tmp_path / 'in', astronaut, storage)
    reference = read_out(replay(pose_seg, ReplayOptions(
        str(src), str(tmp_path / 'ref'), storage=storage, progress=False)).output, storage)
    want = Counter((t, canonical(raw, 'seg/labels'))
                   for t, raw, _ in reference['/sapiens/seg/labels'])
    for cut in (1, 3, 4, 7):
        out = tmp_path / f'out{cut}'
        first = replay(pose_seg, ReplayOptions(str(src), str(out), storage=storage,
                                               progress=False, on_result=stop_after(cut)))
        assert first.interrupted and 0 < first.processed < 12
        second = replay(pose_seg, ReplayOptions(str(src), str(out), storage=storage,
                                                resume=True, progress=False))
        assert second.already_done == first.processed  # exact, not a guess from bag times
        assert second.already_done + second.read == 12 and second.failed == 0
        final = read_out(out, storage)
        assert_each_frame_once(final, times)
        got = Counter((t, canonical(raw, 'seg/labels')) for t, raw, _ in
                      final['/sapiens/seg/labels'])
        assert got == want, f'cut after {cut}: a frame was replaced by its time twin'


@pytest.fixture(scope='module')
def pose_seg(model_dir):
    """Pose + seg (the cheaper heads) through the real loader."""
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    return load_pipeline('pose,seg', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=(256, 192)))


def readable_prefix(mcap_file: Path) -> int:
    """Image messages the independent ``mcap`` stream reader gets before the damage."""
    from mcap.stream_reader import StreamReader

    count = 0
    with open(mcap_file, 'rb') as f:
        try:
            for record in StreamReader(f, skip_magic=False).records:
                count += type(record).__name__ == 'Message'
        except Exception:  # noqa: BLE001 - the reader stops where the file is cut
            pass
    return count


def test_truncated_input_salvages_every_readable_frame(tmp_path, model_dir, astronaut, capsys):
    """An mcap cut mid-way: every frame before the cut, then a record of where reading stopped."""
    count = 30
    full = camera_bag(tmp_path / 'full', frames(astronaut, count, (200, 200)), 'mcap', 'jazzy')
    src = tmp_path / 'cut'
    shutil.copytree(full, src)
    (mcap_file,) = src.glob('*.mcap')
    data = mcap_file.read_bytes()
    mcap_file.write_bytes(data[:int(len(data) * 0.7)])
    readable = readable_prefix(mcap_file)
    assert 0 < readable < count  # several chunks: the first ones are intact
    out = tmp_path / 'out'
    assert main(cli_args(src, out, model_dir, '--no-progress')) == 1
    err = capsys.readouterr().err
    assert f'frames read {readable} = processed {readable} + failed 0' in err
    assert 'unreadable from byte' in err and 'Traceback' not in err
    result = read_mcap(out)
    assert [t for t, _, _ in result['/sapiens/seg/labels']] == \
        [BASE_NS + i * STEP_NS for i in range(readable)]
    (record,) = [d for _, _, d in result['/sapiens/errors']]
    values = record_values(record)
    assert values['kind'] == 'input' and int(values['frame_index']) == readable
    assert 'unreadable from byte' in values['reason']
    # The whole input comes back (copied again): --resume does the rest, the note goes away.
    shutil.rmtree(src)
    shutil.copytree(full, src)
    assert main(cli_args(src, out, model_dir, '--no-progress', '--resume')) == 0
    final = read_mcap(out)
    assert_each_frame_once(final, [BASE_NS + i * STEP_NS for i in range(count)])


def test_exit_status_when_every_frame_fails(tmp_path, model_dir, astronaut, capsys):
    """Every frame an error record: not a success (3), and the summary says so."""
    ts = typestore('jazzy')
    img = ts.types['sensor_msgs/msg/Image']
    good = image_msg(ts, frames(astronaut, 1, (8, 8))[0], BASE_NS)
    msgs = [('/cam/image_raw', 'sensor_msgs/msg/Image',
             img(header=good.header, height=4, width=4, encoding='weird9', is_bigendian=0,
                 step=12, data=good.data[:48]), BASE_NS + i * STEP_NS) for i in range(3)]
    src = write_bag(tmp_path / 'in', msgs)
    assert main(cli_args(src, tmp_path / 'out', model_dir, '--no-progress')) == 3
    assert 'frames read 3 = processed 0 + failed 3' in capsys.readouterr().out
