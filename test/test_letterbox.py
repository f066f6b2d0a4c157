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

"""Letterbox transform: exact round trips and sampling maps, on real frame sizes."""

import numpy as np
import pytest
from sapiens_ros.core.errors import FrameError
from sapiens_ros.core.processing.frames import FrameBatch
from sapiens_ros.core.processing.letterbox import Letterbox, sample_map, sample_points
import torch

SIZES = [(512, 512), (480, 640), (720, 1280), (1080, 1920), (1024, 768), (300, 1000), (37, 53)]


@pytest.mark.parametrize('image_size', SIZES)
@pytest.mark.parametrize('input_size', [(1024, 768), (256, 192)])
def test_round_trip_exact(image_size, input_size):
    lb = Letterbox.fit(image_size, input_size)
    h, w = image_size
    rng = np.random.default_rng(0)
    pts = rng.uniform([-0.5, -0.5], [w - 0.5, h - 0.5], size=(1000, 2))
    back = lb.to_image(lb.to_model(pts))
    assert np.abs(back - pts).max() < 1e-3
    # the frame's corners land inside the resized region, and it is centred
    corners = lb.to_model(np.array([[-0.5, -0.5], [w - 0.5, h - 0.5]]))
    assert np.allclose(corners[0], [lb.pad[1] - 0.5, lb.pad[0] - 0.5])
    assert np.allclose(corners[1], [lb.pad[1] + lb.resized_size[1] - 0.5,
                                    lb.pad[0] + lb.resized_size[0] - 0.5])
    assert abs(2 * lb.pad[0] + lb.resized_size[0] - input_size[0]) <= 1
    assert abs(2 * lb.pad[1] + lb.resized_size[1] - input_size[1]) <= 1


def test_sample_map_inverts_the_letterbox():
    """A model-space map that encodes its own model coordinates samples back to image pixels."""
    lb = Letterbox.fit((300, 1000), (256, 192))
    in_h, in_w = lb.input_size
    ys, xs = torch.meshgrid(torch.arange(in_h, dtype=torch.float32),
                            torch.arange(in_w, dtype=torch.float32), indexing='ij')
    coords = torch.stack([xs, ys])  # (2, H, W): the model pixel coordinate itself
    sampled = sample_map(coords, lb)  # (2, 300, 1000)
    img_x = torch.arange(1000, dtype=torch.float64)
    img_y = torch.arange(300, dtype=torch.float64)
    expect = lb.to_model(np.stack(np.meshgrid(img_x, img_y), -1))
    got = sampled.permute(1, 2, 0).double().numpy()
    (top, left), (rh, rw) = lb.pad, lb.resized_size
    inner = (expect[..., 0] >= left) & (expect[..., 0] <= left + rw - 1) & \
        (expect[..., 1] >= top) & (expect[..., 1] <= top + rh - 1)
    assert np.abs(got - expect)[inner].max() < 1e-3
    pts = torch.tensor([[10.3, 20.7], [500.0, 150.5]])
    at = sample_points(coords, lb, pts).double().numpy()
    assert np.abs(at - lb.to_model(pts.numpy())).max() < 1e-3


def test_frame_batch_normalises_once_and_pads(astronaut):
    wide = np.ascontiguousarray(astronaut[100:300])  # 200x512: padded top and bottom
    batch = FrameBatch([astronaut, wide], (256, 192), torch.device('cpu'), 'rgb')
    assert batch.pixel_values.shape == (2, 3, 256, 192)
    lb = batch.frames[1].letterbox
    pad_value = -torch.tensor([0.485, 0.456, 0.406]) / torch.tensor([0.229, 0.224, 0.225])
    top = batch.pixel_values[1, :, :lb.pad[0]]
    assert torch.allclose(top, pad_value.view(3, 1, 1).expand_as(top), atol=1e-5)
    # BGR input with color_order='bgr' gives the same tensor as RGB input
    bgr = FrameBatch([astronaut[..., ::-1].copy()], (256, 192), torch.device('cpu'), 'bgr')
    assert torch.equal(bgr.pixel_values[0], batch.pixel_values[0])


def test_frame_batch_letterboxes_only_the_frames_asked_for(astronaut):
    """A subset builds only its rows, and every row equals the one of a whole-batch build."""
    frames = [astronaut, np.ascontiguousarray(astronaut[100:300]), astronaut[:, :300].copy()]
    size = (128, 96)
    lazy = FrameBatch(frames, (256, 192), torch.device('cpu'))
    assert lazy.letterboxed(size, [2]).shape == (1, 3, *size)
    assert lazy._built[size] == [False, False, True]
    assert lazy.letterboxed(size, [0, 2]).shape == (2, 3, *size)
    assert lazy._built[size] == [True, False, True]
    whole = FrameBatch(frames, (256, 192), torch.device('cpu')).letterboxed(size)
    assert torch.equal(lazy.letterboxed(size), whole)


def test_mono8_is_replicated(astronaut):
    gray = astronaut[..., 1].copy()
    batch = FrameBatch([gray], (256, 192), torch.device('cpu'))
    rgb = batch.frames[0].rgb
    assert rgb.shape == (512, 512, 3) and torch.equal(rgb[..., 0], rgb[..., 2])


@pytest.mark.parametrize('frame, message', [
    (np.zeros((10, 10, 3), np.float32), 'uint8'),
    (np.zeros((10, 10, 4), np.uint8), 'HxWx3'),
    (np.zeros((0, 10, 3), np.uint8), 'zero size'),
    (np.zeros((2, 10, 10, 3), np.uint8), 'HxWx3'),
])
def test_bad_frames_raise(frame, message):
    with pytest.raises(FrameError, match=message):
        FrameBatch([frame], (256, 192), torch.device('cpu'))


def test_bad_color_order():
    with pytest.raises(FrameError, match='color_order'):
        FrameBatch([np.zeros((8, 8, 3), np.uint8)], (256, 192), torch.device('cpu'), 'yuv')
