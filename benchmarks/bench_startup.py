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
Start-up cost of a cached ONNX/TensorRT backend: identifying the weights, before and after.

Before, every start loaded the full fp32 checkpoint and SHA-256'd its tensors to find the cache
entry (``load_model`` + ``weights_hash``); now the checkpoint files are fingerprinted without
loading (``checkpoint_fingerprint``) and a cache hit loads nothing. Both are timed side by side
on the same saved checkpoint (random weights in the tiny or a real layout), median of
``--repeats``. The end-to-end row is ``make_runner(..., 'onnxruntime')`` on a cache hit.

Every cache hit also hashes the entry's files (``artifacts.check_files``): ``--verify-gb N``
times that on an N GB file, per content hash this machine has (XXH3-128 with ``xxhash``,
SHA-256 always) against a plain read of the same bytes, from the page cache.

    python benchmarks/bench_startup.py [--layout tiny|0.4b] [--repeats 5] [--verify-gb 2]
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
import statistics
import tempfile
import time

from sapiens_ros.backends.factory import make_runner
from sapiens_ros.backends.fingerprint import (checkpoint_fingerprint, file_hash, FILE_HASHES,
                                              weights_hash)
from sapiens_ros.core.models.configs import random_model
from sapiens_ros.core.models.loading import load_model


def median_ms(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` in ms."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def read_all(path: Path) -> None:
    """Read a file in the chunks file_hash uses, hashing nothing (the I/O floor)."""
    buffer = bytearray(1 << 24)
    with open(path, 'rb') as f:
        while f.readinto(buffer):
            pass


def verify_table(folder: Path, gigabytes: float, repeats: int) -> None:
    """Print the cost of hashing a ``gigabytes`` GB cached file on load, per hash."""
    path = folder / 'entry.bin'
    with open(path, 'wb') as f:
        for _ in range(int(gigabytes * 1e9) // (1 << 24)):
            f.write(os.urandom(1 << 24))
    size = path.stat().st_size / 1e9
    read_all(path)  # into the page cache: a repeat start
    print(f'\n| verify on load, {size:.2f} GB file | seconds | GB/s |')
    print('|---|---|---|')
    for name, fn in [('read only', lambda: read_all(path))] + [
            (algo, lambda a=algo: file_hash(path, a)) for algo in FILE_HASHES]:
        seconds = median_ms(fn, repeats) / 1e3
        print(f'| {name} | {seconds:.2f} | {size / seconds:.2f} |')
    path.unlink()


def main() -> None:
    """Print a markdown table of the weights identification cost, before and after."""
    p = argparse.ArgumentParser(description=__doc__.strip().split('\n')[0])
    p.add_argument('--layout', default='tiny', help="'tiny' or a real size (0.4b)")
    p.add_argument('--task', default='seg')
    p.add_argument('--repeats', type=int, default=5)
    p.add_argument('--verify-gb', type=float, default=0.0,
                   help='also time hashing an N GB cache file on load (0: skip)')
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    tiny = args.layout == 'tiny'
    size = (256, 192) if tiny else (1024, 768)
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / args.task
        model = random_model(args.task, '0.4b' if tiny else args.layout, tiny=tiny,
                             input_size=size)
        model.save_pretrained(source)
        del model
        mb = sum(f.stat().st_size for f in source.iterdir()) / 2**20
        before = median_ms(lambda: weights_hash(load_model(args.task, str(source))), args.repeats)
        after = median_ms(lambda: checkpoint_fingerprint(str(source)), args.repeats)
        print('| layout | checkpoint MB | load + hash (before) ms | fingerprint (after) ms | '
              'before / after |')
        print('|---|---|---|---|---|')
        print(f'| {args.layout} | {mb:.1f} | {before:.1f} | {after:.3f} | {before / after:.0f}x |')
        if tiny:  # a real-size export takes minutes on a CPU: end to end for the tiny one
            cache = Path(tmp) / 'cache'
            make_runner(args.task, 'onnxruntime', str(source), input_size=size, cache_dir=cache)
            hit = median_ms(lambda: make_runner(args.task, 'onnxruntime', str(source),
                                                input_size=size, cache_dir=cache), args.repeats)
            print(f'\nmake_runner onnxruntime, cache hit (session included): {hit:.1f} ms')
        if args.verify_gb > 0:
            verify_table(Path(tmp), args.verify_gb, args.repeats)


if __name__ == '__main__':
    main()
