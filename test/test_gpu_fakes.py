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
``fake_cuda`` (torch.cuda: devices, streams whose work waits until something orders it, graphs
whose capture can fail; cuda tensors in host memory), ``fake_tensorrt`` (TensorRT 10.3 / 10.12 /
11 Python API: a parser that refuses invalid graphs and undocumented opsets, execution contexts
that keep their state, engines run by ONNX Runtime on the CPU through the addresses the runner
set) and ``fake_onnxruntime_gpu`` (the CUDA/TensorRT providers over the real CPU ONNX Runtime).
Everything else is real: the tiny checkpoints, the ONNX export and its checks, the artefact
cache, the precision plan, the runners and the torch reference outputs.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import threading

from fake_cuda import FakeCuda, FakeStream, GpuSpec
from fake_onnxruntime_gpu import make_onnxruntime_gpu
from fake_tensorrt import engine_header, make_tensorrt
import pytest
from sapiens_ros.backends import tensorrt_build
from sapiens_ros.backends.artifact_cache import get_onnx
from sapiens_ros.backends.errors import EngineError
from sapiens_ros.backends.export import ExportWrapper, INPUT_NAME
from sapiens_ros.backends.factory import make_runner
from sapiens_ros.backends.fingerprint import checkpoint_fingerprint
from sapiens_ros.backends.precision import plan_precision
from sapiens_ros.backends.torch_runner import TorchRunner
from sapiens_ros.core.models.loading import load_model
from sapiens_ros.core.pipeline.timing import StageTimer
import torch

SIZE = (256, 192)
BF16_TOL = (1e-2, 5e-2)  # atol, rtol * max|torch|: the export's bf16 parity tolerance


@pytest.fixture(scope='module')
def exported(model_dir, tmp_path_factory):
    """
    Export the tiny graphs for real before any fake goes in (the exporter must see no GPU).

    fp32 graphs of pose and pointmap, and the bf16 pose graph the TensorRT 10.12+ plan asks
    for (exported on the CPU: the same graph a GPU exports, only its parity check skipped).
    Each test copies them into its own cache, so its engines are its own.
    """
    root = tmp_path_factory.mktemp('exported')
    for task in ('pose', 'pointmap'):
        make_runner(task, 'onnxruntime', str(model_dir / task), input_size=SIZE,
                    cache_dir=root)
    source = str(model_dir / 'pose')
    get_onnx('pose', lambda: load_model('pose', source), input_size=SIZE, batch=(1, 1, 4),
             dtype='bf16', cache_dir=root, w_hash=checkpoint_fingerprint(source))
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
    monkeypatch.setattr(tensorrt_build, '_LOGGER', None)  # one logger per fake module
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


def close_bf16(got: torch.Tensor, want: torch.Tensor) -> None:
    atol, rtol = BF16_TOL
    err = (got - want).abs().max().item()
    assert err <= atol + rtol * want.abs().max().item(), err


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
    cuda.log.clear()  # the accuracy gate's runs
    got = runner(x)['heatmaps']
    close(got, want)
    assert not torch.equal(got[0], got[4])  # no chunk repeats another
    header = engine_header(runner.path)
    assert header['trt'] == version and header['tf32'] is False  # exact fp32: TF32 cleared
    assert header['strongly_typed'] is (version != '10.3.0')
    executes = cuda.events('trt_execute')
    assert len(executes) == 3  # batches 2 + 2 + 1
    assert all(device == 1 for _, _, device in executes)  # the device guard held


@pytest.mark.parametrize('version,graph', [('10.3.0', ('fp32', 18)), ('10.12.0', ('bf16', 22)),
                                           ('11.0.0', ('bf16', 22))])
