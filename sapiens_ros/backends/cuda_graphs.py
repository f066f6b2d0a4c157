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

Each captured shape owns everything its graph replays against: the function made for it by
``make_fn`` (the TensorRT runner gives each one its own execution context), its static input
(the input is copied into it, one device copy) and its static outputs (returned, valid until the
next call). Plain runs use ``fn`` and never touch them. Every graph of a cache shares one memory
pool. Capture follows trtexec: the function runs first (warm-up, so no initialisation work is
captured), then once under a thread-local capture, so work of other threads cannot invalidate
it; a capture that fails, and a shape that has no graph, run plainly, each with one log line.
:func:`run_in_chunks` is the one chunking loop of the runners: it copies each chunk's outputs
out before the next chunk replays over them.
"""

from __future__ import annotations

from collections.abc import Callable
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
    Replay ``fn`` as a CUDA graph for the batch sizes in ``batches`` (None: the first few seen).

    ``make_fn(batch)`` returns the function to capture for one batch size, owning whatever state
    its graph bakes in (default: ``fn`` itself, for stateless torch modules).
    """

    def __init__(self, fn: TensorFn, device: torch.device | str,
                 batches: tuple[int, ...] | None = None, warmup: int = 2,
                 max_graphs: int = 4, make_fn: Callable[[int], TensorFn] | None = None,
                 name: str = '') -> None:
        self.fn = fn
        self.device = torch.device(device)
        self.batches = batches
        self.warmup = max(1, warmup)
        self.max_graphs = max_graphs
        self.make_fn = make_fn
        self.name = name or 'runner'
        self._graphs: dict[tuple, CapturedGraph | None] = {}  # None: capture failed
        self._plain: set[tuple] = set()  # shapes that run without a graph (logged once)
        self._pool = None  # one memory pool for every captured batch size

    @property
    def captured(self) -> dict[tuple, CapturedGraph]:
        """Return the graphs captured so far, by input shape and dtype."""
        return {k: v for k, v in self._graphs.items() if v is not None}

    def wants(self, x: torch.Tensor) -> bool:
        """Tell whether ``x``'s batch is one to capture (graphs need the runner on CUDA)."""
        if self.device.type != 'cuda':
            return False
        if self.batches is not None:
            return x.shape[0] in self.batches
        return len(self._graphs) < self.max_graphs

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Replay the graph of ``x``'s shape, capturing it on first use; else run ``fn``."""
        key = _key(x)
        if key not in self._graphs:
            if not self.wants(x):
                self._run_plain_note(key)
                return self.fn(x)
            self._graphs[key] = self._capture(x)
        entry = self._graphs[key]
        if entry is None:
            return self.fn(x)
        entry.static_in.copy_(x)
        entry.graph.replay()
        return entry.static_out

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
    joined: dict[str, torch.Tensor] = {}
    for start in range(0, n, max_batch):
        chunk = x[start:start + max_batch]
        rows = chunk.shape[0]
        if rows < min_batch:
            chunk = torch.cat([chunk, chunk.new_zeros((min_batch - rows, *chunk.shape[1:]))])
        for name, value in fn(chunk).items():
            if name not in joined:
                joined[name] = value.new_empty((n, *value.shape[1:]))
            joined[name][start:start + rows].copy_(value[:rows])
    return joined
