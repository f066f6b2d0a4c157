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
Bytes rewritten in place with size and mtime kept (a ``cp -p``, a restore, a bit flip), a
read-only cache directory (a real read-only bind mount in a mount namespace) and a symlink
planted at the lock path.
"""

import hashlib
import json
import logging
import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

pytest.importorskip('onnxruntime')

from sapiens_ros.backends import artifacts  # noqa: E402
from sapiens_ros.backends import export as export_mod  # noqa: E402
from sapiens_ros.backends.artifacts import CacheDirError, sidecar_of  # noqa: E402
from sapiens_ros.backends.errors import ParityError  # noqa: E402
from sapiens_ros.backends.factory import make_runner  # noqa: E402
from sapiens_ros.backends.fingerprint import checkpoint_fingerprint, FILE_HASHES  # noqa: E402
from sapiens_ros.cli import main  # noqa: E402
from sapiens_ros.core.models.configs import random_model  # noqa: E402
import torch  # noqa: E402

SIZE = (256, 192)


@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / 'seg'
    random_model('seg', input_size=SIZE, seed=3).save_pretrained(path)
    return path


def _runner_logged(checkpoint, cache):
    """Build the runner; return it and the backends' log lines meanwhile."""
    lines = _LogLines()
    logging.getLogger('sapiens_ros.backends').addHandler(lines)
    try:
        return _runner(checkpoint, cache), lines
    finally:
        logging.getLogger('sapiens_ros.backends').removeHandler(lines)


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
        sidecar['key']['input_size'] = '384x512'
        sidecar_of(graph).write_text(json.dumps(sidecar))
    else:
        sidecar_of(graph).unlink()
    damaged = graph.stat().st_ino
    runner, lines = _runner_logged(checkpoint, cache)
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


def _overwrite_keeping_mtime(path: Path, offset: int, length: int) -> None:
    """Flip bytes in place and put the mtime back: size and mtime say nothing changed."""
    stat = path.stat()
    with open(path, 'r+b') as f:
        f.seek(offset)
        data = f.read(length)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)


@pytest.mark.parametrize('hashes', ['fastest', 'sha256 only'])
@pytest.mark.parametrize('where', ['weights', 'graph header'])
def test_bytes_changed_with_size_and_mtime_kept_are_rebuilt(checkpoint, tmp_path, monkeypatch,
                                                            where, hashes):
    """
    Bit rot under a kept mtime: weights (a valid graph, wrong answers) or the header (DecodeError).

    Both were loaded as they were on e159fec: silently wrong labels, or a traceback on every start.
    """
    if hashes == 'sha256 only':  # a machine without xxhash verifies with hashlib
        monkeypatch.setattr(artifacts, 'FILE_HASHES', {'sha256': hashlib.sha256})
    cache = tmp_path / 'cache'
    reference = _run(_runner(checkpoint, cache))
    graph = _graph(cache)
    size = graph.stat().st_size
    _overwrite_keeping_mtime(graph, size // 2 if where == 'weights' else 8, 256)
    damaged = graph.stat().st_ino
    runner, lines = _runner_logged(checkpoint, cache)
    assert graph.stat().st_ino != damaged, lines.lines  # exported again, never loaded
    assert torch.equal(_run(runner), reference)
    assert any('cached ONNX graph unusable' in line and 'bytes changed' in line
               for line in lines.lines), lines.lines


def test_sidecar_records_every_hash_and_old_sha256_sidecars_still_verify(checkpoint, tmp_path):
    """New sidecars carry SHA-256 (any machine can check it) and XXH3-128 when xxhash is here."""
    cache = tmp_path / 'cache'
    _runner(checkpoint, cache)
    graph = _graph(cache)
    sidecar = json.loads(sidecar_of(graph).read_text())
    record = sidecar['files'][0]
    assert set(FILE_HASHES) <= set(record) and 'sha256' in record
    for name in list(FILE_HASHES):  # a sidecar written before XXH3 (SHA-256 only) still hits
        if name != 'sha256':
            del record[name]
    sidecar_of(graph).write_text(json.dumps(sidecar))
    inode = graph.stat().st_ino
    _runner(checkpoint, cache)
    assert graph.stat().st_ino == inode


def _read_only_command(folder: Path, argv: list[str]) -> list[str]:
    """Run ``argv`` with ``folder`` bind-mounted read-only (a container image, a ro mount)."""
    script = f'mount --bind -o ro {folder} {folder} && exec "$@"'
    return ['unshare', '--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh', *argv]


def _can_mount_read_only(tmp_path) -> bool:
    if not shutil.which('unshare'):
        return False
    probe = tmp_path / 'probe'
    probe.mkdir()
    done = subprocess.run(_read_only_command(probe, ['sh', '-c', f'! touch {probe}/x']),
                          capture_output=True)
    return done.returncode == 0


def _infer_argv(checkpoint: Path, cache: Path, out: Path) -> list[str]:
    return [sys.executable, '-m', 'sapiens_ros.cli', 'infer', '--tasks', 'seg', '--model',
            f'seg={checkpoint}', '--backend', 'onnxruntime', '--input-size', '192x256',
            '--cache-dir', str(cache), '--out', str(out)]


def test_read_only_cache_dir_serves_its_valid_entry_and_names_the_fix_when_empty(
        checkpoint, tmp_path):
    """A valid entry in a read-only dir is used, verified, with no lock; an empty one is 1 line."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip('no mount namespace (unshare) to make a read-only directory')
    cache = tmp_path / 'cache'
    _runner(checkpoint, cache)
    for lock in (cache / 'onnx').glob('*.lock'):
        lock.unlink()  # a cache baked into an image need not ship its lock files
    env = dict(os.environ, OMP_NUM_THREADS='1')
    done = subprocess.run(_read_only_command(cache, _infer_argv(checkpoint, cache,
                                                                tmp_path / 'out')),
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 'using cached ONNX graph' in done.stderr and 'read-only' in done.stderr, done.stderr
    assert not list((cache / 'onnx').glob('*.lock'))
    empty = tmp_path / 'empty'
    empty.mkdir()
    done = subprocess.run(_read_only_command(empty, _infer_argv(checkpoint, empty,
                                                                tmp_path / 'out2')),
                          capture_output=True, text=True, env=env, timeout=300)
    errors = [line for line in done.stderr.splitlines() if line.startswith('error:')]
    assert done.returncode == 2 and 'Traceback' not in done.stderr, done.stderr
    assert len(errors) == 1 and 'read-only' in errors[0] and 'SAPIENS_ROS_CACHE' in errors[0]


def test_symlink_at_the_lock_path_is_one_line_and_follows_nothing(checkpoint, tmp_path, capsys):
    """A planted lock symlink: one line naming it and the fix; its target is left untouched."""
    cache = tmp_path / 'cache'
    _runner(checkpoint, cache)
    graph = _graph(cache)
    lock = graph.with_name(graph.name + '.lock')
    lock.unlink(missing_ok=True)
    target = tmp_path / 'precious.txt'
    target.write_text('keep me')
    lock.symlink_to(target)
    with pytest.raises(CacheDirError, match='symbolic link'):
        _runner(checkpoint, cache)
    assert main(_infer_argv(checkpoint, cache, tmp_path / 'out')[3:]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith('error:')]
    assert len(errors) == 1 and f'rm {lock}' in errors[0] and 'Traceback' not in err, err
    assert target.read_text() == 'keep me' and lock.is_symlink()
