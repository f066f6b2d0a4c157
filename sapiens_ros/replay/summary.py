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

"""The summary of one replay and the exit status it maps to."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

#: Exit statuses of ``sapiens-ros replay`` (README, docs/replay.md).
EXIT_OK = 0  # every frame has outputs
EXIT_INPUT_BROKE = 1  # an input is truncated or corrupt: its readable frames are kept
EXIT_CANNOT_OPEN = 2  # an input cannot be opened, or the arguments are wrong
EXIT_FRAMES_FAILED = 3  # some frames became error records
EXIT_OUTPUT_FAILED = 4  # an output could not be written (disk full, unwritable): --resume
EXIT_INTERRUPTED = 130  # SIGINT or SIGTERM: --resume continues


@dataclass
class Summary:
    """Counts of one run: ``read == processed + failed`` (frames of this run)."""

    read: int = 0
    processed: int = 0
    failed: int = 0
    already_done: int = 0  # frames the resumed output held before this run
    already_failed: int = 0  # of which error records
    interrupted: bool = False
    input_error: str | None = None  # the input broke mid-way (everything before it is kept)
    output_error: str | None = None  # the output could not be written (disk full...)
    not_kept: int = 0  # frames read after the output's last checkpoint when it failed
    failures: Counter = field(default_factory=Counter)
    topic_counts: dict[str, int] = field(default_factory=dict)
    video_frames: int = 0
    seconds: float = 0.0
    output: str = ''

    @property
    def consistent(self) -> bool:
        """Return whether every frame read is accounted for."""
        return self.read == self.processed + self.failed

    @property
    def total_processed(self) -> int:
        """Frames with outputs in the bag, this run and the runs it resumed."""
        return self.processed + self.already_done - self.already_failed

    @property
    def total_failed(self) -> int:
        """Frames with an error record in the bag, this run and the runs it resumed."""
        return self.failed + self.already_failed

    @property
    def status(self) -> str:
        """One word for manifests: done, failed_frames, input_broke, output_failed, interrupted."""
        return {EXIT_OK: 'done', EXIT_INPUT_BROKE: 'input_broke',
                EXIT_FRAMES_FAILED: 'failed_frames', EXIT_OUTPUT_FAILED: 'output_failed',
                EXIT_INTERRUPTED: 'interrupted'}[self.exit_status]

    @property
    def exit_status(self) -> int:
        """Exit status of the run: interrupted > output failed > input broke > frames failed."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.output_error:
            return EXIT_OUTPUT_FAILED
        if self.input_error:
            return EXIT_INPUT_BROKE
        return EXIT_FRAMES_FAILED if self.failed else EXIT_OK

    def text(self) -> str:
        """Human-readable summary."""
        rate = self.processed / self.seconds if self.seconds > 0 else 0.0
        lines = [f'frames read {self.read} = processed {self.processed} + failed {self.failed}'
                 f' ({rate:.2f} frames/s over {self.seconds:.1f} s)']
        if self.already_done:
            lines.append(f'frames already in the resumed bag: {self.already_done}')
        if self.failures:
            lines.append('failures: ' + ', '.join(f'{k} {v}' for k, v in
                                                  sorted(self.failures.items())))
        if self.interrupted:
            lines.append('interrupted: the bag holds everything processed so far; '
                         'continue with --resume')
        if self.input_error:
            lines.append(f'input error: {self.input_error}')
        if self.output_error:
            lines.append(f'output error: {self.output_error}')
            if self.not_kept:
                lines.append(f'{self.not_kept} frames after the last checkpoint were not kept')
            lines.append('free space (or fix the output) and continue with --resume')
        lines.append(f'wrote {sum(self.topic_counts.values())} messages to {self.output}')
        return '\n'.join(lines)
