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
(PyTorch here; ONNX Runtime and TensorRT runners plug in with the same contract).
"""

from __future__ import annotations

from typing import Protocol

import torch

from .loading import check_input_size

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


class TorchRunner:
    """Eager PyTorch runner around a transformers ``Sapiens2For*`` model."""

    name = 'torch'

    def __init__(self, task: str, model: torch.nn.Module, model_id: str = '') -> None:
        self.task = task
        self.model = model.eval()
        self.model_id = model_id or getattr(model.config, '_name_or_path', '') or 'unnamed'
        first = next(model.parameters())
        self.device, self.dtype = first.device, first.dtype

    @property
    def config(self):
        """Return the transformers config of the wrapped model."""
        return self.model.config

    def check_input_size(self, input_size: tuple[int, int]) -> tuple[int, int]:
        """Validate the input size against the model config."""
        return check_input_size(self.task, self.model.config, input_size)

    @torch.inference_mode()
    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Forward pass in the model's dtype; outputs keep the model's dtype."""
        out = self.model(pixel_values.to(self.dtype))
        return {name: out[name] for name in OUTPUT_NAMES[self.task] if out.get(name) is not None}
