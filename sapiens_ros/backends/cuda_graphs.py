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

The graph replays the captured kernels on static buffers: the input is copied into the static
input (one device copy), the outputs are the static output tensors, valid until the next call.
Every graph of a cache shares one memory pool. :func:`run_in_chunks` is the one chunking loop of
the runners: it copies each chunk's outputs out before the next chunk replays over them.
"""

from __future__ import annotations

from collections.abc import Callable
import logging

import torch

LOG = logging.getLogger(__name__)

TensorFn = Callable[[torch.Tensor], dict[str, torch.Tensor]]


class CudaGraphCache:
    """Capture ``fn`` once per input shape in ``shapes`` (or any shape when ``shapes`` is None)."""

    def __init__(self, fn: TensorFn, device: torch.device | str,
                 batches: tuple[int, ...] | None = None, warmup: int = 2,
                 max_graphs: int = 4) -> None:
        self.fn = fn
        self.device = torch.device(device)
        self.batches = batches
        self.warmup = warmup
        self.max_graphs = max_graphs
        self._graphs: dict[tuple, tuple[torch.cuda.CUDAGraph, torch.Tensor, dict]] = {}
        self._pool = None  # one memory pool for every captured batch size

    def wants(self, x: torch.Tensor) -> bool:
        """Tell whether ``x``'s batch is one to capture (graphs need the runner on CUDA)."""
        if self.device.type != 'cuda':
            return False
        if self.batches is not None:
            return x.shape[0] in self.batches
        return _key(x) in self._graphs or len(self._graphs) < self.max_graphs

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Replay (capturing on first use) for ``x``'s shape; falls back to ``fn`` otherwise."""
        if not self.wants(x):
            return self.fn(x)
        key = _key(x)
        entry = self._graphs.get(key)
        if entry is None:
            entry = self._capture(x)
            self._graphs[key] = entry
        graph, static_in, static_out = entry
        static_in.copy_(x)
        graph.replay()
        return static_out

    def _capture(self, x: torch.Tensor):
        static_in = x.clone()
        side = torch.cuda.Stream(device=self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm up off the default stream, as capture requires
            for _ in range(self.warmup):
                self.fn(static_in)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        if self._pool is None:
            self._pool = torch.cuda.graph_pool_handle()
        with torch.cuda.graph(graph, pool=self._pool):
            static_out = self.fn(static_in)
        LOG.info('captured a CUDA graph for input %s', tuple(x.shape))
        return graph, static_in, static_out


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
