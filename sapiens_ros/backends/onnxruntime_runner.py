"""
ONNX Runtime runner: an exported Sapiens2 graph behind the pipeline's Runner contract.

On CUDA the torch input and output tensors are bound with IOBinding (device pointers, no host
round trip) and ONNX Runtime runs on torch's current CUDA stream; on CPU plain numpy views are
used (``torch.from_numpy``, no copy).
"""

from __future__ import annotations

from collections.abc import Sequence
import logging
from pathlib import Path

import numpy as np
import torch

from .errors import BackendUnavailableError, check_static_size, ExportError
from .export import onnx_metadata
from ..core.loading import parse_device
from ..core.runners import OUTPUT_NAMES

LOG = logging.getLogger(__name__)

#: Preferred execution providers, fastest first; only installed ones are used.
DEFAULT_PROVIDERS = ('TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider')
_GPU_PROVIDERS = ('TensorrtExecutionProvider', 'CUDAExecutionProvider')
_SHORT = {'tensorrt': 'TensorrtExecutionProvider', 'trt': 'TensorrtExecutionProvider',
          'cuda': 'CUDAExecutionProvider', 'cpu': 'CPUExecutionProvider'}
_NP_DTYPES = {'tensor(float)': np.float32, 'tensor(float16)': np.float16}
_TORCH_DTYPES = {np.float32: torch.float32, np.float16: torch.float16}


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
                 io_binding: bool | None = None) -> None:
        ort = import_onnxruntime()
        self.task = task
        self.path = Path(onnx_path).expanduser()
        if not self.path.is_file():
            raise ExportError(f'ONNX file {str(self.path)!r} does not exist; create it with '
                              f'`sapiens-ros export --task {task} --out {self.path}`')
        self.metadata = onnx_metadata(self.path)
        if self.metadata.get('task', task) != task:
            raise ExportError(f'{self.path.name} was exported for task '
                              f'{self.metadata["task"]!r}, not {task!r}')
        self.model_id = model_id or self.metadata.get('model_id') or str(self.path)
        self.device = parse_device(device)
        self.dtype = torch.float32
        self.providers = choose_providers(ort.get_available_providers(), self.device, providers)
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
        self.providers = self.session.get_providers()
        inp = self.session.get_inputs()[0]
        self.input_name = inp.name
        shape = list(inp.shape)
        if len(shape) != 4 or not all(isinstance(v, int) for v in shape[1:]):
            raise ExportError(f'{self.path.name}: expected input (batch, 3, H, W) with static '
                              f'H and W, got {shape}')
        self.input_size = (shape[2], shape[3])
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
        # The CUDA provider is handed torch's stream; the TensorRT provider runs on its own.
        self._foreign_stream = self.providers[0] != 'CUDAExecutionProvider'
        LOG.info('onnxruntime %s: %s on %s (input %dx%d)', task, self.path.name,
                 ','.join(self.providers), *self.input_size)

    def _options(self, provider: str, extra: dict[str, dict] | None,
                 cache_dir: str | Path | None) -> dict:
        opts: dict = {}
        if provider in _GPU_PROVIDERS:
            opts['device_id'] = str(self.device.index or 0)
        if provider == 'CUDAExecutionProvider' and torch.cuda.is_available():
            # Run on torch's current stream so pre/post-processing and ORT stay ordered.
            with torch.cuda.device(self.device):
                stream = torch.cuda.current_stream().cuda_stream
            opts.update(has_user_compute_stream='1', user_compute_stream=str(stream))
        if provider == 'TensorrtExecutionProvider' and cache_dir:
            opts.update(trt_engine_cache_enable='True', trt_engine_cache_path=str(cache_dir),
                        trt_timing_cache_enable='True')
        opts.update((extra or {}).get(provider, {}))
        return opts

    def check_input_size(self, input_size: tuple[int, int]) -> tuple[int, int]:
        """Raise :class:`InputSizeError` unless ``input_size`` is the graph's static H x W."""
        return check_static_size(input_size, self.input_size, f'ONNX graph {self.path.name}',
                                 f'sapiens-ros export --task {self.task}')

    def _shape(self, meta_shape: list, batch: int) -> list[int] | None:
        dims = [batch] + list(meta_shape[1:])
        return dims if all(isinstance(d, int) for d in dims) else None

    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Run the graph on ``(B, 3, H, W)`` float32; outputs are float32 on the runner device."""
        x = pixel_values.detach()
        if x.dtype != torch.float32:
            x = x.float()
        x = x.contiguous()
        if self.io_binding and x.device.type == self.device.type:
            return self._run_bound(x)
        outs = self.session.run(list(self.output_names), {self.input_name: x.cpu().numpy()})
        return {n: torch.from_numpy(o).to(self.device)
                for n, o in zip(self.output_names, outs, strict=True)}

    def _run_bound(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """Bind torch's tensors by pointer with IOBinding: ORT reads and writes them in place."""
        binding = self.session.io_binding()
        kind, index = x.device.type, x.device.index or 0
        binding.bind_input(self.input_name, kind, index, np.float32, list(x.shape), x.data_ptr())
        outs: dict[str, torch.Tensor] = {}
        for name, meta_shape, np_dtype in self._out_meta:
            shape = self._shape(meta_shape, x.shape[0])
            if shape is None:
                binding.bind_output(name, kind, index)
                continue
            out = torch.empty(shape, dtype=_TORCH_DTYPES[np_dtype], device=x.device)
            binding.bind_output(name, kind, index, np_dtype, shape, out.data_ptr())
            outs[name] = out
        if x.device.type == 'cuda' and self._foreign_stream:
            # Only the CUDA provider runs on torch's stream; order the others after torch's
            # pre-processing kernels that wrote ``x``.
            torch.cuda.current_stream(x.device).synchronize()
        self.session.run_with_iobinding(binding)
        if len(outs) < len(self.output_names):  # dynamic output dims: ORT allocated them
            values = binding.get_outputs()
            for (name, _, _), value in zip(self._out_meta, values, strict=True):
                if name not in outs:
                    outs[name] = torch.from_numpy(value.numpy()).to(x.device)
        return outs
