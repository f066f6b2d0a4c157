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
ONNX Runtime runner: an exported Sapiens2 graph behind the pipeline's Runner contract.

On CUDA the torch input and output tensors are bound with IOBinding (device pointers, no host
round trip). ONNX Runtime runs on the runner's own CUDA stream (``user_compute_stream``), made to
wait for torch's current stream before each run, so it reads the pre-processed input only once
it is written, without a host synchronisation. Outputs whose shape the graph leaves dynamic are
allocated by ONNX Runtime on the first run only; later runs bind preallocated torch tensors. On
CPU plain numpy views are used (``torch.from_numpy``, no copy).
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
from pathlib import Path

import numpy as np
import torch

from .errors import BackendUnavailableError, check_static_size, ExportError
from .export import graph_input_size, INPUT_NAME, proto_metadata
from ..core.models.input_size import Size
from ..core.models.loading import parse_device
from ..core.models.runners import OUTPUT_NAMES

LOG = logging.getLogger(__name__)

#: Default execution providers; only installed ones are used. ORT's TensorRT provider builds its
#: own engines at first use (minutes, per batch shape): ask for it with ``providers`` (it then
#: gets an engine cache, the batch profile and, on TensorRT < 11, the precision flag) or use
#: ``backend=tensorrt``.
DEFAULT_PROVIDERS = ('CUDAExecutionProvider', 'CPUExecutionProvider')
_GPU_PROVIDERS = ('TensorrtExecutionProvider', 'CUDAExecutionProvider')
_SHORT = {'tensorrt': 'TensorrtExecutionProvider', 'trt': 'TensorrtExecutionProvider',
          'cuda': 'CUDAExecutionProvider', 'cpu': 'CPUExecutionProvider'}
_NP_DTYPES = {'tensor(float)': np.float32, 'tensor(float16)': np.float16}
_TORCH_DTYPES = {np.float32: torch.float32, np.float16: torch.float16}
_INPUT_DTYPES = {'tensor(float)': torch.float32, 'tensor(float16)': torch.float16,
                 'tensor(bfloat16)': torch.bfloat16}
_NP_OF_TORCH = {torch.float32: np.float32, torch.float16: np.float16}


def import_onnxruntime():
    """Import onnxruntime or raise an error naming the package to install."""
    try:
        import onnxruntime
    except ImportError:
        raise BackendUnavailableError(
            'backend onnxruntime needs ONNX Runtime: pip install onnxruntime (CPU) or '
            'onnxruntime-gpu (CUDA/TensorRT execution providers); on Jetson use the '
            'onnxruntime-gpu wheel built for JetPack') from None
    return onnxruntime


def choose_providers(available: Sequence[str], device: torch.device,
                     preferred: Sequence[str] | None = None) -> list[str]:
    """
    Pick execution providers: ``preferred`` order (short names ok), filtered to installed ones.

    On a CPU device only the CPU provider is used. On CUDA, GPU providers come first; the CPU
    provider stays last as ONNX Runtime's fallback for unsupported nodes.
    """
    order = [_SHORT.get(p.lower(), p) for p in (preferred or DEFAULT_PROVIDERS)]
    unknown = [p for p in order if p not in _SHORT.values() and p not in available]
    if unknown:
        raise BackendUnavailableError(
            f'execution provider(s) {unknown} are not installed; this onnxruntime has '
            f'{list(available)}')
    if device.type == 'cpu':
        order = [p for p in order if p not in _GPU_PROVIDERS]
    chosen = [p for p in order if p in available]
    if device.type == 'cuda' and not any(p in _GPU_PROVIDERS for p in chosen):
        raise BackendUnavailableError(
            f'device {device} needs a CUDA or TensorRT execution provider, but this onnxruntime '
            f'only has {list(available)}: pip install onnxruntime-gpu (and uninstall '
            f'onnxruntime), or run on device=cpu')
    if 'CPUExecutionProvider' in available and 'CPUExecutionProvider' not in chosen:
        chosen.append('CPUExecutionProvider')
    if not chosen:
        raise BackendUnavailableError(f'none of {order} is available (installed: {available})')
    return chosen


