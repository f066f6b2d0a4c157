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

"""Many bags into OUT_DIR: relative names, manifest, whole-run resume, time ranges, Ray."""

from __future__ import annotations

import csv
import json
from pathlib import Path
import signal
import sys

import pytest
from replay_bags import (BASE_NS, camera_bag, frames, jpeg_msg, start_cli, STEP_NS, typestore,
                         wait_for_progress, write_bag)
from sapiens_ros.cli import main
from sapiens_ros.replay.records import record_values
from test_replay import read_mcap
from test_replay_crash import assert_each_frame_once

SIZES = {'robot1/day1': 10, 'robot1/day2': 11, 'robot2/day1': 12}


def archive(root: Path, astronaut, sizes: dict[str, int] = SIZES) -> Path:
    """Write a directory of bags in sub-directories, as a fleet's recordings are kept."""
    for name, count in sizes.items():
        camera_bag(root / name, frames(astronaut, count, (96, 96)), 'mcap', 'jazzy')
    return root


def fleet_args(inputs, out, model_dir, *extra):
    return ['replay', *map(str, inputs), '--out', str(out), '--model-dir', str(model_dir),
            '--tasks', 'pose,seg', '--input-size', '192x256', *extra]


def check_outputs(out: Path, sizes: dict[str, int]) -> dict:
    """Every bag's output holds each frame once; the manifest (JSON and CSV) says so."""
    manifest = json.loads((out / 'manifest.json').read_text())
    rows = {r['bag']: r for r in manifest['bags']}
    table = {r['bag']: r for r in csv.DictReader((out / 'manifest.csv').open())}
    assert set(rows) == set(table) == set(sizes)
    for name, count in sizes.items():
        assert_each_frame_once(read_mcap(out / name), [BASE_NS + i * STEP_NS
                                                       for i in range(count)])
        row = rows[name]
        assert (row['frames'], row['processed'], row['failed'], row['status']) == \
            (count, count, 0, 'done'), row
        assert int(table[name]['frames']) == count and table[name]['status'] == 'done'
    assert manifest['totals']['frames'] == sum(sizes.values())
    return rows


