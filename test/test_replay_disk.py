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

"""A full disk or an unwritable output: one clear message, a summary, a readable bag, resume."""

from __future__ import annotations

import errno
from pathlib import Path
import shutil
import subprocess
import sys

import pytest
from replay_bags import BASE_NS, camera_bag, cli_env, frames, STEP_NS
from sapiens_ros.cli import main
from sapiens_ros.replay.source import InputBag
from test_replay import read_mcap
from test_replay_crash import assert_each_frame_once, cli_args, read_out


class FullDisk:
    """A file object that fails with ENOSPC once ``room`` bytes were written (a full disk)."""

    def __init__(self, raw, room: int) -> None:
        self._raw = raw
        self.room = room

    def write(self, data) -> int:
        size = len(memoryview(data).cast('B'))
        if size > self.room:
            raise OSError(errno.ENOSPC, 'No space left on device')
        self.room -= size
        return self._raw.write(data)

    def __getattr__(self, name):
        return getattr(self._raw, name)


@pytest.fixture
def disk_fills_after(monkeypatch):
    """
    Make the output's mcap file fail with ENOSPC after N more bytes (mocked: a real full disk.

    needs a small filesystem; test_tmpfs_full_disk uses one where user namespaces allow it).
    """
    from rosbags.rosbag2 import storage_mcap

    original = storage_mcap.McapWriter.__init__
    room = {}

    def init(self, path, compression):
        original(self, path, compression)
        if 'bytes' in room:
            self.bio = FullDisk(self.bio, room['bytes'])

    monkeypatch.setattr(storage_mcap.McapWriter, '__init__', init)
    return room


def test_injected_enospc_gives_a_summary_a_valid_bag_and_resumes(
        tmp_path, model_dir, astronaut, capsys, disk_fills_after):
    """ENOSPC mid-run: exit 4, one message, the bag is closed and valid; --resume completes."""
    count = 16
    src = camera_bag(tmp_path / 'in', frames(astronaut, count, (96, 96)), 'mcap', 'jazzy')
    out = tmp_path / 'out'
    disk_fills_after['bytes'] = 400_000  # a few frames of pose + seg outputs
    assert main(cli_args(src, out, model_dir, '--no-progress', '--checkpoint-seconds', '0')) == 4
    captured = capsys.readouterr()
    assert 'Traceback' not in captured.err
    assert captured.err.count('no space left on the device') >= 1
    assert 'output error: writing' in captured.err and 'continue with --resume' in captured.err
    processed = int(captured.err.split('processed ')[1].split()[0])
    assert 0 < processed < count
    partial = read_mcap(out)  # closed and indexed: the independent reader opens it
    assert len(partial['/sapiens/seg/labels']) == processed
    with InputBag(out) as bag:  # and rosbags (metadata.yaml written)
        assert any(c.topic == '/sapiens/pose/keypoints' for c in bag.connections)
    del disk_fills_after['bytes']  # space is free again
    assert main(cli_args(src, out, model_dir, '--no-progress', '--resume')) == 0
    assert f'frames already in the resumed bag: {processed}' in capsys.readouterr().out
    assert_each_frame_once(read_mcap(out), [BASE_NS + i * STEP_NS for i in range(count)])


