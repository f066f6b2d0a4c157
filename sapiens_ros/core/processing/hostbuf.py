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

import numpy as np
import torch

_ZEROS = memoryview(b'')


def empty(nbytes: int) -> array.array:
    """Return a new ``array('B')`` of ``nbytes``, zero-filled (Python has no uninitialised one)."""
    global _ZEROS
    if len(_ZEROS) < nbytes:
        _ZEROS = memoryview(bytes(max(nbytes, 2 * len(_ZEROS))))
    out = array.array('B')
    out.frombytes(_ZEROS[:nbytes])
    return out


def host_empty(shape: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
    """Return a numpy array of ``shape`` and ``dtype`` whose memory is a new ``array('B')``."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return np.frombuffer(empty(count * dtype.itemsize), dtype).reshape(shape)


def to_host(tensor: torch.Tensor, dtype: np.dtype | str | None = None) -> np.ndarray:
    """
    Copy ``tensor`` (any device, any strides) into a new message-ready host array.

    With ``dtype`` the values are converted on the way, in the same pass as the copy. A CPU
    tensor is returned as a numpy view instead (no copy; a message built from it copies once).
    """
    dtype = np.dtype(dtype) if dtype is not None else torch.empty(0, dtype=tensor.dtype).numpy(
    ).dtype
    if tensor.device.type == 'cpu':
        return tensor.numpy() if tensor.numpy().dtype == dtype else tensor.numpy().astype(dtype)
    out = host_empty(tuple(tensor.shape), dtype)
    if out.size:
        torch.from_numpy(out).copy_(tensor)
    return out


def host_copy(values: np.ndarray) -> np.ndarray:
    """Copy ``values`` (any strides) into a new message-ready host array, in one pass."""
    out = host_empty(values.shape, values.dtype)
    out[...] = values
    return out


def as_buffer(values: np.ndarray) -> array.array:
    """Return the ``array('B')`` holding ``values``' bytes: its own buffer, or one copy."""
    if values.nbytes == 0:
        return array.array('B')
    owned = owning_buffer(values)
    return owned if owned is not None else owning_buffer(host_copy(values))


def owning_buffer(values: np.ndarray) -> array.array | None:
    """Return the ``array('B')`` that ``values`` spans exactly (C-contiguous), else None."""
    base = values
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # what np.frombuffer keeps
        base = base.obj
    if not isinstance(base, array.array) or base.typecode != 'B' or \
            not values.flags.c_contiguous or values.nbytes != len(base):
        return None
    start = values.__array_interface__['data'][0]
    return base if start == base.buffer_info()[0] else None