def test_many_bags_sigterm_then_resume_the_whole_run(tmp_path, model_dir, astronaut):
    """A directory of bags; SIGTERM mid-run (exit 130), --resume: every frame of every bag once."""
    src = archive(tmp_path / 'archive', astronaut)
    out = tmp_path / 'out'
    proc = start_cli(fleet_args([src], out, model_dir))
    wait_for_progress(proc, lines=1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert 'interrupted: continue with --resume' in stderr and 'Traceback' not in stderr
    first = {r['bag']: r for r in json.loads((out / 'manifest.json').read_text())['bags']}
    assert any(r['status'] != 'done' for r in first.values())
    assert main(fleet_args([src], out, model_dir, '--resume', '--no-progress')) == 0
    rows = check_outputs(out, SIZES)
    for name, row in first.items():  # finished bags were not redone
        if row['status'] == 'done':
            assert rows[name]['seconds'] == row['seconds']


def test_manifest_after_a_killed_driver_adds_its_attempts_and_seconds(tmp_path, model_dir,
                                                                      astronaut):
    """
    SIGKILL to the driver mid-bag, then --resume: attempts and seconds include the killed run.

    On e159fec the killed run's manifest still said 0 attempts and 0 seconds for the bag it was
    in, and the resumed run's row said 1 attempt and only its own seconds.
    """
    sizes = {'a': 150}  # several seconds of work even on an idle machine
    src = archive(tmp_path / 'archive', astronaut, sizes)
    out = tmp_path / 'out'
    proc = start_cli(fleet_args([src], out, model_dir, '--checkpoint-seconds', '0'))
    try:
        wait_for_progress(proc, lines=3)  # 2 s or more into the bag
    finally:
        proc.kill()
        proc.communicate()
    killed = json.loads((out / 'manifest.json').read_text())['bags'][0]
    assert killed['status'] == 'pending' and killed['attempts'] == 1, killed
    assert killed['seconds'] >= 1.0, killed  # saved about once a second while it ran
    assert main(fleet_args([src], out, model_dir, '--resume', '--no-progress')) == 0
    row = check_outputs(out, sizes)['a']
    assert row['attempts'] == 2, row
    assert row['seconds'] > killed['seconds'], (row, killed)


def test_split_bag_time_ranges_merge_into_one(tmp_path, model_dir, astronaut, capsys):
    """--split-seconds: ranges of one bag merged in order; frame indices stay global."""
    ts = typestore('jazzy')
    rgb = frames(astronaut, 12, (96, 128))
    msgs = [('/cam/image/compressed', 'sensor_msgs/msg/CompressedImage',
             jpeg_msg(ts, f, BASE_NS + i * STEP_NS), BASE_NS + i * STEP_NS)
            for i, f in enumerate(rgb)]
    msgs[9] = (msgs[9][0], msgs[9][1], jpeg_msg(ts, None, msgs[9][3], data=b'\xff\xd8broken'),
               msgs[9][3])
    src = write_bag(tmp_path / 'long', msgs)
    out = tmp_path / 'out'
    assert main(fleet_args([src], out, model_dir, '--split-seconds', '0.35',
                           '--no-progress', '--workers', '1')) == 3
    assert 'long: failed_frames' in capsys.readouterr().out
    merged = read_mcap(out / 'long')
    times = [BASE_NS + i * STEP_NS for i in range(12)]
    assert [t for t, _, _ in merged['/sapiens/seg/labels']] == times[:9] + times[10:]
    (record,) = [d for _, _, d in merged['/sapiens/errors']]
    assert int(record_values(record)['frame_index']) == 9  # its index in the whole bag
    assert len(merged['/sapiens/pose/keypoint_info']) == 1
    assert not (out / 'long.parts').exists()
    (row,) = json.loads((out / 'manifest.json').read_text())['bags']
    assert (row['frames'], row['processed'], row['failed']) == (12, 11, 1)


def test_workers_without_ray_names_the_install(tmp_path, model_dir, astronaut, capsys,
                                               monkeypatch):
    """--workers 2 where Ray is not installed (mocked by hiding the module): one clear line."""
    src = archive(tmp_path / 'archive', astronaut, {'a': 1})
    monkeypatch.setitem(sys.modules, 'ray', None)
    assert main(fleet_args([src], tmp_path / 'out', model_dir, '--workers', '2')) == 2
    err = capsys.readouterr().err
    assert "pip install 'sapiens_ros[fleet]'" in err and 'Traceback' not in err


def test_outputs_flag_selects_topics(tmp_path, model_dir, astronaut, capsys):
    """--outputs writes only the named suffixes; an unknown one lists the valid ones."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 2, (96, 96)), 'mcap', 'jazzy')
    assert main(fleet_args([src], tmp_path / 'out', model_dir, '--no-progress', '--outputs',
                           'pose/keypoints,seg/labels')) == 0
    topics = set(read_mcap(tmp_path / 'out'))
    assert {'/sapiens/pose/keypoints', '/sapiens/seg/labels'} <= topics
    assert not topics & {'/sapiens/pose/markers', '/sapiens/seg/overlay'}
    assert main(fleet_args([src], tmp_path / 'bad', model_dir, '--outputs', 'pose/nope')) == 2
    err = capsys.readouterr().err
    assert 'unknown --outputs pose/nope' in err and 'seg/labels' in err
    assert main(fleet_args([src], tmp_path / 'bad', model_dir, '--outputs',
                           'normal/image')) == 2
    assert 'need the task(s) normal' in capsys.readouterr().err


def _busy_ray_worker(pid: int, timeout: float = 120.0):
    """Return a Ray worker process below ``pid`` running a unit (``ray::ReplayWorker.run``)."""
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in psutil.Process(pid).children(recursive=True):
            try:
                if 'ReplayWorker.run' in ' '.join(proc.cmdline()):
                    return proc
            except psutil.Error:
                continue
        time.sleep(0.2)
    raise AssertionError('no Ray worker is replaying a bag')


def test_ray_worker_killed_mid_bag_every_frame_once(tmp_path, model_dir, astronaut):
    """
    A real local Ray (--workers 2); one worker process is SIGKILLed mid-bag.

    Its bag is retried on a new worker, which resumes the partial output: every frame of every
    bag exactly once, and the manifest counts them exactly.
    """
    pytest.importorskip('ray')
    sizes = {'robot1/day1': 30, 'robot1/day2': 30, 'robot2/day1': 30}
    src = archive(tmp_path / 'archive', astronaut, sizes)
    out = tmp_path / 'out'
    proc = start_cli(fleet_args([src], out, model_dir, '--workers', '2'))
    try:
        wait_for_progress(proc, lines=1, timeout=300)  # the workers are into their bags
        _busy_ray_worker(proc.pid).kill()
        _, stderr = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert 'died' in stderr and 'retrying it' in stderr
    rows = check_outputs(out, sizes)
    assert max(r['attempts'] for r in rows.values()) == 2


def test_ray_driver_sigkill_leaves_no_ray_process(tmp_path, model_dir, astronaut):
    """
    SIGKILL to the driver of a local Ray: none of its processes is left after a few seconds.

    On e159fec the raylet's DashboardAgent and RuntimeEnvAgent lingered about a minute each
    (they report the raylet's death to the dead GCS, which times out after 60 s).
    """
    import time

    import psutil

    pytest.importorskip('ray')
    src = archive(tmp_path / 'archive', astronaut, {'a': 40, 'b': 40})
    proc = start_cli(fleet_args([src], tmp_path / 'out', model_dir, '--workers', '2'))
    try:
        wait_for_progress(proc, lines=1, timeout=300)
        family = psutil.Process(proc.pid).children(recursive=True)
        names = ' '.join(_command(p) for p in family)
        assert 'DashboardAgent' in names and 'ReplayWorker' in names, names
    finally:
        proc.kill()
        proc.communicate()
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            break
        time.sleep(0.5)
    assert not alive, [_command(p) for p in alive]


def _command(proc) -> str:
    """Return a process's command line ('' once it is gone)."""
    import psutil

    try:
        return ' '.join(proc.cmdline())
    except psutil.Error:
        return ''
