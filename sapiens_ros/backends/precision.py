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
The precision plan: one decision per (TensorRT version, GPU, requested precision).

From those three it derives, in one place, the ONNX graph to export (its dtype and opset), how
TensorRT builds it (strongly or weakly typed, builder flags, FP32 pins) and the fields of the
engine's cache key. Pure Python, so every TensorRT version is testable without one.

Two facts fix the plan (sources in docs/backends.md, "Precision plan"):

* ONNX allows ``bfloat16`` for Conv, ConvTranspose and InstanceNormalization only from opset 22;
  Sapiens2 has all three, so a bf16 graph is exported at opset 22. fp32 and fp16 graphs stay at
  opset 18, where fp16 has always been legal.
* TensorRT 10.0 to 10.11 (JetPack 6 ships 10.3) document ONNX opsets up to 20 in their parser's
  operator matrix, so no valid bf16 graph reaches them: bf16 and fp16 come from an fp32 graph
  with the weakly typed ``BF16``/``FP16`` builder flags. 10.12 deprecated weak typing and 11
  removed it, while their parsers document opset 22 and beyond: there the graph is exported in
  the target dtype and built strongly typed, precision following the graph. That graph keeps
  the model's own fp32 islands: transformers' Sapiens2RMSNorm computes its variance in fp32
  (explicit Casts; checked, not assumed: an fp16 export refuses norms that overflow in fp16,
  :mod:`.numerics`), the RoPE frequencies stay fp32 buffers (``export.converted``), and softmax
  needs no pin (q/k norms bound its logits). Every built engine is then measured against the
  fp32 torch model before it is cached (:mod:`.accuracy`).

The two families need different graphs, so the engine key records the graph's dtype, opset and
typing, and the graph cache key its dtype and opset.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
import re

from .errors import BackendUnavailableError, EngineError

PRECISIONS = ('fp32', 'bf16', 'fp16')
MIN_VERSION = (10, 0)
STRONG_TYPING_VERSION = (10, 12)  # weak typing deprecated from here
WEAK_REMOVED_VERSION = (11, 0)  # BuilderFlag.FP16/BF16/OBEY_PRECISION_CONSTRAINTS removed
BF16_MIN_CC = (8, 0)  # Ampere, Ada, Hopper, Blackwell, Jetson Orin (8.7)

#: Opset of fp32 and fp16 graphs (every TensorRT 10+ parser documents it).
BASE_OPSET = 18
#: Opset of bf16 graphs: the first where ONNX allows bfloat16 Conv/ConvTranspose/InstanceNorm.
BF16_OPSET = 22
#: Highest ONNX opset the ONNX parser of each TensorRT documents, from the first version of a
#: range on: 10.0-10.5 "opset 9 to opset 20" (onnx-tensorrt docs/operators.md, 10.x branches;
#: ONNX 1.16), 10.6+ ONNX 1.17 (opset 22, onnx-tensorrt changelog), 11.x opset 25 (TensorRT
#: "ONNX Opset Guide"). Graphs above it are refused rather than trusted to a parser that never
#: promised them.
PARSER_MAX_OPSET = (((10, 0), 20), ((10, 6), 22), ((11, 0), 25))

INSTALL_HINT = ('pip install tensorrt (x86_64/SBSA, CUDA 12) or, on Jetson, install JetPack 6.1+ '
                '(TensorRT 10.x: sudo apt install nvidia-jetpack python3-libnvinfer) and use the '
                'system Python 3.10')


