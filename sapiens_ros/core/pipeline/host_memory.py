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
Keep freed host memory in the process, so that per-frame buffers do not page-fault.

A frame's CPU tensors and message buffers are megabytes each, allocated and freed every frame.
glibc's malloc serves blocks above its mmap threshold with a fresh ``mmap`` and gives them
back with ``munmap``, and it trims its heaps' free tops back to the kernel: each frame then
page-faults (and the kernel zeroes) the same memory again, and every ``munmap`` interrupts the
process's other threads to flush their TLBs. On this project's 2-core CPU the tiny-model
pipeline took ~19,000 page faults per 640x480 frame and ran 1.3-1.7x slower than with the
memory kept (``docs/benchmarks.md``, "freed host memory kept").

:func:`keep_freed_memory` raises both thresholds once per process, as PyTorch's CPU
performance guides do with jemalloc or tcmalloc (and OpenVINO with ``mallopt``): freed blocks
stay in malloc's heaps for the next frame. The process stays at its high-water mark, which a
long-running inference process reaches in its first frames anyway (a 1024x768 replay: ~100 MB
more resident than with the default, flat over 500 frames). It leaves malloc alone
where the user chose its settings (``MALLOC_*_`` variables, ``GLIBC_TUNABLES``, a preloaded
allocator), where the C library is not glibc, and with ``SAPIENS_ROS_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import functools
import os

#: ``mallopt`` parameters (``<malloc.h>``).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from malloc's heaps (and go back to them when freed).
MMAP_THRESHOLD = 1 << 30
#: The fallback where glibc refuses more than half its 64 MiB arena heaps (older releases).
MMAP_THRESHOLD_FALLBACK = 32 << 20
#: Free memory at a heap's top that malloc keeps instead of giving it back to the kernel.
TRIM_THRESHOLD = 1 << 30
#: ``0`` leaves malloc as it is.
OPT_OUT_ENV = 'SAPIENS_ROS_MALLOC_TUNING'
_USER_SETTINGS = ('MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_TOP_PAD_',
                  'MALLOC_MMAP_MAX_')
_ALLOCATORS = ('jemalloc', 'tcmalloc', 'mimalloc')


def _left_alone() -> str | None:
    """Return why malloc is left as it is (the user's own settings), or None."""
    if os.environ.get(OPT_OUT_ENV, '1').strip() == '0':
        return f'{OPT_OUT_ENV}=0'
    chosen = [name for name in _USER_SETTINGS if name in os.environ]
    if 'malloc.' in os.environ.get('GLIBC_TUNABLES', ''):
        chosen.append('GLIBC_TUNABLES')
    preload = os.environ.get('LD_PRELOAD', '')
    chosen += [f'LD_PRELOAD {name}' for name in _ALLOCATORS if name in preload]
    return f'set by the user ({", ".join(chosen)})' if chosen else None


@functools.lru_cache(maxsize=1)
def keep_freed_memory() -> str:
    """
    Raise glibc malloc's mmap and trim thresholds, once per process; return what was done.

    The result is one phrase for a log line: what malloc keeps, or why it was left as it is.
    """
    reason = _left_alone()
    return _apply() if reason is None else f'malloc left as it is: {reason}'


def _apply() -> str:
    """Set the thresholds with glibc's ``mallopt``; return what was done."""
    try:
        libc = ctypes.CDLL(None)
        mallopt, version = libc.mallopt, libc.gnu_get_libc_version
    except (OSError, AttributeError):
        return 'malloc left as it is: not glibc'
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    version.restype = ctypes.c_char_p
    for threshold in (MMAP_THRESHOLD, MMAP_THRESHOLD_FALLBACK):
        if mallopt(M_MMAP_THRESHOLD, threshold):
            break
    else:
        return f'malloc left as it is: glibc {version().decode()} refused the mmap threshold'
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    return f'freed blocks up to {threshold >> 20} MiB kept (glibc {version().decode()})'


__all__ = ['keep_freed_memory', 'MMAP_THRESHOLD', 'OPT_OUT_ENV', 'TRIM_THRESHOLD']
