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

"""The ``sapiens-ros export`` subcommand (wired by the lead's cli.py; tested standalone here)."""

import argparse
import json

import onnxruntime as ort
import pytest
from sapiens_ros import cli_export
from sapiens_ros.backends.errors import BackendUnavailableError
from sapiens_ros.core.models.configs import random_model


def parse(argv):
    parser = argparse.ArgumentParser()
    cli_export.add_parser(parser.add_subparsers(dest='command', required=True))
    return parser.parse_args(argv)


def test_export_tiny_pose(tmp_path, capsys):
    args = parse(['export', '--task', 'pose', '--random-weights',  # tiny, as everywhere
                  '--input-size', '192x256', '--batch', '1:1:2', '--dtype', 'fp32',
                  '--out', str(tmp_path)])
    assert args.layout == 'tiny'
    assert args.run(args) == 0
    onnx = tmp_path / 'pose-192x256-fp32.onnx'
    report = json.loads(onnx.with_suffix('.json').read_text())
    assert report['exported_dtype'] == 'fp32' and report['requested_dtype'] == 'fp32'
    assert report['parity']['max_rel']['heatmaps'] < 1e-3
    session = ort.InferenceSession(str(onnx), providers=['CPUExecutionProvider'])
    assert [o.name for o in session.get_outputs()] == ['heatmaps']
    assert session.get_inputs()[0].shape == ['batch', 3, 256, 192]
    out = capsys.readouterr().out
    assert 'parity vs torch' in out
    assert 'sapiens-ros infer --tasks pose --backend onnxruntime' in out  # a hint that works
    assert report['external_data'] is (onnx.with_name(onnx.name + '.data')).exists()


def test_export_engine_without_tensorrt(tmp_path, monkeypatch):
    """--engine without TensorRT fails at once, naming the install, before any export."""
    import sys

    monkeypatch.setitem(sys.modules, 'tensorrt', None)  # as on this machine: not installed
    random_model('seg', input_size=(256, 192)).save_pretrained(tmp_path / 'seg')
    args = parse(['export', '--task', 'seg', '--model', str(tmp_path / 'seg'), '--input-size',
                  '192x256', '--no-check', '--engine', '--out', str(tmp_path / 'seg.onnx')])
    with pytest.raises(BackendUnavailableError, match='pip install tensorrt'):
        args.run(args)
    assert not (tmp_path / 'seg.onnx').exists()
