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
Many bags into ``OUT_DIR``: plan the work, run it (here, or on Ray), keep the manifest.

Each input bag becomes one unit of work, or with ``split_seconds`` several units, one per
time range, whose outputs are merged into one bag when all are finished. A unit is one
:class:`~sapiens_ros.replay.loop.Replayer` run, so every guarantee of a single replay holds
per bag: a unit that is retried (its worker died) resumes its own partial output. With
``workers == 1`` the units run one after another in this process; otherwise on Ray
(:mod:`sapiens_ros.replay.ray_workers`).

The manifest adds up over runs: a unit's attempt is counted when it starts, and the seconds of
the units running are saved about once a second, so even a driver killed mid-bag (kill -9)
leaves its attempts and seconds for ``--resume`` to add to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
import logging
from pathlib import Path
import shutil
import threading
import time

from .bags import BagInput, find_bags
from .loop import Replayer, ReplayOptions, TRACK_ID_BLOCK
from .manifest import BagRecord, CANNOT_OPEN, Manifest, WORKER_LOST
from .merge import merge_parts
from .progress import Progress
from .resume import leftovers
from .rosbag2 import BagError
from .source import InputBag
from .stop import StopSignals
from .summary import (EXIT_CANNOT_OPEN, EXIT_FRAMES_FAILED, EXIT_INPUT_BROKE, EXIT_INTERRUPTED,
                      EXIT_OK, EXIT_OUTPUT_FAILED, Summary)

log = logging.getLogger(__name__)

#: How often the manifest is saved while units run (their seconds so far).
SAVE_SECONDS = 1.0


@dataclass
class FleetOptions:
    """The many-bag flags of ``sapiens-ros replay``."""

    inputs: Sequence[str]
    out_dir: str
    replay: ReplayOptions  # template for every unit (its input/output bag are replaced)
    workers: int = 1
    ray_address: str | None = None
    gpus_per_worker: float = 0.0
    cpus_per_worker: float = 1.0
    split_seconds: float | None = None  # split longer bags into time ranges (opt-in)
    retries: int = 2  # times a unit whose worker died is run again (it resumes)
    progress: bool = True
    ray_dashboard: bool = False  # a local Ray starts its dashboard only when asked


@dataclass
class Unit:
    """One replay: a whole bag, or one time range of it."""

    bag: str  # the bag's name (its row in the manifest)
    input: str  # noqa: A003 - the manifest's column name
    output: str
    frames: int = 0  # frames it will read (for the progress total)
    part: int | None = None
    window_ns: tuple[int | None, int | None] | None = None
    attempts: int = 0

    def options(self, template: ReplayOptions) -> ReplayOptions:
        """Return how to replay this unit; a retry resumes what the last attempt wrote."""
        options = replace(template, input_bag=self.input, output_bag=self.output,
                          progress=False, resume=template.resume or self.attempts > 1,
                          on_frame=None, stop=None, video=None)
        if self.window_ns is not None:
            options = replace(options, window_ns=self.window_ns, start=None, end=None,
                              first_track_id=(self.part or 0) * TRACK_ID_BLOCK + 1)
        return options


class WorkerLost(Exception):
    """A unit's worker died more often than ``retries`` allows."""


@dataclass
class _BagState:
    record: BagRecord
    units: list[Unit] = field(default_factory=list)
    results: dict[int, Summary] = field(default_factory=dict)
    base_seconds: float = 0.0  # the earlier runs' seconds and attempts (manifest of --resume)
    base_attempts: int = 0
    running: dict[int, float] = field(default_factory=dict)  # part -> monotonic start
    lost_seconds: float = 0.0  # attempts whose worker died

    def started(self, unit: Unit) -> None:
        """Count a unit's attempt (a retry adds the dead attempt's time to the seconds)."""
        part, now = unit.part or 0, time.monotonic()
        if part in self.running:
            self.lost_seconds += now - self.running[part]
        self.running[part] = now
        self._count_attempts()

    def ended(self, unit: Unit) -> None:
        """Close a unit's attempt (finished, or its worker given up on); update the row."""
        part = unit.part or 0
        start = self.running.pop(part, None)
        if start is not None and part not in self.results:
            self.lost_seconds += time.monotonic() - start
        self._count_attempts()
        self.update_seconds()

    def _count_attempts(self) -> None:
        """Row's attempts: the earlier runs' and this run's most-tried unit's."""
        self.record.attempts = self.base_attempts + max(u.attempts for u in self.units)

    def update_seconds(self) -> None:
        """Seconds over every run: earlier runs, this one's finished, lost and running units."""
        now = time.monotonic()
        self.record.seconds = round(
            self.base_seconds + self.lost_seconds + sum(s.seconds for s in self.results.values())
            + sum(now - start for start in self.running.values()), 3)


