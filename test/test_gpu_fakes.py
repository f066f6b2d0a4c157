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
The GPU code paths (TensorRT build and run, ONNX Runtime on CUDA, CUDA graphs) on fakes.

No GPU, CUDA torch or TensorRT exists on this machine, so three fakes stand in for the APIs the
backends call, each saying in its docstring what it models and what it does not:
``fake_cuda`` (torch.cuda: devices, streams, graphs; cuda tensors in host memory),
``fake_tensorrt`` (TensorRT 10.3 / 10.12 / 11 Python API, engines run by ONNX Runtime on the CPU
through the addresses the runner set) and ``fake_onnxruntime_gpu`` (the CUDA/TensorRT providers
over the real CPU ONNX Runtime). Everything else is real: the tiny checkpoints, the ONNX export
and its parity check, the artefact cache, the runners and the torch reference outputs.
"""

from __future__ import annotations

import logging
import shutil
import sys

from fake_cuda import FakeCuda, GpuSpec
from fake_onnxruntime_gpu import make_onnxruntime_gpu
from fake_tensorrt import engine_header, make_tensorrt
import pytest
from sapiens_ros.backends import tensorrt_engine
from sapiens_ros.backends.errors import EngineError
from sapiens_ros.backends.factory import make_runner
from sapiens_ros.core.loading import load_model
from sapiens_ros.core.runners import TorchRunner
import torch

SIZE = (256, 192)


@pytest.fixture(scope='module')
def exported(model_dir, tmp_path_factory):
    """
    Export the tiny graphs for real before any fake goes in (the exporter must see no GPU).

    Each test copies them into its own cache, so its engines are its own.
    """
    root = tmp_path_factory.mktemp('exported')
    for task in ('pose', 'pointmap'):
        make_runner(task, 'onnxruntime', str(model_dir / task), input_size=SIZE,
                    cache_dir=root)
    return root


@pytest.fixture
def cache_dir(exported, tmp_path):
    """Give each test a fresh cache holding the exported graphs (mtimes kept: still valid)."""
    shutil.copytree(exported, tmp_path / 'cache')
    return tmp_path / 'cache'


@pytest.fixture
def cuda(monkeypatch, cache_dir):
    """Two fake H100s (cuda:0, cuda:1) behind torch.cuda; cuda tensors live in host memory."""
    fake = FakeCuda([GpuSpec(), GpuSpec()]).install(monkeypatch)
    monkeypatch.setattr(tensorrt_engine, '_LOGGER', None)  # one logger per fake module
    yield fake
    fake.uninstall()


def use_tensorrt(monkeypatch, cuda, version: str):
    trt = make_tensorrt(version, cuda)
    monkeypatch.setitem(sys.modules, 'tensorrt', trt)
    return trt


def reference(model_dir, task: str, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Run the same checkpoint in eager torch on the CPU (outside the fakes)."""
    model = load_model(task, str(model_dir / task), dtype='fp32', device='cpu')
    return {k: v.clone() for k, v in TorchRunner(task, model)(x).items()}


def trt_runner(model_dir, tmp_path, task='pose', **options):
    options = {'dtype': 'fp32', 'device': 'cuda:1', 'input_size': SIZE, 'batch': '1:2:2',
               'cache_dir': tmp_path / 'cache', 'progress': False, **options}
    return make_runner(task, 'tensorrt', str(model_dir / task), **options)


def close(got: torch.Tensor, want: torch.Tensor) -> None:
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


# --------------------------------------------------------------------------- TensorRT runner
@pytest.mark.parametrize('version', ['10.3.0', '10.12.0', '11.0.0'])
def test_tensorrt_runner_matches_torch_in_chunks(monkeypatch, cuda, model_dir, tmp_path,
                                                 version):
    """Five pose crops through a max-batch-2 engine: chunked, each crop its own heatmaps."""
    x = torch.randn(5, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    use_tensorrt(monkeypatch, cuda, version)
    runner = trt_runner(model_dir, tmp_path)
    assert runner.batch_range == (1, 2)
    got = runner(x)['heatmaps']
    close(got, want)
    assert not torch.equal(got[0], got[4])  # no chunk repeats another
    header = engine_header(runner.path)
    assert header['trt'] == version and header['tf32'] is False  # exact fp32: TF32 cleared
    assert header['strongly_typed'] is (version != '10.3.0')
    executes = cuda.events('trt_execute')
    assert len(executes) == 3  # batches 2 + 2 + 1
    assert all(device == 1 for _, _, device in executes)  # the device guard held


def test_tensorrt_stream_policy(monkeypatch, cuda, model_dir, tmp_path):
    """
    The engine runs on torch's stream when that is a real stream, else on its own stream.

    On its own stream it waits for torch's stream before (the input is written there) and
    torch's stream waits for it after (the outputs are read there); never on handle 0.
    """
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path)
    x = torch.randn(2, 3, *SIZE)
    cuda.log.clear()
    runner(x)  # torch on the legacy default stream of cuda:1
    own = runner._stream.cuda_stream
    assert own != 0
    assert cuda.log.index(('wait', own, 0)) < cuda.log.index(('trt_execute', own, 1)) < \
        cuda.log.index(('wait', 0, own))
    assert not cuda.events('trt_legacy_stream_sync')
    torch_stream = torch.cuda.Stream('cuda:1')
    cuda.log.clear()
    with torch.cuda.stream(torch_stream):
        runner(x)
    assert cuda.events('trt_execute') == [('trt_execute', torch_stream.cuda_stream, 1)]
    assert not cuda.events('wait')  # same stream: no waits needed


