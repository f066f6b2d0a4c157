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
Numpy arrays to ``sensor_msgs`` ``Image`` and ``PointCloud2`` and back, without element checks.

Bulk data goes in as an ``array.array('B')``: assigning an ndarray or memoryview to
``msg.data`` makes rclpy check every element (~200 ms for one 1024x768 image). The pipeline's
host arrays already live in such buffers (``core.processing.hostbuf``), so this copies nothing
(:func:`set_data`: on Jazzy the setter otherwise copies the array). The messages are built
without rclpy's per-field checks (:func:`unchecked`): their fields are typed here.
"""

from __future__ import annotations

import array
import functools
import sys

import numpy as np
from sensor_msgs.msg import Image, PointCloud2, PointField
from std_msgs.msg import Header

from ..core.processing.hostbuf import as_buffer

#: This host's byte order: what a multi-byte ``Image`` built here says in ``is_bigendian``.
HOST_BIGENDIAN = sys.byteorder == 'big'


def has_check_flag(msg_type: type) -> bool:
    """Tell whether ``msg_type`` has Jazzy's per-instance ``check_fields`` switch."""
    return '_check_fields' in getattr(msg_type, '__slots__', ())


def unchecked(msg_type: type) -> dict:
    """
    Keyword arguments for ``msg_type(...)`` that skip rclpy's per-field checks where it can.

    Jazzy's generated messages check fields only when asked (``check_fields=True``), Humble's
    always: no keyword there.
    """
    return {'check_fields': False} if has_check_flag(msg_type) else {}


def set_data(msg, data: array.array) -> None:
    """
    ``msg.data = data``, kept as it is: no copy, no element check.

    Jazzy's ``data`` setter copies its value unless the message checks its fields, and then an
    ``array('B')`` is kept without an element check; Humble's always checks, and keeps it too.
    """
    if not has_check_flag(type(msg)):
        msg.data = data
        return
    checks, msg._check_fields = msg._check_fields, True
    try:
        msg.data = data
    finally:
        msg._check_fields = checks


_FIELD_TYPES = {np.dtype('float32'): PointField.FLOAT32, np.dtype('uint32'): PointField.UINT32,
                np.dtype('uint8'): PointField.UINT8, np.dtype('int32'): PointField.INT32,
                np.dtype('float64'): PointField.FLOAT64, np.dtype('uint16'): PointField.UINT16}


def byte_array(values: np.ndarray) -> array.array:
    """
    ``values``' bytes as the ``array('B')`` rclpy stores without checking.

    No copy when ``values`` spans a message-ready buffer (a pipeline result); one otherwise.
    """
    return as_buffer(np.asarray(values))


def image_msg(header: Header, pixels: np.ndarray, encoding: str) -> Image:
    """``sensor_msgs/Image`` from an HxW or HxWxC array (dtype must match ``encoding``)."""
    channels = pixels.shape[2] if pixels.ndim == 3 else 1
    msg = Image(header=header, height=int(pixels.shape[0]), width=int(pixels.shape[1]),
                encoding=encoding, is_bigendian=HOST_BIGENDIAN and pixels.dtype.itemsize > 1,
                step=int(pixels.shape[1]) * pixels.dtype.itemsize * channels,
                **unchecked(Image))
    set_data(msg, byte_array(pixels))  # row-major whatever the strides: no padding
    return msg


@functools.lru_cache(maxsize=64)
def _point_fields(dtype: np.dtype) -> tuple[PointField, ...]:
    """
    Return the ``PointField`` of each field of a record dtype, made once per dtype.

    Every cloud of that dtype lists the same ``PointField`` objects, as ``sensor_msgs_py``'s
    ``create_cloud`` does with the list it is given: they are never changed.
    """
    out = []
    for name in dtype.names:
        dt, offset = dtype.fields[name][:2]
        out.append(PointField(name=name, offset=offset,
                              datatype=_FIELD_TYPES[dt.newbyteorder('=')], count=1))
    return tuple(out)


def pointcloud2(header: Header, points: np.ndarray, height: int = 1,
                width: int | None = None, dense: bool | None = None) -> PointCloud2:
    """``PointCloud2`` whose fields are the structured array's fields, packed with one copy."""
    width = int(points.size // max(height, 1)) if width is None else int(width)
    if dense is None:
        dense = not any(np.isnan(points[n]).any() for n in points.dtype.names
                        if points.dtype[n].kind == 'f' and n != 'rgb')
    msg = PointCloud2(header=header, height=int(height), width=width,
                      fields=list(_point_fields(points.dtype)),
                      is_bigendian=False, point_step=points.dtype.itemsize,
                      row_step=points.dtype.itemsize * width, is_dense=bool(dense),
                      **unchecked(PointCloud2))
    set_data(msg, byte_array(points))
    return msg


def cloud_field(msg, name: str) -> np.ndarray | None:
    """
    One field of a ``PointCloud2`` (rclpy or rosbags message) as ``(height, width)``, or None.

    Reads only that field's bytes, whatever the record layout.
    """
    field = next((f for f in msg.fields if f.name == name), None)
    kinds = {v: k for k, v in _FIELD_TYPES.items()}
    if field is None or int(field.datatype) not in kinds:
        return None
    kind = kinds[int(field.datatype)].newbyteorder('>' if msg.is_bigendian else '<')
    rows, cols = int(msg.height), int(msg.width)
    dtype = np.dtype({'names': [name], 'formats': [kind], 'offsets': [int(field.offset)],
                      'itemsize': int(msg.point_step)})
    data = np.frombuffer(bytes(msg.data), np.uint8)
    return np.frombuffer(data, dtype, count=rows * cols)[name].reshape(rows, cols)
