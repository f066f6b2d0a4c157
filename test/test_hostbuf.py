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

"""Message-ready host buffers: adopted without a copy, and one staging arena per step."""

import numpy as np
from sapiens_ros.core.processing.hostbuf import owning_buffer, to_host
import torch


def test_staging_arena_fills_every_array_with_its_dtype():
    """
    The arena's packing (offsets, dtype views, conversions), run on CPU tensors.

    On CUDA the same code copies into page-locked memory with ``non_blocking`` and waits once;
    no GPU here, so that asynchrony is not exercised.
    """
    from sapiens_ros.core.processing.hostbuf import host_empty, StagingArena

    arena = StagingArena(torch.device('cpu'))
    tensors = [torch.arange(7, dtype=torch.int64), torch.rand(3, 5, 3),
               torch.tensor(2.5, dtype=torch.float64),
               torch.randint(0, 255, (9,), dtype=torch.uint8),
               torch.rand(4, 2).t()]  # non-contiguous
    dtypes = [np.int32, np.float32, np.float64, np.uint8, np.float32]
    outs = [host_empty(tuple(t.shape), d) for t, d in zip(tensors, dtypes, strict=True)]
    for t, out in zip(tensors, outs, strict=True):
        arena.add(t, out)
    assert not outs[1].any()  # nothing lands before the flush
    arena.flush()
    for t, out, d in zip(tensors, outs, dtypes, strict=True):
        np.testing.assert_array_equal(out, t.numpy().astype(d))
        assert owning_buffer(out) is not None  # still a message-ready buffer


def test_a_result_computed_in_a_host_tensor_is_adopted_without_a_copy():
    from sapiens_ros.core.processing.hostbuf import host_tensor

    t = host_tensor((6, 4, 3), torch.float32)
    t.copy_(torch.rand(6, 4, 3))
    host = to_host(t)
    assert owning_buffer(host) is not None and host.ctypes.data == t.data_ptr()
    assert owning_buffer(to_host(t[1:])) is None  # a part of it is no message's buffer
    assert owning_buffer(to_host(t.permute(2, 0, 1))) is None


def test_messages_keep_the_buffer_they_are_given():
    """Image, PointCloud2 and CompressedImage adopt a message-ready buffer: no copy on Jazzy."""
    from sapiens_ros.core.processing.hostbuf import host_empty
    from sapiens_ros.ros.array_msgs import image_msg, pointcloud2
    from sapiens_ros.ros.messages import compressed_msg
    from std_msgs.msg import Header

    pixels = host_empty((4, 5, 3), np.uint8)
    assert image_msg(Header(), pixels, 'rgb8').data is owning_buffer(pixels)
    records = host_empty((6,), np.dtype([('x', '<f4'), ('y', '<f4'), ('z', '<f4')]))
    assert pointcloud2(Header(), records).data is owning_buffer(records)
    data = host_empty((9,), np.uint8)
    assert compressed_msg(Header(), data, 'bgr8', 'jpeg').data is owning_buffer(data)


def test_messages_built_unchecked_serialise_as_checked_ones():
    """The unchecked construction and data adoption serialise as checked messages do."""
    from rclpy.serialization import deserialize_message, serialize_message
    from sapiens_ros.core.processing.hostbuf import host_empty
    from sapiens_ros.ros.array_msgs import image_msg, pointcloud2
    from sensor_msgs.msg import Image, PointCloud2, PointField
    from std_msgs.msg import Header

    header = Header(frame_id='cam')
    header.stamp.sec = 7
    pixels = host_empty((4, 5, 3), np.uint8)
    pixels[...] = np.arange(60, dtype=np.uint8).reshape(4, 5, 3)
    built = image_msg(header, pixels, 'rgb8')
    checked = Image(header=header, height=4, width=5, encoding='rgb8', step=15,
                    data=pixels.tobytes())
    # Compared read back: CDR's alignment padding is left uninitialised by Fast CDR.
    assert deserialize_message(serialize_message(built), Image) == checked
    assert not getattr(built, '_check_fields', False)  # Jazzy: as a default-made message
    records = host_empty((3,), np.dtype([('x', '<f4'), ('id', '<i4')]))
    records['x'], records['id'] = [1.0, 2.0, np.nan], [4, 5, 6]
    cloud = pointcloud2(header, records)
    fields = [PointField(name='x', offset=0, datatype=PointField.FLOAT32, count=1),
              PointField(name='id', offset=4, datatype=PointField.INT32, count=1)]
    expected = PointCloud2(header=header, height=1, width=3, fields=fields, point_step=8,
                           row_step=24, data=records.tobytes(), is_dense=False)
    assert deserialize_message(serialize_message(cloud), PointCloud2) == expected
    again = pointcloud2(header, records)  # the fields are made once per dtype, a new list each
    assert again.fields == cloud.fields and again.fields is not cloud.fields
