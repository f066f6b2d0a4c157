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
Trustworthy cache entries for ONNX graphs (and the file checks TensorRT engines share).

An entry is a main file (``x.onnx``), its companions (``x.onnx.data`` external weights) and a
sidecar ``x.json`` holding the full key and, per file, its size, mtime and SHA-256. Files are
written under a temporary name and renamed into place; the sidecar is renamed last, so an entry
without a matching sidecar is never used. An inter-process lock (``filelock``) around
check-and-build makes N processes starting together build once. On load every file is checked:
size always, the SHA-256 whenever the mtime differs from the one recorded (a file written or
copied since), so an untouched multi-GB file is not hashed on every start.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
import shutil
import tempfile
import time

from .fingerprint import file_hash

LOG = logging.getLogger(__name__)

#: Version of the sidecar format; an entry with another version is rebuilt.
SIDECAR_VERSION = 2
#: Version of how artefacts are produced (export options, builder flags, precision rules). Bump
#: it when a change makes older artefacts wrong: every cached graph and engine is then rebuilt.
RECIPE_VERSION = 2
#: How long a process waits for another one building the same entry.
LOCK_TIMEOUT_S = 3600.0


def sidecar_of(main: Path) -> Path:
    """Return the sidecar JSON path of an entry's main file."""
    return main.with_suffix('.json')


def companions(main: Path) -> list[Path]:
    """Return the files of an entry: the main file and, if present, its ``.data`` weights."""
    data = main.with_name(main.name + '.data')
    return [main, data] if data.exists() else [main]


def file_record(path: Path) -> dict:
    """Size, mtime and SHA-256 of one file, as the sidecar stores them."""
    stat = path.stat()
    return {'name': path.name, 'bytes': stat.st_size, 'mtime_ns': stat.st_mtime_ns,
            'sha256': file_hash(path)}


def check_files(folder: Path, records: list[dict]) -> str | None:
    """Say why the recorded files in ``folder`` are not intact, or None."""
    for rec in records:
        path = folder / rec['name']
        if not path.is_file():
            return f'{path.name} is missing'
        stat = path.stat()
        if stat.st_size != rec['bytes']:
            return (f'{path.name} is truncated or corrupt ({stat.st_size} bytes, expected '
                    f'{rec["bytes"]})')
        if stat.st_mtime_ns != rec['mtime_ns'] and file_hash(path) != rec['sha256']:
            return f'{path.name} is corrupt (its SHA-256 differs from the sidecar)'
    return None


def verify(main: Path, key: dict) -> str | None:
    """Say why the cache entry ``main`` cannot be used for ``key``, or None when it can."""
    sidecar = sidecar_of(main)
    if not main.is_file():
        return f'no cached file at {main}'
    if not sidecar.is_file():
        return f'{main.name} has no sidecar {sidecar.name} (an interrupted write?)'
    try:
        data = json.loads(sidecar.read_text())
        version, cached, records = data['sidecar_version'], data['key'], data['files']
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f'sidecar {sidecar.name} is unreadable ({exc})'
    if version != SIDECAR_VERSION:
        return f'sidecar {sidecar.name} has version {version}, not {SIDECAR_VERSION}'
    if cached != key:
        diff = [f'{k}: {cached.get(k)} -> {key.get(k)}' for k in sorted(set(cached) | set(key))
                if cached.get(k) != key.get(k)]
        return f'{main.name} was made for another key ({"; ".join(diff)})'
    return check_files(main.parent, records)


def write_sidecar(main: Path, key: dict, extra: dict | None = None) -> None:
    """Record ``key`` and the entry's files, atomically, after the files are in place."""
    data = {'sidecar_version': SIDECAR_VERSION, 'key': key,
            'files': [file_record(p) for p in companions(main)],
            'created': time.strftime('%Y-%m-%dT%H:%M:%S%z'), **(extra or {})}
    atomic_write(sidecar_of(main), (json.dumps(data, indent=2) + '\n').encode())


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file in the same dir, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def invalidate(main: Path) -> None:
    """Remove an entry: its sidecar first (so it is invalid at once), then its files."""
    sidecar_of(main).unlink(missing_ok=True)
    for path in (main, main.with_name(main.name + '.data')):
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def entry_lock(main: Path) -> Iterator[None]:
    """Hold the inter-process lock of one cache entry (waits while another process builds)."""
    from filelock import FileLock, Timeout

    main.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(main.with_name(main.name + '.lock')))
    try:
        lock.acquire(timeout=1.0)
    except Timeout:
        LOG.info('waiting for another process building %s', main.name)
        lock.acquire(timeout=LOCK_TIMEOUT_S)
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def staging(main: Path) -> Iterator[Path]:
    """
    Give a temporary ``main`` path to write an entry to; publish it only if the block succeeds.

    The files are renamed into place companions first, main file last (external data keeps its
    name, so the graph's reference to it stays valid); a failure (e.g. a parity check) leaves
    the cache as it was, minus the old entry.
    """
    main.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(dir=main.parent, prefix=f'.{main.name}.'))
    try:
        staged = tmp_dir / main.name
        yield staged
        invalidate(main)
        for path in reversed(companions(staged)):
            os.replace(path, main.parent / path.name)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)


def key_hash(key: dict) -> str:
    """Short stable hash of a key (for file names)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
