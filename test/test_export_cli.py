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
``sapiens-ros export`` on a CPU: the graph asked for, and a "run it with" line that runs.

Real exports of tiny random checkpoints through the real CLI entry point; the printed command is
pasted back into the CLI and run on the bundled sample photo.
"""

import json
import shlex

import onnx
from sapiens_ros.backends.artifacts import sidecar_of
from sapiens_ros.backends.export import graph_input_size, onnx_metadata
from sapiens_ros.cli import main
from sapiens_ros.core.models.input_size import Size


def test_bf16_export_on_cpu_writes_the_bf16_graph(tmp_path, capsys):
    """``--dtype bf16`` on a CPU writes the graph a GPU would (opset 22), only parity skipped."""
    out = tmp_path / 'seg-bf16.onnx'
    assert main(['export', '--task', 'seg', '--random-weights', '--input-size', '192x256',
                 '--batch', '1:1:2', '--dtype', 'bf16', '--out', str(out)]) == 0
    printed = capsys.readouterr().out
    assert '(bf16, opset 22,' in printed
    assert 'note: parity check skipped' in printed
    onnx.checker.check_model(str(out), full_check=True)
    assert onnx_metadata(out)['dtype'] == 'bf16'
    report = json.loads(out.with_suffix('.json').read_text())
    assert (report['exported_dtype'], report['opset']) == ('bf16', 22) and 'parity' not in report


def test_printed_run_line_runs(tmp_path, capsys, monkeypatch):
    """The "run it with" line includes the required --out, and pasted, it runs."""
    monkeypatch.chdir(tmp_path)
    assert main(['export', '--task', 'pose', '--random-weights', '--input-size', '192x256',
                 '--batch', '1:1:2', '--no-check', '--out', str(tmp_path)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith('run it with:')]
    argv = shlex.split(line.split(':', 1)[1])
    assert argv[0] == 'sapiens-ros' and '--out' in argv
    assert main(argv[1:]) == 0
    out = tmp_path / argv[argv.index('--out') + 1]
    assert any(out.iterdir())


def test_a_non_square_size_reads_back_as_the_cli_wrote_it(tmp_path):
    """
    ``--input-size 192x256`` (WIDTHxHEIGHT): every file that names the size says ``192x256``.

    The exported graph's metadata, its report and the graph's input shape (H 256, W 192), then
    the cache entry ``infer`` exports: its file name, its metadata and its sidecar key.
    """
    wxh = '192x256'
    assert main(['export', '--task', 'seg', '--random-weights', '--input-size', wxh,
                 '--batch', '1:1:2', '--no-check', '--out', str(tmp_path)]) == 0
    exported = tmp_path / f'seg-{wxh}-fp32.onnx'
    assert onnx_metadata(exported)['input_size'] == wxh
    assert json.loads(exported.with_suffix('.json').read_text())['input_size'] == wxh
    graph = onnx.load(str(exported), load_external_data=False)
    assert graph_input_size(graph) == Size.parse(wxh) == (256, 192)
    cache = tmp_path / 'cache'
    assert main(['infer', '--tasks', 'seg', '--random-weights', '--backend', 'onnxruntime',
                 '--input-size', wxh, '--cache-dir', str(cache),
                 '--out', str(tmp_path / 'out')]) == 0
    (cached,) = (cache / 'onnx').glob('*.onnx')
    assert cached.name.startswith(f'seg-{wxh}-fp32-')
    assert onnx_metadata(cached)['input_size'] == wxh
    assert json.loads(sidecar_of(cached).read_text())['key']['input_size'] == wxh
