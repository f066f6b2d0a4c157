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

"""Heatmap decoding: synthetic Gaussian peaks at known sub-pixel image positions."""

import numpy as np
import pytest
from sapiens_ros.core.models.metadata import keypoint_info
from sapiens_ros.core.processing.boxes import (crop_windows, foreground_boxes,
                                               foreground_boxes_batch)
from sapiens_ros.core.processing.frames import FrameBatch
from sapiens_ros.core.processing.heads.pose import (decode_heatmaps, flip_back, gaussian_heatmaps,
                                                    heatmap_to_image, image_to_heatmap)
from sapiens_ros.core.processing.letterbox import Letterbox
import torch
import torch.nn.functional as F


def test_decode_recovers_subpixel_peaks_in_image_pixels():
    """Peaks placed at known image positions decode back within 0.1 px (DARK-UDP)."""
    gen = torch.Generator().manual_seed(1)
    boxes = torch.tensor([[100.0, 50.0, 400.0, 700.0], [820.3, 200.7, 1010.1, 460.2],
                          [5.0, 5.0, 60.0, 90.0]])
    centers, sizes = crop_windows(boxes, (1024, 768))
    # keypoints inside each person box (the 1.25 context keeps them off the map border)
    lo, hi = boxes[:, None, :2], boxes[:, None, 2:]
    truth = lo + (hi - lo) * torch.rand(3, 308, 2, generator=gen)
    hm_xy = image_to_heatmap(truth, centers, sizes, (256, 192))
    heatmaps = gaussian_heatmaps(hm_xy, (256, 192), sigma=6.0)  # Sapiens2 training sigma
    coords, scores = decode_heatmaps(heatmaps)
    back = heatmap_to_image(coords, centers, sizes, (256, 192))
    assert (back - truth).abs().max().item() < 0.1
    assert torch.allclose(scores, torch.ones_like(scores), atol=0.02)


def test_decode_handles_flat_and_edge_maps():
    flat = torch.zeros(1, 2, 64, 48)
    coords, scores = decode_heatmaps(flat)
    assert torch.isfinite(coords).all() and (scores == 0).all()
    edge = gaussian_heatmaps(torch.tensor([[[0.0, 0.0], [47.0, 63.0]]]), (64, 48), 2.0)
    coords, _ = decode_heatmaps(edge)
    assert torch.isfinite(coords).all()
    assert (coords - torch.tensor([[[0.0, 0.0], [47.0, 63.0]]])).abs().max() <= 1.0


def test_flip_back_is_an_exact_inverse():
    perm = torch.as_tensor(keypoint_info().flip_permutation)
    assert torch.equal(perm[perm], torch.arange(308))  # an involution
    heatmaps = torch.rand(2, 308, 16, 12)
    flipped_input_maps = heatmaps.index_select(1, perm).flip(-1)
    assert torch.equal(flip_back(flipped_input_maps, perm), heatmaps)


def test_crop_windows_expand_and_fix_aspect():
    boxes = torch.tensor([[0.0, 0.0, 100.0, 100.0], [0.0, 0.0, 30.0, 200.0]])
    centers, sizes = crop_windows(boxes, (1024, 768))
    assert torch.allclose(centers, torch.tensor([[50.0, 50.0], [15.0, 100.0]]))
    assert torch.allclose(sizes[:, 0] / sizes[:, 1], torch.full((2,), 0.75))
    assert torch.allclose(sizes[0], torch.tensor([125.0, 125.0 / 0.75]))  # wide -> grow height
    assert torch.allclose(sizes[1], torch.tensor([250.0 * 0.75, 250.0]))  # tall -> grow width


