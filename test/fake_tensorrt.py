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
A fake ``tensorrt`` Python module, per TensorRT version, that runs engines with ONNX Runtime.

It models the API surface sapiens_ros calls, with the behaviour its documentation gives:

* versions: ``make_tensorrt('10.3.0')`` (JetPack 6), ``'10.12.0'`` (weak typing deprecated) and
  ``'11.0.0'`` (weak typing removed: no ``BuilderFlag.FP16/BF16/INT8/OBEY_PRECISION_CONSTRAINTS``,
  every network strongly typed, the ``STRONGLY_TYPED`` flag accepted and ignored). ``TF32`` is on
  by default in every version and exists in all of them.
* parsing: ``OnnxParser.parse_from_file`` refuses (False, errors listed) what a valid graph for
  this TensorRT cannot be: a graph that fails ``onnx.checker.check_model(full_check=True)`` (so a
  type the graph's opset does not allow, e.g. bfloat16 Conv before opset 22; stricter than
  TensorRT's parser, which does not run the checker, but such a graph is not ONNX), an opset
  above the one this version's operator matrix documents (10.0-10.5: 20; 10.6-10.x: 22; 11.x:
  25), an operator the matrix does not list (``No importer registered``), and a node whose
  first input has a type the matrix does not list for it (onnx-tensorrt ``docs/operators.md``,
  10.x branches). Layers are named as the ONNX parser names them (the node's name, or
  ``node_of_<first output>``; further layers of one node get ``_<counter>``; initializers become
  ``CONSTANT`` layers named after them); each layer has the node's non-initializer inputs and
  its outputs, typed by ONNX shape inference.
* build: ``Builder``, ``create_network(flags)``, ``IBuilderConfig`` flags, memory pool,
  optimisation profiles, timing cache (bound to TensorRT version and GPU), ``progress_monitor``
  phases, and ``build_serialized_network``, which fails (None, logged) like TensorRT for: a
  dynamic input without a profile, a profile outside the network's static dims, precision flags
  or layer precisions on a strongly typed network, and, with ``OBEY_PRECISION_CONSTRAINTS``, a
  layer pinned to a precision its integer inputs cannot obey. It builds on the *current* CUDA
  device of the fake CUDA and records that device's compute capability in the engine.
* numerics: an engine runs its ONNX graph with ONNX Runtime on the CPU. A bf16/fp16 graph
  (strongly typed) runs with its reduced-precision weights and every cast to bf16/fp16 rounded
  as such, the arithmetic between casts in fp32. A weakly typed ``BF16``/``FP16`` build rounds
  the graph's weights to that precision, except those of layers pinned to FP32.
* runtime: ``Runtime.deserialize_cuda_engine`` (None, logged, for other bytes, another TensorRT
  version or another compute capability), engine tensor queries (names, modes, dtypes, shapes
  with -1 batch, profile shapes), execution contexts that keep their input shapes and tensor
  addresses: ``set_input_shape`` (False outside the profile), ``get_tensor_shape``,
  ``set_tensor_address`` and ``execute_async_v3(stream)``, which requires every address and
  input shape to be set and the engine's device to be current, records the stream and device in
  the fake CUDA log, and launches the run on that stream through :meth:`FakeCuda.launch`
  (deferred until the stream is ordered; recorded when the stream is capturing). A plain run
  uses the shapes and addresses the context had at enqueue. A run captured into a CUDA graph
  uses the addresses it was captured with and the shapes its context has *at replay* (TensorRT
  keeps shape-dependent state in context-owned memory that the graph reads), so a graph whose
  context another run reshaped computes garbage, as on a GPU. Under capture, the first enqueue
  after a shape change returns False (TensorRT's deferred initialisation cannot be captured;
  trtexec enqueues once before capturing), and so does every enqueue while
  ``fake_state.capture_fails`` is set. ``fake_state.miscompute`` makes every engine compute
  wrong outputs (``'wrong'``: shifted by half their range; ``'nan'``: all NaN), as the
  miscompiled ViT builds of TensorRT 10.3 and 10.16 did.

