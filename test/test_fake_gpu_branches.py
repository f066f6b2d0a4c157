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
The GPU branches of the host path, run on the fake CUDA's device tensors (no GPU here).

With ``FakeCuda(gpu_tensors=True)`` a tensor placed on cuda reports its GPU (``device``,
``is_cuda``) while its data stays on the host, so ``hostbuf.to_host``, ``encode``,
``channel_argmax`` and ``upsample_dtype`` take the branches a GPU takes. nvImageCodec cannot be
installed here: a stand-in module records the stream its encoder is given (said in the test).
"""

import sys
import types

import cv2
from fake_cuda import FakeCuda
import numpy as np
import pytest
from sapiens_ros.core.processing import encode as encode_module
from sapiens_ros.core.processing.heads.segmentation import channel_argmax, upsample_dtype
from sapiens_ros.core.processing.hostbuf import owning_buffer, to_host
import torch


@pytest.fixture
def cuda(monkeypatch):
    fake = FakeCuda(gpu_tensors=True).install(monkeypatch)
    yield fake
    fake.uninstall()


def test_fake_device_tensors_report_their_gpu(cuda):
    t = torch.arange(6, dtype=torch.float32, device='cuda:1')
    assert t.is_cuda and t.device == torch.device('cuda', 1)
    assert (t * 2).device == torch.device('cuda', 1)  # ops keep the device
    with pytest.raises(TypeError, match="can't convert cuda:1 device type tensor to numpy"):
        t.numpy()  # as on a GPU: copy to the host first
    host = t.cpu()
    assert not host.is_cuda and host.numpy().tolist() == [0, 2 / 2, 2, 3, 4, 5]
    assert torch.zeros(2).to('cuda').device.type == 'cuda'
    assert torch.zeros(2).cuda().is_cuda


def test_hostbuf_takes_its_device_branch(cuda):
    """to_host of a device tensor copies into a message-ready buffer (not a numpy view)."""
    t = torch.arange(12, dtype=torch.float32, device='cuda').reshape(3, 4).t()
    host = to_host(t, np.float32)
    assert owning_buffer(host) is not None  # the device branch: a new array('B') buffer
    np.testing.assert_array_equal(host, np.arange(12, dtype=np.float32).reshape(3, 4).T)
    cpu = torch.arange(4, dtype=torch.float32)
    assert owning_buffer(to_host(cpu)) is None  # the CPU branch: a view, for comparison


def test_channel_argmax_and_upsample_dtype_take_their_gpu_branch(cuda):
    scores = torch.randn(5, 6, 7, generator=torch.Generator().manual_seed(0))
    want = scores.argmax(0).to(torch.uint8)
    cuda.device_ops.clear()
    got = channel_argmax(scores.to('cuda'))
    assert got.is_cuda and 'argmax' in cuda.device_ops and 'amax' not in cuda.device_ops
    assert torch.equal(got.cpu(), want)
    assert upsample_dtype(scores.to('cuda').device) == torch.float16
    assert upsample_dtype(scores.device) == torch.float32


def test_jpeg_encode_takes_the_gpu_branch_on_the_current_stream(cuda, monkeypatch):
    """
    A device image is encoded by nvImageCodec on the stream that wrote it.

    nvImageCodec is replaced by a stand-in (it needs a GPU) that checks its input is a CUDA
    array, records the ``cuda_stream`` it is given and encodes with OpenCV.
    """
    seen = {}

    class Encoder:

        def encode(self, image, codec, params=None, cuda_stream=0):
            seen['stream'] = cuda_stream
            rgb = image.cpu().numpy()
            ok, data = cv2.imencode('.jpg', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
            return data.tobytes()

    def as_image(tensor, cuda_stream=0):
        assert tensor.is_cuda, 'nvImageCodec takes device arrays (__cuda_array_interface__)'
        return tensor

    nvimgcodec = types.SimpleNamespace(Encoder=Encoder, as_image=as_image,
                                       EncodeParams=lambda **kw: kw)
    nvidia = types.ModuleType('nvidia')
    nvidia.nvimgcodec = nvimgcodec
    monkeypatch.setitem(sys.modules, 'nvidia', nvidia)
    monkeypatch.setitem(sys.modules, 'nvidia.nvimgcodec', nvimgcodec)
    encode_module._nvimgcodec_encoder.cache_clear()
    image = np.zeros((16, 24, 3), np.uint8)
    image[:, :12] = (255, 0, 0)
    stream = torch.cuda.Stream('cuda:0')
    with torch.cuda.stream(stream):
        data = encode_module.encode(torch.from_numpy(image).to('cuda'), 'jpeg', 'rgb')
    encode_module._nvimgcodec_encoder.cache_clear()
    assert seen['stream'] == stream.cuda_stream != 0
    decoded = cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert abs(int(decoded[8, 4, 0]) - 255) < 8 and decoded[8, 20, 0] < 8
