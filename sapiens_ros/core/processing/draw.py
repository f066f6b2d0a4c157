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
Vectorised drawing in torch on any device: thick line segments, discs, rectangles and text.

Every primitive draws all its shapes at once: the shapes become pixel coordinates (a segment is
sampled every pixel along its major axis, each sample stamped with a run of pixels across it; a
disc is a set of offsets around its centre), and one ``index_copy_`` writes them; no Python loop
runs per pixel or per shape. Text uses a built-in
5x7 bitmap font of ``[a-z0-9]``. Images are ``(H, W, C)`` uint8 tensors, drawn in place;
colours are ``(N, C)`` uint8 tensors, one per shape.
"""

from __future__ import annotations

from collections.abc import Sequence
import functools

import torch

#: Characters the font draws (a label holds only these).
FONT_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789'
#: Glyph size in font pixels (width, height) and the advance from one character to the next.
GLYPH_W, GLYPH_H, ADVANCE = 5, 7, 6

# One row string per glyph row, '#' on; drawn for this package (not taken from a font file).
_GLYPHS = {
    'a': '..... ..... .###. ....# .#### #...# .####',
    'b': '#.... #.... ####. #...# #...# #...# ####.',
    'c': '..... ..... .###. #.... #.... #...# .###.',
    'd': '....# ....# .#### #...# #...# #...# .####',
    'e': '..... ..... .###. #...# ##### #.... .###.',
    'f': '..##. .#..# .#... ###.. .#... .#... .#...',
    'g': '..... .#### #...# #...# .#### ....# .###.',
    'h': '#.... #.... #.##. ##..# #...# #...# #...#',
    'i': '..#.. ..... .##.. ..#.. ..#.. ..#.. .###.',
    'j': '...#. ..... ..##. ...#. ...#. #..#. .##..',
    'k': '#.... #.... #..#. #.#.. ##... #.#.. #..#.',
    'l': '.##.. ..#.. ..#.. ..#.. ..#.. ..#.. .###.',
    'm': '..... ..... ##.#. #.#.# #.#.# #.#.# #.#.#',
    'n': '..... ..... #.##. ##..# #...# #...# #...#',
    'o': '..... ..... .###. #...# #...# #...# .###.',
    'p': '..... ..... ####. #...# ####. #.... #....',
    'q': '..... ..... .#### #...# .#### ....# ....#',
    'r': '..... ..... #.##. ##..# #.... #.... #....',
    's': '..... ..... .###. #.... .###. ....# ####.',
    't': '.#... .#... ###.. .#... .#... .#..# ..##.',
    'u': '..... ..... #...# #...# #...# #..## .##.#',
    'v': '..... ..... #...# #...# #...# .#.#. ..#..',
    'w': '..... ..... #...# #...# #.#.# #.#.# .#.#.',
    'x': '..... ..... #...# .#.#. ..#.. .#.#. #...#',
    'y': '..... ..... #...# #...# .#### ....# .###.',
    'z': '..... ..... ##### ...#. ..#.. .#... #####',
    '0': '.###. #...# #..## #.#.# ##..# #...# .###.',
    '1': '..#.. .##.. ..#.. ..#.. ..#.. ..#.. .###.',
    '2': '.###. #...# ....# ...#. ..#.. .#... #####',
    '3': '####. ....# ....# .###. ....# ....# ####.',
    '4': '...#. ..##. .#.#. #..#. ##### ...#. ...#.',
    '5': '##### #.... ####. ....# ....# #...# .###.',
    '6': '..##. .#... #.... ####. #...# #...# .###.',
    '7': '##### ....# ...#. ..#.. .#... .#... .#...',
    '8': '.###. #...# #...# .###. #...# #...# .###.',
    '9': '.###. #...# #...# .#### ....# ...#. .##..',
}


@functools.lru_cache(maxsize=8)
def _font(device: torch.device) -> torch.Tensor:
    """``(len(FONT_CHARS), GLYPH_H, GLYPH_W)`` bool glyphs on ``device``."""
    rows = [[[c == '#' for c in row] for row in _GLYPHS[ch].split()] for ch in FONT_CHARS]
    return torch.tensor(rows, dtype=torch.bool, device=device)


@functools.lru_cache(maxsize=32)
def disc(radius: int, device: torch.device) -> torch.Tensor:
    """Return ``(k, 2)`` int64 offsets ``(dx, dy)`` of a filled disc of ``radius`` (0: a pixel)."""
    r = max(int(radius), 0)
    span = torch.arange(-r, r + 1, device=device)
    dy, dx = torch.meshgrid(span, span, indexing='ij')
    inside = dx * dx + dy * dy <= r * r + r  # rounder than <= r*r for small radii
    return torch.stack([dx[inside], dy[inside]], 1)


def stamp(image: torch.Tensor, centers: torch.Tensor, owner: torch.Tensor,
          colors: torch.Tensor, offsets: torch.Tensor) -> None:
    """
    Write ``colors[owner[i]]`` at ``centers[i] + offsets`` (rounded; off-image pixels skipped).

    ``centers``: ``(M, 2)`` x, y pixels; ``owner``: ``(M,)`` index into ``colors``;
    ``offsets``: ``(k, 2)`` for every centre, or ``(M, k, 2)`` per centre.
    """
    if not len(centers) or not offsets.shape[-2]:
        return
    height, width = image.shape[:2]
    reach = int(offsets.abs().max())
    c = centers.round().long()
    near = (c[:, 0] >= -reach) & (c[:, 0] < width + reach) & \
        (c[:, 1] >= -reach) & (c[:, 1] < height + reach)
    c, owner = c[near], owner[near]  # centres whose stamp touches the image
    if offsets.dim() == 3:
        offsets = offsets[near]
    pix = (c[:, None, :] + offsets).reshape(-1, 2)
    x, y = pix[:, 0], pix[:, 1]
    keep = ((x >= 0) & (x < width) & (y >= 0) & (y < height)).nonzero().squeeze(1)
    if not len(keep):
        return
    who = keep // offsets.shape[-2]
    values = colors.to(image.dtype)[owner][who]
    if image.is_contiguous():  # one row per pixel: index_copy_ is ~3x index_put_ on the CPU
        flat = image.view(height * width, -1)
        flat.index_copy_(0, y[keep] * width + x[keep], values.reshape(len(keep), -1))
    else:
        image.index_put_((y[keep], x[keep]), values)


def segment_samples(a: torch.Tensor, b: torch.Tensor,
                    max_samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    """
    Return points one pixel apart along the major axis of segments ``a[i] -> b[i]`` (``(S, 2)``).

    Returns ``(points (M, 2), owner (M,))``, ends included: ``owner`` is each point's segment.
    A segment gets at most ``max_samples`` points (longer ones, far off the image, are sampled
    more sparsely).
    """
    if not len(a):
        return a.new_zeros((0, 2)), torch.zeros(0, dtype=torch.long, device=a.device)
    delta = b - a
    span = delta.abs().amax(1).nan_to_num_(0.0, 0.0, 0.0)
    count = span.ceil().long().clamp_(0, max_samples - 1) + 1  # (S,)
    owner = torch.repeat_interleave(torch.arange(len(a), device=a.device), count)
    first = torch.cumsum(count, 0) - count
    step = torch.arange(len(owner), device=a.device) - first[owner]
    t = step.to(a.dtype) / (count[owner] - 1).clamp(min=1).to(a.dtype)
    return a[owner] + delta[owner] * t[:, None], owner


def draw_segments(image: torch.Tensor, a: torch.Tensor, b: torch.Tensor, colors: torch.Tensor,
                  radius: int) -> None:
    """
    Draw segments ``a[i] -> b[i]`` (``(S, 2)`` x, y), ``2 * radius + 1`` pixels thick.

    One point per pixel along the major axis, each stamped with a run of pixels across it (a
    column for a flatter segment, a row for a steeper one).
    """
    height, width = image.shape[:2]
    a, b = a.float(), b.float()
    points, owner = segment_samples(a, b, 2 * (height + width))
    delta = (b - a).abs()
    flat = (delta[:, 0] >= delta[:, 1])[owner]  # (M,): x is the major axis
    across = torch.arange(-radius, radius + 1, device=image.device)  # (k,)
    zero = torch.zeros_like(across)
    column, row = torch.stack([zero, across], 1), torch.stack([across, zero], 1)  # (k, 2)
    offsets = torch.where(flat[:, None, None], column, row)  # (M, k, 2)
    stamp(image, points, owner, colors, offsets)


def draw_discs(image: torch.Tensor, centers: torch.Tensor, colors: torch.Tensor,
               radius: int) -> None:
    """Draw filled discs of ``radius`` at ``centers`` (``(N, 2)`` x, y)."""
    owner = torch.arange(len(centers), device=centers.device)
    stamp(image, centers.float(), owner, colors, disc(radius, image.device))


def draw_boxes(image: torch.Tensor, boxes: torch.Tensor, colors: torch.Tensor,
               radius: int) -> None:
    """Draw the outlines of ``boxes`` (``(N, 4)`` x_min, y_min, x_max, y_max)."""
    x0, y0, x1, y1 = boxes.float().unbind(1)
    corners = torch.stack([torch.stack([x0, y0], 1), torch.stack([x1, y0], 1),
                           torch.stack([x1, y1], 1), torch.stack([x0, y1], 1)], 1)  # (N, 4, 2)
    ends = corners.roll(-1, dims=1)
    draw_segments(image, corners.reshape(-1, 2), ends.reshape(-1, 2),
                  colors.repeat_interleave(4, 0), radius)


def fill_rects(image: torch.Tensor, rects: torch.Tensor, colors: torch.Tensor) -> None:
    """Fill rectangles ``(N, 4)`` x, y, width, height (int pixels), clipped to the image."""
    if not len(rects):
        return
    rects = rects.long()
    w_max, h_max = int(rects[:, 2].max()), int(rects[:, 3].max())
    if w_max <= 0 or h_max <= 0:
        return
    dy, dx = torch.meshgrid(torch.arange(h_max, device=rects.device),
                            torch.arange(w_max, device=rects.device), indexing='ij')
    inside = (dx[None] < rects[:, 2, None, None]) & (dy[None] < rects[:, 3, None, None])
    n, yy, xx = inside.nonzero(as_tuple=True)
    centers = torch.stack([rects[n, 0] + xx, rects[n, 1] + yy], 1)
    stamp(image, centers, n, colors, disc(0, image.device))


def text_size(length: int, scale: int) -> tuple[int, int]:
    """Pixel ``(width, height)`` of a ``length``-character line at ``scale`` (no margin)."""
    return max(length * ADVANCE - 1, 0) * scale, GLYPH_H * scale


def char_codes(label: str) -> list[int]:
    """Return the indices of ``label``'s characters in :data:`FONT_CHARS` (ValueError: others)."""
    bad = sorted({c for c in label if c not in FONT_CHARS})
    if bad:
        raise ValueError(f'label {label!r} holds {bad}: labels are drawn from [a-z0-9] only')
    return [FONT_CHARS.index(c) for c in label]