What it does not model: per-op reduced-precision rounding (only weights and explicit casts),
overflow, kernel selection and timing, layer fusion, TensorRT's own memory and its sharing
between two in-flight runs of one context, refit, DLA, plugins, multiple profiles per context,
the exact text of TensorRT's error messages, and operator support added after 10.1 other than
the operators listed in ``_ADDED``.
"""

from __future__ import annotations

import collections
import ctypes
import enum
import itertools
import json
from pathlib import Path
import re
import types

import numpy as np

MAGIC = b'FAKETRT\0'

#: ``BuilderFlag`` members per major version (11 removed every weak-typing flag).
_FLAGS_10 = ('FP16', 'BF16', 'INT8', 'FP8', 'TF32', 'REFIT', 'DISABLE_TIMING_CACHE',
             'OBEY_PRECISION_CONSTRAINTS', 'PREFER_PRECISION_CONSTRAINTS', 'DIRECT_IO',
             'STRICT_NANS', 'SPARSE_WEIGHTS', 'VERSION_COMPATIBLE')
_WEAK_FLAGS = ('FP16', 'BF16', 'INT8', 'FP8', 'OBEY_PRECISION_CONSTRAINTS',
               'PREFER_PRECISION_CONSTRAINTS')

_ONNX_TO_TRT = {1: 'FLOAT', 10: 'HALF', 16: 'BF16', 3: 'INT8', 6: 'INT32', 7: 'INT64',
                9: 'BOOL', 2: 'UINT8'}
_NP = {'FLOAT': np.float32, 'HALF': np.float16, 'INT8': np.int8, 'INT32': np.int32,
       'INT64': np.int64, 'BOOL': np.bool_, 'UINT8': np.uint8}
_FLOATS = ('FLOAT', 'HALF', 'BF16')

#: onnx-tensorrt docs/operators.md (release/10.1-GA, the 10.x matrix): the supported operators,
#: grouped by the types they take (ONNX type names as the matrix writes them).
_MATRIX = """
FP32 FP16 BF16: Acos Acosh Asin Asinh Atan Atanh AveragePool BatchNormalization Ceil Celu Clip
 Conv ConvTranspose Cos Cosh CumSum Dropout Einsum Elu Erf Exp Floor Gemm GlobalAveragePool
 GlobalLpPool GlobalMaxPool GroupNormalization GRU HardSigmoid HardSwish Hardmax ImageScaler
 InstanceNormalization IsInf LayerNormalization LeakyRelu Log LogSoftmax LRN LSTM LpNormalization
 LpPool MatMul MaxPool MeanVarianceNormalization ParametricSoftplus Pow PRelu QuantizeLinear
 RandomNormal RandomNormalLike RandomUniform RandomUniformLike Reciprocal Resize RNN Round
 ScaledTanh Scan Selu Sigmoid Sin Sinh Softmax Softplus Softsign Sqrt Tan Tanh ThresholdedRelu
 Upsample
FP32 FP16 BF16 INT32 INT64: Abs Add ArgMax ArgMin DepthToSpace Div Equal Greater GreaterOrEqual
 IsNaN Less LessOrEqual Max Min Mod Mul Neg Pad Range ReduceL1 ReduceL2 ReduceLogSum
 ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare Relu Scatter
 ScatterElements ScatterND Shrink Sign SpaceToDepth Sub Sum TopK
FP32 FP16 BF16 INT32 INT64 BOOL: Concat Constant ConstantOfShape Expand EyeLike Flatten Gather
 GatherElements GatherND Identity If Loop OneHot Reshape ReverseSequence Shape Size Slice Split
 Squeeze Tile Transpose Trilu Unsqueeze Where
FP32 FP16: DeformConv GridSample Mish NonMaxSuppression NonZero RoiAlign
BOOL: And Not Or Xor
FP32 FP16 BF16 INT32 INT64 UINT8 BOOL: Cast CastLike
INT8 FP8 INT4: DequantizeLinear
FP32 FP16 BF16 INT8 INT32 INT64: Gelu
FP32 FP16 BF16 FP8 INT32 INT64: Mean
"""
#: Operators added to the parser later (onnx-tensorrt changelog), by first version.
_ADDED = {(10, 14): {'Attention': 'FP32 FP16 BF16'},
          (10, 15): {'RMSNormalization': 'FP32 FP16 BF16', 'RotaryEmbedding': 'FP32 FP16 BF16'},
          (11, 0): {'Swish': 'FP32 FP16 BF16'}}
#: Highest opset each version's parser documents: 10.0 "opset 9 to opset 20" (operators.md,
#: 10.x branches), ONNX 1.17 (opset 22) from 10.6 (changelog), 11.x opset 25 (TensorRT's ONNX
#: opset guide).
_DOCUMENTED_OPSET = (((10, 0), 20), ((10, 6), 22), ((11, 0), 25))
_MATRIX_TYPES = {'FP32': 1, 'FP16': 10, 'BF16': 16, 'INT32': 6, 'INT64': 7, 'BOOL': 9,
                 'UINT8': 2, 'INT8': 3}


def operator_matrix(version: tuple[int, ...]) -> dict[str, set[int]]:
    """Return the parser's supported operators and their ONNX element types, for ``version``."""
    table: dict[str, set[int]] = {}
    for line in re.sub(r'\n ', ' ', _MATRIX).strip().splitlines():
        kinds, ops = line.split(':')
        codes = {_MATRIX_TYPES[k] for k in kinds.split() if k in _MATRIX_TYPES}
        table.update((op, codes) for op in ops.split())
    for since, ops in _ADDED.items():
        if version[:2] >= since:
            table.update((op, {_MATRIX_TYPES[k] for k in kinds.split()})
                         for op, kinds in ops.items())
    return table


