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

"""``sapiens-ros replay`` / ``stats`` end to end: CLI, Ctrl-C in a real subprocess, resume."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import pytest
from replay_bags import BASE_NS, camera_bag, frames, jpeg_msg, STEP_NS, typestore, write_bag
from sapiens_ros.cli import main
from sapiens_ros.replay.source import InputBag
from sapiens_ros.replay.stats import bag_stats
from test_replay import read_mcap

ROOT = Path(__file__).resolve().parents[1]


def cli_args(src, out, model_dir, *extra):
    return ['replay', str(src), '--out', str(out), '--model-dir', str(model_dir),
            '--tasks', 'pose,seg', '--input-size', '192x256', '--no-progress', *extra]


def test_cli_replay_then_stats(tmp_path, model_dir, astronaut, capsys):
    """CLI replay into sqlite3, then stats as tables and CSV agree with the bag."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 3, (128, 128)), 'mcap', 'humble')
    assert main(cli_args(src, tmp_path / 'out', model_dir, '--storage', 'sqlite3',
                         '--batch', '2')) == 0
    assert 'frames read 3 = processed 3 + failed 0' in capsys.readouterr().out
    assert main(['stats', str(tmp_path / 'out')]) == 0
    table = capsys.readouterr().out
    assert '/sapiens/pose/keypoints' in table and 'person_fraction' in table
    assert main(['stats', str(tmp_path / 'out'), '--csv']) == 0
    blocks = capsys.readouterr().out.strip().split('\n\n')
    topics = {r['topic']: r for r in csv.DictReader(io.StringIO(blocks[0]))}
    assert topics['/sapiens/seg/labels']['count'] == '3'
    assert abs(float(topics['/sapiens/seg/labels']['rate_hz']) - 10.0) < 1e-6
    cams = list(csv.DictReader(io.StringIO(blocks[1])))
    stats = bag_stats(str(tmp_path / 'out'))
    assert int(cams[0]['frames']) == 3 == stats.cameras[0].frames
    assert float(cams[0]['person_fraction']) == round(stats.cameras[0].person_fraction, 3)
    scores = list(csv.DictReader(io.StringIO(blocks[3])))
    assert len(scores) == 308 and scores[0]['keypoint'] == 'nose'


def test_exit_status_names_failed_frames(tmp_path, model_dir, astronaut, capsys):
    """A frame that became an error record is not a success: exit status 3, documented."""
    ts = typestore('jazzy')
    good = jpeg_msg(ts, frames(astronaut, 1, (96, 128))[0], BASE_NS)
    broken = jpeg_msg(ts, None, BASE_NS + STEP_NS, data=good.data.tobytes()[:100])
    topic, kind = '/c/image/compressed', 'sensor_msgs/msg/CompressedImage'
    src = write_bag(tmp_path / 'in', [(topic, kind, good, BASE_NS),
                                      (topic, kind, broken, BASE_NS + STEP_NS)])
    assert main(cli_args(src, tmp_path / 'out', model_dir)) == 3
    assert 'failed 1' in capsys.readouterr().out


def test_cli_bad_input_is_a_clear_error(tmp_path, model_dir, capsys):
    """A missing bag: one error line and exit code 2, no traceback, before loading models."""
    assert main(cli_args(tmp_path / 'missing', tmp_path / 'out', model_dir)) == 2
    err = capsys.readouterr().err
    assert 'does not exist' in err and 'Traceback' not in err
    assert not (tmp_path / 'out').exists()


@pytest.mark.parametrize('stop', [signal.SIGINT, signal.SIGTERM])
def test_stop_signal_leaves_a_valid_bag_and_resume_finishes(tmp_path, model_dir, astronaut, stop):
    """SIGINT/SIGTERM a real replay; its bag reads back; --resume completes it, no duplicate."""
    count = 24
    src = camera_bag(tmp_path / 'in', frames(astronaut, count, (128, 128)), 'mcap', 'jazzy')
    out = tmp_path / 'out'
    args = [a for a in cli_args(src, out, model_dir) if a != '--no-progress']
    env = dict(os.environ, PYTHONPATH=f'{ROOT}{os.pathsep}{os.environ.get("PYTHONPATH", "")}')
    proc = subprocess.Popen([sys.executable, '-m', 'sapiens_ros.cli', *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1)
    deadline = time.monotonic() + 120
    lines = []
    for line in proc.stderr:  # the plain progress line: "replay: N/24 frames, ..."
        lines.append(line)
        if line.startswith('replay: ') and not line.startswith('replay: 0/'):
            break
        assert time.monotonic() < deadline, ''.join(lines)
    proc.send_signal(stop)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, ''.join(lines) + stderr
    assert 'interrupted' in stderr and 'Traceback' not in stderr
    partial = read_mcap(out)  # independent reader: a closed, indexed mcap
    done = [t for t, _, _ in partial['/sapiens/pose/keypoints']]
    assert 0 < len(done) < count
    with InputBag(out) as bag:
        assert {c.topic for c in bag.connections} >= {'/sapiens/pose/keypoints',
                                                      '/sapiens/errors'}
    assert main(cli_args(src, out, model_dir, '--resume', '--batch', '4')) == 0
    final = read_mcap(out)
    want = [BASE_NS + i * STEP_NS for i in range(count)]
    for topic in ('/sapiens/pose/keypoints', '/sapiens/seg/labels', '/sapiens/pose/markers'):
        assert sorted(t for t, _, _ in final[topic]) == want
    assert [m[1] for m in final['/sapiens/pose/keypoints'][:len(done)]] == \
        [m[1] for m in partial['/sapiens/pose/keypoints']]
