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
The torch backend: eager transformers models, and their ``torch.compile`` and CUDA-graph modes.

:class:`TorchRunner` runs a ``Sapiens2For*`` model eagerly. :class:`AcceleratedTorchRunner`
wraps it without changing it: ``torch.compile`` returns a module that forwards ``config`` and
parameters to the original, and CUDA graphs wrap the runner's call for a fixed batch.
"""

from __future__ import annotations

import logging

import torch

from .cuda_graphs import CudaGraphCache, run_in_buckets
from ..core.models.input_size import check_input_size
from ..core.models.runners import OUTPUT_NAMES

LOG = logging.getLogger(__name__)


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


class AcceleratedTorchRunner(TorchRunner):
    """
    A :class:`TorchRunner` with optional ``torch.compile`` and CUDA graphs (GPU only).

    ``compile``: False, True (default mode) or a ``torch.compile`` mode name. With
    ``cuda_graphs`` and compile, the ``reduce-overhead`` mode (Inductor's own CUDA graphs) is
    used; with ``cuda_graphs`` alone, the eager forward is captured here, at configure, for
    every batch in ``graph_batches`` at ``input_size`` (the factory gives the plan's: 1 for
    dense heads, the pose crop batches up to ``max_persons``). A batch without its own graph
    runs as chunks of captured ones (:func:`~.cuda_graphs.run_in_buckets`): nothing is
    captured while frames stream. Outputs are the caller's to keep.
    """

    def __init__(self, task: str, model: torch.nn.Module, model_id: str = '', *,
                 compile: bool | str = False,  # noqa: A002
                 cuda_graphs: bool = False, graph_batches: tuple[int, ...] = (1,),
                 input_size: tuple[int, int] | None = None,
                 device: torch.device | str | None = None) -> None:
        model_id = model_id or getattr(model.config, '_name_or_path', '') or 'unnamed'
        device = torch.device(device) if device is not None else next(model.parameters()).device
        on_gpu = device.type == 'cuda'
        if compile:
            mode = compile if isinstance(compile, str) else None
            if cuda_graphs and on_gpu and mode is None:
                mode = 'reduce-overhead'
            model = torch.compile(model.eval(), mode=mode, dynamic=False)
            LOG.info('torch.compile(%s, mode=%s)', task, mode or 'default')
        super().__init__(task, model, model_id)
        self.device = device
        self.name = 'torch.compile' if compile else 'torch'
        self._graphs = None
        if cuda_graphs and not compile:
            if not on_gpu:
                LOG.warning('cuda_graphs needs a CUDA device; running %s eagerly', task)
            elif input_size is None:
                LOG.warning('cuda_graphs for %s needs the input size to capture at configure; '
                            'running eagerly', task)
            else:
                self._graphs = CudaGraphCache(super().__call__, self.device,
                                              name=f'torch {task}')
                self._graphs.capture(graph_batches, (3, *input_size), self.dtype)
                self.name = 'torch+cudagraphs'

    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Forward pass, replaying captured CUDA graphs where they apply."""
        if self._graphs is not None:
            with torch.inference_mode():
                return run_in_buckets(self._graphs, pixel_values.to(self.dtype))
        return super().__call__(pixel_values)
