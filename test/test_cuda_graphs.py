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
The runners' chunking loop with CUDA-graph replay, on a fake graph (no GPU here).

The fake models what matters for correctness: a replay re-runs the captured function and writes
its results INTO the same static output tensors, so a caller holding the outputs of an earlier
replay sees them overwritten. It does not model kernels, streams, memory pools or capture rules.
"""

import contextlib

from sapiens_ros.backends.cuda_graphs import CapturedGraph, CudaGraphCache, run_in_chunks
import torch


class FakeGraph:
    """Stands in for ``torch.cuda.CUDAGraph``: replay refills the static outputs in place."""

    def __init__(self, fn, static_in, static_out) -> None:
        self.fn, self.static_in, self.static_out = fn, static_in, static_out
        self.replays = 0

    def replay(self) -> None:
        self.replays += 1
        for name, value in self.fn(self.static_in).items():
            self.static_out[name].copy_(value)


def _fake_cache(monkeypatch, fn):
    def capture(self, x):
        static_in = x.clone()
        static_out = {k: v.clone() for k, v in fn(static_in).items()}
        return CapturedGraph(FakeGraph(fn, static_in, static_out), fn, static_in, static_out)

    monkeypatch.setattr(CudaGraphCache, 'wants', lambda self, x: True)
    monkeypatch.setattr(CudaGraphCache, '_capture', capture)
    return CudaGraphCache(fn, 'cuda', batches=(2,))


def head(x):
    return {'heatmaps': x * 2.0 + 1.0, 'other': x.sum(dim=(1, 2, 3), keepdim=False)}


def test_chunked_graph_outputs_are_distinct(monkeypatch):
    """Five crops through a batch-2 graph: every person keeps its own outputs."""
    graphs = _fake_cache(monkeypatch, head)
    x = torch.arange(5 * 3 * 4 * 2, dtype=torch.float32).reshape(5, 3, 4, 2)
    got = run_in_chunks(graphs, x, 2)
    want = head(x)
    assert set(got) == set(want)
    for name in want:
        assert torch.equal(got[name], want[name]), name
    # The hazard the loop guards against: joining the replays' outputs as returned aliases
    # them, and every chunk would show the last chunk's values.
    naive = [graphs(chunk) for chunk in x.split(2)]
    assert naive[0]['heatmaps'] is naive[1]['heatmaps']


def test_small_batch_runs_once_without_copy():
    x = torch.ones(2, 3, 4, 2)
    out = run_in_chunks(head, x, 8)
    assert torch.equal(out['heatmaps'], head(x)['heatmaps'])


def test_one_memory_pool_for_every_batch_size(monkeypatch):
    """Every capture passes the same pool (no private pool per batch size), thread-locally."""
    pools, modes = [], []

    class Graph:

        def replay(self):
            pass

    class Capture:

        def __init__(self, graph, pool=None, capture_error_mode='global'):
            pools.append(pool)
            modes.append(capture_error_mode)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class FakeStream:

        def __init__(self, device=None):
            pass

        def wait_stream(self, other):
            pass

    monkeypatch.setattr(torch.cuda, 'CUDAGraph', Graph)
    monkeypatch.setattr(torch.cuda, 'graph', Capture)
    monkeypatch.setattr(torch.cuda, 'graph_pool_handle', lambda: object())
    monkeypatch.setattr(torch.cuda, 'Stream', FakeStream)
    monkeypatch.setattr(torch.cuda, 'current_stream', lambda device=None: FakeStream())
    monkeypatch.setattr(torch.cuda, 'stream', lambda s: contextlib.nullcontext())
    monkeypatch.setattr(CudaGraphCache, 'wants', lambda self, x: True)
    cache = CudaGraphCache(head, 'cuda')
    for batch in (1, 2, 3):
        cache(torch.ones(batch, 3, 4, 2))
    assert len(pools) == 3 and pools[0] is not None and all(p is pools[0] for p in pools)
    assert modes == ['thread_local'] * 3