def test_default_bf16_engine_per_tensorrt_version(monkeypatch, cuda, model_dir, tmp_path,
                                                  version, graph, caplog):
    """
    The default precision on an H100 is bf16, and every TensorRT version gets a valid graph.

    10.3 (JetPack 6) documents opsets up to 20, where bf16 Conv is not valid ONNX: an fp32 graph
    with the BF16 builder flag. 10.12 and 11 build strongly typed from the bf16 graph at opset 22
    (the fake parser refuses anything the ONNX checker or the documented opset refuses).
    """
    x = torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    trt = use_tensorrt(monkeypatch, cuda, version)
    with caplog.at_level(logging.WARNING):
        runner = trt_runner(model_dir, tmp_path, dtype=None)
    build = trt.fake_state.builds[-1]
    header = engine_header(runner.path)
    plan = plan_precision('bf16', version, compute_capability=(9, 0))
    assert (plan.graph_dtype, plan.opset) == graph
    assert build['strongly_typed'] is (version != '10.3.0')
    assert ('BF16' in build['flags']) is (version == '10.3.0')
    assert header['weak_precision'] == ('bf16' if version == '10.3.0' else None)
    assert 'deprecates' not in caplog.text  # 10.12 no longer takes the weakly typed path
    close_bf16(runner(x)['heatmaps'], want)
    assert f'-{graph[0]}-op{graph[1]}-' in str(list((tmp_path / 'cache' / 'onnx').glob(
        f'pose-*-{graph[0]}-*.onnx'))[0])


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


def test_missing_stream_wait_reads_stale_outputs(monkeypatch, cuda, model_dir, tmp_path):
    """
    The deferred fake stream catches a missing wait: without it, torch reads stale outputs.

    The runner's engine runs on its own stream; its outputs are right only because torch's
    stream waits for that stream. With ``wait_stream`` disabled the engine's work is still
    queued when torch reads the outputs.
    """
    x, y = torch.randn(2, 3, *SIZE), torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pose', torch.cat([x, y]))['heatmaps']
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path)
    close(runner(x)['heatmaps'], want[:2])  # with the waits: right
    monkeypatch.setattr(FakeStream, 'wait_stream', lambda self, other: None)
    got = runner(y)['heatmaps']
    assert cuda.pending(runner._stream.cuda_stream) == 1  # the engine has not run yet
    stale = got.clone()
    assert not torch.allclose(stale, want[2:], atol=1e-3)  # whatever the memory held
    torch.cuda.synchronize()  # once ordered, the work runs and the outputs are right
    assert cuda.pending() == 0
    close(got, want[2:])


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


# --------------------------------------------------------------------------- CUDA graphs
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
    (entry,) = runner._graphs.captured.values()
    assert entry.graph.replays == 5 and len(entry.graph.launches) == 1
    capture = cuda.events('capture_begin')
    assert len(capture) == 1 and capture[0][2] is not None  # one shared memory pool
    assert capture[0][3] == 'thread_local'


def test_pose_batch_sequence_with_cuda_graphs_matches_torch(monkeypatch, cuda, model_dir,
                                                            tmp_path, caplog):
    """
    Crop counts 3, 1, 3, 5, 3 through a runner that captured batch 3: every call is right.

    The pose crop count changes every frame. The batch-3 graph has an execution context of its
    own; the other batches run on the plain context, which the fake context keeps reshaped, and
    a graph replayed on a reshaped context would compute with the wrong shape.
    """
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path, batch='1:3:4', cuda_graphs=True)
    xs = [torch.randn(n, 3, *SIZE) for n in (3, 1, 3, 5, 3)]
    wants = [reference(model_dir, 'pose', x)['heatmaps'] for x in xs]
    with caplog.at_level(logging.INFO, logger='sapiens_ros.backends.cuda_graphs'):
        for x, want in zip(xs, wants, strict=True):
            close(runner(x)['heatmaps'], want)
    (entry,) = runner._graphs.captured.values()
    assert entry.graph.replays == 3
    plain = [r.getMessage() for r in caplog.records if 'has no CUDA graph' in r.getMessage()]
    assert len(plain) == 2  # batch 1 and batch 4 (5 = 4 + 1), one line each, once


