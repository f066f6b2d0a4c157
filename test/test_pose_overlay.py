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

"""``pose/overlay`` drawn in torch on a real photo: pixel checks where the keypoints are."""

import numpy as np
import pytest
from sapiens_ros.core.models.keypoint_formats import keypoint_format
from sapiens_ros.core.processing import draw
from sapiens_ros.core.processing.pose_overlay import (line_radius, pose_overlay, PoseDrawing,
                                                      text_scale)
from skimage import data as skdata
import torch

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
PHOTO = skdata.astronaut()  # 512x512 RGB
COCO = keypoint_format('coco17')
#: A standing person on the photo, COCO-17 order (x, y pixels).
BODY = np.array([[256, 110], [246, 100], [266, 100], [236, 105], [276, 105], [206, 190],
                 [306, 190], [186, 270], [326, 270], [176, 340], [336, 340], [226, 330],
                 [286, 330], [221, 420], [291, 420], [216, 490], [296, 490]], np.float32)


def _tint(color):
    return (np.asarray(color, np.int32) + 255) // 2


def _draw(drawing, device='cpu'):
    out = pose_overlay(torch.from_numpy(PHOTO.copy()).to(device), drawing)
    return out.cpu().numpy()


def _person(visible=None, label='', boxes=True, color=(255, 0, 0)):
    visible = np.ones((1, 17), bool) if visible is None else visible
    box = np.array([[150, 80, 360, 500]], np.float32) if boxes else None
    return PoseDrawing(BODY[None], visible, COCO.skeleton, np.array([color], np.uint8),
                       [label], box)


@pytest.mark.parametrize('device', DEVICES)
def test_keypoints_links_and_box_are_drawn_where_they_are(device):
    visible = np.ones((1, 17), bool)
    visible[0, 16] = False  # right ankle hidden: neither it nor its link is drawn
    out = _draw(_person(visible), device)
    tint = _tint((255, 0, 0))
    x, y = np.round(BODY[:16]).astype(int).T
    assert (out[y, x] == tint).all()  # every visible keypoint: a disc of the lighter tint
    for a, b in COCO.skeleton:
        if visible[0, a] and visible[0, b]:
            mid = np.round((BODY[a] + BODY[b]) / 2).astype(int)
            assert tuple(out[mid[1], mid[0]]) in {(255, 0, 0), tuple(tint)}, (a, b)
    hidden = np.round(BODY[16]).astype(int)
    knee = np.round(BODY[14]).astype(int)
    lower = np.round(knee + (hidden - knee) * 0.75).astype(int)  # on the hidden link
    assert (out[hidden[1], hidden[0]] == PHOTO[hidden[1], hidden[0]]).all()
    assert (out[lower[1], lower[0]] == PHOTO[lower[1], lower[0]]).all()
    assert (out[300, 150] == (255, 0, 0)).all() and (out[500, 250] == (255, 0, 0)).all()
    changed = (out != PHOTO).any(-1)
    assert not changed[:, :140].any() and not changed[:, 370:].any()  # nothing off the person
    assert not changed[:70].any() and changed.mean() < 0.05


@pytest.mark.parametrize('device', DEVICES)
def test_labels_are_the_font_glyphs_on_the_person_colour(device):
    label = 'qz7'
    color = (40, 200, 240)
    out = _draw(_person(label=label, color=color), device)
    scale = text_scale(*PHOTO.shape[:2])
    width, height = draw.text_size(len(label), scale)
    pad = scale
    x0, y0 = 150, 80 - (height + 2 * pad)  # the patch sits above the box's top-left corner
    patch = out[y0:y0 + height + 2 * pad, x0:x0 + width + 2 * pad]
    inner = patch[pad:pad + height, pad:pad + width]
    glyphs = np.concatenate([np.pad(draw._font(torch.device('cpu'))[draw.FONT_CHARS.index(c)]
                                    .numpy(), ((0, 0), (0, 1))) for c in label], 1)[:, :-1]
    ink = np.kron(glyphs, np.ones((scale, scale), bool))
    assert ink.shape == inner.shape[:2]
    assert (inner[ink] == 0).all()  # dark ink on a light colour
    assert (inner[~ink] == color).all()
    assert (patch[:pad] == color).all() and (patch[:, :pad] == color).all()


def test_many_persons_at_once_each_in_its_colour():
    shift = np.array([120, 0], np.float32)
    points = np.stack([BODY - shift, BODY + shift])
    colors = np.array([[255, 0, 0], [0, 0, 255]], np.uint8)
    drawing = PoseDrawing(points, np.ones((2, 17), bool), COCO.skeleton, colors, ['1', ''])
    out = _draw(drawing)
    for row in range(2):
        x, y = np.round(points[row, 5:]).astype(int).T  # the body (the faces overlap)
        assert (out[y, x] == _tint(colors[row])).all()


def test_empty_and_off_image_drawings_leave_the_photo():
    empty = PoseDrawing(np.zeros((0, 17, 2), np.float32), np.zeros((0, 17), bool),
                        COCO.skeleton, np.zeros((0, 3), np.uint8))
    assert np.array_equal(_draw(empty), PHOTO)
    far = PoseDrawing(BODY[None] + 5000, np.ones((1, 17), bool), COCO.skeleton,
                      np.array([[255, 0, 0]], np.uint8), [''], None)
    assert np.array_equal(_draw(far), PHOTO)  # off the image: nothing, no error
    nan = BODY[None].copy()
    nan[0, 3] = np.nan
    out = _draw(PoseDrawing(nan, np.ones((1, 17), bool), COCO.skeleton,
                            np.array([[255, 0, 0]], np.uint8)))
    assert (out != PHOTO).any()  # a NaN keypoint is skipped, the rest drawn


def test_bad_drawings_are_named():
    with pytest.raises(ValueError, match=r"'B12'.*\[a-z0-9\]"):
        _person(label='B12')
    with pytest.raises(ValueError, match='colors has 2 rows'):
        PoseDrawing(BODY[None], np.ones((1, 17), bool), COCO.skeleton,
                    np.zeros((2, 3), np.uint8))


def test_the_font_has_every_label_character():
    font = draw._font(torch.device('cpu'))
    assert font.shape == (36, draw.GLYPH_H, draw.GLYPH_W)
    flat = font.reshape(36, -1)
    assert len({tuple(g.tolist()) for g in flat}) == 36  # no two glyphs alike
    assert line_radius(768, 1024) == 1 and line_radius(2160, 3840) == 4
