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

The main thread reads and decodes messages and runs them through the node's scheduler one step
at a time: several camera topics batch across topics, each camera keeps its own tracker, rate
budget and box source, exactly as in the live node. A writer
thread builds the node's messages, serializes them and writes the bag (and the video), so the
backend is never kept waiting for the disk. The writer checkpoints the bag about once a second,
so a killed run leaves a readable prefix that ``--resume`` continues. Ctrl-C or SIGTERM stops
after the current batch and closes a valid bag; a second one drops that batch. A failed write
(disk full) drops what came after the last checkpoint and closes the bag.

Frames are keyed by position: ``(camera topic, index)``, the index counting that topic's
messages from the start of the bag (not bag times, which need not be unique).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
import dataclasses
from dataclasses import dataclass, field
import logging
from pathlib import Path
import queue
import shutil
import threading
import time

from .camera_infos import CameraInfos
from .decode import decode_item, DEFAULT_MAX_PIXELS, fallback_header, FrameItem
from .hri import BagHri
from .naming import DEFAULT_NAMESPACE, errors_topic, output_prefixes, output_topic, world_topic
from .progress import Progress
from .records import error_record
from .resume import best_partial, leftovers, PartialRun, swap_in, temp_path
from .rosbag2 import BagError
from .sink import (bag_qos, describe, msgtype_of, OUTPUT_PACKAGES, OutputBag, OutputError,
                   runtime_typestore)
from .source import InputBag
from .stop import StopSignals
from .summary import Summary
from .video import VideoOut
from .world import BagWorld
from ..core.people.state import PeopleConfig
from ..core.people.tracking import IdAllocator
from ..core.pipeline.host_threads import use_host_work_threads
from ..core.pipeline.scheduler import Camera, FrameOutcome, FrameRequest, Scheduler
from ..core.processing.pointmap_camera import PointmapCamera
from ..ros.hri_lists import HRI_MSGS_ERROR
from ..ros.messages import build_messages, info_messages
from ..ros.qos import HRI_LATCHED_QOS, LATCHED_QOS, output_qos, TF_QOS
from ..ros.render_plan import MessageOptions, render_request
from ..ros.stamps import stamp_seconds
from ..ros.tf_frames import TF_TOPIC
from ..ros.topic_types import optional_outputs, TOPIC_TYPES
from ..ros.topics import (COMPRESSED_OUTPUTS, INFO_TOPICS, LABEL_INFO_TOPIC, OUTPUT_TASK,
                          TASK_OUTPUTS, task_outputs, tasks_for)
from ..ros.vision_messages import label_info_msg, LabelInfo, VISION_MSGS_ERROR
from ..ros.wire import serialize
from ..ros.world_persons import MARKERS_TOPIC

log = logging.getLogger(__name__)

#: Offered QoS depth of the outputs (the node's default ``output_depth``).
OUTPUT_DEPTH = 2


#: Track ids of a split bag's time range ``k`` start at ``k * TRACK_ID_BLOCK + 1``: the ranges
#: track independently, and their merged bag never shows one id for two people.
TRACK_ID_BLOCK = 1_000_000


@dataclass
class ReplayOptions:
    """What to replay and how (the ``sapiens-ros replay`` flags)."""

    input_bag: str
    output_bag: str
    topics: Sequence[str] | None = None
    batch: int = 0  # frames per step; 0: one per camera topic (a step of the live node)
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
    #: A time range in bag time (ns, [start, stop)); overrides start/end (a split bag's part).
    window_ns: tuple[int | None, int | None] | None = None
    checkpoint_seconds: float = 1.0  # how much work a kill -9 can cost at most
    on_frame: Callable | None = None  # (frames) -> None per written batch, in the writer thread
    stop: threading.Event | None = None  # set from outside to stop like SIGTERM
    #: Tracking and smoothing per camera, as the node's people parameters (pose runs only).
    people: PeopleConfig = field(default_factory=PeopleConfig)
    first_track_id: int = 1  # a split bag's range k starts its ids at k * TRACK_ID_BLOCK + 1
    rates: dict[str, float] = field(default_factory=dict)  # most runs per second per task
    #: Persons in this tf2 frame from every camera (the bag's /tf, /tf_static, camera_info).
    world_frame: str = ''
    #: REP-155 bodies and faces and their /tf frames, as the node's ``hri:=true``.
    hri: bool = False


