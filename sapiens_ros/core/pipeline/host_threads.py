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
The torch CPU threads of a thread that does host work beside the inference.

The node's publish thread and replay's writer render, encode and pack on the CPU while the
inference thread runs the next step. With torch's intra-op threads at the process setting
(all cores by default), each of their torch ops would start a second team of threads on the
cores the inference's team is using: with 2 cores and 2 threads each, replay's inference steps
took 30-40 % longer than alone, against ~10 % with the writer on one thread
(``docs/benchmarks.md``). So a host-work thread runs its torch ops on
:data:`HOST_WORK_THREADS`.

torch keeps the intra-op thread count per OS thread: a thread takes the process setting the
first time it runs torch, and ``torch.set_num_threads`` sets the calling thread's count *and*
the process setting. :func:`use_host_work_threads` sets the calling thread's and puts the
process setting back, so no other thread's count changes (a thread that first runs torch
within the few hundred microseconds in between would take the smaller count; the callers
call it after the inference thread has run).
"""

from __future__ import annotations

import threading

import torch

#: Intra-op threads of a host-work thread: one, so the inference keeps the other cores.
HOST_WORK_THREADS = 1


def _in_new_thread(fn, *args):
    """Return ``fn(*args)`` run in a new thread (a thread that has not run torch yet)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(fn(*args)), name='sapiens_threads')
    thread.start()
    thread.join()
    return out[0]


def use_host_work_threads(threads: int = HOST_WORK_THREADS) -> None:
    """Run the calling thread's torch CPU ops on ``threads`` intra-op threads from now on."""
    if torch.get_num_threads() == threads:
        return
    process = _in_new_thread(torch.get_num_threads)  # what a thread starting now would take
    torch.set_num_threads(threads)
    _in_new_thread(torch.set_num_threads, process)  # the process setting, as it was


__all__ = ['HOST_WORK_THREADS', 'use_host_work_threads']
