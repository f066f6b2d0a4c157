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

"""Overlays: track ids drawn in their colours on the real photo."""

import numpy as np
from sapiens_ros.core.media.sample_image import sample_image_path
from sapiens_ros.core.media.visualize import draw_skeleton, id_color, UNTRACKED_COLOR
from skimage import io


def test_ids_colour_boxes_and_links_and_are_written():
    photo = io.imread(sample_image_path())[::2, ::2].copy()
    rng = np.random.default_rng(0)
    kps = np.stack([rng.uniform(30, 110, (308, 2)), rng.uniform(150, 230, (308, 2))])
    scores = np.full((2, 308), 0.9, np.float32)
    boxes = np.float32([[20, 40, 120, 120], [140, 140, 240, 240]])
    plain = draw_skeleton(photo, kps, scores, boxes)
    tracked = draw_skeleton(photo, kps, scores, boxes, ids=np.array([7, -1]))
    assert tuple(tracked[80, 20]) == tuple(int(c * 255) for c in id_color(7))  # box edge
    assert tuple(tracked[200, 140]) == tuple(int(c * 255) for c in UNTRACKED_COLOR)
    text = tracked[:40, 20:70].astype(int) - plain[:40, 20:70]
    assert np.abs(text).sum() > 0  # '#7' written above the first box
    assert id_color(7) != id_color(8) and id_color(7) == id_color(7)


def test_other_keypoint_formats_draw_their_own_links():
    """A monitor of a node publishing coco17 or openpose18 draws those skeletons."""
    from sapiens_ros.core.models.keypoint_formats import keypoint_format

    photo = np.zeros((200, 200, 3), np.uint8)
    rng = np.random.default_rng(1)
    kps308 = rng.uniform(20, 180, (1, 308, 2))
    for name in ('coco17', 'openpose18'):
        fmt = keypoint_format(name)
        kps = fmt.points(kps308)
        drawn = draw_skeleton(photo, kps, np.full((1, len(fmt)), 0.9), ids=np.array([3]))
        a, b = np.round(kps[0, fmt.skeleton[0]]).astype(int)
        mid = (a + b) // 2  # the middle of the first link is coloured
        assert drawn[mid[1] - 1:mid[1] + 2, mid[0] - 1:mid[0] + 2].any(), name
