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
The CUDA-graph cache: captured at configure, replayed after, outputs nobody keeps by mistake.

No GPU here: the fake CUDA (test/fake_cuda.py) records the torch ops a capture runs and replays
them on the captured memory, as a CUDA graph does (it writes the new results into the tensors
the capture returned, so a caller holding them sees them overwritten). It does not model
kernels' timing or memory pools' addresses.
"""

import logging

from fake_cuda import FakeCuda
import pytest
from sapiens_ros.backends.cuda_graphs import (bucket_batches, CudaGraphCache, run_in_buckets,
                                              run_in_chunks)
import torch

SHAPE = (3, 4, 2)


@pytest.fixture
def cuda(monkeypatch):
    fake = FakeCuda().install(monkeypatch)
    yield fake
    fake.uninstall()


def head(x):
    return {'heatmaps': x * 2.0 + 1.0, 'other': x.sum(dim=(1, 2, 3), keepdim=False)}


def inputs(n, offset=0.0):
    return torch.arange(n * 24, dtype=torch.float32).reshape(n, *SHAPE) + offset


def test_replays_compute_the_function(cuda):
    graphs = CudaGraphCache(head, 'cuda:0')
    graphs.capture((2,), SHAPE)
    for offset in (0.0, 100.0):
        x = inputs(2, offset)
        got = graphs(x)
        for name, want in head(x).items():
            assert torch.equal(got[name], want), name
    (entry,) = graphs.captured.values()
    assert entry.graph.replays == 2


def test_outputs_handed_out_are_the_callers(cuda):
    """A replay rewrites its static buffers; what __call__ handed out before stays as it was."""
    graphs = CudaGraphCache(head, 'cuda:0')
    graphs.capture((2,), SHAPE)
    first = graphs(inputs(2))
    kept = first['heatmaps'].clone()
    graphs(inputs(2, 7.0))
    assert torch.equal(first['heatmaps'], kept)
    # The hazard the copies remove: the static buffers themselves are rewritten by a replay.
    a = graphs.borrow(inputs(2))
    b = graphs.borrow(inputs(2, 7.0))
    assert a['heatmaps'] is b['heatmaps']


def test_chunked_graph_outputs_are_distinct(cuda):
    """Five crops through a batch-2 graph: every person keeps its own outputs."""
    graphs = CudaGraphCache(head, 'cuda:0')
    graphs.capture((2,), SHAPE)
    x = inputs(5)
    got = run_in_chunks(graphs, x, 2)
    for name, want in head(x).items():
        assert torch.equal(got[name], want), name


@pytest.mark.parametrize('n,replays', [(1, 1), (3, 2), (8, 1), (13, 3), (21, 4)])
def test_buckets_cover_every_count_without_capturing(cuda, n, replays):
    """Captured 1, 2, 4, 8 at configure: any count replays those, and nothing is captured."""
    graphs = CudaGraphCache(head, 'cuda:0')
    graphs.capture(bucket_batches(8), SHAPE)
    captures = len(cuda.events('capture_begin'))
    x = inputs(n)
    got = run_in_buckets(graphs, x)
    for name, want in head(x).items():
        assert torch.equal(got[name], want), name
    assert len(cuda.events('capture_begin')) == captures == 4
    assert sum(e.graph.replays for e in graphs.captured.values()) == replays


def test_uncaptured_shape_runs_plainly_and_never_captures(cuda, caplog):
    graphs = CudaGraphCache(head, 'cuda:0')
    graphs.capture((2,), SHAPE)
    x = torch.ones(3, 5, 4, 2)  # another shape
    with caplog.at_level(logging.INFO, logger='sapiens_ros.backends.cuda_graphs'):
        for _ in range(3):
            assert torch.equal(graphs(x)['heatmaps'], head(x)['heatmaps'])
    assert len(cuda.events('capture_begin')) == 1
    assert sum('has no CUDA graph' in r.getMessage() for r in caplog.records) == 1


def test_bucket_batches():
    assert bucket_batches(1) == (1,)
    assert bucket_batches(8) == (1, 2, 4, 8)
    assert bucket_batches(6) == (1, 2, 4, 6)
    assert bucket_batches(16) == (1, 2, 4, 8, 16)


def test_small_batch_runs_once_without_copy():
    x = torch.ones(2, 3, 4, 2)
    out = run_in_chunks(head, x, 8)
    assert torch.equal(out['heatmaps'], head(x)['heatmaps'])


def test_one_memory_pool_for_every_batch_size(cuda):
    """Every capture passes the same pool (no private pool per batch size), thread-locally."""
    graphs = CudaGraphCache(head, 'cuda:0')
    graphs.capture((1, 2, 3), SHAPE)
    begins = cuda.events('capture_begin')
    pools = [e[2] for e in begins]
    assert len(pools) == 3 and pools[0] is not None and all(p is pools[0] for p in pools)
    assert [e[3] for e in begins] == ['thread_local'] * 3


def test_cpu_cache_captures_nothing():
    graphs = CudaGraphCache(head, 'cpu')
    graphs.capture((1, 2), SHAPE)
    assert not graphs.captured
    assert torch.equal(graphs(inputs(2))['heatmaps'], head(inputs(2))['heatmaps'])


def test_pipeline_captures_at_configure_whatever_the_person_count(cuda, astronaut):
    """
    A pipeline with torch CUDA graphs captures while it is loaded, then never again.

    Person counts go up and down, past max_persons (4): every pose batch replays graphs
    captured at load (1, 2, 4), the seg head its batch-1 graph; the results match the same
    pipeline without graphs.
    """
    import numpy as np
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    options = {'random_weights': True, 'device': 'cuda:0',
               'config': PipelineConfig(input_size=(256, 192), max_persons=4)}
    graphs = load_pipeline('pose,seg', cuda_graphs=True, **options)
    eager = load_pipeline('pose,seg', **options)
    assert {r.name for r in graphs.runners.values()} == {'torch+cudagraphs'}
    captured = len(cuda.events('capture_begin'))
    assert captured == 4  # pose 1, 2, 4 and seg 1
    for persons in (3, 1, 6, 0, 2, 4, 9):
        boxes = np.array([[10 + 20 * i, 10, 200 + 20 * i, 400] for i in range(persons)],
                         np.float32).reshape(-1, 4)
        (got,) = graphs([astronaut], boxes=[boxes])
        (want,) = eager([astronaut], boxes=[boxes])
        assert len(got.pose) == persons
        moved = np.abs(got.pose.keypoints - want.pose.keypoints).max(-1) if persons else 0.0
        # float sums differ a little with the batch split; random heads have near-ties
        assert np.mean(moved < 0.5) > 0.99
        assert np.array_equal(got.seg.labels, want.seg.labels)
    assert len(cuda.events('capture_begin')) == captured
