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
TensorRT engine cache key/invalidation, the precision plan, and clear errors without TensorRT.

TensorRT and CUDA cannot exist on this CPU machine, so the cache logic runs with an injected
``build`` function that returns fake engine bytes (the only mock here), and the missing-library
paths are exercised for real (``tensorrt`` is not installed; a CUDA-less torch is forced with
monkeypatch where the test must not depend on the machine). The precision plan is pure Python
and is checked for every TensorRT version. GPU tests are marked ``gpu``.
"""

import json
import logging
import sys

import pytest
from sapiens_ros.backends.artifact_cache import (ArtifactCache, default_cache_dir, EngineKey,
                                                 export_command, get_engine)
from sapiens_ros.backends.artifacts import SIDECAR_VERSION
from sapiens_ros.backends.errors import BackendUnavailableError, EngineError, EngineNotBuiltError
from sapiens_ros.backends.factory import check_backend, make_runner
from sapiens_ros.backends.precision import (default_precision, ort_tensorrt_precision,
                                            parse_version, plan_precision)
from sapiens_ros.backends.tensorrt_build import (import_tensorrt, layer_matches, pin_fp32,
                                                 require_cuda)
from sapiens_ros.core.errors import UnknownTaskError
import torch

HAS_CUDA = torch.cuda.is_available()
gpu = pytest.mark.gpu


def key(**changes) -> EngineKey:
    base = {'weights_hash': '0123456789abcdef', 'task': 'pose', 'input_size': (1024, 768),
            'batch': (1, 2, 8), 'precision': 'bf16', 'trt_version': '10.3.0',
            'gpu_name': 'Orin', 'compute_capability': (8, 7)}
    base.update(changes)
    return EngineKey(**base)


def plan_of(k: EngineKey):
    """Return the precision plan that makes key ``k``."""
    return plan_precision(k.precision, k.trt_version, compute_capability=k.compute_capability,
                          graph_dtype=k.graph_dtype, opset=k.opset)


class FakeBuild:
    """Stands in for the TensorRT builder (not installable here): counts builds."""

    def __init__(self) -> None:
        self.calls = []

    def __call__(self, onnx_path, *, plan, batch, timing_cache, progress, device_index):
        self.calls.append((str(onnx_path), plan.precision, batch, str(timing_cache),
                           device_index))
        return f'engine {len(self.calls)} {plan.precision} {batch}'.encode()


def engine(onnx_path, k: EngineKey, **options):
    """``get_engine`` with the plan of ``k``."""
    return get_engine(onnx_path, k, plan_of(k), **options)


@pytest.fixture
def onnx_file(tmp_path):
    path = tmp_path / 'pose.onnx'
    path.write_bytes(b'not really onnx; the fake builder never reads it')
    return path


def test_slot_names_model_gpu_and_tensorrt():
    """Machines sharing a cache dir each keep their engines: the slot names GPU and TensorRT."""
    a = key()
    for other in (key(weights_hash='f' * 16), key(task='seg'), key(input_size=(768, 576)),
                  key(batch=(1, 1, 8)), key(precision='fp16'), key(graph_dtype='bf16'),
                  key(recipe=0), key(gpu_name='RTX 4090', compute_capability=(8, 9)),
                  key(opset=22), key(typing='strong'),
                  key(trt_version='10.7.0')):
        assert other.slot() != a.slot()
    assert a.slot().startswith('pose-768x1024-b1-2-8-bf16-Orin-sm87-trt10.3.0-')  # WxH
    assert a.to_json()['input_size'] == '768x1024' and a.input_size == (1024, 768)


def test_key_json_round_trip_and_validation():
    a = key()
    assert EngineKey.from_json(json.loads(json.dumps(a.to_json()))) == a
    assert a.differences(key(gpu_name='RTX 4090')) == ['gpu_name: RTX 4090 -> Orin']
    with pytest.raises(ValueError, match='precision'):
        key(precision='int8')


def test_store_and_lookup(tmp_path):
    cache = ArtifactCache(tmp_path)
    assert not cache.lookup(key()).hit
    path = cache.store(key(), b'engine-bytes')
    sidecar = json.loads(cache.sidecar_path(path).read_text())
    assert sidecar['key'] == key().to_json() and sidecar['sidecar_version'] == SIDECAR_VERSION
    assert sidecar['files'][0]['bytes'] == len(b'engine-bytes')
    assert cache.lookup(key()).hit
    assert path.parent == tmp_path / 'engines'
    assert not list(path.parent.glob('*.tmp'))


@pytest.mark.parametrize('other,reason', [
    ({'gpu_name': 'RTX 4090', 'compute_capability': (8, 9)}, 'gpu_name: Orin -> RTX 4090'),
    ({'trt_version': '10.7.0'}, 'trt_version: 10.3.0 -> 10.7.0'),
    ({'graph_dtype': 'bf16'}, 'graph_dtype: fp32 -> bf16'),
])
def test_lookup_rejects_other_setup(tmp_path, other, reason):
    cache = ArtifactCache(tmp_path)
    path = cache.store(key(), b'engine-bytes')
    found = cache.lookup(key(**other), path)  # e.g. an engine file passed explicitly
    assert not found.hit
    assert 'made for another key' in found.reason and reason in found.reason


def test_lookup_detects_corruption(tmp_path):
    cache = ArtifactCache(tmp_path)
    path = cache.store(key(), b'engine-bytes')
    path.write_bytes(b'engine-byt')  # truncated
    assert 'truncated or corrupt' in cache.lookup(key()).reason
    path.write_bytes(b'ENGINE-bytes')  # same size, other content
    assert 'bytes changed' in cache.lookup(key()).reason
    sidecar = json.loads(cache.sidecar_path(path).read_text())
    sidecar['sidecar_version'] = 1
    cache.sidecar_path(path).write_text(json.dumps(sidecar))
    assert 'version 1' in cache.lookup(key()).reason
    cache.sidecar_path(path).write_text('{not json')
    assert 'unreadable' in cache.lookup(key()).reason
    cache.sidecar_path(path).unlink()
    assert 'no sidecar' in cache.lookup(key()).reason


def test_get_engine_builds_once_then_reuses(tmp_path, onnx_file, caplog):
    cache, build = ArtifactCache(tmp_path), FakeBuild()
    first = engine(onnx_file, key(), cache=cache, build=build, progress=False)
    again = engine(onnx_file, key(), cache=cache, build=build, progress=False)
    with pytest.raises(ValueError, match='was not made by the plan'):
        get_engine(onnx_file, key(), plan_precision('fp16', '10.3.0'), cache=cache,
                   build=build)
    assert first == again and len(build.calls) == 1
    assert build.calls[0][1:3] == ('bf16', (1, 2, 8))
    engine(onnx_file, key(gpu_name='A100'), cache=cache, build=build, progress=False,
           device_index=1)
    assert build.calls[-1][4] == 1  # built on the requested GPU, not the current one
    timing = build.calls[0][3]
    assert timing == str(cache.timing_cache_path('10.3.0', 'Orin', (8, 7)))
    assert 'trt10.3.0-Orin-sm8.7' in timing


@pytest.mark.parametrize('damage', ['other_gpu', 'other_trt', 'corrupt'])
def test_get_engine_rebuilds_stale_with_log_line(tmp_path, onnx_file, caplog, damage):
    cache, build = ArtifactCache(tmp_path), FakeBuild()
    path = engine(onnx_file, key(), cache=cache, build=build, progress=False)
    want = key()
    if damage == 'other_gpu':
        want = key(gpu_name='RTX 4090', compute_capability=(8, 9))
    elif damage == 'other_trt':
        want = key(trt_version='10.7.0')
    else:
        path.write_bytes(b'garbage')
    with caplog.at_level(logging.INFO, logger='sapiens_ros.backends.artifact_cache'):
        rebuilt = engine(onnx_file, want, cache=cache, build=build, progress=False)
    assert len(build.calls) == 2 and cache.lookup(want).hit
    if damage == 'corrupt':
        assert rebuilt == path and 'rebuilding the TensorRT engine' in caplog.text
    else:  # another machine's engine stays; this one gets its own slot
        assert rebuilt != path and cache.lookup(key()).hit and 'building it' in caplog.text
        path = rebuilt
    assert EngineKey.from_json(json.loads(cache.sidecar_path(path).read_text())['key']) == want


def test_refuse_to_build_prints_export_command(tmp_path, onnx_file):
    with pytest.raises(EngineNotBuiltError) as err:
        engine(onnx_file, key(), cache=ArtifactCache(tmp_path), build=FakeBuild(),
               allow_build=False, source='/models/pose')
    msg = str(err.value)
    assert 'building on start is disabled' in msg
    assert ('sapiens-ros export --task pose --model /models/pose --input-size 768x1024 '
            '--batch 1:2:8 --dtype bf16') in msg and '--engine' in msg


def test_missing_onnx_is_an_error(tmp_path):
    with pytest.raises(EngineNotBuiltError, match='missing'):
        engine(tmp_path / 'nope.onnx', key(), cache=ArtifactCache(tmp_path), build=FakeBuild())


def test_explicit_engine_path_uses_its_sidecar(tmp_path, onnx_file):
    cache, build = ArtifactCache(tmp_path / 'c'), FakeBuild()
    target = tmp_path / 'deploy' / 'pose.engine'
    assert engine(onnx_file, key(), cache=cache, engine_path=target, build=build) == target
    assert (tmp_path / 'deploy' / 'pose.json').is_file()
    engine(onnx_file, key(), cache=cache, engine_path=target, build=build)
    assert len(build.calls) == 1


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv('SAPIENS_ROS_CACHE', str(tmp_path / 'x'))
    assert default_cache_dir() == tmp_path / 'x'
    monkeypatch.delenv('SAPIENS_ROS_CACHE')
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'xdg'))
    assert default_cache_dir() == tmp_path / 'xdg' / 'sapiens_ros'


def test_export_command_from_key():
    cmd = export_command(key(precision='fp16', batch=(1, 1, 1)), source='/m', out='p.onnx')
    assert cmd == ('sapiens-ros export --task pose --model /m --input-size 768x1024 '
                   '--batch 1:1:1 --dtype fp16 --out p.onnx --engine')


def test_precision_defaults():
    assert default_precision((8, 7)) == 'bf16'  # Jetson Orin
    assert default_precision((8, 0)) == 'bf16'  # A100
    assert default_precision((7, 2)) == 'fp16'  # Jetson Xavier
    assert parse_version('10.3.0.30') == (10, 3, 0, 30)
    assert parse_version('10.12.0.36b') == (10, 12, 0, 36)


@pytest.mark.parametrize('version,precision,graph,typing,flags', [
    # JetPack 6: the parser documents opsets up to 20, so bf16/fp16 come from an fp32 graph
    ('10.3.0', 'bf16', ('fp32', 18), 'weak', ('BF16',)),
    ('10.3.0', 'fp16', ('fp32', 18), 'weak', ('FP16', 'OBEY_PRECISION_CONSTRAINTS')),
    ('10.3.0', 'fp32', ('fp32', 18), 'weak', ()),
    # weak typing deprecated: strongly typed from a graph in the target dtype
    ('10.12.0', 'bf16', ('bf16', 22), 'strong', ()),
    ('10.12.0', 'fp16', ('fp16', 18), 'strong', ()),
    ('10.12.0', 'fp32', ('fp32', 18), 'strong', ()),
    # weak typing removed
    ('11.0.0', 'bf16', ('bf16', 22), 'strong', ()),
    ('11.0.0', 'fp16', ('fp16', 18), 'strong', ()),
    ('11.0.0', 'fp32', ('fp32', 18), 'strong', ()),
])
def test_precision_plan_per_version(version, precision, graph, typing, flags):
    """One plan per (TensorRT, precision): the graph to export, its typing, flags and pins."""
    plan = plan_precision(precision, version, compute_capability=(8, 7))
    assert (plan.graph_dtype, plan.opset) == graph
    assert plan.typing == typing and plan.builder_flags == flags
    assert plan.pin_fp32 is (flags != () and precision == 'fp16')
    assert plan.clear_flags == (('TF32',) if precision == 'fp32' else ())  # exact fp32
    assert not plan.warnings and 'STRICT_TYPES' not in plan.builder_flags
    k = EngineKey.for_plan(plan, weights_hash='0' * 16, task='pose', input_size=(1024, 768),
                           batch=(1, 1, 8), gpu_name='Orin')
    assert (k.graph_dtype, k.opset, k.typing) == (*graph, typing) and k.matches(plan)


def test_precision_plan_keys_separate_what_differs():
    """10.3 and 11 build bf16 from different graphs: their keys (and slots) differ."""
    common = {'weights_hash': '0' * 16, 'task': 'pose', 'input_size': (1024, 768),
              'batch': (1, 1, 8), 'gpu_name': 'NVIDIA H100'}
    keys = {v: EngineKey.for_plan(plan_precision('bf16', v, compute_capability=(9, 0)),
                                  **common) for v in ('10.3.0', '10.12.0', '11.0.0')}
    assert keys['10.3.0'].graph_dtype == 'fp32' and keys['11.0.0'].graph_dtype == 'bf16'
    assert len({k.slot() for k in keys.values()}) == 3


def test_precision_plan_for_a_given_graph():
    """A graph the user exported: the plan builds from it where TensorRT can, else says how."""
    plan = plan_precision('bf16', '10.12.0', graph_dtype='fp32')  # deprecated: builds, warns
    assert plan.builder_flags == ('BF16',) and 'deprecates' in plan.warnings[0]
    plan = plan_precision('bf16', '10.12.0', graph_dtype='bf16', opset=22)
    assert plan.strongly_typed and not plan.builder_flags
    plan = plan_precision('fp16', '10.3.0', graph_dtype='fp16')  # opset 18: 10.3 parses it
    assert plan.strongly_typed and not plan.pin_fp32
    with pytest.raises(EngineError, match='--dtype bf16'):
        plan_precision('bf16', '11.0.0', graph_dtype='fp32')  # flags removed
    with pytest.raises(EngineError, match=r'opset 22 is beyond .* \(opset 20\)'):
        plan_precision('bf16', '10.3.0', graph_dtype='bf16')  # JetPack's parser
    with pytest.raises(EngineError, match='--dtype fp16'):  # flag missing from this build
        plan_precision('fp16', '10.8.0', graph_dtype='fp32', builder_flags={'TF32', 'BF16'})
    plan = plan_precision('fp16', '10.8.0', builder_flags={'TF32', 'BF16'})
    assert plan.graph_dtype == 'fp16' and plan.strongly_typed  # then strongly typed
    with pytest.raises(EngineError, match='fp32 engine needs an fp32 graph'):
        plan_precision('fp32', '11.0.0', graph_dtype='bf16', opset=22)
    with pytest.raises(EngineError, match='compute capability >= 8.0'):
        plan_precision('bf16', '10.3.0', compute_capability=(7, 2))
    with pytest.raises(BackendUnavailableError, match='TensorRT >= 10.0'):
        plan_precision('fp16', '8.6.2')


def test_ort_tensorrt_provider_precision_flags():
    """Give the TensorRT provider of ORT the weak fp16/bf16 flags only where TensorRT has them."""
    assert ort_tensorrt_precision('fp16', '10.3.0') == ({'trt_fp16_enable': 'True'}, None)
    assert ort_tensorrt_precision('bf16', '10.12.0', ort_version='1.23.0') == (
        {'trt_bf16_enable': 'True'}, None)
    for old in ('1.20.0', '1.22.1', None):  # JetPack 6's ORT (1.18-1.20) rejects the key
        flags, note = ort_tensorrt_precision('bf16', '10.3.0', ort_version=old)
        assert flags == {} and 'no trt_bf16_enable (added in 1.23)' in note
    flags, note = ort_tensorrt_precision('bf16', '11.0.0')
    assert flags == {} and 'removed in TensorRT 11' in note
    assert ort_tensorrt_precision('bf16', '11.0.0', graph_dtype='bf16') == ({}, None)
    assert ort_tensorrt_precision('fp16', None)[0] == {}  # unknown TensorRT: nothing set
    assert ort_tensorrt_precision('fp32', '11.0.0') == ({}, None)


def test_pin_fp32_pins_float_layers_only():
    """
    FP16 pinning touches only float layers, never integer shape arithmetic or casts.

    Fake network: models layer types, names, input and output dtypes and the precision
    setters; not TensorRT's graph or builder.
    """
    from types import SimpleNamespace

    trt = SimpleNamespace(float32='f32', float16='f16', int32='i32', int64='i64',
                          LayerType=SimpleNamespace(NORMALIZATION='norm', CONSTANT='const',
                                                    SHAPE='shape', ELEMENTWISE='elt',
                                                    CAST='cast'))

    class Layer:

        def __init__(self, name, kind, dtypes, inputs=('f16',)):
            self.name, self.type, self.precision, self.set = name, kind, None, {}
            self._outs = [SimpleNamespace(dtype=d) for d in dtypes]
            self._ins = [SimpleNamespace(dtype=d) for d in inputs]
            self.num_outputs, self.num_inputs = len(dtypes), len(inputs)

        def get_output(self, j):
            return self._outs[j]

        def get_input(self, j):
            return self._ins[j]

        def set_output_type(self, j, dtype):
            self.set[j] = dtype

    layers = [Layer('node_pow_1', 'elt', ['f16']), Layer('ln', 'norm', ['f16']),
              Layer('node_rope_pos_2', 'elt', ['i64'], ['i64']),  # integer RoPE positions
              Layer('node_rope_cast_4', 'cast', ['f16'], ['i64']),  # their cast to float
              Layer('node_rope_mul_5', 'elt', ['f16'], ['f16', 'i32']),  # an integer input
              Layer('node_rope_cos_3', 'const', ['f16']), Layer('node_MatMul_9', 'elt', ['f16'])]
    network = SimpleNamespace(num_layers=len(layers), get_layer=lambda i: layers[i])
    names = {'node_pow_1', 'node_rope_pos_2', 'node_rope_cos_3', 'node_rope_cast_4',
             'node_rope_mul_5'}
    assert pin_fp32(trt, network, names) == 2
    assert [layer.precision for layer in layers] == ['f32', 'f32'] + [None] * 5
    assert layers[0].set == {0: 'f32'} and all(not layer.set for layer in layers[2:])


def test_layer_matches():
    """Match names as the ONNX parser of TensorRT gives them: the node's, then _<n>."""
    names = {'node_pow_1', 'node_Sqrt_66', 'node_of_val_12'}
    assert layer_matches('node_pow_1', names)
    assert layer_matches('node_Sqrt_66_1042', names)
    assert layer_matches('node_of_val_12', names)  # an unnamed node, named by its output
    assert not layer_matches('node_MatMul_68', names)
    assert not layer_matches('node_pow_12', names)
    assert not layer_matches('node_Sqrt_66_output_0', names)