def test_failed_capture_falls_back_to_plain_execution(monkeypatch, cuda, model_dir, tmp_path,
                                                      caplog):
    """An engine whose enqueue cannot be captured: one warning, then plain runs, right outputs."""
    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    trt.fake_state.capture_fails = True
    runner = trt_runner(model_dir, tmp_path, batch='1:2:2', cuda_graphs=True)
    x = torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            close(runner(x)['heatmaps'], want)
    warnings = [r for r in caplog.records  # (INFO lines name the test's tmp dir: 'capture')
                if r.levelno >= logging.WARNING and 'capture' in r.getMessage()]
    assert len(warnings) == 1 and 'runs without a graph' in warnings[0].getMessage()
    assert not runner._graphs.captured
    assert len(cuda.events('capture_begin')) == 1  # not retried on every frame


def test_capture_is_thread_local(monkeypatch, cuda, model_dir, tmp_path):
    """
    Another thread synchronising during the capture does not break it (thread-local mode).

    In CUDA's global capture mode, a synchronisation in any thread (another node's callback,
    the ROS executor) invalidates the capture.
    """
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    errors = []

    def other_thread():
        try:
            torch.cuda.synchronize()
        except Exception as exc:  # noqa: B902 - recorded for the assertion
            errors.append(exc)

    def during_capture():
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()

    cuda.during_capture = during_capture
    runner = trt_runner(model_dir, tmp_path, batch='1:2:2', cuda_graphs=True)  # captures now
    x = torch.randn(2, 3, *SIZE)
    close(runner(x)['heatmaps'], reference(model_dir, 'pose', x)['heatmaps'])
    assert not errors and len(runner._graphs.captured) == 1
    assert cuda.events('capture_begin')[0][3] == 'thread_local'


@pytest.mark.parametrize('flip_test', [False, True])
def test_torch_graphs_are_captured_at_configure_only(monkeypatch, cuda, model_dir, flip_test):
    """
    Torch CUDA graphs: every capture happens when the runner is made, whatever comes later.

    The pose runner of a pipeline config with max_persons 4 captures its crop batches (1, 2, 4;
    with flip_test 1, 2, 4, 8) at configure. Then person counts go up and down, past the
    maximum too: no capture follows, every batch replays captured graphs, outputs are right.
    """
    from sapiens_ros.backends.factory import graph_batches_of
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    batches = graph_batches_of('pose', PipelineConfig(max_persons=4, flip_test=flip_test))
    assert batches == ((1, 2, 4, 8) if flip_test else (1, 2, 4))
    assert graph_batches_of('seg', PipelineConfig(max_persons=4)) == (1,)
    runner = make_runner('pose', 'torch', str(model_dir / 'pose'), device='cuda:0',
                         input_size=SIZE, cuda_graphs=True, graph_batches=batches)
    assert runner.name == 'torch+cudagraphs'
    captured = len(cuda.events('capture_begin'))
    assert captured == len(batches)
    for persons in (3, 1, 0, 4, 7, 2, 9):
        n = persons * (2 if flip_test else 1)
        if n == 0:
            continue  # the pipeline runs no pose forward without a person
        x = torch.randn(n, 3, *SIZE)
        close(runner(x)['heatmaps'], reference(model_dir, 'pose', x)['heatmaps'])
    assert len(cuda.events('capture_begin')) == captured  # nothing captured mid-stream
    assert cuda.events('replay')


