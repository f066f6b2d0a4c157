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

"""SIGINT / SIGTERM during a replay: stop after the batch, close a valid bag."""

from __future__ import annotations

import logging
import signal
import threading

log = logging.getLogger(__name__)

#: Signals that stop a replay cleanly: Ctrl-C, and what docker, systemd, Kubernetes, Slurm and
#: ``timeout`` send.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """
    SIGINT/SIGTERM: the first asks to stop after the batch, the second stops now.

    Either way the output bag is closed and valid, and ``--resume`` continues it.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._old: dict = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._old = {sig: signal.signal(sig, self._handle) for sig in _STOP_SIGNALS}
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested.is_set():
            raise KeyboardInterrupt
        self.requested.set()
        log.warning('%s: stopping after the current batch (again to stop now)',
                    signal.Signals(signum).name)

    def finishing(self) -> None:
        """While the bag is closed, further stop signals only print a note."""
        for sig in self._old:
            signal.signal(sig, lambda *a: log.warning('closing the bag, please wait'))

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
