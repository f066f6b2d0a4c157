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
The node's two threads: one inference step over every camera's newest frame, then publishing.

The inference thread takes the newest frame of each camera (:class:`~.runtime.FrameSlots`),
has them decoded (side by side in a small pool when several cameras have one), and runs one
:meth:`~sapiens_ros.core.pipeline.scheduler.Scheduler.run` step for all of them: each head once,
batched across cameras. The publish thread encodes the JPEG/PNG images the pipeline left to it
(``FrameResult.finish_encoding``), then builds and publishes the previous step's messages
meanwhile (at most one step waits), so a camera faster than inference never builds a backlog
and no frame waits more than one step.

Stopping never depends on the CPU: the threads stop taking frames at once, a step still in
inference is abandoned (its results are dropped and counted), and nothing is published once
stopping began or the ROS context is gone.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
import dataclasses
import queue
import threading
import time

import rclpy

from .camera import CameraChannel, DecodedFrame
from .messages import build_messages
from .people_world import PeopleWorld
from .render_plan import MessageOptions, needs_host_image
from .runtime import FrameSlots
from .stamps import stamp_ns
from ..core.pipeline.host_threads import use_host_work_threads
from ..core.pipeline.scheduler import FrameOutcome, Scheduler

DECODERS = 2  # threads decoding the cameras' frames of a step side by side


@dataclasses.dataclass
class StepSettings:
    """What one step runs with: taken from the node between steps."""

    options: MessageOptions
    forced: set[str]
    max_cameras: int = 0  # cameras per step (0: every camera with a frame)


@dataclasses.dataclass
class ProcessedFrame:
    """One camera's frame after its inference step, on its way to the publish stage."""

    channel: CameraChannel
    outcome: FrameOutcome

    @property
    def decoded(self) -> DecodedFrame:
        """Return the decoded frame and its options."""
        return self.outcome.request.context


