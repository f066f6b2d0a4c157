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
ONNX export with ONNX Runtime parity for every head, and the ONNX Runtime backend end to end.

Real exports (torch dynamo exporter) of tiny random Sapiens2 checkpoints written with
save_pretrained and loaded through the real loader, run by real ONNX Runtime sessions. The
(256, 192) graphs are exported once per module into the cache the ORT pipeline test reuses.
"""

import logging

import numpy as np
import pytest
from sapiens_ros.backends.errors import BackendUnavailableError, ExportError, ParityError
from sapiens_ros.backends.export import (check_parity, export_onnx, ExportWrapper, onnx_metadata,
                                         parse_batch)
from sapiens_ros.backends.factory import load_pipeline, make_runner
from sapiens_ros.backends.onnxruntime_runner import choose_providers, OnnxRuntimeRunner
from sapiens_ros.backends.tensorrt_build import fp32_node_names
from sapiens_ros.backends.torch_runner import TorchRunner
from sapiens_ros.core.errors import InputSizeError
from sapiens_ros.core.models.configs import random_model
from sapiens_ros.core.models.loading import load_model
from sapiens_ros.core.models.runners import OUTPUT_NAMES
from sapiens_ros.core.pipeline.pipeline import Pipeline, PipelineConfig
import skimage.data
import torch

TASKS = ('pose', 'seg', 'normal', 'pointmap')
SIZE = (256, 192)
SECOND = (320, 240)
BATCH = (1, 2, 4)


@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
    """Tiny random checkpoints, one per head, saved with save_pretrained."""
    root = tmp_path_factory.mktemp('ckpt')
    for i, task in enumerate(TASKS):
        random_model(task, input_size=SIZE, seed=10 + i).save_pretrained(root / task)
    return root


@pytest.fixture(scope='module')
def cache_dir(tmp_path_factory):
    """Engine/ONNX cache shared by the module."""
    return tmp_path_factory.mktemp('cache')


@pytest.fixture(scope='module')
def exported(checkpoints, cache_dir):
    """Each head exported at 256x192 (parity-checked on export) into the shared cache."""
    return {task: make_runner(task, 'onnxruntime', str(checkpoints / task), input_size=SIZE,
                              batch=BATCH, cache_dir=cache_dir).path for task in TASKS}


@pytest.fixture(scope='module')
def torch_models(checkpoints):
    """Load the same checkpoints as eager torch models."""
    return {t: load_model(t, str(checkpoints / t)) for t in TASKS}


@pytest.mark.parametrize('task', TASKS)
@pytest.mark.parametrize('batch', [1, 3])
def test_ort_matches_torch(task, batch, exported, torch_models):
    runner = OnnxRuntimeRunner(task, exported[task])
    ref = TorchRunner(task, torch_models[task])
    x = torch.randn(batch, 3, *SIZE, generator=torch.Generator().manual_seed(batch))
    got, want = runner(x), ref(x)
    assert tuple(got) == tuple(want) == OUTPUT_NAMES[task]
    for name in want:
        assert got[name].shape == want[name].shape
        assert got[name].dtype == torch.float32
        scale = want[name].abs().max().item()
        assert (got[name] - want[name]).abs().max().item() <= 1e-4 + 1e-3 * scale


@pytest.mark.parametrize('batch', [1, 3])
def test_io_binding_writes_into_torch_tensors(batch, exported):
    """The IOBinding path (the default on CUDA) exercised on CPU: same outputs as plain run."""
    bound = OnnxRuntimeRunner('pointmap', exported['pointmap'], io_binding=True)
    plain = OnnxRuntimeRunner('pointmap', exported['pointmap'])
    assert bound.io_binding and not plain.io_binding
    x = torch.randn(batch, 3, *SIZE)
    got, want = bound(x), plain(x)
    for name in ('pointmaps', 'scales'):
        assert got[name].shape == want[name].shape and got[name].shape[0] == batch
        torch.testing.assert_close(got[name], want[name], atol=0, rtol=0)


def test_export_metadata_and_outputs(exported, checkpoints):
    meta = onnx_metadata(exported['pointmap'])
    assert meta['task'] == 'pointmap'
    assert meta['input_size'] == '192x256'  # WIDTHxHEIGHT, as users write it; SIZE is (h, w)
    assert meta['outputs'] == 'pointmaps,scales'
    assert meta['dtype'] == 'fp32'
    runner = OnnxRuntimeRunner('pointmap', exported['pointmap'])
    assert runner.output_names == ('pointmaps', 'scales')
    assert runner.input_size == SIZE
    assert runner.providers == ['CPUExecutionProvider']


@pytest.mark.parametrize('task', ['pose', 'seg', 'normal'])
def test_second_input_size(task, checkpoints, tmp_path, monkeypatch, caplog):
    """Heads without a fixed-size MLP export at another size; options vary per head."""
    model = load_model(task, str(checkpoints / task))
    if task == 'normal':  # the > 2 GB path: weights in ONNX external data
        monkeypatch.setattr('sapiens_ros.backends.export.EXTERNAL_DATA_BYTES', 0)
    with caplog.at_level(logging.WARNING):
        result = export_onnx(model, task, tmp_path / f'{task}.onnx', input_size=SECOND,
                             batch='1:1:3')
    assert result.parity is not None and result.parity.batch == 3
    assert all(v < 1e-3 for v in result.parity.max_rel.values())
    runner = OnnxRuntimeRunner(task, result.path)
    assert runner.check_input_size(SECOND) == SECOND
    with pytest.raises(InputSizeError, match='240x320 .WIDTHxHEIGHT.'):
        runner.check_input_size(SIZE)
    out = runner(torch.randn(1, 3, *SECOND))
    assert set(out) == set(OUTPUT_NAMES[task])
    if task == 'normal':
        assert result.external_data
        assert (tmp_path / 'normal.onnx.data').is_file()
    else:
        assert not result.external_data
        assert not (tmp_path / f'{task}.onnx.data').exists()


@pytest.mark.parametrize('dtype,opset', [('bf16', 22), ('fp16', 18)])
def test_reduced_precision_export_is_valid_and_computes_as_claimed(
        dtype, opset, checkpoints, tmp_path, caplog):
    """
    A bf16/fp16 export made on the CPU is the graph a GPU would export, valid ONNX.

    It passes the ONNX checker with full_check (bf16 Conv needs opset 22), its metadata states
    its dtype and opset, and its convolutions and matmuls really compute in that dtype (the
    RMSNorm/RoPE islands in fp32, as in torch). Only the parity check is skipped, with a note.
    The caller's model is neither cast nor moved.
    """
    import onnx

    model = load_model('seg', str(checkpoints / 'seg'))
    with caplog.at_level(logging.WARNING):
        result = export_onnx(model, 'seg', tmp_path / f'seg-{dtype}.onnx', input_size=SIZE,
                             batch='1:1:2', dtype=dtype)
    assert next(model.parameters()).dtype == torch.float32  # not changed in place
    onnx.checker.check_model(str(result.path), full_check=True)
    meta = onnx_metadata(result.path)
    assert (meta['dtype'], meta['opset'], meta['io_dtype']) == (dtype, str(opset), 'fp32')
    assert result.exported_dtype == dtype and result.opset == opset
    assert result.parity is None and 'parity check skipped' in ' '.join(result.notes)
    graph = onnx.shape_inference.infer_shapes(onnx.load(str(result.path)))
    assert graph.opset_import[0].version == opset
    claimed = {'bf16': onnx.TensorProto.BFLOAT16, 'fp16': onnx.TensorProto.FLOAT16}[dtype]
    types = {v.name: v.type.tensor_type.elem_type for v in graph.graph.value_info}
    types.update({t.name: t.data_type for t in graph.graph.initializer})
    heavy = [n for n in graph.graph.node if n.op_type in ('Conv', 'ConvTranspose', 'MatMul')]
    assert heavy and all(types[n.input[0]] == claimed and types[n.input[1]] == claimed
                         for n in heavy)
    io = [graph.graph.input[0], graph.graph.output[0]]
    assert all(v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for v in io)


def test_reduced_precision_parity_without_kernels_is_skipped(checkpoints, tmp_path,
                                                             monkeypatch):
    """
    ONNX Runtime without bf16 kernels for an op (its CUDA EP has none for ConvTranspose): a note.

    The check is forced on the CPU provider, which lacks bf16 Conv kernels the same way.
    """
    monkeypatch.setattr('sapiens_ros.backends.export._can_check_reduced', lambda device: True)
    model = load_model('pose', str(checkpoints / 'pose'))
    result = export_onnx(model, 'pose', tmp_path / 'p.onnx', input_size=SIZE, batch='1:1:2',
                         dtype='bf16')
    assert result.parity is None
    assert 'no bf16 kernel for Conv' in ' '.join(result.notes)


def test_export_never_changes_the_callers_model(checkpoints, tmp_path):
    """Exporting a bf16 model as an fp32 graph works on a copy: the model stays bf16."""
    model = load_model('normal', str(checkpoints / 'normal')).to(torch.bfloat16)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = export_onnx(model, 'normal', tmp_path / 'n.onnx', input_size=SIZE, batch='1:1:2',
                         check=False)
    assert onnx_metadata(result.path)['dtype'] == 'fp32'
    after = model.state_dict()
    assert all(after[k].dtype == v.dtype and torch.equal(after[k], v) for k, v in before.items())


def test_an_invalid_graph_is_an_export_error(checkpoints, tmp_path, monkeypatch):
    """bf16 at opset 18 (what the export did before) fails the checker: ExportError, clearly."""
    monkeypatch.setattr('sapiens_ros.backends.export.graph_opset', lambda dtype: 18)
    model = load_model('seg', str(checkpoints / 'seg'))
    with pytest.raises(ExportError, match=r'not valid ONNX: .*Conv.*bfloat16'):
        export_onnx(model, 'seg', tmp_path / 'bad.onnx', input_size=SIZE, batch='1:1:2',
                    dtype='bf16')


def test_pointmap_second_size_is_refused(checkpoints, tmp_path):
    model = load_model('pointmap', str(checkpoints / 'pointmap'))
    with pytest.raises(InputSizeError, match='scale head cannot take 240x320'):
        export_onnx(model, 'pointmap', tmp_path / 'pm.onnx', input_size=SECOND)
    assert not (tmp_path / 'pm.onnx').exists()


def test_parity_failure_is_loud(exported, checkpoints):
    """A graph checked against other weights fails, naming the errors and the tolerance."""
    other = random_model('seg', input_size=SIZE, seed=99)
    wrapper = ExportWrapper(other, ('logits',)).eval()
    with pytest.raises(ParityError, match=r'max abs error .* max rel error .* tolerance atol'):
        check_parity(exported['seg'], wrapper, SIZE, BATCH)


def test_runner_errors(exported, tmp_path):
    with pytest.raises(ExportError, match='exported for task'):
        OnnxRuntimeRunner('seg', exported['pose'])
    with pytest.raises(ExportError, match='does not exist'):
        OnnxRuntimeRunner('pose', tmp_path / 'missing.onnx')
    runner = OnnxRuntimeRunner('pose', exported['pose'])
    with pytest.raises(InputSizeError, match='export --task pose --input-size 384x512'):
        Pipeline({'pose': runner}, PipelineConfig(input_size=(512, 384), box_source='full'))


def test_choose_providers():
    gpu_ort = ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']
    cpu, cuda = torch.device('cpu'), torch.device('cuda')
    assert choose_providers(gpu_ort, cpu) == ['CPUExecutionProvider']
    assert choose_providers(gpu_ort, cuda) == gpu_ort[1:]  # ORT's TensorRT EP only on request
    assert choose_providers(gpu_ort, cuda, ['tensorrt', 'cuda']) == gpu_ort
    assert choose_providers(gpu_ort, cuda, ['cuda']) == ['CUDAExecutionProvider',
                                                         'CPUExecutionProvider']
    assert choose_providers(gpu_ort[1:], cuda) == gpu_ort[1:]  # TensorRT EP not installed
    with pytest.raises(BackendUnavailableError, match='onnxruntime-gpu'):
        choose_providers(['CPUExecutionProvider'], cuda)
    with pytest.raises(BackendUnavailableError, match='not installed'):
        choose_providers(['CPUExecutionProvider'], cpu, ['OpenVINOExecutionProvider'])


def test_parsers():
    assert parse_batch('1:2:8') == (1, 2, 8)
    assert parse_batch('4') == (4, 4, 4)
    for bad in ('2:1:4', '0:1:2', 'a:b', '1:2'):
        with pytest.raises(ExportError, match='min:opt:max'):
            parse_batch(bad)


def test_fp16_pins_norms_and_rope(exported):
    """The nodes an FP16 engine keeps in FP32: every RMSNorm/InstanceNorm and the RoPE math."""
    import onnx

    graph = onnx.load(str(exported['pose']), load_external_data=False).graph
    pinned = fp32_node_names(exported['pose'])
    ops = {n.name: n.op_type for n in graph.node}
    kinds = {ops[n] for n in pinned}
    assert {'Pow', 'ReduceMean', 'Sqrt', 'InstanceNormalization', 'Neg'} <= kinds
    assert 'MatMul' not in kinds and 'Conv' not in kinds and 'Softmax' not in kinds
    assert sum(ops[n] == 'Neg' for n in pinned) == sum(v == 'Neg' for v in ops.values())


def test_pipeline_ort_matches_torch(checkpoints, cache_dir, exported):
    """Same decoded results from both backends on a real photo (graphs reused from the cache)."""
    config = PipelineConfig(input_size=SIZE)
    image = skimage.data.astronaut()
    frames = [image, np.ascontiguousarray(image[:, ::-1])]
    torch_pipe = load_pipeline(TASKS, backend='torch', model_dir=str(checkpoints),
                               config=config)
    ort_pipe = load_pipeline(TASKS, backend='onnxruntime', model_dir=str(checkpoints),
                             config=config, cache_dir=cache_dir)
    assert {r.name for r in ort_pipe.runners.values()} == {'onnxruntime'}
    assert {r.path for r in ort_pipe.runners.values()} == set(exported.values())
    assert config.input_sizes == {} and ort_pipe.config is not config  # the caller's is kept
    want, got = torch_pipe(frames), ort_pipe(frames)
    for a, b in zip(want, got, strict=True):
        assert a.pose.keypoints.shape == b.pose.keypoints.shape
        assert len(a.pose.keypoints) >= 1
        np.testing.assert_allclose(b.pose.scores, a.pose.scores, atol=1e-3, rtol=1e-3)
        # Random weights give flat heatmaps whose maxima can tie: a rounding-level difference
        # may then pick another peak for a keypoint or two. All others agree to 0.05 px.
        close = np.abs(b.pose.keypoints - a.pose.keypoints).max(-1) <= 0.05
        assert close.mean() >= 0.99, np.argwhere(~close)
        assert (a.seg.labels == b.seg.labels).mean() >= 0.999
        np.testing.assert_allclose(b.normal.normals, a.normal.normals, atol=2e-3)
        np.testing.assert_allclose(b.pointmap.xyz, a.pointmap.xyz, atol=1e-3, rtol=1e-3)
        assert b.pointmap.scale_source == a.pointmap.scale_source == 'predicted'


def test_tensorrt_provider_gets_cache_profile_and_precision(exported, tmp_path, monkeypatch):
    """Give ORT's TensorRT provider (when asked for) an engine cache and the batch profile."""
    monkeypatch.setattr('sapiens_ros.backends.tensorrt_build.installed_tensorrt_version',
                        lambda: '10.3.0')  # JetPack 6: the weak fp16 flag still exists
    runner = OnnxRuntimeRunner('seg', exported['seg'], batch=(1, 2, 4), precision='fp16')
    opts = runner._tensorrt_provider_options(tmp_path)
    assert opts['trt_engine_cache_path'] == str(tmp_path / 'ort_trt')
    assert opts['trt_engine_cache_enable'] == 'True' and opts['trt_fp16_enable'] == 'True'
    h, w = SIZE
    assert opts['trt_profile_min_shapes'].endswith(f':1x3x{h}x{w}')
    assert opts['trt_profile_max_shapes'].endswith(f':4x3x{h}x{w}')


def test_make_runner_from_onnx_file(exported):
    runner = make_runner('normal', 'ort', str(exported['normal']))
    assert isinstance(runner, OnnxRuntimeRunner)
    assert runner.input_size == SIZE
