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

"""Per-stage timings that do not add device synchronisation to the hot path."""

from __future__ import annotations

import time

import torch


class StageTimer:
    """
    Records named stage boundaries; on CUDA with events, so no extra syncs are needed.

    Events are recorded on the current stream of ``device`` (the pipeline's GPU), whatever device
    the calling thread has current. Call :meth:`mark` after each stage. :meth:`result` (call it
    after the final device-to-host copy, which synchronises anyway) returns milliseconds per stage.
    """

    def __init__(self, device: torch.device) -> None:
        self._device = torch.device(device)
        self._cuda = self._device.type == 'cuda'
        self._marks: list[tuple[str, object]] = []
        self._start = self._now()

    def _now(self):
        if self._cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self._device))
            return event
        return time.perf_counter()

    def mark(self, stage: str) -> None:
        """Close the stage that ran since the previous mark and name it ``stage``."""
        self._marks.append((stage, self._now()))

    def result(self) -> dict[str, float]:
        """Milliseconds per stage (stages marked twice are summed) plus ``total``."""
        if self._cuda:
            self._marks[-1][1].synchronize()
        out: dict[str, float] = {}
        prev = self._start
        for stage, t in self._marks:
            ms = prev.elapsed_time(t) if self._cuda else (t - prev) * 1e3
            out[stage] = out.get(stage, 0.0) + ms
            prev = t
        out['total'] = sum(out.values())
        return out
