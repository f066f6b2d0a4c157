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
The seam between the pipeline and a backend: one callable per task, tensors in and out.

A runner takes the normalised float32 batch ``(B, 3, H, W)`` on the pipeline's device and returns
the raw head outputs under fixed names, so pre- and post-processing never depend on the backend
(the PyTorch, ONNX Runtime and TensorRT runners live in :mod:`sapiens_ros.backends`).
"""

from __future__ import annotations

from typing import Protocol

import torch

#: Output names per task, in the order backends export them.
OUTPUT_NAMES: dict[str, tuple[str, ...]] = {
    'pose': ('heatmaps',),
    'seg': ('logits',),
    'normal': ('normals',),
    'pointmap': ('pointmaps', 'scales'),
    'matting': ('alphas', 'foregrounds'),
    'backbone': ('pooler_output',),
}


class Runner(Protocol):
    """What the pipeline needs from a backend for one task."""

    task: str
    name: str
    model_id: str

    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Run the head on a normalised float32 batch; return its raw outputs by name."""

    def check_input_size(self, input_size: tuple[int, int]) -> tuple[int, int]:
        """Raise :class:`~sapiens_ros.core.errors.InputSizeError` if the head cannot take it."""