def test_unwritable_output_is_one_clear_message(tmp_path, model_dir, astronaut, capsys):
    """An output directory that cannot be created: exit 4, a summary, no traceback."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 2, (64, 64)), 'mcap', 'jazzy')
    blocker = tmp_path / 'file'
    blocker.write_text('not a directory')
    assert main(cli_args(src, blocker / 'out', model_dir, '--no-progress')) == 4
    err = capsys.readouterr().err
    assert 'cannot create output bag' in err and 'Traceback' not in err
    assert 'frames read 0 = processed 0 + failed 0' in err


def _can_mount_tmpfs() -> bool:
    if not shutil.which('unshare'):
        return False
    probe = subprocess.run(['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c',
                            'mount -t tmpfs -o size=1m tmpfs /tmp'], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason='no user namespaces to mount a small tmpfs')
@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_tmpfs_full_disk_then_resume(tmp_path, model_dir, astronaut, storage):
    """A real full disk (640 KiB tmpfs, the run needs ~900): exit 4, a valid bag; resume."""
    count = 16
    src = camera_bag(tmp_path / 'in', frames(astronaut, count, (96, 96)), 'mcap', 'jazzy')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    args = ' '.join(cli_args(src, mnt / 'out', model_dir, '--no-progress', '--storage',
                             storage, '--checkpoint-seconds', '0'))
    cli = f'{sys.executable} -m sapiens_ros.cli {args}'
    script = f"""
    set -u
    mount -t tmpfs -o size=640k tmpfs {mnt}
    {cli} > {tmp_path}/first.out 2> {tmp_path}/first.err; echo $? > {tmp_path}/first.rc
    cp -r {mnt}/out {tmp_path}/after_full
    rm -rf {mnt}/out.resume
    mount -o remount,size=64m {mnt}
    {cli} --resume > {tmp_path}/second.out 2> {tmp_path}/second.err
    echo $? > {tmp_path}/second.rc
    cp -r {mnt}/out {tmp_path}/final
    """
    subprocess.run(['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c', script],
                   env=cli_env(), check=True, timeout=600)
    err = (tmp_path / 'first.err').read_text()
    assert (tmp_path / 'first.rc').read_text().strip() == '4', err
    assert 'no space left on the device' in err and 'Traceback' not in err
    processed = int(err.split('processed ')[1].split()[0])
    with InputBag(tmp_path / 'after_full') as bag:  # closed: metadata.yaml, index
        kept = sum(1 for c, _, _ in bag.messages() if c.topic == '/sapiens/seg/labels')
    assert kept == processed < count
    assert (tmp_path / 'second.rc').read_text().strip() == '0', \
        (tmp_path / 'second.err').read_text()
    assert_each_frame_once(read_out(Path(tmp_path / 'final'), storage),
                           [BASE_NS + i * STEP_NS for i in range(count)])


def test_disk_full_before_the_first_frame_checkpoint(tmp_path, model_dir, astronaut,
                                                     disk_fills_after):
    """ENOSPC before any frame was checkpointed: nothing kept, yet a closed, readable bag."""
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig
    from sapiens_ros.replay.loop import replay, ReplayOptions

    pipe = load_pipeline('pose,seg', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=(256, 192)))
    src = camera_bag(tmp_path / 'in', frames(astronaut, 8, (96, 96)), 'mcap', 'jazzy')
    disk_fills_after['bytes'] = 150_000
    summary = replay(pipe, ReplayOptions(str(src), str(tmp_path / 'out'), progress=False,
                                         checkpoint_seconds=3600))
    assert summary.exit_status == 4 and 'no space left' in summary.output_error
    assert (summary.read, summary.processed) == (0, 0) and summary.not_kept > 0
    kept = read_mcap(tmp_path / 'out')  # closed, with the connections opened after the start
    assert not kept.get('/sapiens/seg/labels')


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_disk_full_at_metadata_yaml_reports_what_the_bag_holds(
        tmp_path, model_dir, astronaut, capsys, monkeypatch, storage):
    """
    The disk fills at the very end (metadata.yaml): the summary counts what the bag holds.

    On e159fec a run whose storage file held all its frames said they were not kept.
    (Mocked ENOSPC on the metadata.yaml write: the one write a real disk must refuse here.)
    """
    count = 6
    src = camera_bag(tmp_path / 'in', frames(astronaut, count, (96, 96)), 'mcap', 'jazzy')
    out = tmp_path / 'out'
    write_text = Path.write_text

    def full_at_metadata(self, *args, **kwargs):
        if self.name == 'metadata.yaml.tmp' and self.parent == out:
            raise OSError(errno.ENOSPC, 'No space left on device')
        return write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, 'write_text', full_at_metadata)
    assert main(cli_args(src, out, model_dir, '--no-progress', '--storage', storage,
                         '--checkpoint-seconds', '3600')) == 4
    err = capsys.readouterr().err
    assert 'no space left on the device' in err and 'Traceback' not in err, err
    processed = int(err.split('processed ')[1].split()[0])
    with InputBag(out, salvage=True) as bag:  # no metadata.yaml: read record by record
        kept = sum(1 for c, _, _ in bag.messages() if c.topic == '/sapiens/seg/labels')
    assert kept == processed == count, err
    assert 'were not kept' not in err and 'metadata.yaml' in err, err
    monkeypatch.undo()
    assert main(cli_args(src, out, model_dir, '--no-progress', '--storage', storage,
                         '--resume')) == 0
    assert f'frames already in the resumed bag: {count}' in capsys.readouterr().out
    assert_each_frame_once(read_out(out, storage),
                           [BASE_NS + i * STEP_NS for i in range(count)])
