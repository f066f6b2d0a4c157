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
``--workers N``: run the units of a many-bag replay on Ray actors.

Each actor loads the pipeline once (``--gpus-per-worker`` GPUs, fractions allowed, and
``cpus_per_worker`` CPUs) and replays one unit at a time. The driver hands out units, counts
finished frames for its one progress bar (workers report them to a small counter actor), and
when an actor dies (killed, OOM, lost node) starts a new one and runs the unit again: the retry
resumes the unit's partial output, so no frame is lost or written twice. SIGINT/SIGTERM reach
the driver, which asks every actor to stop after its current batch and close its bag.

Ray is optional: ``pip install 'sapiens_ros[fleet]'``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
import logging
import os
import threading
import time

from .fleet import FleetOptions, Unit, WorkerLost
from .loop import Replayer, ReplayOptions
from .ray_watchdog import start_watchdog
from .rosbag2 import BagError

log = logging.getLogger(__name__)

INSTALL_HINT = ('--workers N runs on Ray, which is not installed: '
                "pip install 'sapiens_ros[fleet]' (or pip install ray); --workers 1 needs no Ray")


def import_ray():
    """Return the ``ray`` module, or raise BagError naming the install."""
    try:
        import ray
    except ImportError:
        raise BagError(INSTALL_HINT) from None
    return ray


class Tally:
    """Frames written per unit since the driver last asked (a Ray actor)."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()

    def add(self, unit: str, n: int) -> None:
        """Count ``n`` more frames of ``unit``."""
        self.counts[unit] += n

    def take(self) -> Counter:
        """Return the frames counted per unit since the last call."""
        counts, self.counts = self.counts, Counter()
        return counts


class ReplayWorker:
    """A Ray actor: one pipeline, one unit at a time, stoppable from the driver."""

    def __init__(self, make_pipeline: Callable, tally, threads: int) -> None:
        import torch
        from transformers.utils import logging as hf_logging

        torch.set_num_threads(max(1, threads))
        os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
        hf_logging.disable_progress_bar()  # one line per weight file in the driver's log
        logging.basicConfig(level=logging.INFO, format='[%(levelname)s] %(name)s: %(message)s')
        self.pipe = make_pipeline()
        self.tally = tally
        self.stop_event = threading.Event()

    def ready(self) -> int:
        """Return the worker's process id once the pipeline is loaded."""
        return os.getpid()

    def run(self, options: ReplayOptions):
        """Replay one unit; return its Summary (or the BagError that stopped it)."""
        unit = options.output_bag
        options = replace(options, stop=self.stop_event,
                          on_frame=lambda n: self.tally.add.remote(unit, n))
        try:
            return Replayer(self.pipe, options).run()
        except BagError as exc:
            return exc

    def stop(self) -> None:
        """Stop the running unit after its current batch (its bag is closed, valid)."""
        self.stop_event.set()


class RayExecutor:
    """Run units on ``opt.workers`` Ray actors (a local Ray unless ``opt.ray_address``)."""

    def __init__(self, make_pipeline: Callable, opt: FleetOptions) -> None:
        ray = self.ray = import_ray()
        self.opt = opt
        self.started = not ray.is_initialized()
        self.watchdog = None
        if self.started:
            need = int(opt.workers * opt.cpus_per_worker + 0.999)
            kwargs = {} if opt.ray_address else {'num_cpus': max(os.cpu_count() or 1, need)}
            if not opt.ray_address:  # a local Ray: its agents must not outlive a killed driver
                self.watchdog = start_watchdog()
            ray.init(address=opt.ray_address, include_dashboard=opt.ray_dashboard, **kwargs)
        self.tally = ray.remote(num_cpus=0)(Tally).remote()
        self.worker_cls = ray.remote(num_cpus=opt.cpus_per_worker,
                                     num_gpus=opt.gpus_per_worker,
                                     max_concurrency=2)(ReplayWorker)
        self.make_pipeline = make_pipeline
        self.ready_at: float | None = None  # perf_counter when the last worker was ready

    def _new_worker(self):
        threads = max(1, int(self.opt.cpus_per_worker))
        return self.worker_cls.remote(self.make_pipeline, self.tally, threads)

    def run(self, units: Sequence[Unit], template: ReplayOptions, stop: threading.Event,
            on_frames: Callable[[int], None],
            on_start: Callable[[Unit], None] = lambda unit: None,
            ) -> Iterator[tuple[Unit, object]]:
        """Yield ``(unit, Summary or exception)`` as units end; retry units of dead workers."""
        ray = self.ray
        dead = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError)
        pending = deque(units)
        starting = {}  # ready() ref -> actor
        for _ in range(min(self.opt.workers, len(units))):
            actor = self._new_worker()
            starting[actor.ready.remote()] = actor
        idle: list = []
        running: dict = {}  # run() ref -> (actor, unit)
        self.counted: Counter = Counter()  # frames reported per unit (output bag)
        stopping = False
        while (pending and not stopping) or running:
            for ref in ray.wait(list(starting), num_returns=len(starting), timeout=0)[0] \
                    if starting else []:
                actor = starting.pop(ref)
                try:
                    log.info('replay worker ready (pid %d)', ray.get(ref))
                    idle.append(actor)
                    self.ready_at = time.perf_counter()
                except dead as exc:  # died while loading: its load error is in the log
                    raise BagError(f'a replay worker could not start: {exc}') from None
            while idle and pending and not stopping:
                actor, unit = idle.pop(), pending.popleft()
                unit.attempts += 1
                on_start(unit)
                running[actor.run.remote(unit.options(template))] = (actor, unit)
            waiting = list(running) + list(starting)
            ready = ray.wait(waiting, num_returns=1, timeout=0.5)[0] if waiting else []
            self._count(on_frames)
            if stop.is_set() and not stopping:
                stopping = True
                log.warning('stopping: every worker closes its bag after the current batch')
                for actor, _ in running.values():
                    actor.stop.remote()
            for ref in ready:
                if ref not in running:
                    continue  # a starting worker: picked up at the top of the loop
                actor, unit = running.pop(ref)
                try:
                    result = ray.get(ref)
                except dead as exc:
                    self._count(on_frames)
                    on_frames(-self.counted.pop(unit.output, 0))  # the retry counts them again
                    yield from self._lost(unit, exc, pending, starting, stopping)
                    continue
                idle.append(actor)
                yield unit, result
        self._count(on_frames)

    def _count(self, on_frames: Callable[[int], None]) -> None:
        """Move the workers' frame counts to the progress bar."""
        counts = self.ray.get(self.tally.take.remote())
        self.counted.update(counts)
        on_frames(sum(counts.values()))

    def _lost(self, unit: Unit, exc: Exception, pending: deque, starting: dict,
              stopping: bool) -> Iterator[tuple[Unit, object]]:
        """Replace a worker that died mid-unit and run the unit again (it resumes)."""
        log.warning('the worker replaying %s died (%s); %s', unit.output,
                    type(exc).__name__, 'retrying it' if unit.attempts <= self.opt.retries
                    else 'giving up on it')
        actor = self._new_worker()
        starting[actor.ready.remote()] = actor
        if unit.attempts <= self.opt.retries and not stopping:
            pending.appendleft(unit)
        else:
            yield unit, WorkerLost(f'its worker died {unit.attempts} times: {exc}')

    def close(self) -> None:
        """Shut down the local Ray this executor started, then its watchdog."""
        if self.started:
            self.ray.shutdown()
        if self.watchdog is not None:
            self.watchdog.terminate()
            self.watchdog.wait()
