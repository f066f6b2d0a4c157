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
ROS4HRI ids: five random lowercase letters, unique and never reused within a run.

REP-155 names persons (and bodies, faces, voices) by such ids; a reused id would let a consumer
merge two people's histories. Random rather than counted so that ids of different runs do not
look alike; seeded for tests and replay. Two sources:

- :class:`FiveLetterIds` draws ids and remembers every one given (persons);
- :class:`TrackNames` names integer track ids by a keyed permutation of the 26**5 names, so
  that a body's or face's id is a pure function of its track id: the same in every thread and
  module of a process, unique while track ids are (the trackers never reuse one), and nothing
  to remember. hri_rviz keeps a TF frame only when it ends in the five-letter id.
"""

from __future__ import annotations

import math
import string
import threading

import numpy as np

#: The letters of an id.
LETTERS = string.ascii_lowercase
#: Characters in an id.
ID_LENGTH = 5
#: How many ids there are.
ID_SPACE = len(LETTERS) ** ID_LENGTH


class FiveLetterIds:
    """
    Thread-safe source of ids like ``'qzmrb'``: ``take()`` one, ``take_many(n)`` several.

    One source per id space (persons; bodies later): an id is never given twice by a source.
    ``reserve(ids)`` marks ids as used (ids restored from elsewhere, say a resumed replay).
    """

    def __init__(self, seed: int | None = None) -> None:
        self._rng = np.random.default_rng(seed)
        self._used: set[str] = set()
        self._lock = threading.Lock()

    def take(self) -> str:
        """Return a new id."""
        return self.take_many(1)[0]

    def take_many(self, count: int) -> list[str]:
        """Return ``count`` new ids, in the order given."""
        out: list[str] = []
        with self._lock:
            while len(out) < count:
                letters = self._rng.integers(0, len(LETTERS), ID_LENGTH)
                name = ''.join(LETTERS[i] for i in letters)
                if name not in self._used:  # 26**5 ~ 11.9 M names: a retry is rare
                    self._used.add(name)
                    out.append(name)
        return out

    def reserve(self, ids: list[str] | set[str]) -> None:
        """Never give these ids."""
        with self._lock:
            self._used.update(ids)

    def __len__(self) -> int:
        """Ids given or reserved so far."""
        return len(self._used)


class TrackNames:
    """
    Five-letter names of integer track ids: ``names(12) == 'kqzvb'`` (random per run).

    ``name = letters((a * track + b) mod 26**5)`` with ``a`` coprime to ``26**5``: a bijection,
    so distinct tracks (below ``26**5``) get distinct names. ``seed`` fixes ``a`` and ``b``.
    """

    def __init__(self, seed: int | None = None) -> None:
        rng = np.random.default_rng(seed)
        while True:
            a = int(rng.integers(1, ID_SPACE))
            if math.gcd(a, ID_SPACE) == 1:
                break
        self._a, self._b = a, int(rng.integers(0, ID_SPACE))

    def __call__(self, track_id: int) -> str:
        """Return the name of ``track_id`` (a non-negative int below ``26**5``)."""
        track = int(track_id)
        if not 0 <= track < ID_SPACE:
            raise ValueError(f'track id {track} is outside 0 .. {ID_SPACE - 1}')
        code = (self._a * track + self._b) % ID_SPACE
        out = []
        for _ in range(ID_LENGTH):
            code, digit = divmod(code, len(LETTERS))
            out.append(LETTERS[digit])
        return ''.join(out)


def is_hri_id(name: str) -> bool:
    """Whether ``name`` has the ROS4HRI id form (five lowercase ASCII letters)."""
    return len(name) == ID_LENGTH and all(c in LETTERS for c in name)