def draw_text(image: torch.Tensor, labels: Sequence[str], origins: torch.Tensor,
              colors: torch.Tensor, scale: int) -> None:
    """
    Write each ``labels[i]`` with its top-left corner at ``origins[i]`` (x, y), ``scale`` x 5x7.

    All characters of all labels are drawn in one stamp.
    """
    codes = [char_codes(label) for label in labels]
    device = image.device
    flat = torch.tensor([c for cs in codes for c in cs], dtype=torch.long, device=device)
    if not len(flat):
        return
    lengths = torch.tensor([len(cs) for cs in codes], device=device)
    owner = torch.repeat_interleave(torch.arange(len(labels), device=device), lengths)
    first = torch.cumsum(lengths, 0) - lengths
    column = torch.arange(len(flat), device=device) - first[owner]  # position in its label
    n, gy, gx = _font(device)[flat].nonzero(as_tuple=True)  # the set font pixels of every char
    s = max(int(scale), 1)
    block = torch.stack(torch.meshgrid(torch.arange(s, device=device),
                                       torch.arange(s, device=device), indexing='xy'), -1)
    x = origins[owner[n], 0].long() + (column[n] * ADVANCE + gx) * s
    y = origins[owner[n], 1].long() + gy * s
    stamp(image, torch.stack([x, y], 1), owner[n], colors, block.reshape(-1, 2))