def test_tensorrt_batch_below_profile_minimum_is_padded(monkeypatch, cuda, model_dir,
                                                        tmp_path):
    """A 2:2:4 engine and one crop (or a remainder of one): padded to 2, the pad dropped."""
    x = torch.randn(5, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path, batch='2:2:4')
    close(runner(x[:1])['heatmaps'], want[:1])
    close(runner(x)['heatmaps'], want)  # 4 + 1 (padded to 2)
    runner.batch_range = (1, 4)  # past the runner's own bookkeeping, TensorRT still says no
    with pytest.raises(EngineError, match='rejected input shape'):
        runner(x[:1])


def test_tensorrt_cuda_graphs_chunked_outputs_are_distinct(monkeypatch, cuda, model_dir,
                                                           tmp_path):
    """
    With CUDA graphs and opt == max, every chunk replays one graph over the same outputs.

    The fake graph replays the engine launch recorded at capture, writing into the captured
    output memory, so joining the chunks without copying would repeat the last chunk.
    """
    x = torch.randn(5, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path, batch='2:2:2', cuda_graphs=True)
    got = runner(x[:4])['heatmaps'].clone()
    close(got, want[:4])
    got = runner(x)['heatmaps']  # 2 + 2 + 1 (padded to 2): every chunk replays the graph
    close(got, want)
    (graph,) = [g for g, _, _ in runner._graphs._graphs.values()]
    assert graph.replays == 5 and len(graph.launches) == 1
    capture = cuda.events('capture_begin')
    assert len(capture) == 1 and capture[0][2] is not None  # one shared memory pool


def test_tensorrt_engine_from_another_gpu_is_rebuilt(monkeypatch, cuda, model_dir, tmp_path,
                                                     caplog):
    """Machines sharing a cache: an engine for another GPU gets its own slot, never loaded."""
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    first = trt_runner(model_dir, tmp_path)
    cuda.gpus[1] = GpuSpec('NVIDIA GeForce RTX 4090', 8, 9)
    with caplog.at_level(logging.INFO):
        second = trt_runner(model_dir, tmp_path)
    assert second.path != first.path and 'RTX' in second.path.name
    assert engine_header(second.path)['cc'] == [8, 9]
    with pytest.raises(EngineError, match='could not load'):  # TensorRT refuses it
        type(first)('pose', first.path, device='cuda:1')


# --------------------------------------------------------------------------- TensorRT build
def test_build_runs_on_the_requested_gpu_and_persists_timing(monkeypatch, cuda, model_dir,
                                                             tmp_path):
    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    trt_runner(model_dir, tmp_path)
    trt_runner(model_dir, tmp_path, batch='1:1:4')  # another profile: a second build
    first, second = trt.fake_state.builds
    assert first['device'] == second['device'] == 1
    assert first['timing_entries'] == 0 < second['timing_entries']  # the saved cache reused


def test_fp16_pins_float_norm_and_rope_layers_only(monkeypatch, cuda, model_dir, tmp_path):
    """
    Weakly typed FP16 (TensorRT 10.3) pins norm layers to FP32, found by the parser's names.

    The layer names come from the fake parser, which names layers as TensorRT's ONNX parser
    does (node name, then ``_<counter>`` for a node's further layers).
    """
    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    trt_runner(model_dir, tmp_path, dtype='fp16')
    build = trt.fake_state.builds[-1]
    assert {'FP16', 'OBEY_PRECISION_CONSTRAINTS'} <= set(build['flags'])
    assert not build['strongly_typed']
    pinned = set(build['pinned'])
    # the head's instance norms, the RMSNorm decomposition and the RoPE rotation
    assert {'node_instance_norm', 'node_pow_1', 'node_rsqrt', 'node_neg'} <= pinned
    assert not build['pinned_integer']  # shape arithmetic (int64) is never pinned
    assert not any(name.startswith(('node_Shape', 'node_MatMul')) for name in pinned)


