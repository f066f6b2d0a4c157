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

"""Progress of a long replay: frames done, frames/s and ETA (tqdm on a terminal, else a line)."""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    if seconds != seconds or seconds == float('inf'):
        return '?'
    seconds = int(seconds)
    return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


class Progress:
    """Count finished frames; draw a tqdm bar on a TTY, else print a line at most every second."""

    def __init__(self, total: int | None, enabled: bool = True, stream=None,
                 interval: float = 1.0) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.interval = interval
        self.enabled = enabled
        self._start = time.monotonic()
        self._last = 0.0
        self._printed = -1
        self._bar = None
        if enabled and getattr(self.stream, 'isatty', lambda: False)():
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, unit='frame', desc='replay', file=self.stream,
                                 dynamic_ncols=True, smoothing=0.1)
            except ImportError:
                self._bar = None

    def rate(self) -> float:
        """Return the frames per second since the start."""
        elapsed = time.monotonic() - self._start
        return self.done / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        """One status line: ``replay: 12/100 frames, 3.1 frames/s, ETA 0:00:28``."""
        rate = self.rate()
        total = '?' if self.total is None else str(self.total)
        left = max(0, self.total - self.done) / rate if self.total is not None and rate > 0 \
            else float('nan')
        return f'replay: {self.done}/{total} frames, {rate:.2f} frames/s, ETA {_clock(left)}'

    def update(self, n: int = 1) -> None:
        """Add ``n`` finished frames (negative: frames a lost worker had counted)."""
        if not n:
            return
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._last >= self.interval or self.done == self.total:
            self._last = now
            self._printed = self.done
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        """Finish the bar (or print the last line)."""
        if self._bar is not None:
            self._bar.close()
        elif self.enabled and self._printed != self.done:
            print(self.line(), file=self.stream, flush=True)
