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

"""The ``sapiens-ros infer`` command on the bundled photo with tiny saved checkpoints."""

import json

import cv2
import numpy as np

from sapiens_ros.cli import main
from sapiens_ros.core.media.outputs import OUTPUT_FILES, read_ply
from sapiens_ros.core.media.sample_image import sample_image_path


def test_infer_writes_every_output(model_dir, tmp_path, capsys):
    out = tmp_path / 'out'
    rc = main(['infer', '--model-dir', str(model_dir), '--input-size', '192x256',
               '--tasks', 'pose,seg,normal,pointmap', '--out', str(out)])
    assert rc == 0
    stem = 'astronaut'
    written = {p.name[len(stem) + 1:] for p in out.iterdir()}
    assert written == {f for task in ('pose', 'seg', 'normal', 'pointmap')
                       for f in OUTPUT_FILES[task]}
    doc = json.loads((out / f'{stem}.keypoints.json').read_text())
    persons = len(doc['boxes'])
    assert np.array(doc['keypoints']).shape == (persons, 308, 2)
    assert np.array(doc['scores']).shape == (persons, 308)
    labels = cv2.imread(str(out / f'{stem}.seg_labels.png'), cv2.IMREAD_UNCHANGED)
    assert labels.shape == (512, 512) and labels.dtype == np.uint8
    normals = np.load(out / f'{stem}.normal.npy')
    assert normals.shape == (512, 512, 3) and normals.dtype == np.float32
    cloud = read_ply(out / f'{stem}.pointmap.ply')
    assert set(cloud.dtype.names) >= {'x', 'y', 'z', 'red', 'green', 'blue', 'label'}
    assert (cloud['label'] != 0).all()
    assert 'astronaut.png: 512x512, ' in capsys.readouterr().out
    # Every <stem>.<task>.png is an overlay: the photo shows through it.
    photo = cv2.imread(str(sample_image_path())).astype(np.float32)
    for task in ('pose', 'seg', 'normal', 'pointmap'):
        overlay = cv2.imread(str(out / f'{stem}.{task}.png')).astype(np.float32)
        assert overlay.shape == photo.shape
        assert np.corrcoef(overlay.ravel(), photo.ravel())[0, 1] > 0.5, task


def test_infer_given_boxes_and_random_weights(tmp_path, capsys):
    out = tmp_path / 'out'
    rc = main(['infer', '--random-weights', '--tasks', 'pose', '--input-size', '192x256',
               '--boxes', '10,20,200,300;250,40,500,500', '--flip', '--out', str(out)])
    assert rc == 0
    assert 'NOISE' in capsys.readouterr().out
    doc = json.loads((out / 'astronaut.keypoints.json').read_text())
    assert np.allclose(doc['boxes'], [[10, 20, 200, 300], [250, 40, 500, 500]])


def test_infer_errors_are_clear(tmp_path, capsys):
    assert main(['infer', '--model-dir', str(tmp_path), '--tasks', 'seg', '--out',
                 str(tmp_path / 'o')]) == 2
    assert 'does not exist' in capsys.readouterr().err
    assert main(['infer', '--random-weights', '--tasks', 'depth', '--out', str(tmp_path)]) == 2
    assert 'unknown task' in capsys.readouterr().err
    assert main(['infer', '--random-weights', '--input-size', '192x250', '--tasks', 'normal',
                 '--out', str(tmp_path)]) == 2
    assert 'multiple of the patch size' in capsys.readouterr().err
    assert main(['infer', str(tmp_path / 'missing.png'), '--random-weights', '--tasks', 'normal',
                 '--input-size', '192x256', '--out', str(tmp_path)]) == 2
    assert 'missing.png' in capsys.readouterr().out


def test_infer_first_hour_mistakes(tmp_path, capfd):
    """What a new user gets wrong: each is one clear line, never a traceback."""
    base = ['infer', '--random-weights', '--tasks', 'pose', '--input-size', '192x256',
            '--out', str(tmp_path / 'out')]
    for boxes, why in [('1,2,3', 'has 3 numbers, not 4'),
                       ('1,2,3,4,5,6,7,8', 'has 8 numbers, not 4'),
                       ('a,b,c,d', 'cannot parse box'), ('600,600,700,700', 'outside the')]:
        assert main(base + ['--boxes', boxes]) in (1, 2), boxes
        out = capfd.readouterr()
        assert why in out.out + out.err and 'Traceback' not in out.err, boxes
    assert main(base + ['--boxes=-10,20,200,900']) == 0
    assert 'clipped to [[-0.5, 20.0, 200.0, 511.5]]' in capfd.readouterr().out
    # A missing file and a directory among good images: the rest are processed, then rc 1.
    good = str(sample_image_path())
    (tmp_path / 'folder').mkdir()
    capfd.readouterr()
    rc = main(['infer', good, str(tmp_path / 'missing.png'), str(tmp_path / 'folder'),
               '--random-weights', '--tasks', 'seg', '--input-size', '192x256',
               '--out', str(tmp_path / 'out2')])
    out = capfd.readouterr()
    assert rc == 1
    assert 'does not exist' in out.out and 'is a directory, not an image file' in out.out
    assert '2 of 3 image(s) failed' in out.out and 'person(s)' not in out.out
    assert 'WARN' not in out.out + out.err  # no OpenCV warning leaks out
    assert (tmp_path / 'out2' / 'astronaut.seg.png').is_file()