class Replayer:
    """Replay one bag through a :class:`~sapiens_ros.core.pipeline.pipeline.Pipeline`."""

    def __init__(self, pipeline, options: ReplayOptions) -> None:
        self.pipe = pipeline
        self.opt = options
        self.tasks = tuple(t for t in pipeline.tasks if t in TASK_OUTPUTS)
        if not self.tasks:
            raise BagError(f'replay publishes the outputs of {", ".join(TASK_OUTPUTS)}; the '
                           f'pipeline runs {", ".join(pipeline.tasks)}')
        if options.batch < 0 or options.every < 1:
            raise BagError('--batch must be >= 0 (0: one frame per camera topic) and --every '
                           '>= 1')
        chosen = options.messages.outputs
        # Optional outputs (pose/detections) only when their package imports (not counted).
        self.types = {**TOPIC_TYPES, **optional_outputs(self.tasks)}
        candidates = task_outputs(self.tasks) + [
            c for c in COMPRESSED_OUTPUTS if OUTPUT_TASK[c] in self.tasks] + list(
            optional_outputs(self.tasks))
        self.suffixes = [s for s in candidates if s in chosen] if chosen is not None else \
            [s for s in candidates if s not in COMPRESSED_OUTPUTS]
        store = runtime_typestore(OUTPUT_PACKAGES)  # what the output bag can define
        unknown = [s for s in self.suffixes if msgtype_of(self.types[s]) not in store.types]
        if unknown:  # a package imports in Python but its .msg files are not installed
            log.warning('not writing %s: no message definition of %s', ', '.join(unknown),
                        ', '.join(msgtype_of(self.types[s]) for s in unknown))
            self.suffixes = [s for s in self.suffixes if s not in unknown]
        # build_messages builds optional outputs only when named: name every written one
        self.messages = dataclasses.replace(options.messages, outputs=frozenset(self.suffixes))
        # Overlays, clouds, depth and compressed images are rendered on the pipeline's device.
        self.render = render_request(self.suffixes, options.messages)
        self.wanted = tasks_for(self.suffixes)
        self.scheduler = Scheduler(pipeline, foreground_only=options.messages.foreground_only)
        pipeline.config.host_work_later = True  # host work where the messages are built
        self.pointmap_cameras: dict[str, PointmapCamera] = {}  # by camera topic
        if not self.suffixes:
            raise BagError(f'none of the outputs {", ".join(sorted(chosen or ()))} belongs to '
                           f'the tasks {", ".join(self.tasks)}')
        self.summary = Summary(output=str(options.output_bag))
        self._jobs: queue.Queue = queue.Queue(maxsize=4)
        self._fatal: BaseException | None = None
        self._writer_failed = threading.Event()
        self.partial: PartialRun | None = None

    # ------------------------------------------------------------------ setup
    def _plan(self, bag: InputBag) -> None:
        self.connections = bag.select(self.opt.topics)
        self.topics = [c.topic for c in self.connections]
        self.prefixes = output_prefixes(sorted(set(self.topics)), self.opt.namespace)
        # One scheduling state per camera (tracker, rate budget), fed that camera's frames in
        # input order, so ids are the live node's on the same frames.
        # One id space for every camera topic, as in the node: an id names one person.
        self.ids = IdAllocator(self.opt.first_track_id)
        self.cameras = {t: Camera(t, self.opt.rates, self.opt.people, 'pose' in self.tasks,
                                  self.ids) for t in dict.fromkeys(self.topics)}
        self.batch = self.opt.batch or len(self.cameras)
        self.errors = errors_topic(self.opt.namespace)
        self.world = self.hri = self.infos = None
        if (self.opt.world_frame or self.opt.hri) and 'pose' not in self.tasks:
            raise BagError('--world-frame and --hri are about tracked people: they need the '
                           'pose task')
        if self.opt.world_frame or self.opt.hri:  # metric 3D, triangulation: each camera's K
            self.infos = CameraInfos(bag, self.topics)
        if self.opt.world_frame:
            self.world = BagWorld(bag, self.opt.world_frame, self.infos,
                                  world_topic(self.opt.namespace, MARKERS_TOPIC))
        if self.opt.hri:
            if HRI_MSGS_ERROR is not None:
                raise BagError(f'--hri needs hri_msgs ({HRI_MSGS_ERROR}): install '
                               'ros-$ROS_DISTRO-hri-msgs')
            self.hri = BagHri()
        self._unwritable: set[str] = set()
        self.outputs = {output_topic(p, s): t for t, p in self.prefixes.items()
                        for s in self.suffixes}
        start, end = bag.start_ns, bag.end_ns
        if self.opt.window_ns is not None:
            self.start_ns, self.stop_ns = self.opt.window_ns
        else:
            self.start_ns = start + int(self.opt.start * 1e9) \
                if self.opt.start is not None else None
            self.stop_ns = start + int(self.opt.end * 1e9) if self.opt.end is not None else None
        total = bag.count(self.connections)
        lo = self.start_ns if self.start_ns is not None else start
        hi = min(self.stop_ns, end) if self.stop_ns is not None else end
        if (self.start_ns is not None or self.stop_ns is not None) and end > start:
            total = int(round(total * max(0, hi - lo) / (end - start)))
        self.total = -(-total // self.opt.every)

    def _first_index(self, bag: InputBag) -> Counter:
        """Index of each camera topic's first message in the window (its messages before it)."""
        if self.start_ns is None:
            return Counter()
        return count_before(bag, self.connections, self.start_ns)

    def _open_output(self) -> OutputBag:
        out = Path(self.opt.output_bag)
        found = leftovers(out)
        if found and not self.opt.resume:
            raise BagError(f'output {found[0]} exists: choose another --out, delete it, or '
                           f'continue it with --resume')
        if found:
            self.partial = best_partial(out, self.outputs, self.errors)
            target = temp_path(out)
            if target.exists():
                shutil.rmtree(target)
        else:
            target = out
        bag = OutputBag(target, self.opt.storage)
        if self.partial is not None:
            self.partial.copy_into(bag)
            # new tracks: ids the bag has not used
            self.ids.continue_from(max(self.partial.max_track_id.values(), default=0) + 1)
        for prefix in self.prefixes.values():
            for suffix in self.suffixes:
                bag.add(output_topic(prefix, suffix), msgtype_of(self.types[suffix]),
                        bag_qos(output_qos(OUTPUT_DEPTH)))
        from diagnostic_msgs.msg import DiagnosticArray

        bag.add(self.errors, msgtype_of(DiagnosticArray), bag_qos(output_qos(10)))
        bag.checkpoint()
        return bag

    def _write_info(self, bag: OutputBag, time_ns: int) -> None:
        """Write the latched metadata once per camera prefix: the JSON ones, and LabelInfo."""
        for prefix in self.prefixes.values():
            msgs = info_messages(self.tasks)
            if 'seg' in self.tasks and VISION_MSGS_ERROR is None and \
                    bag.knows(msgtype_of(LabelInfo)):
                msgs[LABEL_INFO_TOPIC] = label_info_msg(fallback_header(time_ns))
            for suffix, msg in msgs.items():
                topic = output_topic(prefix, suffix)
                if topic in bag.connections:
                    continue  # carried over from the resumed bag
                bag.add(topic, msgtype_of(type(msg)), bag_qos(LATCHED_QOS))
                bag.write(topic, time_ns, serialize(msg))

    # ------------------------------------------------------------------ run
    def run(self) -> Summary:
        """Replay the bag; return the summary (the output bag is closed in every case)."""
        t0 = time.monotonic()
        with InputBag(self.opt.input_bag, salvage=True) as bag:
            self._plan(bag)
            self.video = VideoOut(self.opt.video, self._fps(bag)) if self.opt.video else None
            self._ready = threading.Event()
            # The writer thread owns the output bag from open to close (sqlite3 needs that).
            writer = threading.Thread(target=self._writer, name='replay_writer', daemon=True)
            writer.start()
            self._ready.wait()
            with StopSignals() as stop:
                try:
                    if self._fatal is None:
                        self._read(bag, stop)
                except KeyboardInterrupt:
                    self.summary.interrupted = True
                finally:
                    stop.finishing()
                    self._jobs.put(None)
                    writer.join()
        if self._fatal is not None:
            raise self._fatal
        self.summary.seconds = time.monotonic() - t0
        return self.summary

    def _stopping(self, stop: StopSignals) -> bool:
        return stop.requested.is_set() or \
            (self.opt.stop is not None and self.opt.stop.is_set())

    def _fps(self, bag: InputBag) -> float:
        first = self.connections[0]
        span = (bag.end_ns - bag.start_ns) / 1e9
        return first.msgcount / span / self.opt.every if span > 0 else 10.0

    def _read(self, bag: InputBag, stop: StopSignals) -> None:
        wanted = {c.topic for c in self.connections}
        infos = self.infos.topics if self.infos is not None else {}
        conns = [] if self.opt.copy_inputs else self.connections + [
            c for c in bag.connections if c.topic in infos]
        copies = {}
        position = self._first_index(bag)  # per topic: index of the next message
        seen: Counter = Counter()
        pending: list[FrameItem] = []
        info_written = False
        last_ns = self.start_ns or bag.start_ns
        try:
            for conn, time_ns, raw in bag.messages(conns, self.start_ns, self.stop_ns):
                if self._writer_failed.is_set():
                    break
                if self._stopping(stop):
                    self.summary.interrupted = True  # frames are left: --resume does them
                    break
                last_ns = time_ns
                if not info_written:
                    self._jobs.put(('info', time_ns))
                    info_written = True
                if self.opt.copy_inputs and not (
                        self.partial is not None and self.partial.take_copy(conn.topic, time_ns)):
                    if conn.topic not in copies:
                        copies[conn.topic] = conn
                        self._jobs.put(('connect', conn))
                    self._jobs.put(('copy', conn.topic, time_ns, raw))
                if conn.topic in infos:
                    self.infos.add(conn.topic, raw)
                if conn.topic not in wanted:
                    continue
                index = position[conn.topic]
                position[conn.topic] += 1
                seen[conn.topic] += 1
                if (seen[conn.topic] - 1) % self.opt.every:
                    continue
                held = self.partial.held(conn.topic, index, time_ns) if self.partial else None
                if held is not None:
                    self.summary.already_done += 1
                    self.summary.already_failed += held == 'failed'
                    continue
                item = decode_item(bag, index, conn, time_ns, raw, self.opt.max_pixels)
                self.summary.read += 1
                if item.error:
                    self._jobs.put(('frames', [item], [None]))
                    continue
                pending.append(item)
                if len(pending) >= self.batch:
                    pending = self._infer(pending)
        except BagError as exc:  # the input broke: keep what was read, then say where
            self.summary.input_error = str(exc)
            log.error('%s; keeping the %d frames before it', exc, self.summary.read)
            self._infer(pending, drain=True)
            pending = []
            self._jobs.put(('input_error', str(exc), dict(position), last_ns))
        if pending and not self._writer_failed.is_set():
            self._infer(pending, drain=True)

    def _request(self, item: FrameItem) -> FrameRequest:
        """Build the scheduler's request of a frame (stamp: the header's, else the bag time)."""
        frame = item.frame
        infos = self.infos
        return FrameRequest(self.cameras[item.topic], frame.pixels,
                            stamp_seconds(item.header.stamp) or item.time_ns * 1e-9, self.wanted,
                            color_order=frame.color_order,
                            fx=infos.focal_length(item.topic) if infos is not None else None,
                            people_3d=infos is not None or 'people/poses' in self.suffixes,
                            render=self.render)

    def _infer(self, items: list[FrameItem], drain: bool = False) -> list[FrameItem]:
        """
        Run the scheduler's steps over ``items``; return those left for the next call.

        A step takes as many leading frames as it can batch (a camera with rate budgets waits
        for its previous frame's results); with ``drain`` every frame is run.
        """
        requests = [self._request(it) for it in items]
        while items:
            n = self.scheduler.batchable(requests)
            if n < len(items) and not drain and n < self.batch:
                return items
            step, items = items[:n], items[n:]
            now, requests = requests[:n], requests[n:]
            try:
                outcomes = self.scheduler.run(now)
            except KeyboardInterrupt:
                self.summary.read -= len(step) + len(items)  # --resume processes them
                raise
            for item, outcome in zip(step, outcomes, strict=True):
                if outcome.error is not None:
                    item.kind, text = outcome.error
                    item.error = f'inference failed: {text}' if item.kind == 'inference' \
                        else text
            self._jobs.put(('frames', step, outcomes))
        return []

    # ------------------------------------------------------------------ writer thread
    def _writer(self) -> None:
        try:
            out = self._open_output()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            if isinstance(exc, BagError) and not isinstance(exc, OutputError):
                self._fatal = exc  # the arguments or the partial output: an error, no summary
            else:
                self.summary.output_error = str(exc) if isinstance(exc, OutputError) else \
                    f'cannot write {self.opt.output_bag}: {describe(exc)}'
                self._writer_failed.set()
            self._ready.set()
            return
        self.bag_out = out
        done = self.partial.frames if self.partial is not None else 0
        self.progress = Progress(max(0, self.total - done), self.opt.progress)
        self._checkpoint_at = time.monotonic()
        self._ready.set()
        try:
            self._drain()
        finally:
            self.progress.close()
            closed = self._close(out)
            self.summary.topic_counts = dict(out.counts)
            if self.video is not None:
                self.video.close()
                self.summary.video_frames = self.video.frames
            if self.partial is not None:
                self.partial.close()
                if closed:
                    swap_in(out.path, Path(self.opt.output_bag))

    def _close(self, out: OutputBag) -> bool:
        """Close the bag; after a failed write keep only what the last checkpoint holds."""
        if not self._writer_failed.is_set():
            try:
                out.close(self._tag())
                return True
            except Exception as exc:  # noqa: BLE001 - the disk filled up at the very end
                self._output_failed(exc)
        processed, failed, failures = out.kept or (0, 0, Counter())  # what the bag holds
        self.summary.not_kept = self.summary.read - processed - failed
        self.summary.read, self.summary.processed, self.summary.failed = \
            processed + failed, processed, failed
        self.summary.failures = failures
        problem = out.abandon()
        if problem is not None:
            self.summary.output_error += f'; {problem}: the bag ends at its last checkpoint ' \
                                         f'(--resume reads it)'
        return problem is None

    def _output_failed(self, exc: BaseException) -> None:
        self.summary.output_error = f'writing {self.opt.output_bag} failed: {describe(exc)}'
        log.error('%s', self.summary.output_error)
        self._writer_failed.set()

    def _drain(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if self._writer_failed.is_set():
                continue  # drain so the reader never blocks
            try:
                self._handle(job)
                if job[0] == 'frames' and time.monotonic() - self._checkpoint_at >= \
                        self.opt.checkpoint_seconds:
                    self._checkpoint()
            except Exception as exc:  # noqa: BLE001 - a disk error: stop the run, keep the bag
                self._output_failed(exc)

    def _tag(self) -> tuple[int, int, Counter]:
        """Return what the output bag records at a checkpoint or close: the counts so far."""
        s = self.summary
        return s.processed, s.failed, Counter(s.failures)

    def _checkpoint(self) -> None:
        self.bag_out.checkpoint(self._tag())
        self._checkpoint_at = time.monotonic()

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
        elif kind == 'input_error':
            self._write_input_error(out, *job[1:])
        else:
            use_host_work_threads()  # after the main thread's first step: it keeps its threads
            for item, result in zip(job[1], job[2], strict=True):
                self._write_frame(out, item, result)
                self.progress.update()
            if self.opt.on_frame is not None:
                self.opt.on_frame(len(job[1]))

    def _write_input_error(self, out: OutputBag, reason: str, position: dict,
                           time_ns: int) -> None:
        """One record per camera: where reading stopped (the next index, the last bag time)."""
        for topic in self.topics:
            record = error_record(fallback_header(time_ns), topic, position.get(topic, 0),
                                  time_ns, reason, 'input')
            out.write(self.errors, time_ns, serialize(record))

    def _people_messages(self, item: FrameItem, result, people, image) -> list:
        """Return the world's and the REP-155 messages of one processed frame with people."""
        pairs = []
        if self.hri is not None and result.pose is not None:
            pairs += self.hri.update(item.topic, item.header, result, people)
        if self.world is not None:
            pairs += self.world.update(item.topic, item.header, people, image)
        return pairs

    def _write_message(self, out: OutputBag, topic: str, msg, time_ns: int) -> None:
        """Write a people message, adding its topic on first use (or once saying why not)."""
        if topic not in out.connections:
            if topic in self._unwritable:
                return
            msgtype = msgtype_of(type(msg))
            if msgtype not in out.typestore.types:
                log.warning('not writing %s: the output typestore has no %s', topic, msgtype)
                self._unwritable.add(topic)
                return
            out.add(topic, msgtype, bag_qos(_qos_of(topic)))
        out.write(topic, time_ns, serialize(msg))

    def _write_frame(self, out: OutputBag, item: FrameItem,
                     outcome: FrameOutcome | None) -> None:
        """Turn one frame's result into its messages (input order per camera) and write them."""
        if item.error is None and outcome.result is None:  # nothing due (rate budgets)
            self.summary.processed += 1
            return
        if item.error is None:
            result, people = outcome.result, outcome.people
            try:
                if self.opt.on_result is not None:
                    self.opt.on_result(item, result)
                image = item.frame.rgb()
                camera = self.pointmap_cameras.setdefault(item.topic, PointmapCamera())
                msgs = build_messages(item.header, result, self.messages, image, people,
                                      camera=camera)
                data = {s: serialize(m) for s, m in msgs.items() if s in self.suffixes}
            except Exception as exc:  # noqa: BLE001 - a failing callback or a rejected result
                item.error, item.kind = f'building messages failed: {exc}', 'internal'
            else:
                prefix = self.prefixes[item.topic]
                for suffix, raw in data.items():
                    out.write(output_topic(prefix, suffix), item.time_ns, raw)
                if people is not None:
                    for topic, msg in self._people_messages(item, result, people, image):
                        self._write_message(out, topic, msg, item.time_ns)
                self.summary.processed += 1
                if self.video is not None and item.topic == self.topics[0]:
                    self.video.write_panels(image, result, people)
                return
        record = error_record(item.header, item.topic, item.index, item.time_ns, item.error,
                              item.kind)
        out.write(self.errors, item.time_ns, serialize(record))
        self.summary.failed += 1
        self.summary.failures[item.kind] += 1
        log.debug('frame %d of %s failed: %s', item.index, item.topic, item.error)


def _qos_of(topic: str):
    """Return the offered QoS of a people topic: /tf's, latched for a URDF, else the outputs'."""
    if topic == TF_TOPIC:
        return TF_QOS
    return HRI_LATCHED_QOS if topic.endswith('/urdf') else output_qos(OUTPUT_DEPTH)


def count_before(bag: InputBag, connections: Sequence, stop_ns: int) -> Counter:
    """Messages of each topic before ``stop_ns``: the index of the first one at or after it."""
    counts: Counter = Counter()
    for conn, _, _ in bag.messages(connections, None, stop_ns):
        counts[conn.topic] += 1
    return counts


def replay(pipeline, options: ReplayOptions) -> Summary:
    """Replay ``options.input_bag`` into ``options.output_bag``; return the run's summary."""
    return Replayer(pipeline, options).run()


__all__ = ['INFO_TOPICS', 'replay', 'Replayer', 'ReplayOptions', 'Summary']
