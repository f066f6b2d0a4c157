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
A frame kept on its device after the step, for what is drawn once tracking has run.

The pose overlay shows track ids and colours, known only after the pipeline step; it is drawn
from the frame the step uploaded, on the same device, in the thread that builds the messages.
That thread is not the one that ran the step: :meth:`DeviceFrame.current` selects the frame's
device and orders the thread's current stream after the step's work (a CUDA event recorded when
the frame was kept), so the drawing never reads the frame before its upload landed.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class DeviceFrame:
    """One frame's RGB pixels on the pipeline's device, and when the step that made them ends."""

    rgb: torch.Tensor  # (H, W, 3) uint8 RGB on the pipeline's device
    ready: object | None = None  # torch.cuda.Event recorded after the step's work; None on CPU

    @classmethod
    def keep(cls, rgb: torch.Tensor) -> DeviceFrame:
        """Keep ``rgb``; on CUDA record an event on this thread's stream, after its work so far."""
        if rgb.device.type != 'cuda':
            return cls(rgb)
        ready = torch.cuda.Event()
        ready.record(torch.cuda.current_stream(rgb.device))
        return cls(rgb, ready)

    @contextlib.contextmanager
    def current(self) -> Iterator[torch.Tensor]:
        """
        Yield the frame, with this thread on its device and its stream after the step's work.

        Whatever the block reads back to the host (a synchronous copy, an encoder's bytes) has
        finished with the frame when the block ends, so the frame may be freed afterwards.
        """
        if self.ready is None:
            yield self.rgb
            return
        device = self.rgb.device
        with torch.cuda.device(device):
            torch.cuda.current_stream(device).wait_event(self.ready)
            yield self.rgb