def test_a_thread_without_its_device_guard_is_caught(monkeypatch, cuda, model_dir, tmp_path):
    """
    Two threads, two GPUs: the per-thread current device catches a forgotten device guard.

    Thread A holds a guard for cuda:1 while thread B runs the cuda:1 engine. The runner's own
    guard makes B right; without it B runs on its own current device (0, CUDA's per-thread
    default) and TensorRT refuses the engine. A fake with one current device for the process
    would let B borrow A's guard and pass by luck.
    """
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path)  # built and loaded on cuda:1
    x = torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']

    def run_in_threads(fn):
        holding, done, results = threading.Event(), threading.Event(), {}

        def thread_a():
            with cuda.on_this_thread(), torch.cuda.device(1):
                holding.set()
                done.wait(timeout=600)

        def thread_b():
            holding.wait(timeout=600)
            try:
                with cuda.on_this_thread():
                    results['b'] = fn(x)
            except Exception as exc:  # noqa: B902 - recorded for the assertion
                results['b'] = exc
            finally:
                done.set()

        threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        return results['b']

    close(run_in_threads(runner)['heatmaps'], want)  # the runner's guard: right

    def unguarded(x):  # the runner's body without its device guard
        return runner._run(x.to(runner.device).contiguous())

    error = run_in_threads(unguarded)
    assert isinstance(error, EngineError) and 'execution failed' in str(error)
    assert cuda.current_device_index == 0  # the main thread never saw either guard


# --------------------------------------------------------------------------- TensorRT build
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
    does (node name, then ``_<counter>`` for a node's further layers). A layer with an integer
    input pinned under OBEY_PRECISION_CONSTRAINTS would fail the fake build.
    """
    x = torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path, dtype='fp16')
    build = trt.fake_state.builds[-1]
    assert {'FP16', 'OBEY_PRECISION_CONSTRAINTS'} <= set(build['flags'])
    assert not build['strongly_typed']
    pinned = set(build['pinned'])
    # the head's instance norms, the RMSNorm decomposition and the RoPE rotation
    assert {'node_instance_norm', 'node_pow_1', 'node_rsqrt', 'node_neg'} <= pinned
    assert not build['pinned_integer']  # shape arithmetic (int64) is never pinned
    assert not any(name.startswith(('node_Shape', 'node_MatMul')) for name in pinned)
    assert engine_header(runner.path)['weak_precision'] == 'fp16'
    close_bf16(runner(x)['heatmaps'], want)  # fp16 weights (norms kept fp32): close to torch


@pytest.mark.parametrize('version,ok', [
    ('10.3.0', True),   # weak typing: the BF16 flag on an fp32 graph
    ('10.12.0', True),  # deprecated but still there: builds, with a warning
    ('11.0.0', False),  # removed: a bf16 engine needs a bf16 graph
])
def test_bf16_from_a_given_fp32_graph_per_tensorrt_version(monkeypatch, cuda, cache_dir,
                                                           version, ok, caplog):
    """A user's own fp32 graph: the plan builds bf16 from it where TensorRT still can."""
    trt = use_tensorrt(monkeypatch, cuda, version)
    (graph,) = (cache_dir / 'onnx').glob('pose-*-fp32-*.onnx')
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


def test_bf16_graph_is_refused_by_tensorrt_10_3(monkeypatch, cuda, cache_dir):
    """A bf16 graph needs opset 22, beyond the opset 20 TensorRT 10.3's parser documents."""
    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    (graph,) = (cache_dir / 'onnx').glob('pose-*-bf16-*.onnx')
    with pytest.raises(EngineError, match=r'opset 22 is beyond .* \(opset 20\)'):
        make_runner('pose', 'tensorrt', str(graph), dtype='bf16', device='cuda:0',
                    batch='1:1:2', cache_dir=cache_dir, progress=False)
    logger = tensorrt_build.trt_logger(trt)  # and the parser itself would refuse it
    parser = trt.OnnxParser(trt.Builder(logger).create_network(0), logger)
    assert not parser.parse_from_file(str(graph))
    assert 'opset 22 is beyond the opset 20' in parser.get_error(0)


def test_fake_parser_refuses_what_tensorrt_cannot_take(monkeypatch, model_dir, tmp_path):
    """
    The fake parser refuses the opset-18 bf16 graph (bf16 Conv), undocumented opsets and ops.

    The opset-18 bf16 graph is what the export produced before the precision plan: built here
    with the exporter directly, as it did (before the fake CUDA goes in).
    """
    model = load_model('pose', str(model_dir / 'pose')).to(torch.bfloat16)
    bad = tmp_path / 'pose-bf16-op18.onnx'
    dim = torch.export.Dim('batch', min=1, max=64)
    torch.onnx.export(ExportWrapper(model, ('heatmaps',)).eval(),
                      (torch.randn(2, 3, *SIZE),), str(bad), dynamo=True, opset_version=18,
                      input_names=[INPUT_NAME], output_names=['heatmaps'],
                      dynamic_shapes=({0: dim},), verbose=False)
    cuda = FakeCuda().install(monkeypatch)
    monkeypatch.setattr(tensorrt_build, '_LOGGER', None)
    trt = use_tensorrt(monkeypatch, cuda, '11.0.0')
    try:
        _check_refusals(trt, bad, tmp_path)
    finally:
        cuda.uninstall()


def _check_refusals(trt, bad, tmp_path):
    import onnx
    from onnx import helper, TensorProto

    def parse(path):
        logger = tensorrt_build.trt_logger(trt)
        parser = trt.OnnxParser(trt.Builder(logger).create_network(0), logger)
        ok = parser.parse_from_file(str(path))
        return ok, ' '.join(parser.get_error(i) for i in range(parser.num_errors))

    ok, errors = parse(bad)
    assert not ok and 'Conv' in errors and 'bfloat16' in errors
    with pytest.raises(EngineError, match='cannot parse .*bfloat16'):  # so does the builder
        tensorrt_build.build_engine(bad, plan=plan_precision('fp32', '11.0.0'),
                                    batch=(1, 1, 2), progress=False)
    vector, ints = ([1, 4], [1, 4]), TensorProto.INT32
    for node, opset, (xs, ys), kind in (
            (helper.make_node('Relu', ['x'], ['y']), 26, vector, 1),  # beyond 11.x's 25
            (helper.make_node('Gelu', ['x'], ['y']), 20, vector, 1),  # in the matrix: parses
            (helper.make_node('Hardmax', ['x'], ['y'], axis=1), 20, vector, 1),
            (helper.make_node('Det', ['x'], ['y']), 20, ([4, 4], []), 1),  # not in the matrix
            (helper.make_node('MatMul', ['x', 'x'], ['y']), 20, ([4, 4], [4, 4]), ints)):
        graph = helper.make_graph([node], 'g', [helper.make_tensor_value_info(
            'x', kind, xs)], [helper.make_tensor_value_info('y', kind, ys)])
        path = tmp_path / f'{node.op_type}.onnx'
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)]),
                  str(path))
        ok, errors = parse(path)
        if node.op_type == 'Relu':
            assert not ok and 'opset 26 is beyond the opset 25' in errors
        elif node.op_type == 'Det':
            assert not ok and 'No importer registered for op: Det' in errors
        elif node.op_type == 'MatMul':  # valid ONNX, but TensorRT multiplies floats only
            assert not ok and 'input type INT32 is not supported' in errors
        else:
            assert ok, errors


