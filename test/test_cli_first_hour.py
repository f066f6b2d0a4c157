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
A new user's first hour with the CLI: each mistake is one line, before any model loads.

Real commands (in process, or as subprocesses where imports or the terminal matter), real bags,
real checkpoints; the only stand-in is the machine itself: it has no CUDA.
"""

import os
from pathlib import Path
import pty
import subprocess
import sys

import cv2
import numpy as np
import pytest
from replay_bags import BASE_NS, camera_bag, cli_env, frames, image_msg, STEP_NS, typestore
from sapiens_ros.cli import main
from sapiens_ros.core.media.sample_image import sample_image_path

TINY = ['--random-weights', '--tasks', 'pose', '--input-size', '192x256']


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / 'results.txt'
    path.write_text('an existing file')
    return path


def _clip(path: Path) -> Path:
    photo = cv2.resize(cv2.imread(str(sample_image_path())), (128, 96))
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*'MJPG'), 10, (128, 96))
    for _ in range(3):
        writer.write(photo)
    writer.release()
    return path


@pytest.mark.parametrize('source', ['image', 'video'])
def test_infer_out_an_existing_file_is_refused_before_models_load(tmp_path, a_file, capsys,
                                                                  source):
    """On e159fec: inference ran, then a FileExistsError traceback."""
    extra = ['--video', str(_clip(tmp_path / 'clip.avi'))] if source == 'video' else []
    assert main(['infer', *TINY, *extra, '--out', str(a_file)]) == 2
    captured = capsys.readouterr()
    assert f'--out {a_file} is a file' in captured.err
    assert 'NOISE' not in captured.out  # the banner comes with the models: none loaded
    assert a_file.read_text() == 'an existing file'


def test_providers_that_would_run_on_the_cpu_are_refused(tmp_path, capsys):
    """--providers cuda without a CUDA device (or build): one line, not a silent CPU run."""
    pytest.importorskip('onnxruntime')
    argv = ['infer', *TINY, '--backend', 'onnxruntime', '--out', str(tmp_path / 'out')]
    assert main([*argv, '--providers', 'cuda']) == 2
    err = capsys.readouterr().err
    assert 'would run on the CPU only' in err and '--device cuda' in err
    assert main([*argv, '--providers', 'tensorrt,cuda', '--backend', 'torch']) == 2
    assert 'use it with --backend onnxruntime' in capsys.readouterr().err


def test_device_cuda_without_cuda_fails_before_the_slow_imports(tmp_path):
    """The device is checked before transformers (and the models) are imported."""
    import torch

    if torch.cuda.is_available():
        pytest.skip('this machine has CUDA')
    script = ('import sys\n'
              'from sapiens_ros.cli import main\n'
              f'rc = main(["infer", "--device", "cuda", "--random-weights", "--out", '
              f'{str(tmp_path / "out")!r}])\n'
              'print(rc, "transformers" in sys.modules)\n')
    done = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                          env=cli_env(), timeout=300)
    assert done.stdout.split() == ['2', 'False'], done.stdout + done.stderr
    assert "device 'cuda' requested but CUDA is not available" in done.stderr


def test_replay_out_an_existing_file_names_the_right_fix(tmp_path, astronaut, a_file, capsys):
    """A plain file cannot be resumed: the hint is another --out (on e159fec: --resume)."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 2, (64, 64)))
    for extra in ([], ['--resume']):
        assert main(['replay', str(src), '--out', str(a_file), *TINY, *extra]) == 2
        err = capsys.readouterr().err
        assert f'--out {a_file} is a file, not a bag' in err, err
        assert 'choose another --out or delete the file' in err
    assert a_file.read_text() == 'an existing file'


def test_stats_on_an_input_bag_says_what_it_is(tmp_path, astronaut, capsys):
    """On e159fec: exit 0 and empty camera and keypoint tables."""
    src = camera_bag(tmp_path / 'in', frames(astronaut, 3, (64, 64)), topic='/front/image_raw')
    assert main(['stats', str(src)]) == 2
    captured = capsys.readouterr()
    assert 'it is an input bag with the camera topics /front/image_raw' in captured.err
    assert f'sapiens-ros replay {src}' in captured.err
    assert '/front/image_raw' in captured.out and 'keypoint' not in captured.out


def test_demo_says_which_camera_of_a_bag_it_plays(tmp_path):
    """Two cameras in a bag: the demo names the one it plays, the other, and --topic."""
    pytest.importorskip('rclpy')
    from ros_fixtures import session_domain_id

    session_domain_id()
    ts = typestore('jazzy')
    photo = np.zeros((48, 64, 3), np.uint8)
    extra = [('/rear/image_raw', 'sensor_msgs/msg/Image',
              image_msg(ts, photo, BASE_NS + i * STEP_NS + 1), BASE_NS + i * STEP_NS + 1)
             for i in range(3)]
    bag = camera_bag(tmp_path / 'bag', [photo] * 3, topic='/front/image_raw', extra=extra)
    argv = [sys.executable, '-m', 'sapiens_ros.cli', 'demo', '--source', str(bag),
            '--random-weights', '--tasks', 'seg', '--duration', '1',
            '--output-dir', str(tmp_path / 'out')]
    for topic, other in [('', '/rear/image_raw'), ('/rear/image_raw', '/front/image_raw')]:
        done = subprocess.run(argv + (['--topic', topic] if topic else []), capture_output=True,
                              text=True, env=cli_env(), timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        playing = topic or '/front/image_raw'
        assert f'demo: playing {playing} from {bag} (2 camera topics; the others: {other}; ' \
               f'choose with --topic)' in done.stdout, done.stdout


_LOAD = ('import sys\n'
         'from sapiens_ros.core.models.loading import load_model\n'
         'load_model("seg", sys.argv[1])\n')


def test_no_progress_bars_without_a_person_at_a_terminal(model_dir):
    """Weight loading draws no bar into a pipe, nor into launch's pseudo-terminal."""
    checkpoint = str(model_dir / 'seg')
    env = dict(cli_env(), HF_HUB_DISABLE_PROGRESS_BARS='0')
    piped = subprocess.run([sys.executable, '-c', _LOAD, checkpoint], capture_output=True,
                           text=True, env=env, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert 'Loading weights' not in piped.stderr and '\r' not in piped.stderr, piped.stderr
    # ros2 launch's emulate_tty: a pseudo-terminal, and the node's argv holds --ros-args.
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, '-c', _LOAD, checkpoint, '--ros-args'],
                            stdout=follower, stderr=follower, env=env)
    os.close(follower)
    seen = b''
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=300) == 0, seen
    os.close(leader)
    assert b'Loading weights' not in seen and b'\r' not in seen.replace(b'\r\n', b''), seen
