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
A fake of the ``torch.cuda`` API surface the backends use, for a machine without a GPU.

What it models:

* devices: ``torch.cuda.device`` guards (a stack of current device indices), ``current_device``,
  ``get_device_properties`` (name and compute capability per index);
* streams: ``torch.cuda.Stream`` objects with unique handles, the legacy default stream of each
  device (handle 0) as the initial current stream, ``current_stream``, ``stream(s)`` contexts,
  and every ``wait_stream`` recorded in :attr:`FakeCuda.log`;
* CUDA graphs: ``CUDAGraph``, ``graph(g, pool=...)`` capture contexts on a fresh capture stream,
  ``graph_pool_handle``. Work launched through :meth:`FakeCuda.launch` on a capturing stream is
  recorded into the graph instead of running, and ``replay()`` runs it again on the same memory
  (so a replay overwrites the static outputs in place, as on a GPU);
* device memory: while installed, a ``TorchFunctionMode`` turns every tensor placed on
  ``cuda[:N]`` (factory functions' ``device=``, ``Tensor.to``, ``Tensor.cuda``) into host
  memory, so ``data_ptr()`` addresses are real and the fake TensorRT / ONNX Runtime read and
  write through them.

What it does not model: asynchrony (work runs when it is launched, so a missing wait cannot
corrupt values here; the tests check the recorded waits instead), kernel timing, memory pools'
addresses, per-thread current streams, peer access, and torch kernels inside a captured region
(only :meth:`launch` work is recorded into a graph).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
import itertools
from types import SimpleNamespace

import torch
from torch.overrides import TorchFunctionMode


def _index(device, current: int) -> int:
    """Return the CUDA device index of ``device`` (an index, a string or a torch.device)."""
    if device is None:
        return current
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != 'cuda':
        raise ValueError(f'fake CUDA: expected a cuda device, got {device}')
    return current if device.index is None else device.index


def _is_cuda(value) -> bool:
    if isinstance(value, torch.device):
        return value.type == 'cuda'
    return isinstance(value, str) and value.startswith('cuda')


class _HostMemory(TorchFunctionMode):
    """Place every ``cuda`` tensor in host memory (see the module docstring)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if _is_cuda(kwargs.get('device')):
            kwargs['device'] = 'cpu'
        name = getattr(func, '__name__', '')
        if name == 'to':
            args = tuple(a for a in args if not _is_cuda(a))
            if len(args) == 1 and not kwargs:
                return args[0]
        elif name == 'cuda':
            return args[0]
        return func(*args, **kwargs)


class FakeStream:
    """A ``torch.cuda.Stream``: a handle on a device; waits are logged by its owner."""

    def __init__(self, cuda: FakeCuda, device_index: int, handle: int) -> None:
        self._cuda = cuda
        self.device = torch.device('cuda', device_index)
        self.cuda_stream = handle

    def wait_stream(self, other: FakeStream) -> None:
        """Record that work queued on this stream from now on waits for ``other``'s."""
        self._cuda.log.append(('wait', self.cuda_stream, other.cuda_stream))

    def synchronize(self) -> None:
        """Nothing to wait for: fake work runs when launched."""
        self._cuda.log.append(('synchronize', self.cuda_stream))

    def __repr__(self) -> str:
        return f'<FakeStream {self.cuda_stream} on {self.device}>'


class FakeGraph:
    """A ``torch.cuda.CUDAGraph``: replays the launches recorded while it was captured."""

    def __init__(self) -> None:
        self.launches: list = []
        self.pool = None
        self.replays = 0

    def replay(self) -> None:
        """Run every recorded launch again, on the memory it was captured with."""
        self.replays += 1
        for work in self.launches:
            work()


@dataclass
class GpuSpec:
    """What ``get_device_properties`` reports for one fake GPU."""

    name: str = 'NVIDIA H100 80GB HBM3'
    major: int = 9
    minor: int = 0


class FakeCuda:
    """Installs the fake into ``torch.cuda`` with pytest's ``monkeypatch``."""

    def __init__(self, gpus: list[GpuSpec] | None = None) -> None:
        self.gpus = gpus or [GpuSpec(), GpuSpec()]
        self.log: list[tuple] = []
        self._handles = itertools.count(0x1000, 0x10)
        self._devices = [0]  # stack of current device indices (guards push and pop)
        self._legacy = {i: FakeStream(self, i, 0) for i in range(len(self.gpus))}
        self._current = dict(self._legacy)  # device index -> current stream
        self._capturing: dict[int, FakeGraph] = {}  # capture stream handle -> graph
        self._mode: _HostMemory | None = None

    # ------------------------------------------------------------------ queries for tests
    @property
    def current_device_index(self) -> int:
        """Return the device the innermost guard selected."""
        return self._devices[-1]

    def events(self, kind: str) -> list[tuple]:
        """Return the logged events of one kind."""
        return [e for e in self.log if e[0] == kind]

    # ------------------------------------------------------------------ work
    def launch(self, handle: int, work) -> None:
        """Run ``work`` now, or record it into the graph capturing stream ``handle``."""
        graph = self._capturing.get(handle)
        if graph is not None:
            graph.launches.append(work)
            self.log.append(('captured', handle))
        else:
            work()

    # ------------------------------------------------------------------ torch.cuda API
    def _stream_class(self):
        cuda = self

        class Stream(FakeStream):

            def __init__(self, device=None, priority: int = 0) -> None:
                index = _index(device, cuda.current_device_index)
                super().__init__(cuda, index, next(cuda._handles))
                cuda.log.append(('new_stream', self.cuda_stream, index))

        return Stream

    @contextlib.contextmanager
    def _device(self, device):
        index = _index(device, self.current_device_index)
        if not 0 <= index < len(self.gpus):
            raise RuntimeError(f'fake CUDA: invalid device ordinal {index}')
        self._devices.append(index)
        self.log.append(('guard', index))
        try:
            yield
        finally:
            self._devices.pop()

    def _current_stream(self, device=None) -> FakeStream:
        return self._current[_index(device, self.current_device_index)]

    @contextlib.contextmanager
    def _stream(self, stream: FakeStream | None):
        if stream is None:
            yield
            return
        index = stream.device.index
        previous = self._current[index]
        self._current[index] = stream
        self._devices.append(index)
        try:
            yield
        finally:
            self._devices.pop()
            self._current[index] = previous

    @contextlib.contextmanager
    def _graph(self, graph: FakeGraph, pool=None, stream=None):
        index = self.current_device_index
        capture = stream or FakeStream(self, index, next(self._handles))
        graph.pool = pool
        self._capturing[capture.cuda_stream] = graph
        self.log.append(('capture_begin', capture.cuda_stream, pool))
        try:
            with self._stream(capture):
                yield
        finally:
            del self._capturing[capture.cuda_stream]
            self.log.append(('capture_end', capture.cuda_stream))

    def _properties(self, device=None):
        spec = self.gpus[_index(device, self.current_device_index)]
        return SimpleNamespace(name=spec.name, major=spec.major, minor=spec.minor,
                               total_memory=80 * 2 ** 30)

    def install(self, monkeypatch) -> FakeCuda:
        """Patch ``torch.cuda`` and start placing cuda tensors in host memory."""
        api = {
            'is_available': lambda: True,
            'device_count': lambda: len(self.gpus),
            'current_device': lambda: self.current_device_index,
            'device': self._device,
            'Stream': self._stream_class(),
            'current_stream': self._current_stream,
            'default_stream': lambda device=None: self._legacy[
                _index(device, self.current_device_index)],
            'stream': self._stream,
            'synchronize': lambda device=None: self.log.append(('device_synchronize',)),
            'get_device_properties': self._properties,
            'get_device_capability': lambda device=None: (
                self._properties(device).major, self._properties(device).minor),
            'get_device_name': lambda device=None: self._properties(device).name,
            'CUDAGraph': FakeGraph,
            'graph': self._graph,
            'graph_pool_handle': lambda: object(),
            'empty_cache': lambda: None,
        }
        for name, value in api.items():
            monkeypatch.setattr(torch.cuda, name, value)
        self._mode = _HostMemory()
        self._mode.__enter__()
        return self

    def uninstall(self) -> None:
        """Stop placing cuda tensors in host memory (monkeypatch undoes the rest)."""
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
