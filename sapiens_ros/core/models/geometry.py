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
Input geometry of a Sapiens2 config: its patch grid and the pointmap scale head's feature grid.

Facts about a config only (no torch, no loading), so the input-size rules
(:mod:`.input_size`) need nothing of the loader.
"""

from __future__ import annotations


def patch_size(config) -> tuple[int, int]:
    """Patch size of a Sapiens2 config as ``(h, w)``."""
    p = config.patch_size
    return (p, p) if isinstance(p, int) else (int(p[0]), int(p[1]))


def scale_grid(config, height: int, width: int) -> tuple[int, int]:
    """Feature grid the pointmap scale head flattens for a ``height x width`` input."""
    ph, pw = patch_size(config)
    fh, fw = height // ph, width // pw
    for k in config.head_config.scale_conv_kernel_sizes:
        pad = (k - 1) // 2
        fh = (fh + 2 * pad - k) // 2 + 1
        fw = (fw + 2 * pad - k) // 2 + 1
    return fh, fw


def scale_features(config, height: int, width: int) -> int:
    """Flattened size the pointmap scale head sees for a ``height x width`` input."""
    fh, fw = scale_grid(config, height, width)
    return fh * fw * config.head_config.scale_conv_out_channels[-1]


def has_scale_head(config) -> bool:
    """Return True when a pointmap config predicts the focal-length scale."""
    head = getattr(config, 'head_config', None)
    return bool(head is not None and head.scale_conv_out_channels)


def scale_head_sizes(config, limit: int = 2048) -> tuple[list[int], list[int]]:
    """
    Heights and widths (multiples of the patch) the pointmap scale head takes as trained.

    These keep the training feature grid; other sizes with the same flattened size also run
    but feed the MLP transposed features.
    """
    ph, pw = patch_size(config)
    size = config.image_size
    train_h, train_w = (size, size) if isinstance(size, int) else size
    want = scale_grid(config, train_h, train_w)
    hs = [h for h in range(ph, limit + 1, ph) if scale_grid(config, h, train_w)[0] == want[0]]
    ws = [w for w in range(pw, limit + 1, pw) if scale_grid(config, train_h, w)[1] == want[1]]
    return hs, ws