def test_unparsable_graph_is_a_clear_error(monkeypatch, cuda, tmp_path):
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    bad = tmp_path / 'pose.onnx'
    bad.write_bytes(b'\x08\x01garbage')
    with pytest.raises(EngineError, match='cannot parse pose.onnx'):
        tensorrt_build.build_engine(bad, plan=plan_precision('fp32', '10.3.0'),
                                    batch=(1, 1, 2), progress=False)


# --------------------------------------------------------------------------- accuracy gate
@pytest.mark.parametrize('miscompute', ['wrong', 'nan'])
def test_wrong_engine_is_refused_not_cached_and_torch_serves(monkeypatch, cuda, model_dir,
                                                             tmp_path, caplog, miscompute):
    """
    An engine that computes wrong outputs is refused before it is cached; torch serves the head.

    The fake engine shifts (or NaNs) its outputs, as the miscompiled ViT builds of TensorRT 10.3
    and 10.16 did; the gate compares it with the fp32 torch model on the sample photo.
    """
    x = torch.randn(2, 3, *SIZE)
    want = reference(model_dir, 'pose', x)['heatmaps']
    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    trt.fake_state.miscompute = miscompute
    with caplog.at_level(logging.WARNING):
        runner = trt_runner(model_dir, tmp_path)
    assert len(trt.fake_state.builds) == 1  # built, then refused
    assert runner.name == 'torch'
    close(runner(x)['heatmaps'], want)
    cached = [p.name for p in (tmp_path / 'cache' / 'engines').glob('*') if p.suffix != '.lock']
    assert not cached, 'a refused engine was cached'
    lines = [r.getMessage() for r in caplog.records if 'refused' in r.getMessage()]
    assert len(lines) == 1
    assert 'TensorRT 10.3.0 engine for pose (fp32) refused' in lines[0]
    assert 'heatmaps: max abs error' in lines[0] and 'Fix: upgrade TensorRT' in lines[0]
    assert 'next backend: torch fp32' in lines[0]