def documented_opset(version: tuple[int, ...]) -> int:
    """Return the highest opset the parser of ``version`` documents."""
    return max(opset for since, opset in _DOCUMENTED_OPSET if version[:2] >= since)


#: ONNX op type -> (TensorRT layer types the parser adds for it, first to last).
_LAYERS = {
    'Conv': ('CONVOLUTION',), 'ConvTranspose': ('DECONVOLUTION',),
    'MatMul': ('MATRIX_MULTIPLY',), 'Gemm': ('MATRIX_MULTIPLY', 'ELEMENTWISE'),
    'InstanceNormalization': ('NORMALIZATION',), 'LayerNormalization': ('NORMALIZATION',),
    'ReduceMean': ('REDUCE',), 'Softmax': ('SOFTMAX',), 'Shape': ('SHAPE',),
    'Reshape': ('SHUFFLE',), 'Transpose': ('SHUFFLE',), 'Unsqueeze': ('SHUFFLE',),
    'Concat': ('CONCATENATION',), 'Slice': ('SLICE',), 'Split': ('SLICE',),
    'Expand': ('SLICE',), 'Sqrt': ('UNARY',), 'Neg': ('UNARY',), 'Reciprocal': ('UNARY',),
    'Sin': ('UNARY',), 'Cos': ('UNARY',), 'Sigmoid': ('ACTIVATION',),
    'DepthToSpace': ('SHUFFLE', 'SHUFFLE'), 'Cast': ('CAST',),
}


def make_tensorrt(version: str = '10.3.0', cuda=None) -> types.ModuleType:
    """Return a fake ``tensorrt`` module of ``version`` bound to a :class:`FakeCuda`."""
    major = int(version.split('.')[0])
    trt = types.ModuleType('tensorrt')
    trt.__version__ = version
    trt.__file__ = __file__

    trt.DataType = enum.IntEnum('DataType', 'FLOAT HALF INT8 INT32 BOOL UINT8 BF16 INT64',
                                start=0)
    for alias, member in (('float32', 'FLOAT'), ('float16', 'HALF'), ('bfloat16', 'BF16'),
                          ('int8', 'INT8'), ('int32', 'INT32'), ('int64', 'INT64'),
                          ('bool', 'BOOL'), ('uint8', 'UINT8')):
        setattr(trt, alias, trt.DataType[member])
    flags = [f for f in _FLAGS_10 if major < 11 or f not in _WEAK_FLAGS]
    trt.BuilderFlag = enum.IntEnum('BuilderFlag', ' '.join(flags), start=0)
    trt.NetworkDefinitionCreationFlag = enum.IntEnum(
        'NetworkDefinitionCreationFlag', 'EXPLICIT_BATCH STRONGLY_TYPED', start=0)
    trt.MemoryPoolType = enum.IntEnum('MemoryPoolType', 'WORKSPACE DLA_MANAGED_SRAM', start=0)
    trt.TensorIOMode = enum.IntEnum('TensorIOMode', 'NONE INPUT OUTPUT', start=0)
    trt.LayerType = enum.IntEnum('LayerType', ' '.join(sorted(
        {t for kinds in _LAYERS.values() for t in kinds} | {'CONSTANT', 'ELEMENTWISE'})), start=0)

    class _Severity(enum.IntEnum):
        INTERNAL_ERROR = 0
        ERROR = 1
        WARNING = 2
        INFO = 3
        VERBOSE = 4

    class ILogger:
        """Base class of user loggers (``log(severity, msg)``)."""

        Severity = _Severity

        def __init__(self) -> None:
            pass

    class IProgressMonitor:
        """Base class of build progress monitors."""

        def __init__(self) -> None:
            pass

    trt.ILogger, trt.IProgressMonitor = ILogger, IProgressMonitor
    state = SimpleState(trt, cuda, major)
    trt.Builder = state.builder_class()
    trt.OnnxParser = state.parser_class()
    trt.Runtime = state.runtime_class()
    trt.fake_state = state
    return trt