def plan(bags: Sequence[BagInput], opt: FleetOptions, manifest: Manifest) -> list[Unit]:
    """Return the units to run; bags that need no work or cannot be opened get their row."""
    units = []
    out_dir = Path(opt.out_dir)
    for bag in bags:
        output = out_dir / bag.name
        parts = _parts_dir(output)
        old = manifest.rows.get(bag.name)
        if old is not None and old.finished and output.exists() and not parts.exists() and \
                len(leftovers(output)) == 1:
            continue  # finished in an earlier run
        record = BagRecord(bag.name, str(bag.path), str(output),
                           seconds=old.seconds if old else 0.0,
                           attempts=old.attempts if old else 0)
        manifest.rows[bag.name] = record
        try:
            units += _bag_units(bag, output, opt)
        except BagError as exc:
            record.status, record.error = CANNOT_OPEN, str(exc)
            log.error('%s', exc)
    return units


def _parts_dir(output: Path) -> Path:
    return output.with_name(output.name + '.parts')


def _bag_units(bag: BagInput, output: Path, opt: FleetOptions) -> list[Unit]:
    template = opt.replay
    with InputBag(bag.path, salvage=True) as src:
        conns = src.select(template.topics)
        frames = -(-src.count(conns) // template.every)
        start, end = src.start_ns, src.end_ns
        salvaged = src.salvaged
    span = opt.split_seconds
    if output.exists() and not _parts_dir(output).exists():
        span = None  # a whole-bag output from an earlier run: continue it whole
    if not span or salvaged or end - start <= span * 1e9:
        return [Unit(bag.name, str(bag.path), str(output), frames)]
    step = int(span * 1e9)
    edges = list(range(start, end, step))
    parts = _parts_dir(output)
    return [Unit(bag.name, str(bag.path), str(parts / f'part-{k:04d}'),
                 int(frames * min(step, end - lo) / (end - start)), k,
                 (lo if k else None, lo + step if k < len(edges) - 1 else None))
            for k, lo in enumerate(edges)]


class LocalExecutor:
    """Run units one after another in this process, with one pipeline."""

    def __init__(self, make_pipeline: Callable) -> None:
        self.pipe = make_pipeline()
        self.ready_at = time.perf_counter()  # when the pipeline was loaded

    def run(self, units: Sequence[Unit], template: ReplayOptions, stop: threading.Event,
            on_frames: Callable[[int], None],
            on_start: Callable[[Unit], None] = lambda unit: None,
            ) -> Iterator[tuple[Unit, object]]:
        """Yield ``(unit, Summary or exception)`` as each unit ends; stop when asked."""
        for unit in units:
            if stop.is_set():
                return
            unit.attempts += 1
            on_start(unit)
            options = replace(unit.options(template), stop=stop, on_frame=on_frames)
            try:
                summary = Replayer(self.pipe, options).run()
            except BagError as exc:
                yield unit, exc
                continue
            if summary.interrupted:
                stop.set()
            yield unit, summary

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class FleetResult:
    """What a many-bag run did."""

    manifest: Manifest
    interrupted: bool = False

    @property
    def exit_status(self) -> int:
        """130 interrupted; 4 work left undone; 2 a bag cannot be opened; 1; 3; 0."""
        statuses = {r.status for r in self.manifest.rows.values()}
        if self.interrupted:
            return EXIT_INTERRUPTED
        if statuses & {'output_failed', WORKER_LOST, 'pending', 'interrupted'}:
            return EXIT_OUTPUT_FAILED
        if CANNOT_OPEN in statuses:
            return EXIT_CANNOT_OPEN
        if 'input_broke' in statuses:
            return EXIT_INPUT_BROKE
        return EXIT_FRAMES_FAILED if 'failed_frames' in statuses else EXIT_OK

    def text(self) -> str:
        """Totals and one line per bag that did not end 'done'."""
        rows = list(self.manifest.rows.values())
        lines = [f'bags {len(rows)}: frames {sum(r.frames for r in rows)} = processed '
                 f'{sum(r.processed for r in rows)} + failed {sum(r.failed for r in rows)}']
        lines += [f'  {r.bag}: {r.status}' + (f' ({r.error})' if r.error else '')
                  for r in rows if r.status != 'done']
        if self.interrupted:
            lines.append('interrupted: continue with --resume')
        lines.append(f'manifest: {self.manifest.json_path} and {self.manifest.csv_path.name}')
        return '\n'.join(lines)


class Fleet:
    """Run many bags: plan, execute, merge time ranges, keep the manifest current."""

    def __init__(self, opt: FleetOptions) -> None:
        self.opt = opt
        self.out_dir = Path(opt.out_dir)
        self.manifest = Manifest(self.out_dir)
        if opt.replay.resume:
            self.manifest.load()
        self.bags = find_bags(opt.inputs, exclude=self.out_dir)
        if not opt.replay.resume:
            taken = [self.out_dir / b.name for b in self.bags
                     if leftovers(self.out_dir / b.name) or _parts_dir(self.out_dir / b.name)
                     .exists()]
            if taken:
                raise BagError(f'{taken[0]} exists ({len(taken)} outputs do): continue them with '
                               f'--resume, or choose another --out')
        self.units = plan(self.bags, opt, self.manifest)
        self.states: dict[str, _BagState] = {}
        for unit in self.units:
            record = self.manifest.rows[unit.bag]
            state = self.states.setdefault(unit.bag, _BagState(
                record, base_seconds=record.seconds, base_attempts=record.attempts))
            state.units.append(unit)
        self._lock = threading.RLock()  # the manifest is saved from writer threads too
        self._saved_at = time.monotonic()

    def run(self, executor) -> FleetResult:
        """Run every unit with ``executor``; return the result (the manifest is saved)."""
        self._save()
        total = sum(u.frames for u in self.units)
        progress = Progress(total, self.opt.progress)

        def on_frames(n: int) -> None:
            with self._lock:
                progress.update(n)
                if time.monotonic() - self._saved_at >= SAVE_SECONDS:
                    for state in self.states.values():
                        state.update_seconds()
                    self._save()

        def on_start(unit: Unit) -> None:
            with self._lock:
                self.states[unit.bag].started(unit)
                self._save()

        with StopSignals() as signals:
            try:
                for unit, result in executor.run(self.units, self.opt.replay, signals.requested,
                                                 on_frames, on_start):
                    if isinstance(result, Summary):
                        on_frames(result.already_done)
                    self._finish(unit, result)
            except KeyboardInterrupt:
                signals.requested.set()
            finally:
                signals.finishing()
                progress.close()
                executor.close()
            interrupted = signals.requested.is_set()
        for state in self.states.values():
            if state.record.status == 'pending' and interrupted:
                state.record.status = 'interrupted' if state.results else 'pending'
        self._save()
        return FleetResult(self.manifest, interrupted)

    def _finish(self, unit: Unit, result) -> None:
        with self._lock:
            self._finish_unit(unit, result)

    def _finish_unit(self, unit: Unit, result) -> None:
        state = self.states[unit.bag]
        record = state.record
        if isinstance(result, Summary):
            state.results[unit.part or 0] = result
        state.ended(unit)
        if not isinstance(result, Summary):
            record.status = WORKER_LOST if isinstance(result, WorkerLost) else CANNOT_OPEN
            record.error = str(result)
            self._save()
            return
        if len(state.results) < len(state.units):
            return  # other time ranges of this bag are still running
        worst = max(state.results.values(), key=lambda s: _RANK[s.exit_status])
        record.status = worst.status
        record.error = worst.output_error or worst.input_error or ''
        record.processed = sum(s.total_processed for s in state.results.values())
        record.failed = sum(s.total_failed for s in state.results.values())
        record.frames = record.processed + record.failed
        if len(state.units) > 1 and record.status not in ('interrupted', 'output_failed'):
            try:
                merge_parts([Path(u.output) for u in state.units], Path(record.output),
                            self.opt.replay.storage)
                shutil.rmtree(_parts_dir(Path(record.output)))
            except Exception as exc:  # noqa: BLE001 - a full disk while merging
                record.status, record.error = 'output_failed', f'merging the parts: {exc}'
        self._save()

    def _save(self) -> None:
        with self._lock:
            self._saved_at = time.monotonic()
            try:
                self.manifest.save()
            except OSError as exc:
                log.error('cannot write the manifest in %s: %s', self.out_dir, exc)


#: Which part's status speaks for a split bag: the worst one.
_RANK = {EXIT_OK: 0, EXIT_FRAMES_FAILED: 1, EXIT_INPUT_BROKE: 2, EXIT_OUTPUT_FAILED: 3,
         EXIT_INTERRUPTED: 4}