def test_correct_engine_is_cached_with_its_error(monkeypatch, cuda, model_dir, tmp_path):
    """A correct engine is cached with its max and mean error per output in the sidecar."""
    import json

    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path, dtype='bf16')
    assert runner.name == 'tensorrt'
    record = json.loads(runner.path.with_suffix('.json').read_text())['accuracy']
    assert record['ok'] and record['precision'] == 'bf16' and record['batch'] == 2
    assert 0 < record['max_abs']['heatmaps'] <= 1e-2 + 1e-1 * record['scale']['heatmaps']
    assert 0 < record['mean_abs']['heatmaps'] <= record['max_abs']['heatmaps']
    again = trt_runner(model_dir, tmp_path, dtype='bf16')
    assert again.path == runner.path and len(trt.fake_state.builds) == 1  # no rebuild


def test_engine_cached_before_the_gate_is_measured_once(monkeypatch, cuda, model_dir,
                                                        tmp_path):
    """An engine whose sidecar has no report is measured, and refused if it is wrong."""
    import json

    trt = use_tensorrt(monkeypatch, cuda, '10.3.0')
    runner = trt_runner(model_dir, tmp_path)
    sidecar = runner.path.with_suffix('.json')
    data = json.loads(sidecar.read_text())
    del data['accuracy']
    sidecar.write_text(json.dumps(data))
    again = trt_runner(model_dir, tmp_path, allow_build=False)  # measuring is not building
    assert again.path == runner.path and len(trt.fake_state.builds) == 1
    assert json.loads(sidecar.read_text())['accuracy']['ok']
    sidecar.write_text(json.dumps(data))
    trt.fake_state.miscompute = 'wrong'  # the cached engine turns out wrong: removed
    assert trt_runner(model_dir, tmp_path).name == 'torch'
    assert not runner.path.exists() and len(trt.fake_state.builds) == 1  # removed, not rebuilt


# --------------------------------------------------------------------------- timing, parity
def test_stage_timer_records_on_the_pipeline_device(cuda):
    """The pipeline on cuda:1 times its stages on cuda:1, whatever device is current."""
    timer = StageTimer(torch.device('cuda', 1))
    timer.mark('preprocess')
    timer.mark('forward')
    times = timer.result()
    records = cuda.events('event_record')
    assert len(records) == 3 and all(device == 1 for _, _, device in records)
    assert set(times) == {'preprocess', 'forward', 'total'}


def test_parity_check_runs_on_the_model_gpu(monkeypatch, cuda, cache_dir, model_dir):
    """The export's parity check opens ONNX Runtime on the model's GPU index, not GPU 0."""
    from sapiens_ros.backends import export

    ort = make_onnxruntime_gpu(cuda)
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    (graph,) = (cache_dir / 'onnx').glob('pose-*-fp32-*.onnx')
    session = export._ort_session(graph, torch.device('cuda', 1))
    assert session.providers[0] == 'CUDAExecutionProvider' and session.device_id == 1
    wrapper = ExportWrapper(load_model('pose', str(model_dir / 'pose')), ('heatmaps',))
    report = export.check_parity(graph, wrapper, SIZE, (1, 2, 4), device=torch.device('cuda', 1))
    assert report.provider == 'CUDAExecutionProvider' and ort.sessions[-1].device_id == 1


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


