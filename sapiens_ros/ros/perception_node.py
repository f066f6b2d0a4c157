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
Sapiens2 perception as an rclpy lifecycle node: camera frames in, the topic contract out.

configure loads the models and creates the publishers, activate subscribes and starts the worker,
deactivate/cleanup stop it and free the memory. The subscription callback only stores the newest
frame; one worker thread runs inference on it, so a fast camera never builds a backlog. A second
thread builds and publishes the messages of the previous frame meanwhile (at most one waits).
Valid on Humble's rclpy (no ``with rclpy.init()``).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import queue
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
import rclpy.logging
from rclpy.parameter import Parameter
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_system_default,
                       QoSProfile, ReliabilityPolicy)
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String

from .depth_input import DepthPairer, ThreadLogForwarder
from .messages import (build_messages, COMPRESSED_OUTPUTS, info_messages, INFO_TOPICS,
                       MessageOptions, OUTPUT_TASK, render_request, stamp_seconds, TASK_OUTPUTS,
                       task_outputs, TOPIC_TYPES)
from .node_params import PARAM_BY_NAME, PARAMS, parse_outputs, validate
from .runtime import LatestSlot, NodeStats, Throttle
from .spin import run_node, STOP_TIMEOUT_S
from ..backends.factory import load_pipeline
from ..core.depth import decode_depth
from ..core.errors import FrameError, SapiensError
from ..core.image_codec import decode_message
from ..core.intrinsics import Intrinsics
from ..core.people import People, PeopleConfig, PeopleState
from ..core.pipeline import Pipeline, PipelineConfig
from ..core.registry import parse_tasks

#: Message options the node forwards from its parameters (parameter: option).
_MESSAGE_OPTIONS = {'score_threshold': 'score_threshold', 'overlay_alpha': 'overlay_alpha',
                    'foreground_only': 'foreground_only', 'normal_encoding': 'normal_encoding',
                    'overlay_compression': 'compressed_format', 'jpeg_quality': 'jpeg_quality'}

#: Pipeline options the node forwards from its parameters.
_PIPELINE_PARAMS = ('box_source', 'max_persons', 'min_person_area', 'flip_test',
                    'pointmap_stride', 'foreground_only')


def build_pipeline(tasks: tuple[str, ...], params: dict, progress: bool = False) -> Pipeline:
    """Load (or, with ``random_weights``, build tiny random) models per the node parameters."""
    input_size = tuple(int(v) for v in params['input_size'])
    if len(input_size) != 2:
        raise SapiensError(f'input_size must be [height, width], got {list(input_size)}')
    config = PipelineConfig(input_size=input_size,
                            **{k: params[k] for k in _PIPELINE_PARAMS})
    if params['cpu_threads'] > 0:
        import torch

        torch.set_num_threads(params['cpu_threads'])
    dtype = None if params['dtype'] in ('', 'auto') else params['dtype']
    options = {'cuda_graphs': params['cuda_graphs'], 'progress': progress,
               'allow_build': params['allow_build'], 'batch': params['engine_batch']}
    if params['cache_dir']:
        options['cache_dir'] = params['cache_dir']
    models = {t: params[f'models.{t}'] for t in tasks if params.get(f'models.{t}')}
    return load_pipeline(tasks, backend=params['backend'], size=params['model_size'],
                         model_dir=params['model_dir'] or None, models=models,
                         dtype=dtype, device=params['device'], config=config,
                         random_weights=params['random_weights'], **options)


def configure_error(exc: BaseException) -> str:
    """Say in one line why loading failed and what fixes it."""
    text = f'{type(exc).__name__}: {exc}'
    if isinstance(exc, SapiensError):
        return str(exc)  # the core's errors name their fix
    if isinstance(exc, ImportError):
        return f'{text}: install the missing package (README, "Install")'
    if isinstance(exc, MemoryError) or 'out of memory' in str(exc).lower():
        return (f'{text}: not enough memory for these models: use a smaller model_size, '
                f'dtype bf16/fp16 on a GPU, or fewer tasks')
    return f'{text} (unexpected: please report it with this log)'


