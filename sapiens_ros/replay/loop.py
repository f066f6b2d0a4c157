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
The replay loop: read, batch, infer, write; every selected frame ends as outputs or an error.

The main thread reads and decodes messages and runs the pipeline one batch at a time; a writer
thread builds the node's messages, serializes them and writes the bag (and the video), so the
backend is never kept waiting for the disk. Ctrl-C stops after the current batch and closes a
valid bag; a second Ctrl-C drops that batch (``--resume`` redoes it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
import logging
from pathlib import Path
import queue
import signal
import threading
import time

from rclpy.serialization import serialize_message
from std_msgs.msg import String

from .decode import decode_item, DEFAULT_MAX_PIXELS, FrameItem
from .naming import DEFAULT_NAMESPACE, errors_topic, output_prefixes, output_topic
from .progress import Progress
from .records import error_record
from .resume import PartialRun, swap_in, temp_path
from .sink import msgtype_of, OutputBag, qos
from .source import BagError, InputBag
from .video import VideoOut
from ..ros.messages import (build_messages, info_messages, INFO_TOPICS, MessageOptions,
                            TASK_OUTPUTS, TOPIC_TYPES)

log = logging.getLogger(__name__)

#: Offered QoS depth of the outputs (the node's default ``output_depth``).
OUTPUT_DEPTH = 2


@dataclass
class ReplayOptions:
    """What to replay and how (the ``sapiens-ros replay`` flags)."""

    input_bag: str
    output_bag: str
    topics: Sequence[str] | None = None
    batch: int = 1
    start: float | None = None  # seconds from the bag start
    end: float | None = None
    every: int = 1
    storage: str = 'mcap'
    copy_inputs: bool = False
    resume: bool = False
    video: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    max_pixels: int = DEFAULT_MAX_PIXELS
    messages: MessageOptions = field(default_factory=MessageOptions)
    progress: bool = True
    on_result: Callable | None = None  # (FrameItem, FrameResult) -> None, in the writer thread


@dataclass
class Summary:
    """Counts of one run: ``read == processed + failed`` (frames of this run)."""

    read: int = 0
    processed: int = 0
    failed: int = 0
    already_done: int = 0  # frames a resumed bag held before this run
    interrupted: bool = False
    input_error: str | None = None  # the input broke mid-way (everything before it is kept)
    failures: Counter = field(default_factory=Counter)
    topic_counts: dict[str, int] = field(default_factory=dict)
    video_frames: int = 0
    seconds: float = 0.0
    output: str = ''

    @property
    def consistent(self) -> bool:
        """Return whether every frame read is accounted for."""
        return self.read == self.processed + self.failed

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
        lines.append(f'wrote {sum(self.topic_counts.values())} messages to {self.output}')
        return '\n'.join(lines)


#: Signals that stop a replay cleanly: Ctrl-C, and what docker, systemd, Kubernetes, Slurm and
#: ``timeout`` send.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Stop:
    """
    SIGINT/SIGTERM: the first asks to stop after the batch, the second stops now.

    Either way the output bag is closed and valid, and ``--resume`` continues it.
    """

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._old: dict = {}

    def __enter__(self) -> _Stop:
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


class Replayer:
    """Replay one bag through a :class:`~sapiens_ros.core.pipeline.Pipeline`."""

    def __init__(self, pipeline, options: ReplayOptions) -> None:
        self.pipe = pipeline
        self.opt = options
        self.tasks = tuple(t for t in pipeline.tasks if t in TASK_OUTPUTS)
        if not self.tasks:
            raise BagError(f'replay publishes pose, seg, normal and pointmap outputs; the '
                           f'pipeline runs {", ".join(pipeline.tasks)}')
        if options.batch < 1 or options.every < 1:
            raise BagError('--batch and --every must be >= 1')
        self.suffixes = [s for t in self.tasks for s in TASK_OUTPUTS[t]]
        self.summary = Summary(output=str(options.output_bag))
        self._jobs: queue.Queue = queue.Queue(maxsize=4)
        self._fatal: BaseException | None = None
        self._done_keys: set = set()
        self._copied_keys: set = set()

    # ------------------------------------------------------------------ setup
    def _plan(self, bag: InputBag) -> None:
        self.connections = bag.select(self.opt.topics)
        self.topics = [c.topic for c in self.connections]
        self.prefixes = output_prefixes(sorted(set(self.topics)), self.opt.namespace)
        self.errors = errors_topic(self.opt.namespace)
        self.outputs = {output_topic(p, s): t for t, p in self.prefixes.items()
                        for s in self.suffixes}
        start, end = bag.start_ns, bag.end_ns
        self.start_ns = start + int(self.opt.start * 1e9) if self.opt.start is not None else None
        self.stop_ns = start + int(self.opt.end * 1e9) if self.opt.end is not None else None
        total = bag.count(self.connections)
        lo = self.start_ns if self.start_ns is not None else start
        hi = min(self.stop_ns, end) if self.stop_ns is not None else end
        if (self.start_ns is not None or self.stop_ns is not None) and end > start:
            total = int(round(total * max(0, hi - lo) / (end - start)))
        self.total = -(-total // self.opt.every)

    def _open_output(self) -> tuple[OutputBag, PartialRun | None]:
        out = Path(self.opt.output_bag)
        partial = None
        if out.exists():
            if not self.opt.resume:
                raise BagError(f'output {out} exists: choose another --out, delete it, or '
                               f'continue it with --resume')
            partial = PartialRun(out, self.outputs, len(self.suffixes), self.errors)
            target = temp_path(out)
            if target.exists():
                import shutil

                shutil.rmtree(target)
        else:
            target = out
        bag = OutputBag(target, self.opt.storage)
        if partial is not None:
            partial.copy_into(bag)
            self._done_keys = partial.done
            self._copied_keys = partial.copied
            self.summary.already_done = len(partial.done)
        for prefix in self.prefixes.values():
            for suffix in self.suffixes:
                bag.add(output_topic(prefix, suffix), msgtype_of(TOPIC_TYPES[suffix]),
                        qos(OUTPUT_DEPTH))
        from diagnostic_msgs.msg import DiagnosticArray

        bag.add(self.errors, msgtype_of(DiagnosticArray), qos(10))
        return bag, partial

    def _write_info(self, bag: OutputBag, time_ns: int) -> None:
        """Write the latched keypoint / label metadata, once per camera prefix."""
        for prefix in self.prefixes.values():
            for suffix, msg in info_messages(self.tasks).items():
                topic = output_topic(prefix, suffix)
                if topic in bag.connections:
                    continue  # carried over from the resumed bag
                bag.add(topic, msgtype_of(String), qos(1, latched=True))
                bag.write(topic, time_ns, serialize_message(msg))

    # ------------------------------------------------------------------ run
    def run(self) -> Summary:
        """Replay the bag; return the summary (the output bag is closed in every case)."""
        t0 = time.monotonic()
        with InputBag(self.opt.input_bag) as bag:
            self._plan(bag)
            self.video = VideoOut(self.opt.video, self._fps(bag)) if self.opt.video else None
            self._ready = threading.Event()
            # The writer thread owns the output bag from open to close (sqlite3 needs that).
            writer = threading.Thread(target=self._writer, name='replay_writer', daemon=True)
            writer.start()
            self._ready.wait()
            with _Stop() as stop:
                try:
                    if self._fatal is None:
                        self._read(bag, stop)
                except KeyboardInterrupt:
                    self.summary.interrupted = True
                except BagError as exc:
                    self.summary.input_error = str(exc)
                    log.error('%s; keeping the %d frames before it', exc, self.summary.read)
                finally:
                    stop.finishing()
                    self._jobs.put(None)
                    writer.join()
            self.summary.interrupted |= stop.requested.is_set()
        if self._fatal is not None:
            raise self._fatal
        self.summary.seconds = time.monotonic() - t0
        return self.summary

    def _fps(self, bag: InputBag) -> float:
        first = self.connections[0]
        span = (bag.end_ns - bag.start_ns) / 1e9
        return first.msgcount / span / self.opt.every if span > 0 else 10.0

    def _read(self, bag: InputBag, stop: _Stop) -> None:
        wanted = {c.topic for c in self.connections}
        conns = [] if self.opt.copy_inputs else self.connections
        copies = {}
        seen: Counter = Counter()
        pending: list[FrameItem] = []
        index = 0
        info_written = False
        for conn, time_ns, raw in bag.messages(conns, self.start_ns, self.stop_ns):
            if self._fatal is not None or stop.requested.is_set():
                break
            if not info_written:
                self._jobs.put(('info', time_ns))
                info_written = True
            if self.opt.copy_inputs and (conn.topic, time_ns) not in self._copied_keys:
                if conn.topic not in copies:
                    copies[conn.topic] = conn
                    self._jobs.put(('connect', conn))
                self._jobs.put(('copy', conn.topic, time_ns, raw))
            if conn.topic not in wanted:
                continue
            seen[conn.topic] += 1
            if (seen[conn.topic] - 1) % self.opt.every:
                continue
            index += 1
            if (conn.topic, time_ns) in self._done_keys:
                continue
            item = decode_item(bag, index - 1, conn, time_ns, raw, self.opt.max_pixels)
            self.summary.read += 1
            if item.error:
                self._jobs.put(('frames', [item], [None]))
                continue
            pending.append(item)
            if len(pending) >= self.opt.batch:
                self._infer(pending)
                pending = []
        if pending and self._fatal is None:
            self._infer(pending)

    def _infer(self, items: list[FrameItem]) -> None:
        try:
            results = self._run_pipeline(items)
        except KeyboardInterrupt:
            self.summary.read -= len(items)  # not finished: --resume processes them
            raise
        self._jobs.put(('frames', items, results))

    def _run_pipeline(self, items: list[FrameItem]) -> list:
        """Results for a batch; a failing batch is retried frame by frame to name the culprit."""
        frames = [it.frame for it in items]
        orders = {f.color_order for f in frames if f.pixels.ndim == 3}
        if len(orders) > 1:
            pixels, order = [f.rgb() for f in frames], 'rgb'
        else:
            pixels, order = [f.pixels for f in frames], (orders.pop() if orders else 'rgb')
        try:
            return self.pipe(pixels, color_order=order)
        except Exception as exc:  # noqa: BLE001 - one bad frame must not end the run
            if len(items) > 1:
                return [r for it in items for r in self._run_pipeline([it])]
            items[0].error = f'inference failed: {type(exc).__name__}: {exc}'
            items[0].kind = 'inference'
            return [None]

    # ------------------------------------------------------------------ writer thread
    def _writer(self) -> None:
        try:
            out, partial = self._open_output()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            self._fatal = exc if isinstance(exc, BagError) else \
                BagError(f'cannot write {self.opt.output_bag}: {type(exc).__name__}: {exc}')
            self._ready.set()
            return
        self.bag_out = out
        self.progress = Progress(max(0, self.total - self.summary.already_done),
                                 self.opt.progress)
        self._ready.set()
        try:
            self._drain()
        finally:
            self.progress.close()
            out.close()
            self.summary.topic_counts = dict(out.counts)
            if self.video is not None:
                self.video.close()
                self.summary.video_frames = self.video.frames
            if partial is not None:
                partial.close()
                swap_in(out.path, Path(self.opt.output_bag))

    def _drain(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self._fatal is not None:
                continue  # drain so the reader never blocks
            try:
                self._handle(job)
            except Exception as exc:  # noqa: BLE001 - a disk error: stop the run, keep the bag
                log.error('writing the output bag failed: %s: %s', type(exc).__name__, exc)
                self._fatal = BagError(f'writing {self.opt.output_bag} failed: {exc}')

    def _handle(self, job: tuple) -> None:
        kind = job[0]
        out = self.bag_out
        if kind == 'info':
            self._write_info(out, job[1])
        elif kind == 'connect':
            if out.add_copy(job[1]) is None:
                log.warning('not copying %s: type %s has no definition in the bag',
                            job[1].topic, job[1].msgtype)
        elif kind == 'copy':
            if job[1] in out.connections and out.connections[job[1]] is not None:
                out.write(job[1], job[2], job[3])
        else:
            for item, result in zip(job[1], job[2], strict=True):
                self._write_frame(out, item, result)
                self.progress.update()

    def _write_frame(self, out: OutputBag, item: FrameItem, result) -> None:
        if item.error is None:
            problem = result.non_finite()
            if problem:
                item.error, item.kind = f'the model produced non-finite {problem}', 'model_nan'
        if item.error is None:
            try:
                if self.opt.on_result is not None:
                    self.opt.on_result(item, result)
                image = item.frame.rgb()
                msgs = build_messages(item.header, result, self.opt.messages, image)
                data = {s: serialize_message(m) for s, m in msgs.items()}
            except Exception as exc:  # noqa: BLE001 - a failing callback or a rejected result
                item.error, item.kind = f'building messages failed: {exc}', 'internal'
            else:
                prefix = self.prefixes[item.topic]
                for suffix, raw in data.items():
                    out.write(output_topic(prefix, suffix), item.time_ns, raw)
                self.summary.processed += 1
                if self.video is not None and item.topic == self.topics[0]:
                    self.video.write(image, result)
                return
        record = error_record(item.header, item.topic, item.index, item.time_ns, item.error,
                              item.kind)
        out.write(self.errors, item.time_ns, serialize_message(record))
        self.summary.failed += 1
        self.summary.failures[item.kind] += 1
        log.debug('frame %d of %s failed: %s', item.index, item.topic, item.error)


def replay(pipeline, options: ReplayOptions) -> Summary:
    """Replay ``options.input_bag`` into ``options.output_bag``; return the run's summary."""
    return Replayer(pipeline, options).run()


__all__ = ['INFO_TOPICS', 'replay', 'Replayer', 'ReplayOptions', 'Summary']