@pytest.mark.parametrize('version,flag', [('10.3.0', 'True'), ('11.0.0', None)])
def test_onnxruntime_tensorrt_provider_options(monkeypatch, cuda, model_dir, cache_dir,
                                               version, flag, caplog):
    """
    Use the TensorRT provider of ORT only on request, then with cache, profile, precision.

    Its fp16 flag is TensorRT's weak typing: set on 10.x, never on 11, which removed it (the
    engine then follows the graph's dtype, and a warning says so).
    """
    ort = make_onnxruntime_gpu(cuda)
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    use_tensorrt(monkeypatch, cuda, version)
    monkeypatch.setattr(tensorrt_build, 'installed_tensorrt_version', lambda: version)
    make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), device='cuda:0',
                input_size=SIZE, cache_dir=cache_dir, batch='1:2:4')
    assert ort.sessions[-1].providers[0] == 'CUDAExecutionProvider'  # not tried by default
    with caplog.at_level(logging.WARNING):
        make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), device='cuda:0',
                    input_size=SIZE, cache_dir=cache_dir, batch='1:2:4', dtype='fp16',
                    providers=['tensorrt', 'cuda'])
    session = ort.sessions[-1]
    options = session.provider_options['TensorrtExecutionProvider']
    assert options['trt_engine_cache_enable'] == 'True'
    assert options['trt_engine_cache_path'].startswith(str(cache_dir))
    assert options['trt_profile_min_shapes'] == 'pixel_values:1x3x256x192'
    assert options['trt_profile_max_shapes'] == 'pixel_values:4x3x256x192'
    assert options.get('trt_fp16_enable') == flag
    assert 'trt_bf16_enable' not in options
    assert ('removed in TensorRT 11' in caplog.text) is (flag is None)


