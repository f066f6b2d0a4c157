"""The ``sapiens-ros infer`` command on the bundled photo with tiny saved checkpoints."""

import json

import cv2
import numpy as np

from sapiens_ros.cli import main
from sapiens_ros.core.outputs import read_ply


def test_infer_writes_every_output(model_dir, tmp_path, capsys):
    out = tmp_path / 'out'
    rc = main(['infer', '--model-dir', str(model_dir), '--input-size', '256x192',
               '--tasks', 'pose,seg,normal,pointmap', '--out', str(out)])
    assert rc == 0
    stem = 'astronaut'
    for suffix in ('pose.png', 'seg.png', 'normal.png', 'pointmap.png', 'keypoints.json',
                   'labels.png', 'normals.png', 'normals.npy', 'pointmap.ply'):
        assert (out / f'{stem}.{suffix}').is_file(), suffix
    doc = json.loads((out / f'{stem}.keypoints.json').read_text())
    persons = len(doc['boxes'])
    assert np.array(doc['keypoints']).shape == (persons, 308, 2)
    assert np.array(doc['scores']).shape == (persons, 308)
    labels = cv2.imread(str(out / f'{stem}.labels.png'), cv2.IMREAD_UNCHANGED)
    assert labels.shape == (512, 512) and labels.dtype == np.uint8
    normals = np.load(out / f'{stem}.normals.npy')
    assert normals.shape == (512, 512, 3) and normals.dtype == np.float32
    cloud = read_ply(out / f'{stem}.pointmap.ply')
    assert set(cloud.dtype.names) >= {'x', 'y', 'z', 'red', 'green', 'blue', 'label'}
    assert (cloud['label'] != 0).all()
    assert 'astronaut.png: 512x512' in capsys.readouterr().out


def test_infer_given_boxes_and_random_weights(tmp_path, capsys):
    out = tmp_path / 'out'
    rc = main(['infer', '--random-weights', '--tasks', 'pose', '--input-size', '256x192',
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
    assert main(['infer', '--random-weights', '--input-size', '250x192', '--tasks', 'normal',
                 '--out', str(tmp_path)]) == 2
    assert 'multiple of the patch size' in capsys.readouterr().err
    assert main(['infer', str(tmp_path / 'missing.png'), '--random-weights', '--tasks', 'normal',
                 '--input-size', '256x192', '--out', str(tmp_path)]) == 2
    assert 'cannot read image' in capsys.readouterr().err