def test_offline_without_cache_fails_at_once(tmp_path, capsys, monkeypatch):
    """No cached weights and HF_HUB_OFFLINE: one clear line, no retries (was ~30 s)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, 'HF_HUB_OFFLINE', True)
    monkeypatch.setenv('HF_HUB_CACHE', str(tmp_path / 'hub'))
    monkeypatch.setattr(constants, 'HF_HUB_CACHE', str(tmp_path / 'hub'))
    assert main(['infer', '--tasks', 'seg', '--out', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err
    assert 'HF_HUB_OFFLINE is set' in err and '--random-weights' in err
    assert err.count('error:') == 1


def test_infer_on_onnxruntime_backend(model_dir, tmp_path, capsys):
    """The same command on ONNX Runtime: exported, cached and run through a real session."""
    out = tmp_path / 'out'
    rc = main(['infer', '--model-dir', str(model_dir), '--input-size', '192x256', '--tasks',
               'normal', '--backend', 'ort', '--cache-dir', str(tmp_path / 'cache'),
               '--out', str(out)])
    assert rc == 0
    normals = np.load(out / 'astronaut.normal.npy')
    assert np.allclose(np.linalg.norm(normals, axis=-1), 1.0, atol=1e-4)
    assert list((tmp_path / 'cache').rglob('*.onnx'))
    assert main(['infer', '--random-weights', '--tasks', 'normal', '--backend', 'tflite',
                 '--out', str(out)]) == 2
    assert 'unknown backend' in capsys.readouterr().err


def test_infer_video_tracks_people_into_an_mp4(tmp_path, capsys):
    """``infer --video``: a real clip in, an mp4 with drawn ids and per-frame ids out."""
    photo = cv2.resize(cv2.imread(str(sample_image_path())), (256, 192))
    clip = tmp_path / 'walk.avi'
    writer = cv2.VideoWriter(str(clip), cv2.VideoWriter_fourcc(*'MJPG'), 10, (256, 192))
    for i in range(6):  # the scene pans 2 px a frame
        writer.write(np.roll(photo, 2 * i, axis=1))
    writer.release()
    out = tmp_path / 'out'
    rc = main(['infer', '--video', str(clip), '--random-weights', '--tasks', 'pose',
               '--input-size', '192x256', '--boxes', '10,20,120,180;130,20,250,180',
               '--out', str(out)])
    assert rc == 0, capsys.readouterr().out
    assert 'walk.avi: 6 frames at 10 fps, 2 people (ids [1, 2])' in capsys.readouterr().out
    lines = [json.loads(t) for t in (out / 'walk.people.jsonl').read_text().splitlines()]
    assert [r['frame'] for r in lines] == list(range(6))
    assert all(r['ids'] == [1, 2] for r in lines)  # stable across frames
    assert lines[1]['stamp'] == 0.1
    video = cv2.VideoCapture(str(out / 'walk.people.mp4'))
    frames = []
    while True:
        ok, frame = video.read()
        if not ok:
            break
        frames.append(frame)
    assert len(frames) == 6 and frames[0].shape == (192, 256, 3)
    assert np.abs(frames[0].astype(int) - photo).mean() > 1  # skeletons and ids drawn


def test_infer_video_errors(tmp_path, capsys):
    assert main(['infer', '--video', str(tmp_path / 'none.mp4'), '--random-weights',
                 '--out', str(tmp_path)]) == 2
    assert 'is not a file' in capsys.readouterr().out
    bad = tmp_path / 'bad.mp4'
    bad.write_bytes(b'not a video')
    assert main(['infer', '--video', str(bad), '--random-weights', '--tasks', 'pose',
                 '--input-size', '192x256', '--boxes', 'full', '--out', str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert 'cannot open video' in out and 'NOISE' not in out  # before any model loads
