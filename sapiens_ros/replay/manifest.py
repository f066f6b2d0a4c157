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
The manifest of a many-bag replay: ``OUT_DIR/manifest.json`` and ``manifest.csv``.

One row per input bag: frames read (in its output: processed + failed, over every run that
resumed it), processed, failed, seconds, status, attempts, error. Both files are rewritten
atomically after every bag, so a killed run's manifest is current up to its last finished bag.
"""

from __future__ import annotations

import csv
from dataclasses import asdict, dataclass, fields
import io
import json
import os
from pathlib import Path

#: Statuses besides those of :attr:`~sapiens_ros.replay.summary.Summary.status`.
PENDING, CANNOT_OPEN, WORKER_LOST = 'pending', 'cannot_open', 'worker_lost'


@dataclass
class BagRecord:
    """One bag's row."""

    bag: str  # relative name (its output is OUT_DIR/<bag>)
    input: str  # noqa: A003 - the column name
    output: str
    frames: int = 0  # frames in the output: processed + failed
    processed: int = 0
    failed: int = 0
    seconds: float = 0.0
    status: str = PENDING
    attempts: int = 0
    error: str = ''

    @property
    def finished(self) -> bool:
        """Return whether the bag needs no more work (its frames all have outputs or records)."""
        return self.status in ('done', 'failed_frames')


class Manifest:
    """Rows by bag name, saved as JSON and CSV in the output directory."""

    def __init__(self, out_dir: str | Path) -> None:
        self.dir = Path(out_dir)
        self.json_path = self.dir / 'manifest.json'
        self.csv_path = self.dir / 'manifest.csv'
        self.rows: dict[str, BagRecord] = {}

    def load(self) -> Manifest:
        """Read an earlier run's rows (for ``--resume``); a missing file is an empty manifest."""
        if self.json_path.is_file():
            names = {f.name for f in fields(BagRecord)}
            for row in json.loads(self.json_path.read_text())['bags']:
                record = BagRecord(**{k: v for k, v in row.items() if k in names})
                self.rows[record.bag] = record
        return self

    def save(self) -> None:
        """Write both files (each to a temporary name, then renamed into place)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        rows = [asdict(r) for r in self.rows.values()]
        totals = {k: sum(r[k] for r in rows) for k in ('frames', 'processed', 'failed')}
        _atomic_write(self.json_path, json.dumps({'bags': rows, 'totals': totals}, indent=1))
        buf = io.StringIO()
        writer = csv.DictWriter(buf, [f.name for f in fields(BagRecord)], lineterminator='\n')
        writer.writeheader()
        writer.writerows(rows)
        _atomic_write(self.csv_path, buf.getvalue())


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + '.tmp')
    tmp.write_text(text)
    os.replace(tmp, path)
