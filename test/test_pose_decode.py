"""Heatmap decoding: synthetic Gaussian peaks at known sub-pixel image positions."""

import numpy as np
from sapiens_ros.core.boxes import crop_windows, foreground_boxes
from sapiens_ros.core.heads.pose import (decode_heatmaps, flip_back, gaussian_heatmaps,
                                         heatmap_to_image, image_to_heatmap)
from sapiens_ros.core.letterbox import Letterbox
from sapiens_ros.core.metadata import keypoint_info
import torch


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