def test_foreground_boxes_from_components():
    """Two blobs of person logits give two boxes in image pixels, largest first."""
    lb = Letterbox.fit((480, 640), (256, 192))
    logits = torch.zeros(29, 256, 192)
    logits[0] = 5.0  # background everywhere ...
    # ... except two people, drawn in model pixels
    a = lb.to_model(np.array([[100.0, 100.0], [300.0, 400.0]])).round().astype(int)
    b = lb.to_model(np.array([[450.0, 300.0], [520.0, 380.0]])).round().astype(int)
    for (x0, y0), (x1, y1) in (a, b):
        logits[0, y0:y1, x0:x1] = -5.0
        logits[22, y0:y1, x0:x1] = 5.0
    boxes, scores = foreground_boxes(logits, lb, factor=1)
    assert boxes.shape == (2, 4) and (scores > 0.9).all()
    assert np.abs(boxes[0] - [100, 100, 300, 400]).max() < 4  # within ~1 model pixel
    assert np.abs(boxes[1] - [450, 300, 520, 380]).max() < 4
    none, _ = foreground_boxes(torch.zeros(29, 256, 192).index_fill_(0, torch.tensor([0]), 9.0),
                               lb)
    assert none.shape == (0, 4)


def test_foreground_boxes_of_a_batch_are_each_frames():
    """One batch of frames letterboxed differently: each frame's boxes, its own padding ignored."""
    lbs = [Letterbox.fit((480, 640), (256, 192)), Letterbox.fit((640, 300), (256, 192)),
           Letterbox.fit((256, 192), (256, 192))]
    logits = torch.zeros(3, 29, 256, 192)
    logits[:, 22] = 5.0  # foreground everywhere, padding included: only the frame counts
    logits[2, 0, :, :96] = 10.0  # the third frame: background on its left half
    batch = foreground_boxes_batch(logits, lbs)
    for k, lb in enumerate(lbs):
        boxes, scores = foreground_boxes(logits[k], lb)
        assert np.array_equal(batch[k][0], boxes) and np.array_equal(batch[k][1], scores)
        height, width = lb.image_size
        want = [-0.5, -0.5, width - 0.5, height - 0.5] if k < 2 else [95.5, -0.5, 191.5, 255.5]
        assert boxes.shape == (1, 4) and np.abs(boxes[0] - want).max() <= 8, (k, boxes)
    assert foreground_boxes_batch(logits[:0], []) == []


