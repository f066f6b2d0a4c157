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
A fake ``onnxruntime-gpu``: the real ONNX Runtime (CPU) behind the CUDA/TensorRT provider API.

It models what the runner relies on: ``get_available_providers`` lists the TensorRT, CUDA and
CPU providers; ``InferenceSession`` keeps the providers and provider options it was given
(``device_id``, ``user_compute_stream``, the TensorRT provider's cache/profile/precision keys)
and reports them from ``get_providers``; ``io_binding`` accepts ``'cuda'`` bindings by device
pointer on the session's ``device_id`` (rejecting another device, as ORT does) and reads and
writes that memory, which :mod:`fake_cuda` keeps on the host; ``run_with_iobinding`` records
the stream it runs on in the fake CUDA log and, like ORT with ``user_compute_stream``, runs on
that stream (after the work queued on it) and synchronises it before returning.

Per ONNX Runtime version (``make_onnxruntime_gpu(cuda, version)``; default 1.20.0, the
onnxruntime-gpu of JetPack 6), the TensorRT provider accepts only the option keys that version
knows (:data:`TRT_KEYS`, ``trt_bf16_enable`` from 1.23) and refuses any other as ORT does
(``Invalid TensorRT EP option``); the session then falls back the way ORT's Python API does:
it prints the EP error and retries with ``['CUDAExecutionProvider', 'CPUExecutionProvider']`` and
no provider options (so on GPU 0, without the user's stream). ``get_provider_options`` reports
the options each provider kept. With the TensorRT provider and an engine cache enabled, session
creation writes an engine file into ``trt_engine_cache_path`` (as the provider does once it has
built); ``ort.miscompute = 'wrong'`` makes the TensorRT provider's outputs wrong (a miscompiled
engine).

What it does not model: CUDA kernels, ORT's arena, the TensorRT provider's engine building
(its options are only checked and recorded), other providers' option keys, and graph
partitioning between providers.
"""

from __future__ import annotations

import ctypes
import itertools
from pathlib import Path
import re
import types

import numpy as np

GPU_PROVIDERS = ('TensorrtExecutionProvider', 'CUDAExecutionProvider')
#: TensorRT provider option keys, by the first ONNX Runtime version that knows them (those
#: sapiens_ros may send, and a few more; onnxruntime_pybind_state.cc and the provider docs).
TRT_KEYS = {
    (1, 0): {'device_id', 'has_user_compute_stream', 'user_compute_stream',
             'trt_max_workspace_size', 'trt_fp16_enable', 'trt_int8_enable',
             'trt_engine_cache_enable', 'trt_engine_cache_path', 'trt_dla_enable',
             'trt_max_partition_iterations', 'trt_min_subgraph_size'},
    (1, 12): {'trt_timing_cache_enable', 'trt_force_timing_cache', 'trt_detailed_build_log',
              'trt_context_memory_sharing_enable', 'trt_layer_norm_fp32_fallback'},
    (1, 13): {'trt_profile_min_shapes', 'trt_profile_max_shapes', 'trt_profile_opt_shapes'},
    (1, 16): {'trt_cuda_graph_enable', 'trt_timing_cache_path'},
    (1, 23): {'trt_bf16_enable'},
}


def trt_keys(version: str) -> set[str]:
    """Return the TensorRT provider option keys ONNX Runtime ``version`` knows."""
    have = tuple(int(v) for v in re.findall(r'\d+', version)[:2])
    return set().union(*(keys for since, keys in TRT_KEYS.items() if have >= since))


def make_onnxruntime_gpu(cuda, version: str = '1.20.0') -> types.ModuleType:
    """Return a fake ``onnxruntime`` ``version`` module (GPU build) bound to a FakeCuda."""
    import onnxruntime as real

    ort = types.ModuleType('onnxruntime')
    for name in ('SessionOptions', 'GraphOptimizationLevel', 'OrtValue'):
        setattr(ort, name, getattr(real, name))
    ort.__version__ = version
    ort.get_available_providers = lambda: [*GPU_PROVIDERS, 'CPUExecutionProvider']
    ort.sessions = []
    ort.ep_errors = []  # what the fallback printed, one entry per refused session
    ort.miscompute = None
    engines = itertools.count()

    class IOBinding:

        def __init__(self, session) -> None:
            self.session = session
            self.real = session.real.io_binding()
            self.bound: list[tuple] = []
            self.outputs: list[tuple] = []  # (dtype, shape, address) of outputs bound by address

        def _device(self, kind: str, index: int) -> str:
            if kind == 'cuda':
                if not self.session.on_gpu:
                    raise RuntimeError('fake ORT: cuda binding on a CPU-only session')
                if index != self.session.device_id:
                    raise RuntimeError(f'fake ORT: binding on cuda:{index}, session runs on '
                                       f'cuda:{self.session.device_id}')
            return 'cpu'

        def bind_input(self, name, kind, index, element_type, shape, address) -> None:
            self.bound.append(('input', name, kind, index, element_type, tuple(shape)))
            self.real.bind_input(name, self._device(kind, index), 0, element_type, shape,
                                 address)

        def bind_output(self, name, kind='cpu', index=0, element_type=None, shape=None,
                        address=None) -> None:
            self.bound.append(('output', name, kind, index, element_type,
                               None if shape is None else tuple(shape)))
            device = self._device(kind, index)
            if address is None:
                self.real.bind_output(name, device, 0)
            else:
                self.outputs.append((np.dtype(element_type), tuple(shape), address))
                self.real.bind_output(name, device, 0, element_type, shape, address)

        def get_outputs(self):
            return self.real.get_outputs()

    class InferenceSession:

        def __init__(self, path, options=None, providers=None, provider_options=None) -> None:
            self.providers = list(providers or ['CPUExecutionProvider'])
            self.provider_options = dict(zip(self.providers, provider_options or [{}] *
                                             len(self.providers), strict=True))
            unknown = sorted(set(self.provider_options.get('TensorrtExecutionProvider', {}))
                             - trt_keys(version))
            if unknown:  # ORT raises; its Python API prints and retries without options
                error = f'Invalid TensorRT EP option: {unknown[0]}'
                print(f'EP Error {error} when using {self.providers}')
                print("Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and "
                      'retrying.')
                ort.ep_errors.append(error)
                self.providers = ['CUDAExecutionProvider', 'CPUExecutionProvider']
                self.provider_options = {p: {} for p in self.providers}
            trt = self.provider_options.get('TensorrtExecutionProvider')
            self.on_trt = self.providers[0] == 'TensorrtExecutionProvider'
            if self.on_trt and str(trt.get('trt_engine_cache_enable')) == 'True':
                folder = Path(trt['trt_engine_cache_path'])
                folder.mkdir(parents=True, exist_ok=True)
                (folder / f'TensorrtExecutionProvider_fake_{next(engines)}.engine').write_bytes(
                    b'fake engine')
            self.on_gpu = self.providers[0] in GPU_PROVIDERS
            first = self.provider_options[self.providers[0]]
            self.device_id = int(first.get('device_id', 0))
            self.stream = int(first.get('user_compute_stream', 0)) \
                if first.get('has_user_compute_stream') == '1' else 0
            self.real = real.InferenceSession(str(path), options,
                                              providers=['CPUExecutionProvider'])
            self.bindings: list[IOBinding] = []
            ort.sessions.append(self)

        def get_providers(self) -> list[str]:
            return list(self.providers)

        def get_provider_options(self) -> dict:
            return {p: {k: str(v) for k, v in o.items()}
                    for p, o in self.provider_options.items()}

        def get_inputs(self):
            return self.real.get_inputs()

        def get_outputs(self):
            return self.real.get_outputs()

        def run(self, names, feeds):
            outs = self.real.run(names, feeds)
            if self.on_trt and ort.miscompute == 'wrong':
                outs = [o + 0.5 * (np.abs(o).max() + 1.0) for o in outs]
            return outs

        def io_binding(self):
            binding = IOBinding(self)
            self.bindings.append(binding)
            return binding

        def run_with_iobinding(self, binding) -> None:
            cuda.log.append(('ort_run', self.stream, cuda.current_device_index))
            cuda.flush(self.stream)  # ORT's work runs after what was queued on its stream
            self.real.run_with_iobinding(binding.real)
            if self.on_trt and ort.miscompute == 'wrong':
                for dtype, shape, address in binding.outputs:
                    count = int(np.prod(shape)) * dtype.itemsize
                    raw = (ctypes.c_byte * count).from_address(address)
                    values = np.frombuffer(raw, dtype=dtype)
                    values += (0.5 * (np.abs(values).max() + 1.0)).astype(dtype)

    ort.InferenceSession = InferenceSession
    return ort