@contextlib.contextmanager
def kept_records(prefix: str):
    """Keep the INFO+ records of every logger under ``prefix`` (at each logger, not the root)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):

        def emit(self, record: logging.LogRecord) -> None:
            if not any(r is record for r in records):
                records.append(record)

    handler = Keep(logging.INFO)
    names = [prefix] + [n for n in logging.root.manager.loggerDict if n.startswith(prefix + '.')]
    loggers = [logging.getLogger(n) for n in names]
    saved = [(lg.level, lg.disabled) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
        lg.disabled = False
    try:
        yield records
    finally:
        for lg, (level, disabled) in zip(loggers, saved, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.disabled = disabled


@pytest.mark.parametrize('version,sent', [('1.20.0', False), ('1.23.0', True)])
def test_jetpack6_onnxruntime_gets_no_bf16_key(monkeypatch, cuda, model_dir, cache_dir,
                                               version, sent, caplog):
    """
    ONNX Runtime before 1.23 (JetPack 6 ships 1.18-1.20) refuses ``trt_bf16_enable``.

    Real ONNX Runtime raises "Invalid TensorRT EP option" and its Python API then falls back to
    the CUDA provider on GPU 0 with a print; the fake of that version does the same. The runner
    sends the key only to a version that knows it, and says what the session really got.
    """
    ort = make_onnxruntime_gpu(cuda, version)
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    monkeypatch.setattr(tensorrt_build, 'installed_tensorrt_version', lambda: '10.3.0')
    (graph,) = (cache_dir / 'onnx').glob('pose-*-fp32-*.onnx')
    refused = ort.InferenceSession(
        graph, providers=['TensorrtExecutionProvider', 'CPUExecutionProvider'],
        provider_options=[{'device_id': '1', 'trt_bf16_enable': 'True'}, {}])
    if not sent:  # what the fake models: the refusal and Python's silent fallback
        assert ort.ep_errors == ['Invalid TensorRT EP option: trt_bf16_enable']
        assert refused.get_providers()[0] == 'CUDAExecutionProvider'
        assert refused.device_id == 0  # the fallback drops every option, the GPU index too
    ort.ep_errors.clear()
    # records kept at the backends' loggers themselves: other tests of the same process may
    # have configured logging (a CLI run's basicConfig), which propagation then depends on
    with kept_records('sapiens_ros.backends') as records:
        runner = make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), device='cuda:1',
                             input_size=SIZE, cache_dir=cache_dir, batch='1:2:2', dtype='bf16',
                             providers=['tensorrt', 'cuda'])
    session = ort.sessions[-1]
    assert not ort.ep_errors and session.providers[0] == 'TensorrtExecutionProvider'
    options = session.get_provider_options()['TensorrtExecutionProvider']
    assert ('trt_bf16_enable' in options) is sent and options['device_id'] == '1'
    assert runner.precision == ('bf16' if sent else 'fp32')
    lines = [r.getMessage() for r in records]
    assert any('session: TensorrtExecutionProvider (' + runner.precision + ', device 1)' in line
               for line in lines), lines
    assert any('no trt_bf16_enable (added in 1.23)' in line for line in lines) is not sent
    assert any('dtype bf16 is not applied' in line for line in lines) is not sent


def test_onnxruntime_ignored_dtype_is_a_warning(monkeypatch, cuda, model_dir, cache_dir,
                                                caplog):
    """A dtype the CUDA provider does not apply (it never casts a graph) is a warning."""
    ort = make_onnxruntime_gpu(cuda, '1.20.0')
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    with caplog.at_level(logging.WARNING):
        runner = make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), device='cuda:0',
                             input_size=SIZE, cache_dir=cache_dir, dtype='fp16')
    assert runner.providers[0] == 'CUDAExecutionProvider' and runner.precision == 'fp32'
    assert 'dtype fp16 is not applied: CUDAExecutionProvider runs the fp32 graph' in caplog.text


def test_onnxruntime_tensorrt_engine_is_gated(monkeypatch, cuda, model_dir, cache_dir, caplog):
    """
    ONNX Runtime's TensorRT engine is measured once; a wrong one is refused and removed.

    The refused engine's files (written by ONNX Runtime into ``ort_trt/``) are deleted and the
    head runs on the next provider (CUDA); a correct engine leaves a passing record, and is not
    measured again while that record stands.
    """
    ort = make_onnxruntime_gpu(cuda, '1.20.0')
    monkeypatch.setitem(sys.modules, 'onnxruntime', ort)
    use_tensorrt(monkeypatch, cuda, '10.3.0')
    monkeypatch.setattr(tensorrt_build, 'installed_tensorrt_version', lambda: '10.3.0')
    options = {'device': 'cuda:0', 'input_size': SIZE, 'cache_dir': cache_dir,
               'batch': '1:2:2', 'dtype': 'fp16', 'providers': ['tensorrt', 'cuda']}
    ort.miscompute = 'wrong'
    with caplog.at_level(logging.WARNING):
        runner = make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), **options)
    assert runner.providers[0] == 'CUDAExecutionProvider'
    assert not list((cache_dir / 'ort_trt').glob('*.engine'))  # ORT's engine removed
    lines = [r.getMessage() for r in caplog.records if 'refused' in r.getMessage()]
    assert len(lines) == 1 and 'ONNX Runtime 1.20.0 TensorRT 10.3.0 engine for pose' in lines[0]
    assert 'next provider: CUDAExecutionProvider' in lines[0]
    ort.miscompute = None
    runner = make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), **options)
    assert runner.providers[0] == 'TensorrtExecutionProvider'
    (record,) = (cache_dir / 'ort_trt').glob('*.accuracy.json')
    assert '-fp16-b1-2-2-ort1.20.0-trt10.3.0-' in record.name
    ort.miscompute = 'wrong'  # measured once: the record stands, nothing is run again
    again = make_runner('pose', 'onnxruntime', str(model_dir / 'pose'), **options)
    assert again.providers[0] == 'TensorrtExecutionProvider'
