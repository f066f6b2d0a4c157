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

"""Content hashes that identify a model's weights (cache keys) and verify cached files."""

from __future__ import annotations

from collections.abc import Callable, Iterable
import hashlib
from pathlib import Path

import torch

_CHUNK = 1 << 24


def _xxh3_128() -> Callable | None:
    try:
        import xxhash
    except ImportError:
        return None
    return xxhash.xxh3_128


#: Content hashes a cache sidecar may record, fastest first: xxHash's XXH3-128 (the ``xxhash``
#: package, about 3 GB/s) when installed, SHA-256 (hashlib, about 1 GB/s) always.
FILE_HASHES: dict[str, Callable] = {
    name: make for name, make in (('xxh3_128', _xxh3_128()), ('sha256', hashlib.sha256))
    if make is not None}


def weights_hash(model: torch.nn.Module) -> str:
    """
    SHA-256 (hex, 16 chars) of every parameter and buffer, by name, dtype-independent layout.

    The hash covers names, shapes, dtypes and bytes, so the same checkpoint loaded in another
    dtype hashes differently (an engine built from bf16 weights is not the fp32 one).
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().contiguous().cpu()
        digest.update(f'{name}|{tuple(t.shape)}|{t.dtype}|'.encode())
        if t.numel():
            digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def file_hash(path: str | Path, algorithm: str = 'sha256') -> str:
    """Hash (hex, full) of a file's bytes, read in chunks; ``algorithm`` from FILE_HASHES."""
    return file_hashes(path, (algorithm,))[algorithm]


def file_hashes(path: str | Path, algorithms: Iterable[str]) -> dict[str, str]:
    """Hash (hex, full) a file's bytes with each of ``algorithms`` (FILE_HASHES), in one read."""
    digests = {name: FILE_HASHES[name]() for name in algorithms}
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    with open(path, 'rb') as f:
        while size := f.readinto(buffer):
            for digest in digests.values():
                digest.update(view[:size])
    return {name: digest.hexdigest() for name, digest in digests.items()}


def checkpoint_fingerprint(source: str | None) -> str | None:
    """
    Fingerprint a checkpoint from its files, without loading the weights (None if unknown).

    A hub snapshot is named by its blobs, which the hub names by content hash: those names are
    the fingerprint. A local ``save_pretrained`` directory is fingerprinted by each file's name,
    size, mtime and, for safetensors, header (names, dtypes, shapes, offsets): any rewrite of a
    file changes it. Microseconds instead of loading and hashing gigabytes on every start.
    """
    if not source:
        return None
    folder = _checkpoint_folder(source)
    if folder is None:
        return None
    files = sorted(p for p in folder.iterdir()
                   if p.suffix in ('.safetensors', '.bin', '.json') and p.is_file())
    if not any(p.suffix in ('.safetensors', '.bin') for p in files):
        return None
    digest = hashlib.sha256()
    for path in files:
        real = path.resolve()
        stat = real.stat()
        digest.update(f'{path.name}|{real.name}|{stat.st_size}|'.encode())
        if not path.is_symlink():  # a hub blob's name is already its content hash
            digest.update(str(stat.st_mtime_ns).encode())
            if path.suffix == '.safetensors':
                digest.update(_safetensors_header(real))
    return 'f' + digest.hexdigest()[:15]


def _checkpoint_folder(source: str) -> Path | None:
    from ..core.models.loading import is_local_source

    if is_local_source(source):
        folder = Path(source).expanduser()
        return folder if folder.is_dir() else None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    config = try_to_load_from_cache(source, 'config.json')
    return Path(config).parent if isinstance(config, str) else None


def _safetensors_header(path: Path) -> bytes:
    with open(path, 'rb') as f:
        size = int.from_bytes(f.read(8), 'little')
        return f.read(min(size, 100 << 20))