class SimpleState:
    """What one fake module shares: its version, the fake CUDA and a name counter."""

    def __init__(self, trt, cuda, major: int) -> None:
        self.trt, self.cuda, self.major = trt, cuda, major
        self.version = tuple(int(v) for v in re.findall(r'\d+', trt.__version__)[:2])
        self.counter = itertools.count()
        self.builds: list[dict] = []  # one record per build_serialized_network call
        self.capture_fails = False  # every enqueue under CUDA-graph capture returns False
        #: Engines compute wrong outputs, as miscompiled builds do: 'wrong' (off by a fraction
        #: of their range) or 'nan' (every value NaN, as fp16 on TensorRT 10.16 / RTX 5080).
        self.miscompute: str | None = None

    def gpu(self) -> tuple[str, tuple[int, int], int]:
        """Name, compute capability and index of the current CUDA device."""
        index = self.cuda.current_device_index
        spec = self.cuda.gpus[index]
        return spec.name, (spec.major, spec.minor), index

    def _error(self, logger, text: str) -> None:
        logger.log(self.trt.ILogger.Severity.ERROR, text)

    # ------------------------------------------------------------------ network
    def builder_class(self):
        state, trt = self, self.trt

        class Tensor:

            def __init__(self, name, dtype, shape) -> None:
                self.name, self.dtype, self.shape = name, dtype, tuple(shape)

        class Layer:

            def __init__(self, network, name, kind, outputs, inputs=(), node='') -> None:
                self.name, self.type, self._outputs = name, kind, outputs
                self._inputs = list(inputs)
                self.node = node  # the ONNX node the parser made it from
                self._network = network
                self._precision = None
                self.output_types: dict[int, object] = {}

            @property
            def num_outputs(self) -> int:
                return len(self._outputs)

            @property
            def num_inputs(self) -> int:
                return len(self._inputs)

            def get_output(self, j):
                return self._outputs[j]

            def get_input(self, j):
                return self._inputs[j]

            @property
            def precision(self):
                return self._precision or trt.float32

            @precision.setter
            def precision(self, dtype) -> None:
                self._precision = dtype
                self._network.precision_changes.append(self.name)

            @property
            def precision_is_set(self) -> bool:
                return self._precision is not None

            def set_output_type(self, j, dtype) -> None:
                self.output_types[j] = dtype
                self._network.precision_changes.append(self.name)

        class Network:

            def __init__(self, flags: int) -> None:
                self.flags = flags
                strong_bit = 1 << trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED.value
                self.strongly_typed = state.major >= 11 or bool(flags & strong_bit)
                self.inputs: list = []
                self.outputs: list = []
                self.layers: list = []
                self.precision_changes: list[str] = []
                self.onnx_bytes: bytes | None = None

            num_inputs = property(lambda self: len(self.inputs))
            num_outputs = property(lambda self: len(self.outputs))
            num_layers = property(lambda self: len(self.layers))

            def get_input(self, i):
                return self.inputs[i]

            def get_output(self, i):
                return self.outputs[i]

            def get_layer(self, i):
                return self.layers[i]

            def add_layer(self, name, kind, outputs, inputs=(), node='') -> None:
                self.layers.append(Layer(self, name, kind, outputs, inputs, node))

        class Profile:

            def __init__(self) -> None:
                self.shapes: dict[str, tuple] = {}

            def set_shape(self, name, low, opt, high) -> None:
                low, opt, high = (tuple(int(v) for v in s) for s in (low, opt, high))
                if not (len(low) == len(opt) == len(high)) or \
                        any(not a <= b <= c for a, b, c in zip(low, opt, high, strict=True)):
                    raise ValueError(f'profile for {name}: need min <= opt <= max, got '
                                     f'{low} {opt} {high}')
                self.shapes[name] = (low, opt, high)

        class TimingCache:

            def __init__(self, owner: dict, entries: int = 0) -> None:
                self.owner, self.entries = owner, entries

            def serialize(self) -> bytes:
                return json.dumps({**self.owner, 'entries': self.entries}).encode()

        class Config:

            def __init__(self) -> None:
                self.flags = {trt.BuilderFlag.TF32}  # TF32 is on by default
                self.profiles: list = []
                self.pools: dict = {}
                self.timing_cache = None
                self.progress_monitor = None

            def set_flag(self, flag) -> None:
                self.flags.add(flag)

            def clear_flag(self, flag) -> None:
                self.flags.discard(flag)

            def get_flag(self, flag) -> bool:
                return flag in self.flags

            def set_memory_pool_limit(self, pool, size: int) -> None:
                self.pools[pool] = size

            def add_optimization_profile(self, profile) -> int:
                self.profiles.append(profile)
                return len(self.profiles) - 1

            def _owner(self) -> dict:
                name, cc, _ = state.gpu()
                return {'trt': trt.__version__, 'gpu': name, 'cc': list(cc)}

            def create_timing_cache(self, data: bytes):
                if not data:
                    return TimingCache(self._owner())
                loaded = json.loads(bytes(data).decode())
                entries = loaded.pop('entries', 0)
                return TimingCache(loaded, entries)

            def set_timing_cache(self, cache, ignore_mismatch: bool) -> bool:
                if cache.owner != self._owner() and not ignore_mismatch:
                    return False
                self.timing_cache = cache
                return True

            def get_timing_cache(self):
                return self.timing_cache

        class Builder:

            def __init__(self, logger) -> None:
                self.logger = logger

            def create_network(self, flags: int = 0):
                return Network(int(flags))

            def create_builder_config(self):
                return Config()

            def create_optimization_profile(self):
                return Profile()

            def build_serialized_network(self, network, config):
                return state.build(self.logger, network, config)

        state.network_class = Network
        state.tensor_class = Tensor
        return Builder

    def parser_class(self):
        state = self

        class OnnxParser:

            def __init__(self, network, logger) -> None:
                self.network, self.logger = network, logger
                self.errors: list[str] = []

            @property
            def num_errors(self) -> int:
                return len(self.errors)

            def get_error(self, i):
                return self.errors[i]

            def parse_from_file(self, path: str) -> bool:
                import onnx

                try:
                    model = onnx.load(str(path))
                    inferred = onnx.shape_inference.infer_shapes(model)
                except Exception as exc:  # noqa: BLE001 - TensorRT reports, never raises
                    self.errors.append(f'ModelImporter: failed to parse {path}: {exc}')
                    return False
                self.errors.extend(state.refusals(path, model, inferred))
                if self.errors:
                    return False
                state.import_graph(self.network, model, inferred)
                return True

        return OnnxParser

    def refusals(self, path, model, inferred) -> list[str]:
        """Say why this version's parser cannot take ``model`` (empty: it can)."""
        import onnx

        try:
            onnx.checker.check_model(str(path), full_check=True)
        except Exception as exc:  # noqa: BLE001 - checker and shape inference raise many kinds
            first = str(exc).strip().splitlines()[0]
            return [f'ModelImporter: {Path(path).name} is not a valid ONNX graph: {first}']
        errors = []
        opset = next((o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')), 0)
        documented = documented_opset(self.version)
        if opset > documented:
            errors.append(f'ModelImporter: opset {opset} is beyond the opset {documented} the '
                          f'ONNX parser of TensorRT {self.trt.__version__} documents')
        matrix = operator_matrix(self.version)
        types_by_name = _types(model, inferred)
        for node in model.graph.node:
            where = f'node {node.name or node.output[0]} ({node.op_type})'
            if node.domain not in ('', 'ai.onnx') or node.op_type not in matrix:
                errors.append(f'{where}: No importer registered for op: {node.op_type}, and no '
                              f'plugin of that name')
                continue
            first = types_by_name.get(node.input[0]) if node.input and node.input[0] else None
            if first is not None and first != 11 and first not in matrix[node.op_type]:
                errors.append(f'{where}: input type {onnx.TensorProto.DataType.Name(first)} '
                              f'is not supported by TensorRT for {node.op_type}')
        return errors

    def import_graph(self, network, model, inferred) -> None:
        """Populate ``network`` from an ONNX model the way the ONNX parser names things."""
        trt = self.trt
        types_by_name = _types(model, inferred)
        initializers = {t.name: t.data_type for t in model.graph.initializer}
        names: set[str] = set()

        def unique(base: str) -> str:
            candidate = base
            while candidate in names:
                candidate = f'{base}_{next(self.counter)}'
            names.add(candidate)
            return candidate

        def dtype(onnx_type: int):
            return trt.DataType[_ONNX_TO_TRT.get(onnx_type, 'FLOAT')]

        def dims(info):
            return [d.dim_value if d.dim_value else -1 for d in info.type.tensor_type.shape.dim]

        for info in model.graph.input:
            if info.name not in initializers:
                network.inputs.append(self.tensor_class(
                    info.name, dtype(info.type.tensor_type.elem_type), dims(info)))
        constants_done: set[str] = set()
        for node in model.graph.node:
            for name in node.input:
                if name in initializers and name not in constants_done:
                    constants_done.add(name)
                    network.add_layer(unique(name), trt.LayerType.CONSTANT,
                                      [self.tensor_class(name, dtype(initializers[name]), ())])
            if node.op_type == 'Constant':
                continue  # the parser adds no layer for Constant nodes
            base = node.name or f'node_of_{node.output[0]}'
            outputs = [self.tensor_class(o, dtype(types_by_name.get(o, 1)), ())
                       for o in node.output]
            inputs = [self.tensor_class(i, dtype(types_by_name.get(i, 1)), ())
                      for i in node.input if i and i not in initializers]
            for kind in _LAYERS.get(node.op_type, ('ELEMENTWISE',)):
                network.add_layer(unique(base), trt.LayerType[kind], outputs, inputs, base)
        for info in model.graph.output:
            network.outputs.append(self.tensor_class(
                info.name, dtype(info.type.tensor_type.elem_type), dims(info)))
        network.onnx_bytes = model.SerializeToString()

    # ------------------------------------------------------------------ build
    def build(self, logger, network, config):
        """``build_serialized_network``: validate like TensorRT, then serialize the engine."""
        trt = self.trt
        name, cc, index = self.gpu()
        floats = (trt.float32, trt.float16, trt.bfloat16)
        pinned = [layer for layer in network.layers if layer.precision_is_set]
        integer = [layer.name for layer in pinned
                   if any(t.dtype not in floats for t in layer._outputs + layer._inputs)
                   or layer.type == trt.LayerType.CAST]
        record = {'device': index, 'strongly_typed': network.strongly_typed,
                  'flags': sorted(f.name for f in config.flags),
                  'pinned': list(network.precision_changes),
                  'pinned_integer': integer,
                  'timing_entries': config.timing_cache.entries if config.timing_cache else None}
        self.builds.append(record)
        weak = {f for f in config.flags if f.name in _WEAK_FLAGS}
        if integer and trt.BuilderFlag.__members__.get('OBEY_PRECISION_CONSTRAINTS') in weak:
            self._error(logger, f'could not find any implementation of {integer[0]} obeying its '
                                f'FP32 precision constraint (it casts or takes integer tensors)')
            return None
        if network.strongly_typed and weak:
            self._error(logger, f'{sorted(f.name for f in weak)} cannot be used with a '
                                f'strongly typed network')
            return None
        if network.strongly_typed and network.precision_changes:
            self._error(logger, 'layer precisions cannot be set on a strongly typed network')
            return None
        inp = network.get_input(0)
        profile = config.profiles[0].shapes.get(inp.name) if config.profiles else None
        if profile is None and any(d < 0 for d in inp.shape):
            self._error(logger, f'{inp.name} has dynamic dimensions but no optimization profile')
            return None
        for shape in profile or ():
            if any(s >= 0 and s != d for s, d in zip(inp.shape, shape, strict=True)):
                self._error(logger, f'profile {shape} does not match {inp.name} {inp.shape}')
                return None
        monitor = config.progress_monitor
        if monitor is not None:
            monitor.phase_start('Building engine', None, 2)
            monitor.step_complete('Building engine', 0)
            monitor.step_complete('Building engine', 1)
            monitor.phase_finish('Building engine')
        if config.timing_cache is not None:
            config.timing_cache.entries += len(network.layers)
        header = {
            'trt': trt.__version__, 'gpu': name, 'cc': list(cc),
            'tf32': trt.BuilderFlag.TF32 in config.flags,
            'strongly_typed': network.strongly_typed,
            'precision_flags': sorted(f.name for f in weak),
            'weak_precision': next((p for f, p in (('FP16', 'fp16'), ('BF16', 'bf16'))
                                    if not network.strongly_typed
                                    and f in {w.name for w in weak}), None),
            'keep_fp32': sorted({layer.node for layer in pinned}),
            'inputs': [[t.name, t.dtype.name, list(t.shape)] for t in network.inputs],
            'outputs': [[t.name, t.dtype.name, list(t.shape)] for t in network.outputs],
            'profile': [list(s) for s in profile] if profile else None,
        }
        blob = json.dumps(header).encode()
        return MAGIC + len(blob).to_bytes(4, 'little') + blob + network.onnx_bytes

    # ------------------------------------------------------------------ runtime
    def runtime_class(self):
        state = self

        class Runtime:

            def __init__(self, logger) -> None:
                self.logger = logger

            def deserialize_cuda_engine(self, data: bytes):
                return state.deserialize(self.logger, bytes(data))

        return Runtime

    def deserialize(self, logger, data: bytes):
        """Return an engine, or None (logged) for bytes TensorRT would reject."""
        if not data.startswith(MAGIC):
            self._error(logger, 'Serialization assertion magicTagRead == kMAGIC_TAG failed')
            return None
        size = int.from_bytes(data[8:12], 'little')
        header = json.loads(data[12:12 + size])
        _, cc, index = self.gpu()
        if header['trt'] != self.trt.__version__:
            self._error(logger, f'engine plan built by TensorRT {header["trt"]}, this is '
                                f'{self.trt.__version__}')
            return None
        if tuple(header['cc']) != cc:
            self._error(logger, f'engine built for compute capability {header["cc"]}, the '
                                f'current device has {list(cc)}')
            return None
        return _Engine(self, header, data[12 + size:], index)


class _Engine:
    """``ICudaEngine``: I/O tensor queries, and execution contexts on its device."""

    def __init__(self, state: SimpleState, header: dict, onnx_bytes: bytes,
                 device: int) -> None:
        import onnxruntime as ort

        self.state, self.header, self.device = state, header, device
        trt = state.trt
        self.tensors = {n: (trt.TensorIOMode.INPUT, trt.DataType[d], tuple(s))
                        for n, d, s in header['inputs']}
        self.tensors.update({n: (trt.TensorIOMode.OUTPUT, trt.DataType[d], tuple(s))
                             for n, d, s in header['outputs']})
        self.names = list(self.tensors)
        self.session = ort.InferenceSession(_executable(onnx_bytes, header),
                                            providers=['CPUExecutionProvider'])

    num_io_tensors = property(lambda self: len(self.names))

    def get_tensor_name(self, i: int) -> str:
        return self.names[i]

    def get_tensor_mode(self, name: str):
        return self.tensors[name][0]

    def get_tensor_dtype(self, name: str):
        return self.tensors[name][1]

    def get_tensor_shape(self, name: str) -> tuple:
        return self.tensors[name][2]

    def get_tensor_profile_shape(self, name: str, profile: int) -> list:
        if profile != 0 or self.header['profile'] is None:
            raise IndexError(f'no optimization profile {profile}')
        return [tuple(s) for s in self.header['profile']]

    def create_execution_context(self):
        return _Context(self)


class _Context:
    """``IExecutionContext``: keeps its shapes and addresses; runs through ORT when launched."""

    def __init__(self, engine: _Engine) -> None:
        self.engine = engine
        self.shapes: dict[str, tuple] = {}
        self.addresses: dict[str, int] = {}
        self._prepared: dict[str, tuple] | None = None  # the shapes of the last enqueue

    def set_input_shape(self, name: str, shape) -> bool:
        mode, _, static = self.engine.tensors.get(name, (None, None, ()))
        shape = tuple(int(v) for v in shape)
        low, _, high = self.engine.get_tensor_profile_shape(name, 0)
        ok = mode == self.engine.state.trt.TensorIOMode.INPUT and len(shape) == len(static) \
            and all(a <= s <= b for a, s, b in zip(low, shape, high, strict=True))
        if ok:
            self.shapes[name] = shape
        return ok

    def get_tensor_shape(self, name: str) -> tuple:
        return self._shape(name, self.shapes)

    def _shape(self, name: str, shapes: dict) -> tuple:
        mode, _, static = self.engine.tensors[name]
        if mode == self.engine.state.trt.TensorIOMode.INPUT:
            return shapes.get(name, static)
        batch = next(iter(shapes.values()), (-1,))[0]
        return tuple(batch if d < 0 else d for d in static)

    def set_tensor_address(self, name: str, address: int) -> bool:
        self.addresses[name] = int(address)
        return True

    def execute_async_v3(self, stream_handle: int) -> bool:
        engine, state = self.engine, self.engine.state
        cuda = state.cuda
        handle = int(stream_handle)
        current = cuda.current_device_index
        cuda.log.append(('trt_execute', handle, current))
        missing = [n for n in engine.names if n not in self.addresses]
        unshaped = [n for n, (m, _, _) in engine.tensors.items()
                    if m == state.trt.TensorIOMode.INPUT and n not in self.shapes]
        if missing or unshaped or current != engine.device:
            return False
        if cuda.is_capturing(handle) and (state.capture_fails or self._prepared != self.shapes):
            cuda.log.append(('trt_capture_refused', handle))
            return False  # initialisation work (or this engine) cannot be captured
        self._prepared = dict(self.shapes)
        if handle == 0:
            cuda.log.append(('trt_legacy_stream_sync',))
        addresses = dict(self.addresses)
        inputs = [n for n, (m, _, _) in engine.tensors.items()
                  if m == state.trt.TensorIOMode.INPUT]
        # A plain run keeps the shapes of its enqueue; a captured one reads its context's
        # shapes when the graph replays (they live in context-owned memory).
        shapes = self.shapes if cuda.is_capturing(handle) else dict(self.shapes)

        def work():
            plan = {n: (addresses[n], self._shape(n, shapes), _NP[d.name])
                    for n, (_, d, _) in engine.tensors.items()}
            _run(engine.session, plan, inputs, state.miscompute)

        cuda.launch(handle, work)
        return True


def _run(session, plan: dict, inputs: list[str], miscompute: str | None = None) -> None:
    """Read the inputs at their addresses, run the graph, write the outputs at theirs."""
    feeds = {}
    for name in inputs:
        address, shape, dtype = plan[name]
        count = int(np.prod(shape))
        raw = (ctypes.c_byte * (count * np.dtype(dtype).itemsize)).from_address(address)
        feeds[name] = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    names = [n for n in plan if n not in inputs]
    for name, value in zip(names, session.run(names, feeds), strict=True):
        address, shape, dtype = plan[name]
        value = np.ascontiguousarray(value, dtype=dtype)
        if miscompute == 'nan':
            value = np.full_like(value, np.nan)
        elif miscompute == 'wrong':
            value = (value + 0.5 * (np.abs(value).max() + 1.0)).astype(dtype)
        if tuple(value.shape) != tuple(shape):
            raise RuntimeError(f'fake TensorRT: {name} has shape {value.shape}, '
                               f'expected {shape}')
        ctypes.memmove(address, value.ctypes.data, value.nbytes)


def _types(model, inferred) -> dict[str, int]:
    """Return the ONNX element type of every named tensor (inferred, inputs, initializers)."""
    types_by_name = {t.name: t.data_type for t in model.graph.initializer}
    for info in list(inferred.graph.value_info) + list(inferred.graph.input) + \
            list(inferred.graph.output):
        types_by_name[info.name] = info.type.tensor_type.elem_type
    return types_by_name


def _executable(onnx_bytes: bytes, header: dict) -> bytes:
    """
    Return the graph ONNX Runtime's CPU provider runs for an engine (see the module docstring).

    bf16/fp16 tensors become fp32 holding the same values; a cast to bf16/fp16 keeps its
    rounding (cast there and back); a weak BF16/FP16 build rounds every float weight not only
    read by layers pinned to FP32.
    """
    import onnx
    from onnx import helper, numpy_helper, TensorProto

    reduced = (TensorProto.BFLOAT16, TensorProto.FLOAT16)
    model = onnx.load_from_string(onnx_bytes)
    graph = model.graph
    weak = header.get('weak_precision')
    keep = set(header.get('keep_fp32', ()))
    readers = collections.defaultdict(set)
    for node in graph.node:
        for name in node.input:
            readers[name].add(node.name or f'node_of_{node.output[0]}')

    def as_fp32(tensor) -> None:
        if tensor.data_type in reduced:
            array = numpy_helper.to_array(tensor).astype(np.float32)
            tensor.CopyFrom(numpy_helper.from_array(array, tensor.name))

    for init in graph.initializer:
        as_fp32(init)
        if weak and init.data_type == TensorProto.FLOAT and not readers[init.name] <= keep:
            array = _round(numpy_helper.to_array(init), weak)
            init.CopyFrom(numpy_helper.from_array(array, init.name))
    nodes = []
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                as_fp32(attr.t)
        nodes.append(node)
        to = next((a.i for a in node.attribute if a.name == 'to'), None)
        if node.op_type == 'Cast' and to in reduced:
            rounded = node.output[0]
            node.output[0] = f'{rounded}__reduced'
            nodes.append(helper.make_node('Cast', [node.output[0]], [rounded],
                                          to=TensorProto.FLOAT, name=f'{node.name}__back'))
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.value_info[:]
    for info in list(graph.input) + list(graph.output):
        if info.type.tensor_type.elem_type in reduced:
            info.type.tensor_type.elem_type = TensorProto.FLOAT
    return model.SerializeToString()


def _round(array: np.ndarray, precision: str) -> np.ndarray:
    """Round float32 values to bf16 or fp16 (kept as float32)."""
    if precision == 'fp16':
        return array.astype(np.float16).astype(np.float32)
    bits = np.ascontiguousarray(array, np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    return bits.astype(np.uint32).view(np.float32)


def engine_header(path: str | Path) -> dict:
    """Return the build header of a fake engine file (for assertions)."""
    data = Path(path).read_bytes()
    size = int.from_bytes(data[8:12], 'little')
    return json.loads(data[12:12 + size])
