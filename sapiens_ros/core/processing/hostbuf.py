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
Host arrays that a message can adopt without a copy.

Every result array the pipeline copies to the host lives in an ``array.array('B')`` (the buffer
type rclpy stores in a message's ``data`` without checking each element); the numpy array is a
view of it. :func:`owning_buffer` gives that buffer back, so building a message from a result
copies nothing: the device-to-host copy was the one copy.
"""

from __future__ import annotations

import array
from collections.abc import Iterator
import contextlib
import threading
import weakref

import numpy as np
import torch

_ZERO = array.array('B', [0])
#: Message-ready buffers behind CPU tensors (:func:`host_tensor`), by address: ``to_host`` hands
#: the buffer back instead of a view a message would have to copy.
_OWNERS: dict[int, weakref.ref] = {}


def empty(nbytes: int) -> array.array:
    """Return a new ``array('B')`` of ``nbytes``, zero-filled (Python has no uninitialised one)."""
    return _ZERO * nbytes  # one memset


def host_empty(shape: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
    """Return a numpy array of ``shape`` and ``dtype`` whose memory is a new ``array('B')``."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(empty(count * dtype.itemsize), dtype).reshape(shape)


def host_tensor(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """
    Return a CPU tensor over a new message-ready buffer, for a result to be written into.

    :func:`to_host` gives that buffer back as the result's array, so the message adopts the
    memory the result was computed in: no copy after the computation.
    """
    values = host_empty(shape, _numpy_dtype(dtype))
    buf = owning_buffer(values)
    if buf is not None:
        address = buf.buffer_info()[0]

        def forget(ref, address=address):
            if _OWNERS.get(address) is ref:
                del _OWNERS[address]

        _OWNERS[address] = weakref.ref(buf, forget)
    return torch.from_numpy(values)


def device_empty(shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device) -> torch.Tensor:
    """Return an uninitialised tensor on ``device``; on the CPU a :func:`host_tensor`."""
    if device.type == 'cpu':
        return host_tensor(shape, dtype)
    return torch.empty(shape, dtype=dtype, device=device)


def to_host(tensor: torch.Tensor, dtype: np.dtype | str | None = None) -> np.ndarray:
    """
    Copy ``tensor`` (any device, any strides) into a new message-ready host array.

    With ``dtype`` the values are converted on the way, in the same pass as the copy. A CPU
    tensor is returned as a numpy view instead (no copy; a message built from it copies once),
    or, written in a :func:`host_tensor`, as a view of that message-ready buffer.
    """
    dtype = np.dtype(dtype) if dtype is not None else _numpy_dtype(tensor.dtype)
    if tensor.device.type == 'cpu':
        adopted = _adopted(tensor, dtype)
        if adopted is not None:
            return adopted
        return tensor.numpy() if tensor.numpy().dtype == dtype else tensor.numpy().astype(dtype)
    out = host_empty(tuple(tensor.shape), dtype)
    if out.size:
        arena = getattr(_STAGING, 'arena', None)
        if arena is not None:
            arena.add(tensor, out)  # filled when the staging block ends
        else:
            torch.from_numpy(out).copy_(tensor)
    return out


class StagingArena:
    """
    Device-to-host copies of one step, through one staging buffer and one synchronisation.

    :meth:`add` queues a copy into a message-ready host array; :meth:`flush` copies every
    queued tensor into one buffer (page-locked on CUDA, so the copies are asynchronous and
    overlap), waits once for the device, then fills each host array from its slice.
    """

    ALIGN = 64  # every slice starts on a cache line (and any dtype's alignment)

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._jobs: list[tuple[torch.Tensor, np.ndarray]] = []

    def add(self, tensor: torch.Tensor, out: np.ndarray) -> None:
        """Queue the copy of ``tensor`` (converted to ``out``'s dtype) into ``out``."""
        self._jobs.append((tensor, out))

    def flush(self) -> None:
        """Copy every queued tensor to its host array (one synchronisation)."""
        jobs, self._jobs = self._jobs, []
        if not jobs:
            return
        offsets, total = [], 0
        for _, out in jobs:
            offsets.append(total)
            total += -(-out.nbytes // self.ALIGN) * self.ALIGN
        pinned = self.device.type == 'cuda'
        arena = torch.empty(total, dtype=torch.uint8, pin_memory=pinned)
        slots = []
        for (tensor, out), start in zip(jobs, offsets, strict=True):
            slot = arena[start:start + out.nbytes].view(_torch_dtype(out.dtype)).view(out.shape)
            slot.copy_(tensor, non_blocking=pinned)
            slots.append(slot)
        if pinned:
            torch.cuda.current_stream(self.device).synchronize()
        for (_, out), slot in zip(jobs, slots, strict=True):
            np.copyto(out, slot.numpy())


_STAGING = threading.local()


@contextlib.contextmanager
def staging(device: torch.device) -> Iterator[StagingArena | None]:
    """
    Within the block, :func:`to_host` of a device tensor queues its copy in one arena.

    The arrays it returns are filled when the block ends (read none of them before). On the
    CPU there is nothing to stage (``to_host`` returns views): yields None.
    """
    if device.type == 'cpu' or getattr(_STAGING, 'arena', None) is not None:
        yield None
        return
    arena = _STAGING.arena = StagingArena(device)
    try:
        yield arena
        arena.flush()
    finally:
        _STAGING.arena = None


def _adopted(tensor: torch.Tensor, dtype: np.dtype) -> np.ndarray | None:
    """Return the message-ready buffer ``tensor`` spans exactly, as ``dtype``, or None."""
    ref = _OWNERS.get(tensor.data_ptr())
    buf = ref() if ref is not None else None
    if buf is None or not tensor.is_contiguous() or _numpy_dtype(tensor.dtype) != dtype or \
            tensor.numel() * tensor.element_size() != len(buf):
        return None
    return np.frombuffer(buf, dtype).reshape(tuple(tensor.shape))


def _numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return torch.empty(0, dtype=dtype).numpy().dtype


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.empty(0, dtype)).dtype


def host_copy(values: np.ndarray) -> np.ndarray:
    """Copy ``values`` (any strides) into a new message-ready host array, in one pass."""
    if values.flags.c_contiguous and not values.dtype.hasobject:
        return np.frombuffer(_copied(values), values.dtype).reshape(values.shape)
    out = host_empty(values.shape, values.dtype)
    out[...] = values
    return out


def as_buffer(values: np.ndarray) -> array.array:
    """Return the ``array('B')`` holding ``values``' bytes: its own buffer, or one copy."""
    if values.nbytes == 0:
        return array.array('B')
    owned = owning_buffer(values)
    if owned is not None:
        return owned
    if values.flags.c_contiguous and not values.dtype.hasobject:
        return _copied(values)
    return owning_buffer(host_copy(values))


def _copied(values: np.ndarray) -> array.array:
    """Return a new ``array('B')`` of C-contiguous ``values``' bytes (one copy, no zero fill)."""
    buf = array.array('B')
    buf.frombytes(memoryview(values.reshape(-1).view(np.uint8)))
    return buf


def owning_buffer(values: np.ndarray) -> array.array | None:
    """Return the ``array('B')`` that ``values`` spans exactly (C-contiguous), else None."""
    base = values
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # what np.frombuffer keeps
        base = base.obj
    # A C-contiguous view as long as the buffer it lies in covers all of it, from its start.
    if not isinstance(base, array.array) or base.typecode != 'B' or \
            not values.flags.c_contiguous or values.nbytes != len(base):
        return None
    return base