class OnnxRuntimeRunner:
    """Runs one task's exported ONNX graph with ONNX Runtime."""

    name = 'onnxruntime'

    def __init__(self, task: str, onnx_path: str | Path, *, device: str | torch.device = 'cpu',
                 providers: Sequence[str] | None = None, model_id: str = '',
                 provider_options: dict[str, dict] | None = None, threads: int = 0,
                 spin: bool = False, cache_dir: str | Path | None = None,
                 io_binding: bool | None = None, batch: tuple[int, int, int] = (1, 1, 8),
                 precision: str = 'fp32') -> None:
        import onnx

        ort = import_onnxruntime()
        self.task = task
        self.path = Path(onnx_path).expanduser()
        if not self.path.is_file():
            raise ExportError(f'ONNX file {str(self.path)!r} does not exist; create it with '
                              f'`sapiens-ros export --task {task} --out {self.path}`')
        graph = onnx.load(str(self.path), load_external_data=False)  # without its weights
        self.metadata = proto_metadata(graph)
        self._graph_size = graph_input_size(graph)  # for ORT's TensorRT profile, before a session
        if self.metadata.get('task', task) != task:
            raise ExportError(f'{self.path.name} was exported for task '
                              f'{self.metadata["task"]!r}, not {task!r}')
        self.model_id = model_id or self.metadata.get('model_id') or str(self.path)
        self.device = parse_device(device)
        self.dtype = torch.float32
        self.providers = choose_providers(ort.get_available_providers(), self.device, providers)
        self.batch_profile, self._precision = batch, precision
        self.ort_version = str(getattr(ort, '__version__', '')) or None
        on_cuda = self.device.type == 'cuda' and torch.cuda.is_available()
        self._stream = torch.cuda.Stream(self.device) if on_cuda else None
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads:
            options.intra_op_num_threads = threads
        if not spin:
            # Idle ORT threads otherwise busy-wait after each run, starving the torch pre- and
            # post-processing that runs between heads on the same cores.
            options.add_session_config_entry('session.intra_op.allow_spinning', '0')
        self.session = ort.InferenceSession(
            str(self.path), options, providers=self.providers,
            provider_options=[self._options(p, provider_options, cache_dir)
                              for p in self.providers])
        asked, self.providers = self.providers, self.session.get_providers()
        self.precision = self._report_session(asked, precision)
        inp = self.session.get_inputs()[0]
        self.input_name = inp.name
        self._in_dtype = _INPUT_DTYPES.get(inp.type, torch.float32)
        shape = list(inp.shape)
        if len(shape) != 4 or not all(isinstance(v, int) for v in shape[1:]):
            raise ExportError(f'{self.path.name}: expected input (batch, 3, H, W) with static '
                              f'H and W, got {shape}')
        self.input_size = Size(shape[2], shape[3])
        outs = {o.name: o for o in self.session.get_outputs()}
        self.output_names = tuple(n for n in OUTPUT_NAMES[task] if n in outs)
        if not self.output_names:
            raise ExportError(f'{self.path.name} has outputs {list(outs)}, none of '
                              f'{OUTPUT_NAMES[task]} (task {task!r}); re-export it')
        self._out_meta = [(n, outs[n].shape, _NP_DTYPES.get(outs[n].type, np.float32))
                          for n in self.output_names]
        on_gpu = self.device.type == 'cuda' and self.providers[0] in _GPU_PROVIDERS
        # IOBinding by default where it saves copies (CUDA); on CPU it is optional.
        self.io_binding = on_gpu if io_binding is None else bool(io_binding)
        self._learned_shapes: dict[str, list[int]] = {}  # per-sample shapes of dynamic outputs
        LOG.info('onnxruntime %s: %s (input %s)', task, self.path.name, self.input_size)

    def _report_session(self, asked: Sequence[str], precision: str) -> str:
        """
        Log the providers and precisions the session really got; return the first's precision.

        ONNX Runtime's Python API falls back to the CUDA and CPU providers (on GPU 0, without
        their options) when a provider refuses its options, with only a print: here it is a
        warning naming what was asked and what was given. A requested reduced precision that no
        provider applies (the CUDA and CPU providers run the graph in its own dtype) is a
        warning too, never silently dropped.
        """
        graph = self.metadata.get('dtype', 'fp32')
        try:
            options = self.session.get_provider_options()
        except AttributeError:  # very old ONNX Runtime
            options = {}
        got = []
        for provider in self.providers:
            opts = options.get(provider, {})
            if provider == 'TensorrtExecutionProvider':
                flags = [p for p, key in (('fp16', 'trt_fp16_enable'), ('bf16', 'trt_bf16_enable'))
                         if str(opts.get(key, '0')).lower() in ('1', 'true')]
                got.append((provider, '+'.join(flags) if flags else graph, opts.get('device_id')))
            else:
                got.append((provider, graph, opts.get('device_id')))
        LOG.info('onnxruntime %s session: %s', self.task, ', '.join(
            f'{p} ({dtype}' + (f', device {d}' if d is not None else '') + ')'
            for p, dtype, d in got))
        if self.providers[0] != asked[0]:
            LOG.warning('onnxruntime %s: asked for %s, ONNX Runtime started %s instead (it '
                        'refused the first provider or its options; see its EP Error print)',
                        self.task, ', '.join(asked), ', '.join(self.providers))
        first = got[0][1]
        if precision != 'fp32' and precision not in first.split('+'):
            LOG.warning('onnxruntime %s: dtype %s is not applied: %s runs the %s graph in %s '
                        '(the CUDA and CPU providers never cast a graph). Pass a graph exported '
                        'with --dtype %s, ask for providers tensorrt, or use backend tensorrt '
                        'or torch', self.task, precision, self.providers[0], graph, first,
                        precision)
        return first

    def _options(self, provider: str, extra: dict[str, dict] | None,
                 cache_dir: str | Path | None) -> dict:
        opts: dict = {}
        if provider in _GPU_PROVIDERS:
            opts['device_id'] = str(self.device.index or 0)
            if self._stream is not None:  # a real stream handle (the legacy default is 0)
                opts.update(has_user_compute_stream='1',
                            user_compute_stream=str(self._stream.cuda_stream))
        if provider == 'TensorrtExecutionProvider':
            opts.update(self._tensorrt_provider_options(cache_dir))
        opts.update((extra or {}).get(provider, {}))
        return opts

    def _tensorrt_provider_options(self, cache_dir: str | Path | None) -> dict:
        """
        Engine cache, the batch profile and the precision for ORT's TensorRT provider.

        The precision flags are TensorRT's weak typing, which TensorRT 11 removed: they are set
        only where :func:`~.precision.ort_tensorrt_precision` finds them for the installed
        TensorRT.
        """
        from .artifacts import default_cache_dir
        from .precision import ort_tensorrt_precision
        from .tensorrt_build import installed_tensorrt_version

        folder = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        h, w = self._graph_size or (0, 0)
        name = INPUT_NAME
        profile = [f'{name}:{b}x3x{h}x{w}' for b in self.batch_profile]
        opts = {'trt_engine_cache_enable': 'True',
                'trt_engine_cache_path': str(folder / 'ort_trt'),
                'trt_timing_cache_enable': 'True',
                'trt_timing_cache_path': str(folder / 'ort_trt')}
        if h and w:
            opts.update(trt_profile_min_shapes=profile[0], trt_profile_opt_shapes=profile[1],
                        trt_profile_max_shapes=profile[2])
        flags, note = ort_tensorrt_precision(self._precision, installed_tensorrt_version(),
                                             self.metadata.get('dtype', 'fp32'),
                                             self.ort_version)
        if note:
            LOG.warning(note)
        opts.update(flags)
        return opts

    def check_input_size(self, input_size: tuple[int, int]) -> tuple[int, int]:
        """Raise :class:`InputSizeError` unless ``input_size`` is the graph's static H x W."""
        return check_static_size(input_size, self.input_size, f'ONNX graph {self.path.name}',
                                 f'sapiens-ros export --task {self.task}')

    def _shape(self, meta_shape: list, batch: int) -> list[int] | None:
        dims = [batch] + list(meta_shape[1:])
        return dims if all(isinstance(d, int) for d in dims) else None

    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Run the graph on ``(B, 3, H, W)``; outputs are on the runner device."""
        x = pixel_values.detach().to(self.device, self._in_dtype).contiguous()
        if self.io_binding:
            return self._run_bound(x)
        _element_type(x.dtype)  # a clear error for a bfloat16 input
        outs = self.session.run(list(self.output_names), {self.input_name: x.cpu().numpy()})
        return {n: torch.from_numpy(o).to(self.device)
                for n, o in zip(self.output_names, outs, strict=True)}

    def _run_bound(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Bind torch's tensors by pointer with IOBinding: ORT reads and writes them in place."""
        binding = self.session.io_binding()
        kind, index = self.device.type, self.device.index or 0
        binding.bind_input(self.input_name, kind, index, _element_type(x.dtype), list(x.shape),
                           x.data_ptr())
        outs: dict[str, torch.Tensor] = {}
        for name, meta_shape, np_dtype in self._out_meta:
            shape = self._shape(meta_shape, x.shape[0])
            if shape is None and name in self._learned_shapes:
                shape = [x.shape[0], *self._learned_shapes[name]]
            if shape is None:
                binding.bind_output(name, kind, index)  # ORT allocates it (first run only)
                continue
            out = torch.empty(shape, dtype=_TORCH_DTYPES[np_dtype], device=self.device)
            binding.bind_output(name, kind, index, np_dtype, shape, out.data_ptr())
            outs[name] = out
        if self._stream is not None:
            # ORT's stream starts once torch's pre-processing has written ``x`` (device-side
            # wait); ORT synchronises its stream before run_with_iobinding returns.
            self._stream.wait_stream(torch.cuda.current_stream(self.device))
        self.session.run_with_iobinding(binding)
        if len(outs) < len(self.output_names):
            values = binding.get_outputs()
            for (name, _, _), value in zip(self._out_meta, values, strict=True):
                if name not in outs:
                    self._learned_shapes[name] = list(value.shape())[1:]
                    outs[name] = torch.from_numpy(value.numpy()).to(self.device)
        return outs


def _element_type(dtype: torch.dtype):
    """Return the IOBinding element type (a numpy type) of a torch dtype."""
    if dtype not in _NP_OF_TORCH:
        raise ExportError(f'ONNX graph input of dtype {dtype} cannot be bound from Python '
                          f'(numpy has no bfloat16): export the graph with an fp32 or fp16 input')
    return _NP_OF_TORCH[dtype]
