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
TensorRT runner: a serialized engine behind the pipeline's Runner contract.

Inputs and outputs are torch CUDA tensors whose ``data_ptr`` is given to ``execute_async_v3``,
with no host round trip and no extra copy. Stream policy (shared with the ONNX Runtime runner):
the engine runs on torch's current stream when that is a real stream, and on the runner's own
stream, ordered after torch's with a device-side wait, when torch is on the legacy default
stream (handle 0, on which TensorRT adds host synchronisations). Every call runs under a device
guard for the runner's GPU. Batches beyond the profile's maximum run in chunks, and one below
its minimum is zero-padded (:func:`~.cuda_graphs.run_in_chunks`).

With CUDA graphs, the profile's opt batch is captured when the runner is made (at configure),
with an execution context of its own whose shapes and addresses stay those of its graph's static
buffers; every other batch runs on the plain context.
TensorRT bakes a context's state into a graph captured from it (trtexec captures one graph per
context), so a graph must never see its context reshaped by a run of another batch.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from .cuda_graphs import CudaGraphCache, run_in_chunks
from .errors import check_static_size, EngineError
from .tensorrt_build import import_tensorrt, require_cuda, trt_logger
from ..core.models.input_size import Size
from ..core.models.runners import OUTPUT_NAMES

LOG = logging.getLogger(__name__)


def _torch_dtype(trt, dtype) -> torch.dtype:
    table = {trt.float32: torch.float32, trt.float16: torch.float16, trt.int32: torch.int32,
             trt.int8: torch.int8, trt.bool: torch.bool}
    for name, tdt in (('bfloat16', torch.bfloat16), ('int64', torch.int64)):
        if hasattr(trt, name):
            table[getattr(trt, name)] = tdt
    try:
        return table[dtype]
    except KeyError:
        raise EngineError(f'unsupported engine tensor dtype {dtype}') from None


class TensorRTRunner:
    """Runs one task's TensorRT engine on torch CUDA tensors."""

    name = 'tensorrt'

    def __init__(self, task: str, engine_path: str | Path, *,
                 device: str | torch.device = 'cuda', model_id: str = '',
                 cuda_graph_batch: int | None = None) -> None:
        trt = import_tensorrt()
        require_cuda()
        self._trt = trt
        self.task = task
        self.path = Path(engine_path)
        self.device = torch.device(device)
        if self.device.type != 'cuda':
            raise EngineError(f'backend tensorrt runs on CUDA devices, not {self.device}')
        self.model_id = model_id or str(self.path)
        self.dtype = torch.float32
        with torch.cuda.device(self.device):
            self.runtime = trt.Runtime(trt_logger(trt))
            self.engine = self.runtime.deserialize_cuda_engine(self.path.read_bytes())
            if self.engine is None:
                raise EngineError(f'TensorRT could not load {self.path} (built by another '
                                  f'TensorRT version or GPU, or corrupt); delete it to rebuild')
            self.context = self.engine.create_execution_context()
            self._stream = torch.cuda.Stream(self.device)  # used when torch is on stream 0
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        inputs = [n for n in names
                  if self.engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        if len(inputs) != 1:
            raise EngineError(f'{self.path.name}: expected one input, found {inputs}')
        self.input_name = inputs[0]
        self.output_names = tuple(n for n in OUTPUT_NAMES[task] if n in names)
        if not self.output_names:
            raise EngineError(f'{self.path.name} has tensors {names}, none of '
                              f'{OUTPUT_NAMES[task]} (task {task!r})')
        self._in_dtype = _torch_dtype(trt, self.engine.get_tensor_dtype(self.input_name))
        self._out_dtypes = {n: _torch_dtype(trt, self.engine.get_tensor_dtype(n))
                            for n in self.output_names}
        shape = tuple(self.engine.get_tensor_shape(self.input_name))
        self.input_size = Size(int(shape[2]), int(shape[3]))
        lo, _, hi = self.engine.get_tensor_profile_shape(self.input_name, 0)
        self.batch_range = (int(lo[0]), int(hi[0]))
        self._graphs = None
        if cuda_graph_batch:  # captured now, at configure: never while frames stream
            self._graphs = CudaGraphCache(self._execute, self.device, make_fn=self._graph_fn,
                                          name=f'tensorrt {task}')
            batch = min(max(int(cuda_graph_batch), self.batch_range[0]), self.batch_range[1])
            with torch.cuda.device(self.device):
                self._graphs.capture((batch,), (3, *self.input_size), self._in_dtype)
        LOG.info('tensorrt %s: %s (input %s, batch %d-%d)', task, self.path.name,
                 self.input_size, *self.batch_range)

    def check_input_size(self, input_size: tuple[int, int]) -> tuple[int, int]:
        """Raise :class:`InputSizeError` unless ``input_size`` is the engine's H x W."""
        return check_static_size(input_size, self.input_size,
                                 f'TensorRT engine {self.path.name}',
                                 f'sapiens-ros export --task {self.task} --engine')

    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Run ``(B, 3, H, W)`` float32 CUDA input; returns float32 outputs by name."""
        with torch.cuda.device(self.device):
            return self._run(pixel_values.to(self.device, self._in_dtype).contiguous())

    def _run(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        fn = self._graphs if self._graphs is not None else self._execute
        return run_in_chunks(fn, x, self.batch_range[1], self.batch_range[0])

    def _graph_fn(self, batch: int):
        """Return the function one captured batch replays: on an execution context of its own."""
        with torch.cuda.device(self.device):
            context = self.engine.create_execution_context()
        if context is None:
            raise EngineError(f'TensorRT could not create an execution context for {self.task}')
        return lambda x: self._execute(x, context)

    def _execute(self, x: torch.Tensor, context=None) -> dict[str, torch.Tensor]:
        ctx = self.context if context is None else context
        if not ctx.set_input_shape(self.input_name, tuple(x.shape)):
            raise EngineError(f'{self.path.name} rejected input shape {tuple(x.shape)} '
                              f'(profile batch {self.batch_range}, input {self.input_size})')
        ctx.set_tensor_address(self.input_name, x.data_ptr())
        # Outputs belong to torch's stream (allocated there, used there); the engine's stream,
        # when it is another one, waits for torch's before and torch's waits for it after, so
        # neither the input nor the outputs can be reused early and no record_stream is needed.
        consumer = torch.cuda.current_stream(self.device)
        outs = {}
        for name in self.output_names:
            out = torch.empty(tuple(ctx.get_tensor_shape(name)), dtype=self._out_dtypes[name],
                              device=self.device)
            ctx.set_tensor_address(name, out.data_ptr())
            outs[name] = out
        stream = consumer if consumer.cuda_stream != 0 else self._stream
        if stream is not consumer:
            stream.wait_stream(consumer)
        if not ctx.execute_async_v3(stream.cuda_stream):
            raise EngineError(f'TensorRT execution failed for {self.task}')
        if stream is not consumer:
            consumer.wait_stream(stream)
        return {n: t if t.dtype == torch.float32 else t.float() for n, t in outs.items()}