def test_missing_tensorrt_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, 'tensorrt', None)  # behave as if not installed
    with pytest.raises(BackendUnavailableError, match='pip install tensorrt') as err:
        import_tensorrt()
    assert 'JetPack' in str(err.value)
    with pytest.raises(BackendUnavailableError, match='pip install tensorrt'):
        make_runner('pose', 'tensorrt', '/nonexistent/pose')


def test_missing_cuda_names_the_fix(monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    with pytest.raises(BackendUnavailableError, match='CUDA build of torch'):
        require_cuda()


def test_backend_names():
    assert check_backend('TRT') == 'tensorrt'
    assert check_backend('ort') == 'onnxruntime'
    with pytest.raises(UnknownTaskError, match='torch, onnxruntime, tensorrt'):
        check_backend('openvino')


@gpu
@pytest.mark.skipif(not HAS_CUDA, reason='needs CUDA')
def test_gpu_tensorrt_engine_matches_torch(tmp_path):
    """Build a real fp32 engine from a tiny pose graph and compare with torch."""
    pytest.importorskip('tensorrt')
    from sapiens_ros.backends.factory import make_runner
    from sapiens_ros.backends.torch_runner import TorchRunner
    from sapiens_ros.core.models.configs import random_model

    model = random_model('pose', input_size=(256, 192))
    model.save_pretrained(tmp_path / 'pose')
    runner = make_runner('pose', 'tensorrt', str(tmp_path / 'pose'), dtype='fp32',
                         device='cuda', input_size=(256, 192), batch='1:2:4',
                         cache_dir=tmp_path / 'cache', progress=False)
    ref = TorchRunner('pose', model.cuda())
    x = torch.randn(3, 3, 256, 192, device='cuda')
    got, want = runner(x)['heatmaps'], ref(x)['heatmaps']
    assert (got - want).abs().max().item() < 1e-2 * want.abs().max().item()
    again = make_runner('pose', 'tensorrt', str(tmp_path / 'pose'), dtype='fp32',
                        device='cuda', input_size=(256, 192), batch='1:2:4',
                        cache_dir=tmp_path / 'cache', allow_build=False)
    assert again.path == runner.path


@gpu
@pytest.mark.skipif(not HAS_CUDA, reason='needs CUDA')
def test_gpu_torch_cuda_graphs_match_eager():
    from sapiens_ros.backends.torch_runner import AcceleratedTorchRunner, TorchRunner
    from sapiens_ros.core.models.configs import random_model

    model = random_model('seg', input_size=(256, 192)).cuda()
    fast = AcceleratedTorchRunner('seg', model, cuda_graphs=True, graph_batches=(2,))
    x = torch.randn(2, 3, 256, 192, device='cuda')
    want = TorchRunner('seg', model)(x)['logits'].clone()
    for _ in range(3):
        got = fast(x)['logits']
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@gpu
@pytest.mark.skipif(not HAS_CUDA, reason='needs CUDA')
def test_gpu_ort_cuda_iobinding(tmp_path):
    ort = pytest.importorskip('onnxruntime')
    if 'CUDAExecutionProvider' not in ort.get_available_providers():
        pytest.skip('onnxruntime-gpu not installed')
    from sapiens_ros.backends.export import export_onnx
    from sapiens_ros.backends.onnxruntime_runner import OnnxRuntimeRunner
    from sapiens_ros.backends.torch_runner import TorchRunner
    from sapiens_ros.core.models.configs import random_model

    model = random_model('normal', input_size=(256, 192))
    export_onnx(model, 'normal', tmp_path / 'n.onnx', input_size=(256, 192))
    runner = OnnxRuntimeRunner('normal', tmp_path / 'n.onnx', device='cuda', providers=['cuda'])
    x = torch.randn(2, 3, 256, 192, device='cuda')
    got = runner(x)['normals']
    assert got.device.type == 'cuda'
    want = TorchRunner('normal', model.cuda())(x)['normals']
    torch.testing.assert_close(got, want, atol=1e-3, rtol=1e-3)


def test_torch_backend_options_on_cpu(caplog):
    """The torch backend through the factory; CUDA graphs fall back to eager on CPU, loudly."""
    from sapiens_ros.backends.torch_runner import AcceleratedTorchRunner
    from sapiens_ros.core.models.configs import random_model

    model = random_model('normal', input_size=(256, 192))
    with caplog.at_level(logging.WARNING):
        runner = make_runner('normal', 'pytorch', model=model, cuda_graphs=True)
    assert isinstance(runner, AcceleratedTorchRunner) and runner.name == 'torch'
    assert 'cuda_graphs needs a CUDA device' in caplog.text
    out = runner(torch.randn(2, 3, 256, 192))
    assert out['normals'].shape == (2, 3, 256, 192)