class StepWorker:
    """Runs the inference and publish threads of a node over its cameras."""

    def __init__(self, node, scheduler: Scheduler, channels: dict[str, CameraChannel],
                 slots: FrameSlots, settings: Callable[[], StepSettings],
                 world: PeopleWorld | None = None) -> None:
        self.node = node
        self.world = world
        self.scheduler = scheduler
        # Host work (JPEG/PNG encodes; on a CPU the rendering) runs on the publish thread.
        scheduler.pipeline.config.host_work_later = True
        self.channels = channels
        self.slots = slots
        self.settings = settings
        self._ready: queue.Queue = queue.Queue(maxsize=1)
        self._running = threading.Event()
        self._infer_busy = self._publish_busy = False
        self.threads: tuple[threading.Thread, ...] = ()
        self._decoders: ThreadPoolExecutor | None = None

    @property
    def running(self) -> bool:
        """Tell whether the threads take and publish frames."""
        return self._running.is_set()

    @property
    def busy(self) -> bool:
        """Tell whether a frame is being processed or its messages are being published."""
        return self._infer_busy or self._publish_busy or not self._ready.empty()

    def start(self) -> None:
        """Start both threads."""
        self._running.set()
        if len(self.channels) > 1:
            self._decoders = ThreadPoolExecutor(min(DECODERS, len(self.channels)),
                                                thread_name_prefix='sapiens_decode')
        self.threads = (threading.Thread(target=self._work, name='sapiens_infer', daemon=True),
                        threading.Thread(target=self._publish_loop, name='sapiens_publish',
                                         daemon=True))
        for thread in self.threads:
            thread.start()

    def begin_stop(self) -> None:
        """Take no new frame and publish nothing from now on; return at once (joins nothing)."""
        self._running.clear()
        self.slots.clear()

    def stop(self, timeout: float | None = None) -> bool:
        """
        Stop both threads; return False when one had to be abandoned.

        ``timeout`` None waits for the step in flight (a lifecycle deactivate). Otherwise a
        step still in inference is abandoned at once (a shutdown: a CPU inference cannot be
        interrupted, and its result would be stale), and the publish thread gets ``timeout``
        seconds to finish the message it is writing.
        """
        self.begin_stop()
        stopped = True
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self.threads:
            if thread.name == 'sapiens_infer' and timeout is not None and self._infer_busy:
                stopped = False  # abandoned: it drops its result when it returns
                continue
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            stopped &= not thread.is_alive()
        self.threads = ()
        if self._decoders is not None:  # a step still in flight keeps its own reference
            self._decoders.shutdown(wait=False)
            self._decoders = None
        while not self._ready.empty():  # a step queued as the threads stopped is stale now
            self._abandon(self._ready.get_nowait())
        return stopped

    def _abandon(self, processed: list[ProcessedFrame]) -> None:
        for frame_out in processed:
            frame_out.channel.stats.abandoned += 1

    # ------------------------------------------------------------------ inference
    def _work(self) -> None:
        limit = self.settings().max_cameras
        while self._running.is_set():
            taken = self.slots.take(0.1, limit)
            settings = self.settings()  # after the wait: changes made meanwhile apply now
            limit = settings.max_cameras
            if not taken or not self._running.is_set():
                continue
            self._infer_busy = True
            try:
                processed = self.step(taken, settings)
                while processed and self._running.is_set():
                    try:  # at most one step waits: no backlog, publishing overlaps inference
                        self._ready.put(processed, timeout=0.1)
                        processed = None
                    except queue.Full:
                        continue
                if processed:  # stopped while this step was in flight
                    self._abandon(processed)
            except Exception as exc:  # noqa: BLE001 - the worker must survive any step
                for name, _ in taken:
                    self.channels[name].bad('internal', f'{type(exc).__name__}: {exc}')
            finally:
                self._infer_busy = False

    def step(self, taken: list, settings: StepSettings) -> list[ProcessedFrame]:
        """Decode the taken frames and run one scheduler step; return the frames to publish."""
        loaded = self.scheduler.pipeline.tasks
        world = self.world.demand() if self.world is not None else (False, False)
        max_persons = self.scheduler.pipeline.config.max_persons

        def decode(item: tuple) -> tuple[CameraChannel, object]:
            channel = self.channels[item[0]]
            return channel, channel.request(item[1], loaded, settings.forced, settings.options,
                                            max_persons, world)

        # Each camera's frame is decoded in the decoder pool (OpenCV releases the GIL): the
        # cameras of a step decode side by side, each channel's state touched by one thread.
        pool = self._decoders
        try:
            decoded = list(pool.map(decode, taken) if pool and len(taken) > 1 else
                           map(decode, taken))
        except RuntimeError:  # the pool was shut down by a stop meanwhile
            decoded = list(map(decode, taken))
        requests, channels = [], []
        for channel, request in decoded:
            if request is not None:
                requests.append(request)
                channels.append(channel)
        if not requests:
            return []
        processed = []
        for channel, outcome in zip(channels, self.scheduler.run(requests), strict=True):
            if outcome.error is not None:
                channel.bad(*outcome.error)
            elif outcome.result is not None:
                processed.append(ProcessedFrame(channel, outcome))
            else:  # nothing due for this camera this step (rates)
                channel.stats.idle_skipped += 1
        return processed

    # ------------------------------------------------------------------ publishing
    def _publish_loop(self) -> None:
        while self._running.is_set():
            try:
                processed = self._ready.get(timeout=0.1)
            except queue.Empty:
                continue
            self._publish_busy = True
            use_host_work_threads()  # after the inference thread's first step: it keeps its own
            try:
                for frame_out in processed:
                    if not self._can_publish():
                        self._abandon([frame_out])
                        continue
                    try:
                        self.publish(frame_out)
                    except Exception as exc:  # noqa: BLE001 - survive any frame
                        if self._can_publish():
                            frame_out.channel.bad('internal', f'{type(exc).__name__}: {exc}')
                        else:  # shutdown began while publishing: not an error
                            self._abandon([frame_out])
            finally:
                self._publish_busy = False

    def _can_publish(self) -> bool:
        return self._running.is_set() and rclpy.ok(context=self.node.context)

    def publish(self, frame_out: ProcessedFrame) -> dict:
        """Build and publish one camera's messages of one frame; return them."""
        decoded, outcome = frame_out.decoded, frame_out.outcome
        result = outcome.result
        result.finish_encoding()  # left to this thread by the pipeline
        wants_image = needs_host_image(decoded.render, result)
        world = self.world
        to_world = world is not None and outcome.people is not None and result.pose is not None
        crops = to_world and world.wants_image()  # REP-155 crops, the persons' appearance
        # Converted once: build_messages and the crops only read it.
        rgb = decoded.frame.rgb() if wants_image or crops else None
        header = decoded.received.msg.header
        msgs = build_messages(header, result, decoded.options, rgb if wants_image else None,
                              outcome.people, decoded.intrinsics,
                              frame_out.channel.pointmap_camera)
        for suffix, out in msgs.items():
            frame_out.channel.pubs[suffix].publish(out)
        if to_world:
            world.publish(frame_out.channel.name, header, result, outcome.people,
                          rgb if crops else None,
                          frame_out.channel.inputs.intrinsics(result.image_size))
        latency = None
        if stamp_ns(header.stamp) > 0:
            latency = (self.node.get_clock().now().nanoseconds - stamp_ns(header.stamp)) / 1e6
        frame_out.channel.stats.on_processed(latency, result.timings, outcome.tasks,
                                             outcome.box_origin)
        return msgs
