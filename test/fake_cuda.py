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
  ``get_device_properties`` (name and compute capability per index); as in CUDA, the current
  device is per thread (every thread starts on device 0, whatever another thread selected);
* streams: ``torch.cuda.Stream`` objects with unique handles, the legacy default stream of each
  device (handle 0) as the initial current stream, ``current_stream``, ``stream(s)`` contexts,
  and every ``wait_stream``/``wait_event``/``synchronize`` recorded in :attr:`FakeCuda.log`;
  the current stream of each device is per thread, as CUDA's;
* asynchrony: work launched through :meth:`FakeCuda.launch` (the fake TensorRT's engine runs,
  graph replays) is queued on its stream and runs only when something orders it: a torch
  operation on that stream (torch kernels run on the current stream, after its queued work),
  ``other.wait_stream(stream)``, ``other.wait_event(event)``, ``stream.synchronize()``,
  ``torch.cuda.synchronize()`` or an event recorded after it being synchronised. So a reader
  that forgets to wait for the producer's stream reads stale memory, as on a GPU;
* CUDA graphs: ``CUDAGraph``, ``graph(g, pool=..., stream=..., capture_error_mode=...)``
  capture contexts on a fresh capture stream, ``graph_pool_handle``. Work launched on the
  capturing stream is recorded into the graph instead of running, and so is every torch op the
  capturing thread calls (it also runs once, as the capture's result); ``replay()`` queues them
  on the current stream, in capture order, on the memory they were captured with (each op
  runs again on its captured arguments and writes into the tensors it returned at capture).
  A capture fails as CUDA's does: a ``synchronize`` (or a launch on a legacy default stream)
  during a capture, from any thread in ``global`` mode or from the capturing thread in
  ``thread_local`` mode, raises and invalidates it, and ``capture_end`` then raises
  ``cudaErrorStreamCaptureInvalidated``; :attr:`FakeCuda.during_capture` runs a callback (e.g.
  another thread's work) inside the next capture;
* events: ``torch.cuda.Event(enable_timing=True)`` recorded on a stream (logged with the
  stream's device), ``synchronize``, ``elapsed_time`` (host clock);
* device memory: while installed, a ``TorchFunctionMode`` turns every tensor placed on
  ``cuda[:N]`` (factory functions' ``device=``, ``Tensor.to``, ``Tensor.cuda``) into host
  memory, so ``data_ptr()`` addresses are real and the fake TensorRT / ONNX Runtime read and
  write through them. torch's function modes are per thread: a thread a test starts enters it
  with :meth:`FakeCuda.on_this_thread`.

What it does not model: torch kernels themselves running asynchronously (they run when called,
after the queued work of the current stream, so a missing wait *before* a launch cannot be
seen, only a missing wait after one), kernel timing, memory pools' addresses, peer access, the
legacy stream's implicit synchronisation with blocking streams (torch's streams are
non-blocking), host synchronisations by torch ops during a capture (``.item()`` and ``.cpu()``
cannot be told from CPU work here), Python control flow that a replay cannot repeat (as on a
GPU, it is fixed at capture), and torch internals that need a CUDA build of torch
(``torch.export`` fails under the fake: export graphs before installing it).
"""

from __future__ import annotations

import collections
import contextlib
from dataclasses import dataclass
import itertools
import threading
import time
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


def _write_into(old, new) -> None:
    """Write a replayed op's result into the tensors its capture returned (views: already)."""
    if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
        if old.untyped_storage().data_ptr() != new.untyped_storage().data_ptr():
            old.copy_(new)
    elif isinstance(old, (tuple, list)) and isinstance(new, (tuple, list)):
        for a, b in zip(old, new, strict=True):
            _write_into(a, b)
    elif isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            _write_into(old[key], new[key])


class CaptureInvalidated(RuntimeError):
    """What CUDA reports for an operation that is not permitted while a stream is capturing."""


class FakeDeviceTensor(torch.Tensor):
    """
    A host tensor that says it is on a CUDA device (``FakeCuda(gpu_tensors=True)``).

    ``device`` and ``is_cuda`` report the fake GPU, so code that branches on them takes its GPU
    branch; the data stays in host memory. As on a GPU, ``numpy()`` refuses it and ``cpu()``
    copies it into a plain host tensor. Ops on it return it again (the fake's torch function
    mode wraps their outputs).
    """

    __torch_function__ = torch._C._disabled_torch_function_impl
    fake_index = 0

    @property
    def device(self) -> torch.device:
        return torch.device('cuda', self.fake_index)

    @property
    def is_cuda(self) -> bool:
        return True


def _on_device(value, index: int):
    """Wrap every tensor in ``value`` as a FakeDeviceTensor of device ``index``."""
    if isinstance(value, torch.Tensor):
        if isinstance(value, FakeDeviceTensor) and value.fake_index == index:
            return value
        out = value.as_subclass(FakeDeviceTensor)
        out.fake_index = index
        return out
    if isinstance(value, (tuple, list)) and not isinstance(value, torch.Size):
        return type(value)(_on_device(v, index) for v in value) \
            if not hasattr(value, '_fields') else type(value)(*(_on_device(v, index)
                                                                for v in value))
    return value


def _fake_index_of(args, kwargs) -> int | None:
    """Return the fake device of the first FakeDeviceTensor among an op's arguments."""
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten((args, kwargs))
    return next((t.fake_index for t in leaves if isinstance(t, FakeDeviceTensor)), None)


class _HostMemory(TorchFunctionMode):
    """Place every ``cuda`` tensor in host memory; order torch ops after their stream's work."""

    def __init__(self, cuda: FakeCuda) -> None:
        super().__init__()
        self._cuda = cuda

    def __torch_function__(self, func, types, args=(), kwargs=None):
        cuda = self._cuda
        kwargs = dict(kwargs or {})
        if getattr(cuda._threads, 'replaying', False):  # a graph's recorded op, run again
            return func(*args, **kwargs)
        cuda.flush_current()  # torch kernels run on the current stream, in order
        name = getattr(func, '__name__', '')
        target = None  # the fake device an op places its result on (gpu_tensors mode)
        if _is_cuda(kwargs.get('device')):
            target = _index(kwargs['device'], cuda.current_device_index)
            kwargs['device'] = 'cpu'
        if name == 'to':
            moved = [a for a in args[1:] if _is_cuda(a)]
            target = _index(moved[0], cuda.current_device_index) if moved else target
            args = tuple('cpu' if _is_cuda(a) else a for a in args)
        elif name == 'cuda':
            if not cuda.gpu_tensors:
                return args[0]
            target = _index(args[1] if len(args) > 1 else kwargs.get('device'),
                            cuda.current_device_index)
            return _on_device(args[0].as_subclass(torch.Tensor), target)
        elif name == 'pin_memory':  # no page-locked memory without CUDA: the host tensor
            return args[0]
        if kwargs.get('pin_memory'):  # a factory's page-locked buffer: host memory here
            kwargs['pin_memory'] = False
        if cuda.gpu_tensors:
            source = _fake_index_of(args, kwargs)
            if name == 'numpy' and source is not None:
                raise TypeError(f"can't convert cuda:{source} device type tensor to numpy. Use "
                                f'Tensor.cpu() to copy the tensor to host memory first.')
            to_host = name == 'to' and target is None and any(
                a in ('cpu', torch.device('cpu')) for a in (*args[1:], kwargs.get('device')))
            if name == 'cpu' or to_host:
                return args[0].as_subclass(torch.Tensor).clone() if source is not None \
                    else func(*args, **kwargs)
            if target is None and name not in ('item', 'tolist'):
                target = source
        out = func(*args, **kwargs)
        cuda.record_torch(func, args, kwargs, out)
        in_place = name.endswith('_') and args and out is args[0]  # keeps its own device
        if cuda.gpu_tensors and target is not None and not in_place:
            cuda.device_ops.append(name)
            return _on_device(out, target)
        return out


class FakeStream:
    """A ``torch.cuda.Stream``: a handle on a device, with a queue of deferred work."""

    def __init__(self, cuda: FakeCuda, device_index: int, handle: int) -> None:
        self._cuda = cuda
        self.device = torch.device('cuda', device_index)
        self.cuda_stream = handle

    def wait_stream(self, other: FakeStream) -> None:
        """Order this stream's later work after ``other``'s queued work (which runs now)."""
        self._cuda.log.append(('wait', self.cuda_stream, other.cuda_stream))
        self._cuda.flush(other.cuda_stream)

    def wait_event(self, event) -> None:
        """
        Order this stream's later work after ``event``'s stream's work (which runs now).

        The fake keeps no position in a queue: everything queued on the event's stream runs,
        also what was queued after the event was recorded (more waiting than CUDA's, never less).
        An event never recorded orders nothing, as in CUDA.
        """
        source = getattr(event, 'stream', None)
        self._cuda.log.append(('wait_event', self.cuda_stream,
                               None if source is None else source.cuda_stream))
        if source is not None:
            self._cuda.flush(source.cuda_stream)

    def synchronize(self) -> None:
        """Run every queued launch of this stream (a capture forbids it)."""
        self._cuda.check_sync(f'stream {self.cuda_stream}.synchronize()')
        self._cuda.log.append(('synchronize', self.cuda_stream))
        self._cuda.flush(self.cuda_stream)

    def __repr__(self) -> str:
        return f'<FakeStream {self.cuda_stream} on {self.device}>'


@dataclass
class GpuSpec:
    """What ``get_device_properties`` reports for one fake GPU."""

    name: str = 'NVIDIA H100 80GB HBM3'
    major: int = 9
    minor: int = 0


@dataclass
class _Capture:
    """One capture in progress: its graph, mode and thread, and whether it was invalidated."""

    graph: object
    mode: str
    thread: int
    invalid: str | None = None


class FakeCuda:
    """Installs the fake into ``torch.cuda`` with pytest's ``monkeypatch``."""

    def __init__(self, gpus: list[GpuSpec] | None = None, gpu_tensors: bool = False) -> None:
        self.gpus = gpus or [GpuSpec(), GpuSpec()]
        #: Tensors placed on cuda are :class:`FakeDeviceTensor` (they report the GPU), so code
        #: takes its GPU branches; off by default (the backends' tests need plain tensors).
        self.gpu_tensors = gpu_tensors
        self.device_ops: list[str] = []  # ops that returned a FakeDeviceTensor
        self.log: list[tuple] = []
        self.during_capture = None  # callback run inside the next capture (then cleared)
        self._handles = itertools.count(0x1000, 0x10)
        self._legacy = {i: FakeStream(self, i, 0) for i in range(len(self.gpus))}
        self._threads = threading.local()  # CUDA keeps the current device and streams per thread
        self._capturing: dict[int, _Capture] = {}  # capture stream handle -> capture
        self._queues: dict[int, collections.deque] = collections.defaultdict(collections.deque)
        self._lock = threading.RLock()
        self._mode: _HostMemory | None = None

    # ------------------------------------------------------------------ queries for tests
    @property
    def _devices(self) -> list[int]:
        """Return this thread's stack of current device indices (guards push and pop)."""
        state = self._threads
        if not hasattr(state, 'devices'):
            state.devices = [0]
        return state.devices

    @property
    def _current(self) -> dict[int, FakeStream]:
        """Return this thread's current stream per device (first: each legacy stream)."""
        state = self._threads
        if not hasattr(state, 'current'):
            state.current = dict(self._legacy)
        return state.current

    @property
    def current_device_index(self) -> int:
        """Return the device the innermost guard of this thread selected."""
        return self._devices[-1]

    @contextlib.contextmanager
    def on_this_thread(self):
        """
        Place cuda tensors in host memory on the calling thread too (for a test's threads).

        torch's function modes are per thread, as CUDA's current device and streams are: a thread
        the test starts enters the fake's host-memory mode with this.
        """
        mode = _HostMemory(self)
        with mode:
            yield

    def events(self, kind: str) -> list[tuple]:
        """Return the logged events of one kind."""
        return [e for e in self.log if e[0] == kind]

    def pending(self, handle: int | None = None) -> int:
        """Return how many launches wait in the queue of ``handle`` (None: of every stream)."""
        if handle is None:
            return sum(len(q) for q in self._queues.values())
        return len(self._queues.get(handle, ()))

    def is_capturing(self, handle: int) -> bool:
        """Tell whether stream ``handle`` is being captured into a graph."""
        return handle in self._capturing

    # ------------------------------------------------------------------ work
    def record_torch(self, func, args, kwargs, out) -> None:
        """Record a torch op into the graph this thread is capturing on its current stream."""
        stream = self._current.get(self.current_device_index)
        capture = self._capturing.get(stream.cuda_stream) if stream is not None else None
        if capture is None or capture.thread != threading.get_ident():
            return

        def rerun():
            self._threads.replaying = True
            try:
                _write_into(out, func(*args, **kwargs))
            finally:
                self._threads.replaying = False

        capture.graph.steps.append(rerun)

    def launch(self, handle: int, work) -> None:
        """Queue ``work`` on stream ``handle``, or capture it."""
        capture = self._capturing.get(handle)
        if capture is not None:
            capture.graph.launches.append(work)
            capture.graph.steps.append(work)
            self.log.append(('captured', handle))
            return
        if handle == 0:
            self.check_sync('a launch on the legacy default stream')
        self._queues[handle].append(work)

    def flush(self, handle: int) -> None:
        """Run the queued work of stream ``handle``, in order."""
        with self._lock:
            queue = self._queues.get(handle)
            while queue:
                queue.popleft()()

    def flush_current(self) -> None:
        """Run the queued work of every device's current stream (torch ops come after it)."""
        if not any(self._queues.values()):
            return
        for stream in list(self._current.values()):
            self.flush(stream.cuda_stream)

    def flush_all(self) -> None:
        """Run every queued launch (``torch.cuda.synchronize``)."""
        for handle in list(self._queues):
            self.flush(handle)

    def check_sync(self, what: str) -> None:
        """Invalidate (and raise for) a capture that ``what``, done now, would break."""
        me = threading.get_ident()
        for capture in self._capturing.values():
            if capture.mode == 'global' or (capture.mode == 'thread_local'
                                            and capture.thread == me):
                capture.invalid = f'{what} during a {capture.mode} capture'
                raise CaptureInvalidated(f'fake CUDA: operation not permitted when stream is '
                                         f'capturing ({capture.invalid})')

    # ------------------------------------------------------------------ torch.cuda API
    def _stream_class(self):
        cuda = self

        class Stream(FakeStream):

            def __init__(self, device=None, priority: int = 0) -> None:
                index = _index(device, cuda.current_device_index)
                super().__init__(cuda, index, next(cuda._handles))
                cuda.log.append(('new_stream', self.cuda_stream, index))

        return Stream

    def _graph_class(self):
        cuda = self

        class CUDAGraph:
            """A ``torch.cuda.CUDAGraph``: replays the launches recorded while it was captured."""

            def __init__(self) -> None:
                self.launches: list = []  # work launched through FakeCuda.launch
                self.steps: list = []  # those launches and the torch ops, in capture order
                self.pool = None
                self.replays = 0

            def replay(self) -> None:
                """Queue every recorded step on the current stream, on its captured memory."""
                self.replays += 1
                stream = cuda._current_stream()
                cuda.log.append(('replay', stream.cuda_stream))
                for work in self.steps:
                    cuda.launch(stream.cuda_stream, work)

        return CUDAGraph

    def _event_class(self):
        cuda = self

        class Event:
            """A ``torch.cuda.Event``: records a stream; its time is the host clock at flush."""

            def __init__(self, enable_timing: bool = False, blocking: bool = False,
                         interprocess: bool = False) -> None:
                self.stream: FakeStream | None = None
                self.time = None

            def record(self, stream: FakeStream | None = None) -> None:
                self.stream = stream or cuda._current_stream()
                cuda.log.append(('event_record', self.stream.cuda_stream,
                                 self.stream.device.index))
                cuda.launch(self.stream.cuda_stream, self._stamp)

            def _stamp(self) -> None:
                self.time = time.perf_counter()

            def synchronize(self) -> None:
                cuda.check_sync('event.synchronize()')
                if self.stream is not None:
                    cuda.flush(self.stream.cuda_stream)

            def elapsed_time(self, end) -> float:
                if self.time is None or end.time is None:
                    raise RuntimeError('fake CUDA: elapsed_time on an event not completed')
                if end.stream.device != self.stream.device:
                    raise RuntimeError('fake CUDA: events of two devices')
                return (end.time - self.time) * 1e3

        return Event

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
    def _graph(self, graph, pool=None, stream=None, capture_error_mode: str = 'global'):
        if capture_error_mode not in ('global', 'thread_local', 'relaxed'):
            raise ValueError(f'fake CUDA: unknown capture_error_mode {capture_error_mode!r}')
        self._synchronize()  # torch.cuda.graph synchronises the device before capturing
        index = self.current_device_index
        capture_stream = stream or FakeStream(self, index, next(self._handles))
        graph.pool = pool
        capture = _Capture(graph, capture_error_mode, threading.get_ident())
        self._capturing[capture_stream.cuda_stream] = capture
        self.log.append(('capture_begin', capture_stream.cuda_stream, pool, capture_error_mode))
        hook, self.during_capture = self.during_capture, None
        try:
            with self._stream(capture_stream):
                if hook is not None:
                    hook()
                yield
        finally:
            del self._capturing[capture_stream.cuda_stream]
            self.log.append(('capture_end', capture_stream.cuda_stream))
        if capture.invalid is not None:
            graph.launches.clear()
            graph.steps.clear()
            raise CaptureInvalidated(f'fake CUDA: cudaErrorStreamCaptureInvalidated: '
                                     f'{capture.invalid}')

    def _synchronize(self, device=None) -> None:
        self.check_sync('torch.cuda.synchronize()')
        self.log.append(('device_synchronize',))
        self.flush_all()

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
            'Event': self._event_class(),
            'current_stream': self._current_stream,
            'default_stream': lambda device=None: self._legacy[
                _index(device, self.current_device_index)],
            'stream': self._stream,
            'synchronize': self._synchronize,
            'get_device_properties': self._properties,
            'get_device_capability': lambda device=None: (
                self._properties(device).major, self._properties(device).minor),
            'get_device_name': lambda device=None: self._properties(device).name,
            'CUDAGraph': self._graph_class(),
            'graph': self._graph,
            'graph_pool_handle': lambda: object(),
            'empty_cache': lambda: None,
        }
        for name, value in api.items():
            monkeypatch.setattr(torch.cuda, name, value)
        self._mode = _HostMemory(self)
        self._mode.__enter__()
        return self

    def uninstall(self) -> None:
        """Stop placing cuda tensors in host memory (monkeypatch undoes the rest)."""
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        self.flush_all()