@dataclasses.dataclass
class _Job:
    """One inferred frame on its way to the publish stage."""

    header: object
    result: object
    frame: object
    options: MessageOptions
    tasks: tuple
    people: People | None = None


def _stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class PerceptionNode(LifecycleNode):
    """Lifecycle node running the Sapiens2 heads on the newest camera frame."""

    def __init__(self, node_name: str = 'perception_node', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        for spec in PARAMS:
            self.declare_parameter(spec.name, spec.default, spec.descriptor())
        self.pipeline: Pipeline | None = None
        self.tasks: tuple[str, ...] = ()
        self.stats = NodeStats()
        self._slot = LatestSlot()
        self._throttle = Throttle(2.0)
        self._lock = threading.Lock()  # guards the pipeline config and the message options
        self._pubs: dict = {}
        self._info_pubs: dict = {}
        self._subs: list = []
        self._camera_info: CameraInfo | None = None
        self._worker: threading.Thread | None = None
        self._publisher: threading.Thread | None = None
        self._jobs: queue.Queue = queue.Queue(maxsize=1)
        self._infer_busy = self._publish_busy = False
        self._running = threading.Event()
        self._input_group = MutuallyExclusiveCallbackGroup()
        self._options = MessageOptions()
        self._forced: set[str] = set()
        self._pending: dict = {}  # runtime pipeline settings, applied between frames
        self.not_configured_reason = 'not configured yet'
        self._camera_info_time = 0.0
        self.people: PeopleState | None = None  # one per camera, created with the pipeline
        self._people_config = PeopleConfig()
        self._pairer: DepthPairer | None = None
        self._depth_time = 0.0  # monotonic time of the last depth message
        self._log_forwarder = ThreadLogForwarder(self.get_logger(), lambda: self._worker)
        self._apply_runtime({p.name: self._param(p.name) for p in PARAMS})
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics',
                                               qos_profile_system_default)
        self._diag_timer = self.create_timer(1.0, self.publish_diagnostics)
        self._autostart_timer = None
        self.autostarted = threading.Event()  # set once autostart has configured (or failed)
        if self._param('autostart'):  # from the executor: services answer while models load
            self._autostart_timer = self.create_timer(
                0.0, self._autostart, callback_group=MutuallyExclusiveCallbackGroup())

    def _autostart(self) -> None:
        self._autostart_timer.cancel()
        try:
            if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
                self.trigger_activate()
        finally:
            self.autostarted.set()

    # ----------------------------------------------------------------- parameters
    def _param(self, name: str):
        return PARAM_BY_NAME[name].coerce(self.get_parameter(name).value)

    def _params(self) -> dict:
        return {p.name: self._param(p.name) for p in PARAMS}

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        for p in params:
            reason = validate(p.name, p.value, self.tasks)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        self._apply_runtime({p.name: PARAM_BY_NAME[p.name].coerce(p.value) if p.name in
                             PARAM_BY_NAME else p.value for p in params})
        return SetParametersResult(successful=True)

    def _apply_runtime(self, values: dict) -> None:
        with self._lock:
            for name, option in _MESSAGE_OPTIONS.items():
                if name in values:
                    setattr(self._options, option, values[name])
            self._apply_people(values)
            if 'force_outputs' in values:
                self._forced = parse_outputs(values['force_outputs'])
            self._pending.update({k: v for k, v in values.items() if k in _PIPELINE_PARAMS})

    def _apply_people(self, values: dict) -> None:
        """People parameters into the options and the (shared) PeopleConfig; floats only."""
        cfg = self._people_config
        if 'smoothing' in values:
            self._options.smooth_markers = values['smoothing']
        if 'smooth_keypoints' in values:
            self._options.smooth_keypoints = values['smooth_keypoints']
        if 'tracking' in values:
            cfg.tracking = values['tracking']
        if 'track_max_age' in values:
            cfg.tracker.max_age = values['track_max_age']
        if 'one_euro_min_cutoff' in values:
            cfg.keypoint_filter.min_cutoff = cfg.xyz_filter.min_cutoff = \
                values['one_euro_min_cutoff']
        if 'one_euro_beta' in values:
            cfg.keypoint_filter.beta = values['one_euro_beta']
        if 'one_euro_beta_xyz' in values:
            cfg.xyz_filter.beta = values['one_euro_beta_xyz']

    def pipeline_settings(self) -> dict:
        """Return the runtime pipeline settings the next frame runs with."""
        with self._lock:
            current = {n: getattr(self.pipeline.config, n) for n in _PIPELINE_PARAMS} \
                if self.pipeline is not None else {}
            return {**current, **self._pending}

    # ----------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Load the models and create the publishers."""
        try:
            problems = [r for r in (validate(p.name, self.get_parameter(p.name).value)
                                    for p in PARAMS) if r]
            if problems:
                raise SapiensError('; '.join(problems))
            self.tasks = parse_tasks(self._param('tasks'))
            unknown = [t for t in self.tasks if t not in TASK_OUTPUTS]
            if unknown:
                raise SapiensError(f'the node runs pose, seg, normal and pointmap; '
                                   f'not {unknown}')
            t0 = time.perf_counter()
            self.get_logger().info(f'loading {", ".join(self.tasks)} '
                                   f'(backend {self._param("backend")})...')
            self.pipeline = build_pipeline(self.tasks, self._params(), progress=True)
            self._people_config.device = str(self.pipeline.device)
            self.people = PeopleState(self._people_config)
            self._log_forwarder.attach()
            self.get_logger().info(
                f'loaded {", ".join(self.tasks)} in {time.perf_counter() - t0:.1f} s on '
                f'{self.pipeline.device} ({self._model_ids()})')
        except Exception as exc:  # noqa: BLE001 - rclpy would swallow it: say why, fail
            self.pipeline = None
            self.not_configured_reason = configure_error(exc)
            self.get_logger().error(f'configure failed: {self.not_configured_reason}')
            return TransitionCallbackReturn.FAILURE
        self.not_configured_reason = ''
        depth = self._param('output_depth')
        out_qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                             history=HistoryPolicy.KEEP_LAST)
        info_qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                              durability=DurabilityPolicy.TRANSIENT_LOCAL)
        compressed = {raw: c for c, raw in COMPRESSED_OUTPUTS.items()}
        for suffix in task_outputs(self.tasks):
            for name in (suffix, compressed.get(suffix)):
                if name is not None:  # <topic>/compressed only encoded when subscribed
                    self._pubs[name] = self.create_lifecycle_publisher(
                        TOPIC_TYPES[name], name, out_qos)
        for task in self.tasks:
            if task in INFO_TOPICS:
                self._info_pubs[INFO_TOPICS[task]] = self.create_lifecycle_publisher(
                    String, INFO_TOPICS[task], info_qos)
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe to the camera and start the worker."""
        try:
            return self._activate(state)
        except Exception as exc:  # noqa: BLE001 - rclpy would swallow it: say why, fail
            self._stop(STOP_TIMEOUT_S)
            self.not_configured_reason = f'activate failed: {configure_error(exc)}'
            self.get_logger().error(self.not_configured_reason)
            return TransitionCallbackReturn.FAILURE

    def _activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        for suffix, msg in info_messages(self.tasks).items():
            self._info_pubs[suffix].publish(msg)
        reliability = (ReliabilityPolicy.RELIABLE if self._param('input_reliability') ==
                       'reliable' else ReliabilityPolicy.BEST_EFFORT)
        in_qos = QoSProfile(depth=self._param('input_depth'), reliability=reliability,
                            history=HistoryPolicy.KEEP_LAST)
        if self._param('compressed'):
            self._subs.append(self.create_subscription(
                CompressedImage, 'image/compressed', self._on_image, in_qos,
                callback_group=self._input_group))
        else:
            self._subs.append(self.create_subscription(
                Image, 'image', self._on_image, in_qos, callback_group=self._input_group))
        self._subs.append(self.create_subscription(
            CameraInfo, 'camera_info', self._on_camera_info, in_qos,
            callback_group=self._input_group))
        if self._param('use_depth'):
            self._pairer = DepthPairer(self._param('depth_slop'), self._param('depth_queue_size'),
                                       self._on_pair)
            self._depth_time = time.monotonic()  # depth_timeout counts from now
            self._subs.append(self.create_subscription(
                Image, 'depth', self._on_depth, in_qos, callback_group=self._input_group))
        self._running.set()
        self._worker = threading.Thread(target=self._work, name='sapiens_infer', daemon=True)
        self._publisher = threading.Thread(target=self._publish_loop, name='sapiens_publish',
                                           daemon=True)
        self._worker.start()
        self._publisher.start()
        depth = f' and {self._subs[-1].topic_name} (pairing: {self._pairer.backend})' \
            if self._pairer is not None else ''
        self.get_logger().info(f'active: listening on {self._subs[0].topic_name}{depth}')
        return result

    def _stop(self, timeout: float | None = None) -> bool:
        """
        Stop the worker threads; return False if one is still busy after ``timeout`` seconds.

        A CPU inference cannot be interrupted: past the deadline its thread (a daemon) is
        abandoned and its result, when it comes, is dropped and counted (``frames_abandoned``).
        """
        self._running.clear()
        deadline = None if timeout is None else time.monotonic() + timeout
        stopped = True
        for thread in (self._worker, self._publisher):
            if thread is None:
                continue
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                stopped = False
                # not the node's logger: rosout is gone once a signal shut the context down
                rclpy.logging.get_logger('sapiens_ros.shutdown').warning(
                    f'{self.get_name()}: {thread.name} still busy after {timeout:.1f} s: '
                    'abandoning its frame')
        self._worker = self._publisher = None
        for sub in self._subs:
            self.destroy_subscription(sub)
        self._subs.clear()
        self._slot.clear()
        while not self._jobs.empty():  # a result queued as the threads stopped is stale now
            self._jobs.get_nowait()
            self.stats.abandoned += 1
        return stopped

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Unsubscribe, stop the worker and release cached device memory."""
        self._stop()
        _free_device_memory(self.pipeline)
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop the models and the publishers."""
        self._release()
        return super().on_cleanup(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop everything from any state."""
        self._stop()
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Recover to unconfigured after an error in a transition."""
        self._stop()
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self) -> None:
        destroy = getattr(self, 'destroy_lifecycle_publisher', self.destroy_publisher)
        for pub in list(self._pubs.values()) + list(self._info_pubs.values()):
            destroy(pub)
        self._pubs.clear()
        self._info_pubs.clear()
        device = self.pipeline.device if self.pipeline is not None else None
        self.pipeline = None
        self.people = None
        self._pairer = None
        self._log_forwarder.detach()
        gc.collect()
        _free_device_memory(None, device)

    def shutdown_worker(self, timeout: float | None = None) -> bool:
        """Stop the worker threads within ``timeout`` seconds (before destroying the node)."""
        return self._stop(timeout)

    # ----------------------------------------------------------------- input
    def _on_image(self, msg) -> None:
        self.stats.on_received()
        if self._pairer is None:
            self._slot.put((msg, time.monotonic(), None))
            return
        timeout = self._param('depth_timeout')
        silent = time.monotonic() - self._depth_time
        if timeout > 0 and silent > timeout:  # no depth stream: colour goes on without it
            self._bad('depth_missing', f'no depth message for {silent:.1f} s on '
                      f'{self._subs[-1].topic_name}', 'frame processed without depth')
            self._slot.put((msg, time.monotonic(), None))
            return
        self._pairer.add_image(msg)

    def _on_depth(self, msg: Image) -> None:
        self._depth_time = time.monotonic()
        if self._pairer is not None:
            self._pairer.add_depth(msg)

    def _on_pair(self, msg, depth: Image) -> None:
        """Put a colour frame and its matched depth image into the newest-frame slot."""
        self._slot.put((msg, time.monotonic(), depth))

    def _on_camera_info(self, msg: CameraInfo) -> None:
        self._camera_info = msg
        self._camera_info_time = time.monotonic()

    def _bad(self, kind: str, text: str, consequence: str = 'frame skipped') -> None:
        """Count a bad input of ``kind`` and log it, throttled per kind."""
        self.stats.on_bad(kind, text)
        suppressed = self._throttle.check(kind)
        if suppressed is not None:
            more = f' ({suppressed} more since the last report)' if suppressed else ''
            self.get_logger().error(f'bad input ({kind}): {text}; {consequence}{more}')

    def _decode(self, msg):
        fmt = self._param('compressed_format')
        return decode_message(msg, self._param('max_pixels'), None if fmt == 'any' else fmt)

    def _camera_k(self, size: tuple[int, int], why: str = 'calibrated mode') -> list[float]:
        """Return K of a fresh, valid camera_info for an image of ``size``; else FrameError."""
        info = self._camera_info
        if info is None:
            raise FrameError(f'{why} but no camera_info received yet')
        age = time.monotonic() - self._camera_info_time
        timeout = self._param('camera_info_timeout')
        if timeout > 0 and age > timeout:
            raise FrameError(f'the last camera_info is {age:.1f} s old (camera_info_timeout '
                             f'{timeout:g} s): is the camera driver still publishing it?')
        Intrinsics.from_k(info.k, (info.height, info.width), size)
        return [float(v) for v in info.k]

    def _depth_input(self, depth: Image | None, size: tuple[int, int]) -> dict:
        """Keyword arguments of ``PeopleState.update`` for a paired depth image; {} when bad."""
        if depth is None:
            return {}
        consequence = 'frame processed without depth'
        try:
            k = self._camera_k(size, 'use_depth')
        except FrameError as exc:
            self._bad('camera_info', str(exc), consequence)
            return {}
        try:
            array = decode_depth(depth.encoding, depth.height, depth.width, depth.step,
                                 depth.data, bool(depth.is_bigendian))
        except FrameError as exc:
            kind = 'depth_encoding' if 'encoding' in str(exc) else 'depth'
            self._bad(kind, str(exc), consequence)
            return {}
        return {'depth': array, 'K': k, 'depth_encoding': depth.encoding}

    # ----------------------------------------------------------------- worker
    def wanted_outputs(self) -> set[str]:
        """Return the outputs with a subscriber, plus the forced ones."""
        if self._param('publish_all'):
            return set(self._pubs)
        subscribed = {s for s, pub in self._pubs.items() if pub.get_subscription_count() > 0}
        return subscribed | (self._forced & set(self._pubs))

    def _work(self) -> None:
        """Inference stage: newest frame in, one finished result handed to the publish stage."""
        while self._running.is_set():
            item = self._slot.take(0.1)
            if item is None:
                continue
            self._infer_busy = True
            try:
                job = self.infer(item[0], item[2])
                while job is not None and self._running.is_set():
                    try:  # at most one result waits: no backlog, build overlaps inference
                        self._jobs.put(job, timeout=0.1)
                        job = None
                    except queue.Full:
                        continue
                if job is not None:  # stopped while this frame was in flight
                    self.stats.abandoned += 1
            except Exception as exc:  # noqa: BLE001 - the worker must survive any frame
                self._bad('internal', f'{type(exc).__name__}: {exc}')
            finally:
                self._infer_busy = False

    def _publish_loop(self) -> None:
        """Publish stage: build and publish the messages of one result at a time."""
        while self._running.is_set():
            try:
                job = self._jobs.get(timeout=0.1)
            except queue.Empty:
                continue
            self._publish_busy = True
            try:
                self.publish(job)
            except Exception as exc:  # noqa: BLE001 - the publisher must survive any frame
                self._bad('internal', f'{type(exc).__name__}: {exc}')
            finally:
                self._publish_busy = False

    @property
    def busy(self) -> bool:
        """Tell whether a frame is being processed or its messages are being published."""
        return self._infer_busy or self._publish_busy or not self._jobs.empty()

    def infer(self, msg, depth: Image | None = None) -> _Job | None:
        """Decode ``msg`` and run the tasks whose outputs are wanted; None when skipped/bad."""
        outputs = self.wanted_outputs()
        tasks = tuple(t for t in self.tasks if any(OUTPUT_TASK[s] == t for s in outputs))
        if not tasks:
            self.stats.idle_skipped += 1
            return None
        if 'people/poses' in outputs and depth is None and 'pointmap' in self.tasks and \
                'pointmap' not in tasks:
            tasks += ('pointmap',)  # torso positions need 3D: without depth, the pointmap
        if 'pointmap' in tasks and 'seg' in self.tasks and 'seg' not in tasks and \
                self._param('foreground_only'):
            tasks = ('seg',) + tasks  # the pointmap's foreground mask comes from seg
        try:
            frame = self._decode(msg)
        except FrameError as exc:
            kind = 'compressed' if isinstance(msg, CompressedImage) else 'image'
            self._bad(kind, str(exc))
            return None
        fx = None
        if self._param('calibrated') and 'pointmap' in tasks:
            try:
                fx = self._camera_k(frame.pixels.shape[:2])[0]
            except FrameError as exc:  # only the metric scale needs it: the heads still run
                self._bad('camera_info', str(exc), 'pointmap and 3D keypoints use the '
                          'predicted scale for this frame')
        with self._lock:  # short: runtime changes land between frames, never wait for one
            for name, value in self._pending.items():
                setattr(self.pipeline.config, name, value)
            self._pending.clear()
            options = dataclasses.replace(self._options, outputs=outputs)
        try:  # overlays, clouds, depth and JPEG/PNG are rendered on the pipeline's device
            result = self.pipeline(frame.pixels, color_order=frame.color_order, fx=fx,
                                   tasks=tasks, render=render_request(outputs, options))[0]
        except SapiensError as exc:
            self._bad('inference', str(exc))
            return None
        problem = result.non_finite()
        if problem:
            self._bad('model_nan', f'the model produced non-finite {problem}')
            return None
        if 'pose' in tasks and 'seg' not in tasks and result.seg is not None:
            tasks = ('seg',) + tasks  # the pipeline ran seg for the person boxes
        people = None
        if self.people is not None and ('pose' in tasks or depth is not None):
            stamp = stamp_seconds(msg.header.stamp) or time.monotonic()
            people = self.people.update(result, stamp,
                                        **self._depth_input(depth, frame.pixels.shape[:2]))
        return _Job(msg.header, result, frame, options, tasks, people)

    def publish(self, job: _Job) -> dict:
        """Build and publish one result's messages; return them."""
        rendered = render_request(job.options.outputs, job.options).keys()
        wants_image = any(k.split('.')[0].endswith('overlay') for k in
                          rendered - set(job.result.rendered))  # not rendered by the pipeline
        image = job.frame.rgb() if wants_image else None
        msgs = build_messages(job.header, job.result, job.options, image, job.people)
        for suffix, out in msgs.items():
            self._pubs[suffix].publish(out)
        latency = None
        if _stamp_ns(job.header.stamp) > 0:
            latency = (self.get_clock().now().nanoseconds - _stamp_ns(job.header.stamp)) / 1e6
        self.stats.on_processed(latency, job.result.timings, job.tasks)
        return msgs

    # ----------------------------------------------------------------- diagnostics
    def _model_ids(self) -> str:
        if self.pipeline is None:
            return ''
        return ', '.join(f'{t}={r.model_id}' for t, r in self.pipeline.runners.items())

    def _health(self, snap: dict, state: str) -> tuple[bytes, str]:
        """Diagnostics level and message: why the node is not working, or how well it is."""
        warn_ms = self._param('latency_warn_ms')
        if self.pipeline is None:
            failed = self.not_configured_reason not in ('', 'not configured yet')
            return (DiagnosticStatus.ERROR if failed else DiagnosticStatus.WARN,
                    f'not configured: {self.not_configured_reason}')
        if snap['failed_rate_hz'] > 0:
            every = snap['processed_rate_hz'] == 0
            return (DiagnosticStatus.ERROR if every else DiagnosticStatus.WARN,
                    f"{'every frame failed' if every else 'frames failing'} "
                    f"({snap['failed_rate_hz']:.2f}/s): {snap['last_error']}")
        if math.isfinite(snap['latency_p95_ms']) and snap['latency_p95_ms'] > warn_ms:
            return (DiagnosticStatus.WARN,
                    f"latency p95 {snap['latency_p95_ms']:.0f} ms over {warn_ms:.0f} ms")
        return DiagnosticStatus.OK, state

    def publish_diagnostics(self) -> DiagnosticArray:
        """Publish (and return) the node's DiagnosticArray on /diagnostics."""
        snap = self.stats.snapshot(self._slot.dropped)
        warn_ms = self._param('latency_warn_ms')
        status = DiagnosticStatus(name=f'{self.get_fully_qualified_name()}: sapiens perception',
                                  hardware_id=str(self._param('device')))
        state = 'active' if self._running.is_set() else \
            ('configured' if self.pipeline is not None else 'unconfigured')
        status.level, status.message = self._health(snap, state)
        values = {
            'state': state,
            'input_rate_hz': f"{snap['input_rate_hz']:.2f}",
            'processed_rate_hz': f"{snap['processed_rate_hz']:.2f}",
            'dropped_rate_hz': f"{snap['dropped_rate_hz']:.2f}",
            'frames_received': snap['received'], 'frames_processed': snap['processed'],
            'frames_dropped': snap['dropped'], 'frames_idle_skipped': snap['idle_skipped'],
            'frames_abandoned': snap['abandoned'],
            'latency_p50_ms': f"{snap['latency_p50_ms']:.1f}",
            'latency_p95_ms': f"{snap['latency_p95_ms']:.1f}",
            'latency_warn_ms': warn_ms,
            'backend': self._param('backend'), 'dtype': self._param('dtype'),
            'device': str(self.pipeline.device) if self.pipeline else self._param('device'),
            'tasks_loaded': ','.join(self.tasks), 'tasks_run': ','.join(snap['tasks_run']),
            'bad_inputs_total': sum(snap['bad_inputs'].values()),
            'failed_rate_hz': f"{snap['failed_rate_hz']:.2f}",
            'last_error': snap['last_error'],
            'not_configured_reason': self.not_configured_reason,
        }
        if self.pipeline is not None:
            for t, r in self.pipeline.runners.items():
                values[f'model.{t}'] = r.model_id
                values[f'runner.{t}'] = getattr(r, 'name', type(r).__name__)
        values.update(self._people_diagnostics())
        values.update({f'stage.{k}_ms': f'{v:.1f}' for k, v in snap['stage_ms'].items()})
        values.update({f'bad_input.{k}': v for k, v in snap['bad_inputs'].items()})
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)
        return msg

    def _people_diagnostics(self) -> dict:
        """Tracks, resets, the depth-fitted pointmap scale and the colour/depth pairing."""
        people, out = self.people, {}
        if people is not None:
            for key, value in people.diagnostics().items():
                out[f'people.{key}'] = '' if value is None else \
                    (f'{value:.4f}' if isinstance(value, float) else value)
        if self._pairer is not None:
            out.update(self._pairer.counters())
        return out


def _free_device_memory(pipeline, device=None) -> None:
    """Return cached CUDA memory to the driver when the models live on a GPU."""
    device = device if device is not None else getattr(pipeline, 'device', None)
    if device is not None and getattr(device, 'type', '') == 'cuda':
        import torch

        torch.cuda.empty_cache()


def main(args: list[str] | None = None) -> None:
    """Entry point of ``ros2 run sapiens_ros perception_node``."""
    run_node(PerceptionNode, args, multithreaded=True)


if __name__ == '__main__':
    main()
