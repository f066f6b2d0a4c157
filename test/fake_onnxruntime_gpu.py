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

What it does not model: CUDA kernels, ORT's arena, the TensorRT provider's engine building
(its options are only recorded), and graph partitioning between providers.
"""

from __future__ import annotations

import types

GPU_PROVIDERS = ('TensorrtExecutionProvider', 'CUDAExecutionProvider')


def make_onnxruntime_gpu(cuda) -> types.ModuleType:
    """Return a fake ``onnxruntime`` module (GPU build) bound to a :class:`FakeCuda`."""
    import onnxruntime as real

    ort = types.ModuleType('onnxruntime')
    for name in ('SessionOptions', 'GraphOptimizationLevel', 'OrtValue', '__version__'):
        setattr(ort, name, getattr(real, name))
    ort.get_available_providers = lambda: [*GPU_PROVIDERS, 'CPUExecutionProvider']
    ort.sessions = []

    class IOBinding:

        def __init__(self, session) -> None:
            self.session = session
            self.real = session.real.io_binding()
            self.bound: list[tuple] = []

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
                self.real.bind_output(name, device, 0, element_type, shape, address)

        def get_outputs(self):
            return self.real.get_outputs()

    class InferenceSession:

        def __init__(self, path, options=None, providers=None, provider_options=None) -> None:
            self.providers = list(providers or ['CPUExecutionProvider'])
            self.provider_options = dict(zip(self.providers, provider_options or [{}] *
                                             len(self.providers), strict=True))
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

        def get_inputs(self):
            return self.real.get_inputs()

        def get_outputs(self):
            return self.real.get_outputs()

        def run(self, names, feeds):
            return self.real.run(names, feeds)

        def io_binding(self):
            binding = IOBinding(self)
            self.bindings.append(binding)
            return binding

        def run_with_iobinding(self, binding) -> None:
            cuda.log.append(('ort_run', self.stream, cuda.current_device_index))
            cuda.flush(self.stream)  # ORT's work runs after what was queued on its stream
            self.real.run_with_iobinding(binding.real)

    ort.InferenceSession = InferenceSession
    return ort
