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
sidecar ``x.json`` holding the full key and, per file, its size and content hashes (SHA-256,
and XXH3-128 when ``xxhash`` is installed). Files are written under a temporary name and renamed
into place; the sidecar is renamed last, so an entry without a matching sidecar is never used.
An inter-process lock (``filelock``) around check-and-build makes N processes starting together
build once. On load every file's bytes are hashed (the fastest recorded hash this machine has):
a copy with ``-p``, a restore or a flipped bit keeps size and mtime, so neither proves content.
A read-only cache directory (a container image, a read-only mount) serves its valid entries,
verified, without a lock; what cannot be locked or written is one :class:`CacheDirError` line
naming the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import errno
import hashlib
import json
import logging
import os
from pathlib import Path
import shutil
import tempfile
import time

from .fingerprint import file_hash, FILE_HASHES, file_hashes
from ..core.errors import SapiensError

LOG = logging.getLogger(__name__)

#: Version of the sidecar format; an entry with another version is rebuilt.
SIDECAR_VERSION = 2
#: Version of how artefacts are produced (export options, builder flags, precision rules). Bump
#: it when a change makes older artefacts wrong: every cached graph and engine is then rebuilt.
#: 3: sizes in file names, sidecars and ONNX metadata are WIDTHxHEIGHT (they were HEIGHTxWIDTH).
RECIPE_VERSION = 3
#: How long a process waits for another one building the same entry.
LOCK_TIMEOUT_S = 3600.0
#: errnos of a directory this process may read but not write.
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
#: Names of the content hashes in messages.
_HASH_NAMES = {'sha256': 'SHA-256', 'xxh3_128': 'XXH3-128'}
#: The fix named by every cache directory error.
_FIX = ('point --cache-dir (node: cache_dir) or SAPIENS_ROS_CACHE at a writable directory, or '
        'make this one writable')


def default_cache_dir() -> Path:
    """Return ``$SAPIENS_ROS_CACHE``, else ``$XDG_CACHE_HOME/sapiens_ros`` (~/.cache)."""
    env = os.environ.get('SAPIENS_ROS_CACHE')
    if env:
        return Path(env).expanduser()
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join('~', '.cache')
    return Path(base).expanduser() / 'sapiens_ros'


class CacheDirError(SapiensError, OSError):
    """The cache directory cannot be locked or written; the message names the fix."""


def sidecar_of(main: Path) -> Path:
    """Return the sidecar JSON path of an entry's main file."""
    return main.with_suffix('.json')


def companions(main: Path) -> list[Path]:
    """Return the files of an entry: the main file and, if present, its ``.data`` weights."""
    data = main.with_name(main.name + '.data')
    return [main, data] if data.exists() else [main]


def file_record(path: Path) -> dict:
    """Size and every available content hash of one file, as the sidecar stores them."""
    return {'name': path.name, 'bytes': path.stat().st_size, **file_hashes(path, FILE_HASHES)}


def check_files(folder: Path, records: list[dict]) -> str | None:
    """Say why the recorded files in ``folder`` are not intact (bytes hashed), or None."""
    for rec in records:
        path = folder / rec['name']
        if not path.is_file():
            return f'{path.name} is missing'
        size = path.stat().st_size
        if size != rec['bytes']:
            return f'{path.name} is truncated or corrupt ({size} bytes, expected {rec["bytes"]})'
        algorithm = next((name for name in FILE_HASHES if name in rec), None)
        if algorithm is None:
            return f'the sidecar records no hash of {path.name} this machine can compute'
        if file_hash(path, algorithm) != rec[algorithm]:
            return (f'{path.name} is corrupt: its bytes changed since it was written (its '
                    f'{_HASH_NAMES.get(algorithm, algorithm)} differs from the sidecar; size '
                    f'and mtime prove nothing)')
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
    with _writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn "this directory cannot be written" into one :class:`CacheDirError` line."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _READ_ONLY or isinstance(exc, SapiensError):
            raise
        raise CacheDirError(f'cannot write {path.name} into the cache dir {path.parent} '
                            f'({exc.strerror}): {_FIX}') from None


def invalidate(main: Path) -> None:
    """Remove an entry: its sidecar first (so it is invalid at once), then its files."""
    sidecar_of(main).unlink(missing_ok=True)
    for path in (main, main.with_name(main.name + '.data')):
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def entry_lock(main: Path) -> Iterator[None]:
    """
    Hold the inter-process lock of one cache entry (waits while another process builds).

    In a read-only cache directory nothing can be built, so there is nothing to wait for: an
    existing entry is used without a lock (the caller verifies it), a missing one is a
    :class:`CacheDirError`.
    """
    lock = _acquire(main)
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def _acquire(main: Path):
    """Return the held lock of ``main``'s entry, or None in a read-only dir holding the entry."""
    from filelock import FileLock, Timeout

    path = main.with_name(main.name + '.lock')
    if path.is_symlink():
        raise _symlink_error(path)
    try:
        main.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(path))
        try:
            lock.acquire(timeout=1.0)
        except Timeout:
            LOG.info('waiting for another process building %s', main.name)
            lock.acquire(timeout=LOCK_TIMEOUT_S)
    except Timeout:
        raise CacheDirError(f'another process has held {path} for {LOCK_TIMEOUT_S:.0f} s '
                            f'building {main.name} (a lock dies with its process): let it '
                            f'finish or stop it, then start again') from None
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise _symlink_error(path) from None
        if exc.errno not in _READ_ONLY:
            raise CacheDirError(f'cannot lock {path} ({exc.strerror or exc}): {_FIX}') from None
        if not main.is_file():
            raise CacheDirError(f'the cache dir {main.parent} is read-only ({exc.strerror}) '
                                f'and holds no {main.name} to use: {_FIX}') from None
        LOG.info('cache dir %s is read-only (%s): using %s verified, without a lock',
                 main.parent, exc.strerror, main.name)
        return None
    return lock


def _symlink_error(path: Path) -> CacheDirError:
    try:
        target = f' (to {os.readlink(path)})'
    except OSError:
        target = ''
    return CacheDirError(
        f'the lock file {path} is a symbolic link{target}; sapiens_ros never creates one, and '
        f'following it could overwrite the file it points to. Remove it (rm {path}) and check '
        f'who else can write to {path.parent}')


@contextlib.contextmanager
def staging(main: Path) -> Iterator[Path]:
    """
    Give a temporary ``main`` path to write an entry to; publish it only if the block succeeds.

    The files are renamed into place companions first, main file last (external data keeps its
    name, so the graph's reference to it stays valid); a failure (e.g. a parity check) leaves
    the cache as it was, minus the old entry.
    """
    with _writing(main):
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