def parse_version(text: str) -> tuple[int, ...]:
    """``'10.3.0.30'`` -> ``(10, 3, 0, 30)`` (non-numeric suffixes ignored)."""
    parts = []
    for piece in str(text).split('.'):
        m = re.match(r'\d+', piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def default_precision(compute_capability: tuple[int, int]) -> str:
    """BF16 on GPUs that have it (compute capability >= 8.0, incl. Jetson Orin), else FP16."""
    return 'bf16' if tuple(compute_capability) >= BF16_MIN_CC else 'fp16'


def graph_opset(graph_dtype: str) -> int:
    """Return the ONNX opset a graph of ``graph_dtype`` is exported at."""
    check_precision(graph_dtype)
    return BF16_OPSET if graph_dtype == 'bf16' else BASE_OPSET


def parser_max_opset(trt_version: str) -> int:
    """Return the highest opset the ONNX parser of ``trt_version`` documents."""
    version = parse_version(trt_version)[:2]
    best = 0
    for since, opset in PARSER_MAX_OPSET:
        if version >= since:
            best = opset
    return best


def check_precision(precision: str) -> str:
    """Return ``precision`` if it is one of :data:`PRECISIONS`, else raise naming them."""
    if precision not in PRECISIONS:
        raise EngineError(f'precision must be one of {PRECISIONS}, got {precision!r}')
    return precision


def weak_typing_available(trt_version: str) -> bool:
    """Tell whether ``trt_version`` still has the weakly typed FP16/BF16 builder flags."""
    return parse_version(trt_version)[:2] < WEAK_REMOVED_VERSION


@dataclass(frozen=True)
class PrecisionPlan:
    """How one engine is made: the graph to export and how TensorRT builds it."""

    precision: str  # the engine's precision (what the user asked for)
    trt_version: str
    compute_capability: tuple[int, int]
    graph_dtype: str  # dtype of the ONNX graph the engine is built from
    opset: int  # opset of that graph
    strongly_typed: bool
    builder_flags: tuple[str, ...] = ()
    clear_flags: tuple[str, ...] = ()
    pin_fp32: bool = False  # pin norm/RoPE layers to FP32 (weakly typed FP16 only)
    warnings: tuple[str, ...] = ()

    @property
    def typing(self) -> str:
        """``strong`` or ``weak``: how TensorRT assigns precisions."""
        return 'strong' if self.strongly_typed else 'weak'

    def key_fields(self) -> dict:
        """Return the fields of an engine's cache key that this plan decides."""
        return {'precision': self.precision, 'trt_version': self.trt_version,
                'compute_capability': tuple(self.compute_capability),
                'graph_dtype': self.graph_dtype, 'opset': self.opset, 'typing': self.typing}

    def describe(self) -> str:
        """One line for logs: graph, typing, flags."""
        flags = '+'.join(self.builder_flags) or 'none'
        pins = ', norm/RoPE pinned to FP32' if self.pin_fp32 else ''
        return (f'{self.precision} engine on TensorRT {self.trt_version}: {self.graph_dtype} '
                f'graph at opset {self.opset}, {self.typing}ly typed, flags {flags}{pins}')


def plan_precision(precision: str, trt_version: str, *,
                   compute_capability: tuple[int, int] = (8, 0),
                   graph_dtype: str | None = None, opset: int | None = None,
                   builder_flags: Iterable[str] | None = None) -> PrecisionPlan:
    """
    Decide the graph and the build for ``precision`` on ``trt_version``.

    ``graph_dtype``/``opset`` describe a graph the user supplied (None: the plan chooses the
    graph to export); ``builder_flags`` are the names in this TensorRT's ``BuilderFlag`` (None:
    assume what the version documents). Raises :class:`EngineError` naming the fix when no
    valid engine can be made, :class:`BackendUnavailableError` for TensorRT < 10.
    """
    check_precision(precision)
    version = parse_version(trt_version)
    if version[:2] < MIN_VERSION:
        raise BackendUnavailableError(
            f'TensorRT {trt_version} is too old: sapiens_ros needs TensorRT >= 10.0 '
            f'({INSTALL_HINT})')
    cc = tuple(int(v) for v in compute_capability)
    if precision == 'bf16' and cc < BF16_MIN_CC:
        raise EngineError(
            f'bf16 needs compute capability >= 8.0 (Ampere or newer, Jetson Orin); this GPU is '
            f'{cc[0]}.{cc[1]}: use --dtype fp16 (norms and RoPE stay FP32) or fp32')
    flags = set(builder_flags) if builder_flags is not None else None
    weak = weak_typing_available(trt_version) and (flags is None or 'FP16' in flags)
    strong_preferred = version[:2] >= STRONG_TYPING_VERSION
    max_opset = parser_max_opset(trt_version)
    if graph_dtype is None:  # the plan chooses the graph
        # Strongly typed where TensorRT prefers it (or has nothing else); weak flags on an fp32
        # graph where they exist and the parser documents no bf16-capable opset.
        strong = precision != 'fp32' and (strong_preferred or not weak)
        graph_dtype = precision if strong else 'fp32'
    check_precision(graph_dtype)
    opset = graph_opset(graph_dtype) if opset is None else int(opset)
    if opset > max_opset:
        raise EngineError(
            f'a {graph_dtype} graph at opset {opset} is beyond what the ONNX parser of TensorRT '
            f'{trt_version} documents (opset {max_opset}): build {precision} from the fp32 '
            f'graph (sapiens-ros export --dtype fp32) instead')
    common = {'precision': precision, 'trt_version': str(trt_version),
              'compute_capability': cc, 'graph_dtype': graph_dtype, 'opset': opset}
    if precision == 'fp32':
        if graph_dtype != 'fp32':
            raise EngineError(f'an fp32 engine needs an fp32 graph, not {graph_dtype}')
        clear = ('TF32',) if flags is None or 'TF32' in flags else ()  # exact fp32
        return PrecisionPlan(**common, strongly_typed=strong_preferred, clear_flags=clear)
    if graph_dtype == precision:
        return PrecisionPlan(**common, strongly_typed=True)
    if graph_dtype != 'fp32':
        raise EngineError(f'cannot build a {precision} engine from a {graph_dtype} graph; '
                          f'export with --dtype {precision} or fp32')
    if not weak:
        raise EngineError(
            f'TensorRT {trt_version} only builds strongly typed networks, so a {precision} '
            f'engine needs a graph exported in {precision}: sapiens-ros export --dtype '
            f'{precision} (on any machine)')
    warnings = ()
    if strong_preferred:
        warnings = (f'TensorRT {trt_version} deprecates the weakly typed {precision.upper()} '
                    f'flag; export with --dtype {precision} for a strongly typed build',)
    if precision == 'fp16':
        return PrecisionPlan(**common, strongly_typed=False,
                             builder_flags=('FP16', 'OBEY_PRECISION_CONSTRAINTS'),
                             pin_fp32=True, warnings=warnings)
    return PrecisionPlan(**common, strongly_typed=False, builder_flags=('BF16',),
                         warnings=warnings)


#: First ONNX Runtime whose TensorRT provider knows ``trt_bf16_enable`` (microsoft/onnxruntime
#: #24743, merged mid-2025 after the 1.22 branch; documented by #26956). Older providers reject
#: the key ("Invalid TensorRT EP option") and Python then silently falls back to the CUDA
#: provider in fp32 on GPU 0. JetPack 6's wheels (1.18-1.20) are older.
ORT_BF16_VERSION = (1, 23)


def ort_tensorrt_precision(precision: str, trt_version: str | None,
                           graph_dtype: str = 'fp32',
                           ort_version: str | None = None) -> tuple[dict, str | None]:
    """
    Return ONNX Runtime TensorRT-provider options for ``precision``, and a note when none apply.

    The provider's ``trt_fp16_enable``/``trt_bf16_enable`` are TensorRT's weakly typed flags:
    set only on a TensorRT that still has them (< 11) and, for bf16, an ONNX Runtime that knows
    the key (:data:`ORT_BF16_VERSION`; ``ort_version`` None: assume it does not); otherwise the
    engine follows the ``graph_dtype``, and the note says so when that is not ``precision``.
    ``trt_version`` None (TensorRT's version unknown) sets nothing.
    """
    check_precision(precision)
    if precision == 'fp32':
        return {}, None
    if trt_version is None or not weak_typing_available(trt_version):
        if graph_dtype == precision:
            return {}, None
        which = 'an unknown TensorRT' if trt_version is None else f'TensorRT {trt_version}'
        return {}, (f'the TensorRT provider of ONNX Runtime on {which} gets no {precision} '
                    f'flag (weak typing, removed in TensorRT 11): its engine computes in the '
                    f'{graph_dtype} of the graph; export the graph with --dtype {precision}, or '
                    f'use backend tensorrt')
    if precision == 'bf16' and (
            ort_version is None or parse_version(ort_version)[:2] < ORT_BF16_VERSION):
        which = 'this ONNX Runtime' if ort_version is None else f'ONNX Runtime {ort_version}'
        return {}, (f'{which} has no trt_bf16_enable (added in 1.23): its TensorRT provider '
                    f'builds the {graph_dtype} graph in {graph_dtype}; upgrade onnxruntime-gpu, '
                    f'use dtype fp16, or use backend tensorrt')
    key = 'trt_fp16_enable' if precision == 'fp16' else 'trt_bf16_enable'
    return {key: 'True'}, None