def _reference_dark_udp(heatmaps: torch.Tensor, kernel: int = 11) -> torch.Tensor:
    """
    DARK-UDP as transformers' Sapiens2 ``post_process_pose_estimation`` does it, without a guard.

    A faithful re-implementation (that module imports torchvision, absent here): whole-map
    zero-padded Gaussian blur with the cv2 sigma rule, max-preserving rescale, log clamp,
    replicate padding, one Newton step from the integer argmax.
    """
    n, k, h, w = heatmaps.shape
    maps = heatmaps.reshape(n * k, 1, h, w).float()
    sigma = 0.3 * ((kernel - 1) * 0.5 - 1) + 0.8
    x = torch.arange(kernel, dtype=torch.float32) - (kernel - 1) / 2
    g = torch.exp(-x * x / (2 * sigma * sigma))
    g = g / g.sum()
    blurred = F.conv2d(F.pad(maps, [kernel // 2] * 4), (g[:, None] * g[None])[None, None])
    orig, got = maps.amax((2, 3)), blurred.amax((2, 3))
    blurred = blurred * torch.where(got > 0, orig / got.clamp_min(1e-30), torch.ones_like(got))[
        ..., None, None]
    logm = F.pad(blurred.clamp(1e-3, 50.0).log(), (1, 1, 1, 1), mode='replicate')[:, 0]
    index = maps.reshape(n * k, -1).argmax(1)
    px, py = index % w + 1, index // w + 1
    b = torch.arange(n * k)

    def v(dx: int, dy: int) -> torch.Tensor:
        return logm[b, py + dy, px + dx]

    gx, gy = 0.5 * (v(1, 0) - v(-1, 0)), 0.5 * (v(0, 1) - v(0, -1))
    eps = torch.finfo(torch.float32).eps
    hxx = v(1, 0) - 2 * v(0, 0) + v(-1, 0) + eps
    hyy = v(0, 1) - 2 * v(0, 0) + v(0, -1) + eps
    hxy = 0.5 * (v(1, 1) - v(1, 0) - v(0, 1) + 2 * v(0, 0) - v(-1, 0) - v(0, -1) + v(-1, -1))
    det = hxx * hyy - hxy * hxy
    ox, oy = (hyy * gx - hxy * gy) / det, (-hxy * gx + hxx * gy) / det
    coords = torch.stack([px - 1 - ox, py - 1 - oy], -1)
    return coords.reshape(n, k, 2)


def _noisy_peaks(sigma: float, noise: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    truth = torch.rand(2, 308, 2, generator=gen) * torch.tensor([66.0, 98.0]) + 15.0
    maps = gaussian_heatmaps(truth, (128, 96), sigma)
    return maps + noise * torch.randn(maps.shape, generator=gen), truth


@pytest.mark.parametrize('sigma', [2.0, 6.0])
@pytest.mark.parametrize('noise', [0.02, 0.05, 0.1])
def test_dark_guard_is_as_accurate_as_the_reference(sigma, noise):
    """On noisy peaks the 3 px step clip is no worse than the unguarded reference on average."""
    maps, truth = _noisy_peaks(sigma, noise, seed=int(sigma * 100 + noise * 1000))
    ours, _ = decode_heatmaps(maps)
    ref = _reference_dark_udp(maps)
    ours_err = (ours - truth).norm(dim=-1).mean().item()
    ref_err = (ref - truth).norm(dim=-1).mean().item()
    assert ours_err <= ref_err * 1.01 + 1e-3, (ours_err, ref_err)
    # the former guard (skip steps over 1 px) kept the integer argmax far too often on broad,
    # noisy peaks
    if sigma == 6.0 and noise == 0.05:
        free, _ = decode_heatmaps(maps, max_step=float('inf'))
        index = maps.flatten(2).argmax(-1)
        peak = torch.stack([index % maps.shape[-1], index // maps.shape[-1]], -1).float()
        old = torch.where(((free - peak).abs() <= 1.0).all(-1, keepdim=True), free, peak)
        assert (old - truth).norm(dim=-1).mean().item() > 1.5 * ours_err


def test_dark_guard_bounds_runaways_on_flat_maps():
    """Occluded keypoints (noise only, no peak) stay within 3 px of the argmax."""
    gen = torch.Generator().manual_seed(3)
    maps = 0.002 + 0.001 * torch.rand(4, 308, 64, 48, generator=gen)
    ours, _ = decode_heatmaps(maps)
    index = maps.reshape(4, 308, -1).argmax(-1)
    argmax = torch.stack([index % 48, index // 48], -1).float()
    assert (ours - argmax).abs().max().item() <= 3.0
    ref = _reference_dark_udp(maps)
    assert (ref - argmax).abs().max().item() > 10.0  # what the unguarded step does here


def _reference_crops(image: torch.Tensor, centers: torch.Tensor, sizes: torch.Tensor,
                     out_size: tuple[int, int]) -> torch.Tensor:
    """Crop like transformers' Sapiens2 ``crop_and_resize`` (bicubic when upscaling)."""
    out_h, out_w = out_size
    _, in_h, in_w = image.shape
    scale_x, scale_y = (out_w - 1) / sizes[:, 0], (out_h - 1) / sizes[:, 1]
    bilinear = torch.minimum(scale_x, scale_y) < 1.0
    gy, gx = torch.meshgrid(torch.arange(out_h, dtype=torch.float32),
                            torch.arange(out_w, dtype=torch.float32), indexing='ij')
    in_x = gx / scale_x[:, None, None] + centers[:, 0, None, None] - 0.5 * sizes[:, 0, None, None]
    in_y = gy / scale_y[:, None, None] + centers[:, 1, None, None] - 0.5 * sizes[:, 1, None, None]
    grids = torch.stack([2 * in_x / (in_w - 1) - 1, 2 * in_y / (in_h - 1) - 1], -1)
    out = torch.empty(len(centers), 3, out_h, out_w)
    for mask, mode in ((bilinear, 'bilinear'), (~bilinear, 'bicubic')):
        if mask.any():
            out[mask] = F.grid_sample(image[None].expand(int(mask.sum()), -1, -1, -1),
                                      grids[mask], mode=mode, padding_mode='zeros',
                                      align_corners=True)
    return out


def test_pose_crops_match_the_reference_bicubic_and_bilinear(astronaut):
    """Upscaled crops are bicubic, downscaled ones bilinear, as in the Sapiens2 reference."""
    out_size = (256, 192)
    batch = FrameBatch([astronaut], out_size, torch.device('cpu'))
    boxes = torch.tensor([[200.0, 40.0, 300.0, 180.0],  # small: upscaled
                          [10.0, 10.0, 500.0, 500.0],  # large: downscaled
                          [150.0, 100.0, 230.0, 210.0]])  # small
    centers, sizes = crop_windows(boxes, out_size)
    ours = batch.crops(torch.zeros(3, dtype=torch.long), centers, sizes, out_size)
    image = batch.frames[0].scaled
    mean = batch._mean
    ref = _reference_crops(image, centers, sizes, out_size) - mean
    inner = (slice(None), slice(None), slice(2, -2), slice(2, -2))  # away from zero padding
    assert (ours - ref)[inner].abs().max().item() < 1e-3
    bilinear = F.grid_sample(image[None].expand(3, -1, -1, -1),
                             _reference_grid(image, centers, sizes, out_size), mode='bilinear',
                             align_corners=True) - mean
    assert (ours[0] - bilinear[0]).abs().max().item() > 0.05  # bicubic, not bilinear


def _reference_grid(image: torch.Tensor, centers: torch.Tensor, sizes: torch.Tensor,
                    out_size: tuple[int, int]) -> torch.Tensor:
    out_h, out_w = out_size
    _, in_h, in_w = image.shape
    ux, uy = torch.linspace(-0.5, 0.5, out_w), torch.linspace(-0.5, 0.5, out_h)
    xs = centers[:, 0:1] + ux[None] * sizes[:, 0:1]
    ys = centers[:, 1:2] + uy[None] * sizes[:, 1:2]
    gx, gy = 2 * xs / (in_w - 1) - 1, 2 * ys / (in_h - 1) - 1
    return torch.stack(torch.broadcast_tensors(gx[:, None, :], gy[:, :, None]), -1)


def test_two_step_peak_is_the_flat_argmax_with_ties_and_nan():
    """The amax-then-row peak finds what ``max`` over the flattened map finds, first on ties."""
    from sapiens_ros.core.processing.heads.pose import _peaks

    gen = torch.Generator().manual_seed(3)
    maps = torch.rand(6, 24, 18, generator=gen)
    maps[1] = 0.5  # flat: every pixel ties, the first one wins
    maps[2, 3, 7] = maps[2, 9, 2] = maps[2, 3, 11] = 5.0  # ties across rows and in a row
    maps[3, 10, 4] = float('nan')  # NaN propagates, as in max
    maps[4] = float('-inf')
    maps[4, 23, 17] = -1.0
    scores, px, py = _peaks(maps)
    want_scores, want_index = maps.reshape(6, -1).max(dim=1)
    assert torch.equal(py * 18 + px, want_index)
    assert torch.allclose(scores, want_scores, equal_nan=True)


def test_fixed_pool_matches_the_adaptive_pool():
    """The foreground boxes' fixed-window pool gives what the adaptive pool gives."""
    from sapiens_ros.core.processing.boxes import _pool

    maps = torch.randn(1, 29, 64, 48, generator=torch.Generator().manual_seed(4))
    for size in ((16, 12), (13, 12)):  # a divisor grid (fixed window), and not (adaptive)
        assert torch.allclose(_pool(maps, size), F.adaptive_avg_pool2d(maps, size), atol=1e-6)
