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
CUDA-graph capture of a tensor function for fixed input shapes (torch and TensorRT runners).

Graphs are captured once, when the runner is configured (:meth:`CudaGraphCache.capture`, for the
batch sizes the pipeline's plan uses), never while frames stream: a capture synchronises the
device and runs the function three times, a spike of hundreds of milliseconds that must not
land on the frame where a third person walks in. Afterwards a shape without a graph runs
plainly (one log line), or, through :func:`run_in_buckets`, as chunks of captured batch sizes.

Each captured shape owns everything its graph replays against: the function made for it by
``make_fn`` (the TensorRT runner gives each one its own execution context), its static input
(the input is copied into it, one device copy) and its static outputs. Every graph of a cache
shares one memory pool. Capture follows trtexec: the function runs first (warm-up, so no
initialisation work is captured), then once under a thread-local capture, so work of other
threads cannot invalidate it; a capture that fails leaves that shape to run plainly, with one
log line.

A replay overwrites its static outputs in place, so :meth:`CudaGraphCache.__call__` hands out
copies: one device-to-device copy of the outputs (for a 0.4B pose crop at 1024x768, 60 MB of
heatmaps: ~40 us on an H100, ~0.6 ms on an Orin, against a forward pass of tens to hundreds of
ms), so no caller can keep a buffer that the next replay rewrites. The alternative, a handle
invalidated at the next replay, costs nothing per call but changes the runners' contract
(plain tensors) and moves the check into every consumer. The chunking loops, which copy each
chunk out at once, use :meth:`CudaGraphCache.borrow` (the static buffers) and pay no extra copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
import logging

import torch

LOG = logging.getLogger(__name__)

TensorFn = Callable[[torch.Tensor], dict[str, torch.Tensor]]


@dataclass
class CapturedGraph:
    """One captured shape: its graph and everything the graph replays against."""

    graph: object  # torch.cuda.CUDAGraph
    fn: TensorFn  # the function captured (holds e.g. its own TensorRT execution context)
    static_in: torch.Tensor
    static_out: dict[str, torch.Tensor]


class CudaGraphCache:
    """
    Replay ``fn`` as a CUDA graph for the shapes captured by :meth:`capture` (at configure).

    ``make_fn(batch)`` returns the function to capture for one batch size, owning whatever state
    its graph bakes in (default: ``fn`` itself, for stateless torch modules).
    """

    def __init__(self, fn: TensorFn, device: torch.device | str, warmup: int = 2,
                 make_fn: Callable[[int], TensorFn] | None = None, name: str = '') -> None:
        self.fn = fn
        self.device = torch.device(device)
        self.warmup = max(1, warmup)
        self.make_fn = make_fn
        self.name = name or 'runner'
        self._graphs: dict[tuple, CapturedGraph | None] = {}  # None: capture failed
        self._plain: set[tuple] = set()  # shapes that run without a graph (logged once)
        self._pool = None  # one memory pool for every captured batch size

    @property
    def captured(self) -> dict[tuple, CapturedGraph]:
        """Return the graphs captured so far, by input shape and dtype."""
        return {k: v for k, v in self._graphs.items() if v is not None}

    def batches(self, sample: torch.Tensor) -> list[int]:
        """Return the captured batch sizes of inputs shaped like ``sample`` (ascending)."""
        rest = (tuple(sample.shape[1:]), sample.dtype)
        return sorted(k[0][0] for k in self.captured if (k[0][1:], k[1]) == rest)

    def capture(self, batches: Iterable[int], shape: tuple[int, ...],
                dtype: torch.dtype = torch.float32) -> None:
        """
        Capture a graph per batch size for inputs ``(batch, *shape)`` (call at configure).

        Needs the cache's device to be CUDA; elsewhere it does nothing. The warm-up and the
        capture run on zeros.
        """
        if self.device.type != 'cuda':
            return
        for batch in sorted({int(b) for b in batches}):
            x = torch.zeros((batch, *shape), dtype=dtype, device=self.device)
            if _key(x) not in self._graphs:
                self._graphs[_key(x)] = self._capture(x)

    def borrow(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """
        Replay the graph of ``x``'s shape, or run ``fn``; return the static outputs themselves.

        They are valid until the next call: copy them out at once (the chunking loops do).
        """
        key = _key(x)
        entry = self._graphs.get(key)
        if entry is None:
            self._run_plain_note(key)
            return self.fn(x)
        entry.static_in.copy_(x)
        entry.graph.replay()
        return entry.static_out

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Replay (or run) like :meth:`borrow`, and return outputs the caller may keep."""
        entry = self._graphs.get(_key(x))
        out = self.borrow(x)
        return {k: v.clone() for k, v in out.items()} if entry is not None else out

    def _run_plain_note(self, key: tuple) -> None:
        if key in self._plain or self.device.type != 'cuda':
            return
        self._plain.add(key)
        captured = sorted(k[0][0] for k in self.captured) or 'none'
        LOG.info('%s: input %s has no CUDA graph (captured batches: %s); it runs without one',
                 self.name, key[0], captured)

    def _capture(self, x: torch.Tensor) -> CapturedGraph | None:
        static_in = x.clone()
        current = torch.cuda.current_stream(self.device)
        try:
            fn = self.make_fn(x.shape[0]) if self.make_fn is not None else self.fn
            side = torch.cuda.Stream(device=self.device)
            side.wait_stream(current)
            with torch.cuda.stream(side):  # warm up off the default stream, as capture requires
                for _ in range(self.warmup):
                    fn(static_in)
            current.wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            if self._pool is None:
                self._pool = torch.cuda.graph_pool_handle()
            with torch.cuda.graph(graph, pool=self._pool, capture_error_mode='thread_local'):
                static_out = fn(static_in)
        except Exception as exc:  # noqa: B902 - any capture failure: run this shape plainly
            LOG.warning('%s: CUDA graph capture of input %s failed (%s: %s); that input runs '
                        'without a graph', self.name, tuple(x.shape), type(exc).__name__, exc)
            return None
        LOG.info('%s: captured a CUDA graph for input %s', self.name, tuple(x.shape))
        return CapturedGraph(graph, fn, static_in, static_out)


def bucket_batches(largest: int) -> tuple[int, ...]:
    """
    Return the powers of two up to ``largest``, and ``largest`` itself: the sizes to capture.

    Any batch up to ``largest`` is a sum of distinct ones (:func:`run_in_buckets`), so every
    person count replays graphs, without padding, while the graphs' static buffers stay within
    about twice those of the largest (every size from 1 would hold ``largest / 2`` times more).
    """
    sizes = {1 << i for i in range(max(1, int(largest)).bit_length()) if 1 << i <= largest}
    return tuple(sorted(sizes | {max(1, int(largest))}))


def run_in_buckets(graphs: CudaGraphCache, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """
    Run ``x`` through ``graphs`` as chunks of its captured batch sizes, largest first.

    A batch that has a graph replays it; another is split greedily into captured sizes (13 with
    1, 2, 4 and 8 captured: 8 + 4 + 1), each chunk copied out before the next replays. Without
    any graph for the shape, ``graphs.fn`` runs the whole batch.
    """
    sizes = graphs.batches(x)
    n = x.shape[0]
    if not sizes or n in sizes:
        return graphs(x)
    joined: dict[str, torch.Tensor] = {}
    start = 0
    while start < n:
        rows = next((b for b in reversed(sizes) if b <= n - start), sizes[0])
        chunk = x[start:start + rows]
        for name, value in graphs.borrow(chunk).items():
            if name not in joined:
                joined[name] = value.new_empty((n, *value.shape[1:]))
            joined[name][start:start + rows].copy_(value[:rows])
        start += rows
    return joined


def _key(x: torch.Tensor) -> tuple:
    """Cache key of a captured graph: what a replay must match exactly (on the cache's device)."""
    return tuple(x.shape), x.dtype


def run_in_chunks(fn: TensorFn, x: torch.Tensor, max_batch: int,
                  min_batch: int = 1) -> dict[str, torch.Tensor]:
    """
    Run ``fn`` on ``x`` in chunks of ``min_batch`` to ``max_batch`` rows and join the outputs.

    A chunk smaller than ``min_batch`` (an engine profile's minimum) is padded with zero rows,
    whose outputs are dropped. Each chunk's outputs are copied into the joined tensors before
    the next chunk runs: a CUDA-graph replay (or any runner reusing its output buffers)
    overwrites them in place.
    """
    n = x.shape[0]
    if min_batch <= n <= max_batch:
        return fn(x)
    run = getattr(fn, 'borrow', fn)  # static outputs: copied out below, before the next replay
    joined: dict[str, torch.Tensor] = {}
    for start in range(0, n, max_batch):
        chunk = x[start:start + max_batch]
        rows = chunk.shape[0]
        if rows < min_batch:
            chunk = torch.cat([chunk, chunk.new_zeros((min_batch - rows, *chunk.shape[1:]))])
        for name, value in run(chunk).items():
            if name not in joined:
                joined[name] = value.new_empty((n, *value.shape[1:]))
            joined[name][start:start + rows].copy_(value[:rows])
    return joined