@pytest.mark.parametrize('version,ok', [
    ('10.3.0', True),   # weak typing: the BF16 flag on an fp32 graph
    ('10.12.0', True),  # deprecated but still there: builds, with a warning
    ('11.0.0', False),  # removed: a bf16 engine needs a bf16 graph (exported on CUDA)
])
def test_bf16_from_an_fp32_graph_per_tensorrt_version(monkeypatch, cuda, cache_dir, version,
                                                      ok, caplog):
    trt = use_tensorrt(monkeypatch, cuda, version)
    (graph,) = (cache_dir / 'onnx').glob('pose-*.onnx')
    options = {'dtype': 'bf16', 'device': 'cuda:0', 'batch': '1:1:2', 'cache_dir': cache_dir,
               'progress': False}
    if not ok:
        with pytest.raises(EngineError, match='--dtype bf16'):
            make_runner('pose', 'tensorrt', str(graph), **options)
        return
    with caplog.at_level(logging.WARNING):
        runner = make_runner('pose', 'tensorrt', str(graph), **options)
    build = trt.fake_state.builds[-1]
    assert 'BF16' in build['flags'] and not build['strongly_typed'] and not build['pinned']
    assert ('deprecates' in caplog.text) is (version == '10.12.0')
    assert runner(torch.randn(1, 3, *SIZE))['heatmaps'].dtype == torch.float32


def test_unparsable_graph_is_a_clear_error(monkeypatch, cuda, tmp_path):
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    bad = tmp_path / 'pose.onnx'
    bad.write_bytes(b'\x08\x01garbage')
    with pytest.raises(EngineError, match='cannot parse pose.onnx'):
        tensorrt_engine.build_engine(bad, precision='fp32', batch=(1, 1, 2), progress=False)


# --------------------------------------------------------------------------- ONNX Runtime CUDA
def test_onnxruntime_cuda_iobinding_stream_order(monkeypatch, cuda, model_dir, cache_dir):
    """
    ORT on CUDA: tensors bound by pointer on the runner's GPU, on ORT's own stream.

    That stream is handed to ORT (``user_compute_stream``) and waits for torch's stream before
    every run, so ORT never reads a pre-processed input that is still being written.
    """
    x = torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pointmap', x)
    ort = make_onnxruntime_gpu(cuda)
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    runner = make_runner('pointmap', 'onnxruntime', str(model_dir / 'pointmap'),
                         device='cuda:1', input_size=SIZE, cache_dir=cache_dir)
    session = ort.sessions[-1]
    assert session.providers[0] == 'CUDAExecutionProvider'
    options = session.provider_options['CUDAExecutionProvider']
    assert options['device_id'] == '1' and options['has_user_compute_stream'] == '1'
    assert session.stream == runner._stream.cuda_stream != 0
    cuda.log.clear()
    got = runner(x)
    for name in want:
        close(got[name], want[name])
    assert cuda.log.index(('wait', session.stream, 0)) < \
        cuda.log.index(('ort_run', session.stream, 0))
    bound = session.bindings[-1].bound
    assert bound[0] == ('input', 'pixel_values', 'cuda', 1, bound[0][4], (2, 3, *SIZE))
    assert all(kind == 'cuda' and index == 1 for _, _, kind, index, _, _ in bound)


def test_onnxruntime_tensorrt_provider_options(monkeypatch, cuda, model_dir, cache_dir):
    """Use the TensorRT provider of ORT only on request, then with cache, profile, precision."""
    ort = make_onnxruntime_gpu(cuda)
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), device='cuda:0',
                input_size=SIZE, cache_dir=cache_dir, batch='1:2:4')
    assert ort.sessions[-1].providers[0] == 'CUDAExecutionProvider'  # not tried by default
    make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), device='cuda:0',
                input_size=SIZE, cache_dir=cache_dir, batch='1:2:4', dtype='fp16',
                providers=['tensorrt', 'cuda'])
    session = ort.sessions[-1]
    options = session.provider_options['TensorrtExecutionProvider']
    assert options['trt_engine_cache_enable'] == 'True'
    assert options['trt_engine_cache_path'].startswith(str(cache_dir))
    assert options['trt_profile_min_shapes'] == 'pixel_values:1x3x256x192'
    assert options['trt_profile_max_shapes'] == 'pixel_values:4x3x256x192'
    assert options['trt_fp16_enable'] == 'True'
