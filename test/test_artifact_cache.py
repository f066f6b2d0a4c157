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
The ONNX graph cache under damage: truncated, flipped weight bytes, edited sidecar, failed parity.

Real exports of a tiny saved checkpoint through the real factory path (fingerprint, lock, staging,
parity, sidecar), run by real ONNX Runtime sessions; four real processes race for one entry.
"""

import json
import logging
import os
from pathlib import Path
import subprocess
import sys

import pytest

pytest.importorskip('onnxruntime')

from sapiens_ros.backends import export as export_mod  # noqa: E402
from sapiens_ros.backends.artifacts import sidecar_of  # noqa: E402
from sapiens_ros.backends.errors import ParityError  # noqa: E402
from sapiens_ros.backends.factory import make_runner  # noqa: E402
from sapiens_ros.backends.fingerprint import checkpoint_fingerprint  # noqa: E402
from sapiens_ros.core.configs import random_model  # noqa: E402
import torch  # noqa: E402

SIZE = (256, 192)


@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / 'seg'
    random_model('seg', input_size=SIZE, seed=3).save_pretrained(path)
    return path


def _runner(checkpoint, cache):
    return make_runner('seg', 'onnxruntime', str(checkpoint), input_size=SIZE, batch=(1, 1, 2),
                       cache_dir=cache)


def _graph(cache) -> Path:
    graphs = list((Path(cache) / 'onnx').glob('*.onnx'))
    assert len(graphs) == 1, graphs
    return graphs[0]


def _run(runner):
    x = torch.randn(1, 3, *SIZE, generator=torch.Generator().manual_seed(0))
    return runner(x)['logits']


@pytest.mark.parametrize('damage', ['truncate', 'flip_weights', 'edit_sidecar', 'no_sidecar'])
def test_damaged_graph_is_rebuilt_never_loaded(checkpoint, tmp_path, damage):
    cache = tmp_path / 'cache'
    reference = _run(_runner(checkpoint, cache))
    graph = _graph(cache)
    data = bytearray(graph.read_bytes())
    if damage == 'truncate':
        graph.write_bytes(data[:len(data) // 2])
    elif damage == 'flip_weights':  # 256 bytes inside the weights: still a valid protobuf
        middle = len(data) // 2
        data[middle:middle + 256] = bytes(b ^ 0xFF for b in data[middle:middle + 256])
        graph.write_bytes(bytes(data))
    elif damage == 'edit_sidecar':
        sidecar = json.loads(sidecar_of(graph).read_text())
        sidecar['key']['input_size'] = [512, 384]
        sidecar_of(graph).write_text(json.dumps(sidecar))
    else:
        sidecar_of(graph).unlink()
    damaged = graph.stat().st_ino
    lines = _LogLines()
    logging.getLogger('sapiens_ros.backends').addHandler(lines)
    try:
        runner = _runner(checkpoint, cache)
    finally:
        logging.getLogger('sapiens_ros.backends').removeHandler(lines)
    assert graph.stat().st_ino != damaged  # a new file was exported and renamed into place
    assert torch.equal(_run(runner), reference)  # the rebuilt graph, not the damaged one
    assert _graph(cache) == graph and sidecar_of(graph).is_file()
    assert any('cached ONNX graph unusable' in line for line in lines.lines), lines.lines


class _LogLines(logging.Handler):
    """Collect the messages of one logger's tree (independent of caplog and propagation)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_cache_hit_loads_no_weights(checkpoint, tmp_path, monkeypatch, caplog):
    cache = tmp_path / 'cache'
    _runner(checkpoint, cache)
    import sapiens_ros.backends.factory as factory

    def no_load(*args, **kwargs):
        raise AssertionError('a cache hit must not load the checkpoint')

    monkeypatch.setattr(factory, 'load_model', no_load)
    with caplog.at_level(logging.INFO, logger='sapiens_ros.backends'):
        _runner(checkpoint, cache)
    assert 'using cached ONNX graph' in caplog.text
    # Rewriting the checkpoint (new weights, same shapes) changes its fingerprint: no stale hit.
    before = checkpoint_fingerprint(str(checkpoint))
    random_model('seg', input_size=SIZE, seed=4).save_pretrained(checkpoint)
    assert checkpoint_fingerprint(str(checkpoint)) != before


def test_failed_parity_never_enters_the_cache(checkpoint, tmp_path, monkeypatch):
    cache = tmp_path / 'cache'

    def bad_parity(*args, **kwargs):
        raise ParityError('injected: ONNX Runtime differs from torch')

    monkeypatch.setattr(export_mod, 'check_parity', bad_parity)
    with pytest.raises(ParityError, match='injected'):
        _runner(checkpoint, cache)
    assert not list((cache / 'onnx').glob('*.onnx')) and not list((cache / 'onnx').glob('*.json'))
    assert not [p for p in (cache / 'onnx').iterdir() if p.is_dir()]  # no staging left
    monkeypatch.undo()
    _run(_runner(checkpoint, cache))  # the next start exports and checks it again
    assert sidecar_of(_graph(cache)).is_file()


def test_concurrent_starts_export_once(checkpoint, tmp_path):
    cache = tmp_path / 'cache'
    script = (
        'import logging, sys\n'
        'logging.basicConfig(level=logging.INFO, stream=sys.stdout)\n'
        'from sapiens_ros.backends.factory import make_runner\n'
        f'make_runner("seg", "onnxruntime", {str(checkpoint)!r}, input_size={SIZE}, '
        f'batch=(1, 1, 2), cache_dir={str(cache)!r})\n')
    env = dict(os.environ, OMP_NUM_THREADS='1')
    procs = [subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for _ in range(4)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    text = '\n'.join(outputs)
    assert text.count('exported seg') == 1, text
    assert text.count('using cached ONNX graph') == 3, text
