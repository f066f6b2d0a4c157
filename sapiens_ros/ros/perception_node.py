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

One node serves any number of cameras (``cameras`` parameter) with one set of models: each
camera keeps its own topics, pairing, people and counters (:mod:`.camera`), and one inference
step batches the newest frame of every camera through each head (:mod:`.worker`, on the core's
:class:`~sapiens_ros.core.pipeline.scheduler.Scheduler`). This module is the wiring: lifecycle,
parameters and diagnostics. configure loads the models and creates the publishers, activate
subscribes and starts the threads, deactivate/cleanup stop them and free the memory. The model
parameters can change while the node is unconfigured; configure re-reads them.
Valid on Humble's rclpy (no ``with rclpy.init()``).
"""

from __future__ import annotations

import difflib
import gc
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import ParameterException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
import rclpy.logging
from rclpy.parameter import Parameter

from .camera import CameraChannel
from .diagnostics import BatchStats, statuses
from .node_params import (assign, camera_rate_param, checked, node_rate_param, PARAM_BY_NAME,
                          PARAMS, parse_cameras, routed)
from .optional_msgs import available, missing_packages
from .people_world import PeopleWorld, WorldOptions
from .qos import DIAGNOSTICS_QOS, input_qos, output_qos
from .render_plan import MessageOptions
from .runtime import FrameSlots, ThreadLogForwarder
from .spin import program_args, run_node, STOP_TIMEOUT_S
from .topics import TASK_OUTPUTS
from .worker import StepSettings, StepWorker
from ..backends.factory import load_pipeline
from ..core.errors import InputSizeError, SapiensError
from ..core.models.registry import parse_tasks, PERCEPTION_TASKS
from ..core.people.state import PeopleConfig
from ..core.people.tracking import IdAllocator
from ..core.pipeline.budget import check_rate, INHERIT_RATE
from ..core.pipeline.host_memory import keep_freed_memory
from ..core.pipeline.pipeline import Pipeline, PipelineConfig
from ..core.pipeline.plan import pipeline_box_source
from ..core.pipeline.scheduler import Camera, Scheduler

#: The PipelineConfig fields that runtime parameters set (applied between steps).
_RUNTIME_PIPELINE_FIELDS = tuple(routed('pipeline', dict.fromkeys(PARAM_BY_NAME), 'runtime'))

#: Seconds between two looks at the colour frames waiting for their side messages.
PAIRING_FLUSH_S = 0.02
#: Seconds between two looks for bodies and persons of cameras that went silent.
EXPIRE_PERIOD_S = 0.1


def build_pipeline(tasks: tuple[str, ...], params: dict, progress: bool = False) -> Pipeline:
    """
    Load (or, with ``random_weights``, build tiny random) models per the node parameters.

    ``params`` are the parameters as :func:`~.node_params.checked` returns them (sizes parsed).
    """
    settings = routed('pipeline', params)
    settings['box_source'] = pipeline_box_source(settings['box_source'], tasks)
    unloaded = [t for t in settings['input_sizes'] if t not in tasks]
    if unloaded:
        raise InputSizeError(f'input_sizes names {unloaded[0]!r}, which is not loaded '
                             f'({", ".join(tasks)})')
    config = PipelineConfig(**settings)
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


class PerceptionNode(LifecycleNode):
    """Lifecycle node running the Sapiens2 heads on the newest frame of each of its cameras."""

    def __init__(self, node_name: str = 'perception_node', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        for spec in PARAMS:
            try:
                self.declare_parameter(spec.name, spec.default, spec.descriptor())
            except ParameterException as exc:  # a wrong type or range (-p, a file): one line
                raise SapiensError(str(exc)) from None
        self.max_pixels_limit = int(self._param('max_pixels'))  # the start value bounds it
        self.pipeline: Pipeline | None = None
        self.scheduler: Scheduler | None = None
        self.tasks: tuple[str, ...] = ()
        self.cameras: dict[str, CameraChannel] = {}
        self.slots = FrameSlots()
        self.batches = BatchStats()
        self.loads = 0  # times configure loaded the models
        self.worker: StepWorker | None = None
        self.world: PeopleWorld | None = None  # body frames on /tf, REP-155 bodies
        self._world_options = WorldOptions()
        self._lock = threading.Lock()  # guards the pipeline config, options and rates
        self._input_group = MutuallyExclusiveCallbackGroup()
        self._options = MessageOptions()
        self._forced: set[str] = set()
        self._pending: dict = {}  # runtime pipeline settings, applied between steps
        self._rates_changed = True
        self._rate_params = {node_rate_param(t) for t in PERCEPTION_TASKS}  # and the cameras'
        self.not_configured_reason = 'not configured yet'
        self._people_config = PeopleConfig()
        self._log_forwarder = ThreadLogForwarder(
            self.get_logger(), lambda: self.worker.threads[0] if self.worker and
            self.worker.threads else None)
        self._declare_camera_rates(self._camera_names())
        self._name_undeclared_overrides()
        try:
            self._apply_runtime({p.name: p.value_of(self.get_parameter(p.name).value)
                                 for p in PARAMS if p.applies == 'runtime'})
        except ValueError as exc:  # a bad force_outputs (-p, a file): one line
            raise SapiensError(str(exc)) from None
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics',
                                               DIAGNOSTICS_QOS)
        self._diag_timer = self.create_timer(1.0, self.publish_diagnostics)
        # bodies and persons age by time even when no camera sends (libhri keeps a last list)
        self._expire_timer = self.create_timer(EXPIRE_PERIOD_S, self._expire_people)
        self._autostart_timer = None
        self._flush_timer = None  # releases frames waiting for their side messages
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

    # ----------------------------------------------------------------- cameras
    @property
    def camera(self) -> CameraChannel:
        """Return the first camera, the only one of a single-camera node."""
        return next(iter(self.cameras.values()))

    @property
    def stats(self):
        """Counters of the first camera (the only one of a single-camera node)."""
        return self.camera.stats

    def _camera_names(self) -> tuple[str, ...]:
        try:
            return parse_cameras(self._param('cameras')) or ('',)
        except ValueError:
            return ('',)  # configure reports it

    def _declare_camera_rates(self, names: tuple[str, ...]) -> None:
        """Declare ``<camera>.rates.<task>`` (-1: the node's ``rates.<task>``) per camera."""
        for name in names:
            for task in PERCEPTION_TASKS:
                param = camera_rate_param(name, task) if name else None
                if param and not self.has_parameter(param):
                    self.declare_parameter(param, INHERIT_RATE, ParameterDescriptor(
                        name=param, dynamic_typing=True, description=f'most {task} runs per '
                        f'second on camera {name} (0: every frame; {INHERIT_RATE:g}: '
                        f'{node_rate_param(task)})'))
                if param:
                    self._rate_params.add(param)

    def _name_undeclared_overrides(self) -> None:
        """Say once which given parameters this node does not have (a typo), and the nearest."""
        given = getattr(self, '_parameter_overrides', {})  # rclpy keeps -p and file values here
        unknown = sorted(n for n in given if not self.has_parameter(n) and
                         not n.startswith('qos_overrides.') and n != 'use_sim_time')
        if unknown:
            near = {n: difflib.get_close_matches(n, PARAM_BY_NAME, 1) for n in unknown}
            self.get_logger().warning('parameters this node does not have (ignored): ' + ', '.join(
                f'{n} (did you mean {near[n][0]}?)' if near[n] else n for n in unknown))

    def _camera_rates(self, name: str) -> dict[str, float]:
        rates = {}
        for task in PERCEPTION_TASKS:
            rate = float(self._param(node_rate_param(task)))
            if name:
                own = float(self.get_parameter(camera_rate_param(name, task)).value)
                rate = own if own >= 0 else rate
            rates[task] = rate
        return rates

    # ----------------------------------------------------------------- parameters
    def _param(self, name: str):
        return PARAM_BY_NAME[name].coerce(self.get_parameter(name).value)

    def _checked_params(self) -> dict:
        """Every parameter checked and parsed (the one parse); SapiensError lists the bad."""
        values, problems = {}, []
        for spec in PARAMS:
            try:
                values[spec.name] = checked(spec.name, self.get_parameter(spec.name).value)
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise SapiensError('; '.join(problems))
        return values

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        active = self.worker is not None and self.worker.running
        values = {}
        for p in params:
            spec = PARAM_BY_NAME.get(p.name)
            reason = None
            try:
                if spec is None and p.name in self._rate_params:  # a camera's own rate
                    values[p.name] = check_rate(p.value, p.name, allow_inherit=True)
                else:
                    values[p.name] = checked(p.name, p.value, self.tasks)
            except ValueError as exc:
                reason = str(exc)
            if spec is not None and not reason:
                if spec.applies == 'configure' and self.pipeline is not None:
                    reason = (f'{p.name} applies at configure: deactivate and clean up the node '
                              f'first (ros2 lifecycle set {self.get_fully_qualified_name()} '
                              f'cleanup), then configure')
                elif spec.applies == 'activate' and active:
                    reason = f'{p.name} applies at activate: deactivate the node first'
                elif p.name == 'max_pixels' and p.value > self.max_pixels_limit:
                    reason = (f'max_pixels can be lowered at run time, not raised above its '
                              f'start value {self.max_pixels_limit} (restart the node with a '
                              f'larger value)')
                elif p.name == 'box_source' and p.value == 'detections' and active and \
                        not self._param('box_source') == 'detections':
                    reason = ('box_source detections subscribes <camera>/detections at '
                              'activate: deactivate, set it, activate')
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        self._apply_runtime(values)
        return SetParametersResult(successful=True)

    def _apply_runtime(self, values: dict) -> None:
        """
        Hand checked values (parameter: value) on to the option objects their rows name.

        Messages, people and world options apply from the next frame; pipeline settings wait
        in ``_pending`` for the next step (:meth:`step_settings`).
        """
        with self._lock:
            assign(self._options, routed('message', values))
            assign(self._people_config, routed('people', values))
            assign(self._world_options, routed('world', values))
            self._pending.update(routed('pipeline', values, applies='runtime'))
            if 'force_outputs' in values:
                self._forced = values['force_outputs']
            if 'keypoint_format' in values and self.worker is not None and self.worker.running:
                for channel in self.cameras.values():  # latched: say it again
                    channel.publish_info(self.tasks, values['keypoint_format'])
            if self._rate_params.intersection(values):
                self._rates_changed = True

    def pipeline_settings(self) -> dict:
        """Return the runtime pipeline settings the next step runs with."""
        with self._lock:
            current = {n: getattr(self.pipeline.config, n) for n in _RUNTIME_PIPELINE_FIELDS} \
                if self.pipeline is not None else {}
            return {**current, **self._pending}

    def step_settings(self) -> StepSettings:
        """Apply the runtime changes made since the last step; return what the next one uses."""
        with self._lock:  # short: changes land between steps, never wait for one
            for name, value in self._pending.items():
                if name == 'box_source':
                    value = pipeline_box_source(value, self.pipeline.tasks)
                setattr(self.pipeline.config, name, value)
                if name == 'foreground_only':
                    self.scheduler.foreground_only = value
            self._pending.clear()
            if self._rates_changed:
                for name, channel in self.cameras.items():
                    channel.camera.budget.set_rates(self._camera_rates(name))
                self._rates_changed = False
            return StepSettings(MessageOptions(**vars(self._options)), set(self._forced),
                                self._param('max_cameras_per_step'))

    # ----------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Read the parameters, load the models once for every camera, create the publishers."""
        try:
            params = self._checked_params()
            self.tasks = parse_tasks(params['tasks'])
            unknown = [t for t in self.tasks if t not in TASK_OUTPUTS]
            if unknown:
                raise SapiensError(f'the node runs {", ".join(TASK_OUTPUTS)}; not {unknown}')
            names = params['cameras'] or ('',)
            self._declare_camera_rates(names)
            t0 = time.perf_counter()
            self.get_logger().info(f'loading {", ".join(self.tasks)} '
                                   f'(backend {params["backend"]})...')
            self.pipeline = build_pipeline(self.tasks, params, progress=True)
            self.loads += 1
            self._people_config.device = str(self.pipeline.device)
            self.scheduler = Scheduler(self.pipeline, foreground_only=self._param(
                'foreground_only'), on_batch=self.batches)
            track = 'pose' in self.pipeline.tasks
            ids = IdAllocator(self._param('track_id_start'))  # one id space for every camera
            self.cameras = {name: CameraChannel(
                self, name, Camera(name, self._camera_rates(name), self._people_config, track,
                                   ids), self.slots, self._param) for name in names}
            if track:
                assign(self._world_options, routed('world', {
                    p.name: self._param(p.name) for p in PARAMS if p.applies == 'configure'}))
                self.world = PeopleWorld(self, self._world_options)
            self._rates_changed = False
            self._log_forwarder.attach()
            sizes = ', '.join(f'{t} {self.pipeline.config.size_of(t)}'
                              for t in self.pipeline.tasks)
            served = f' for cameras {", ".join(names)}' if names != ('',) else ''
            self.get_logger().info(
                f'loaded {", ".join(self.tasks)} in {time.perf_counter() - t0:.1f} s on '
                f'{self.pipeline.device}{served} ({self._model_ids()}; inputs {sizes}; '
                f'host memory: {keep_freed_memory()})')
        except Exception as exc:  # noqa: BLE001 - rclpy would swallow it: say why, fail
            self.pipeline = self.scheduler = None
            self.cameras = {}
            self.not_configured_reason = configure_error(exc)
            self.get_logger().error(f'configure failed: {self.not_configured_reason}')
            return TransitionCallbackReturn.FAILURE
        self.not_configured_reason = ''
        out_qos = output_qos(self._param('output_depth'))
        for channel in self.cameras.values():
            channel.create_publishers(self.tasks, out_qos)
        return super().on_configure(state)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Subscribe to every camera and start the worker threads."""
        try:
            return self._activate(state)
        except Exception as exc:  # noqa: BLE001 - rclpy would swallow it: say why, fail
            self._stop(STOP_TIMEOUT_S)
            self.not_configured_reason = f'activate failed: {configure_error(exc)}'
            self.get_logger().error(self.not_configured_reason)
            return TransitionCallbackReturn.FAILURE

    def _activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        in_qos = input_qos(self._param('input_depth'), self._param('input_reliability'))
        detections = self._param('box_source') == 'detections' and available('vision_msgs')
        for channel in self.cameras.values():
            channel.publish_info(self.tasks, self._param('keypoint_format'))
            channel.subscribe(in_qos, self._input_group, detections)
            channel.camera.given_boxes_max_age = \
                self._param('detections_timeout') if detections else 0.0
        if any(c.pairing is not None for c in self.cameras.values()):
            self._flush_timer = self.create_timer(PAIRING_FLUSH_S, self._flush_pairings,
                                                  callback_group=self._input_group)
        self.worker = StepWorker(self, self.scheduler, self.cameras, self.slots,
                                 self.step_settings, self.world)
        self.worker.start()
        self.get_logger().info('active: listening on ' + ', '.join(
            c.describe_input() for c in self.cameras.values()))
        return result

    def _flush_pairings(self) -> None:
        for channel in self.cameras.values():
            channel.flush_pairing()

    def _stop(self, timeout: float | None = None) -> bool:
        """
        Stop taking frames and stop the worker threads; False when a step was abandoned.

        ``timeout`` None (deactivate) waits for a step in flight; otherwise (shutdown) a step
        still in inference is abandoned at once and its results are dropped and counted
        (``frames_abandoned``).
        """
        if self._flush_timer is not None:
            self.destroy_timer(self._flush_timer)
            self._flush_timer = None
        for channel in self.cameras.values():
            channel.unsubscribe()
        stopped = True
        if self.worker is not None:
            stopped = self.worker.stop(timeout)
            if not stopped:
                # not the node's logger: rosout is gone once a signal shut the context down
                rclpy.logging.get_logger('sapiens_ros.shutdown').warning(
                    f'{self.get_name()}: abandoning the inference step in flight')
        if self.world is not None:  # after the worker: no frame brings a body back
            for channel in self.cameras.values():
                self.world.forget(channel.name)  # its REP-155 bodies end
        self.slots.clear()
        return stopped

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Unsubscribe, stop the worker and release cached device memory."""
        self._stop()
        self.worker = None
        _free_device_memory(self.pipeline)
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Drop the models and the publishers."""
        self._release()
        return super().on_cleanup(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Stop everything from any state."""
        self._stop(STOP_TIMEOUT_S)
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """Recover to unconfigured after an error in a transition."""
        self._stop(STOP_TIMEOUT_S)
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def _release(self) -> None:
        for channel in self.cameras.values():
            channel.destroy_publishers()
        if self.world is not None:
            self.world.close()
            self.world = None
        device = self.pipeline.device if self.pipeline is not None else None
        self.pipeline = self.scheduler = None
        self._log_forwarder.detach()
        gc.collect()
        _free_device_memory(None, device)

    def begin_shutdown(self) -> None:
        """Stop taking frames and publishing at once (the process is stopping; joins nothing)."""
        if self.worker is not None:
            self.worker.begin_stop()

    def shutdown_worker(self, timeout: float | None = None) -> bool:
        """Stop taking frames and publishing within ``timeout`` s (before destroying the node)."""
        return self._stop(timeout)

    @property
    def busy(self) -> bool:
        """Tell whether a frame is being processed or its messages are being published."""
        return self.worker is not None and self.worker.busy

    # ----------------------------------------------------------------- diagnostics
    def _model_ids(self) -> str:
        if self.pipeline is None:
            return ''
        return ', '.join(f'{t}={r.model_id}' for t, r in self.pipeline.runners.items())

    def _shared_values(self) -> dict:
        values = {
            'backend': self._param('backend'), 'dtype': self._param('dtype'),
            'device': str(self.pipeline.device) if self.pipeline else self._param('device'),
            'tasks_loaded': ','.join(self.tasks), 'models_loaded': self.loads,
            'cameras': ','.join(n or '(node namespace)' for n in self.cameras),
            'steps': self.scheduler.steps if self.scheduler else 0,
            'not_configured_reason': self.not_configured_reason,
            'not_published': ' | '.join(missing_packages().values()),
        }
        if self.pipeline is not None:
            for t, r in self.pipeline.runners.items():
                values[f'model.{t}'] = r.model_id
                values[f'runner.{t}'] = getattr(r, 'name', type(r).__name__)
                values[f'input_size.{t}'] = str(self.pipeline.config.size_of(t))
            values.update(_device_memory(self.pipeline.device))
        values.update(self.batches.values())
        if self.world is not None:
            values.update(self.world.diagnostics())
        return values

    def _expire_people(self) -> None:
        world = self.world
        if world is not None:
            world.expire(self._param('track_max_age'))

    def publish_diagnostics(self) -> DiagnosticArray:
        """Publish (and return) the node's DiagnosticArray on /diagnostics."""
        warn_ms = self._param('latency_warn_ms')
        state = 'active' if self.worker is not None and self.worker.running else \
            ('configured' if self.pipeline is not None else 'unconfigured')
        if self.pipeline is None:
            failed = self.not_configured_reason not in ('', 'not configured yet')
            shared_level = (DiagnosticStatus.ERROR if failed else DiagnosticStatus.WARN,
                            f'not configured: {self.not_configured_reason}')
        else:
            shared_level = (DiagnosticStatus.OK, state)
        channels = list(self.cameras.values())
        snaps = [c.stats.snapshot(self.slots.dropped[c.name]) for c in channels]
        problems = [[] for _ in channels]
        if state == 'active':
            stale_after = self._param('stale_timeout')
            for channel, found in zip(channels, problems, strict=True):
                channel.check_inputs()
                found.extend(channel.health(stale_after))
        msg = DiagnosticArray(status=statuses(
            self.get_fully_qualified_name(), str(self._param('device')), self._shared_values(),
            shared_level, channels, snaps, problems, warn_ms, state))
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)
        return msg


def _device_memory(device) -> dict:
    """GPU memory the models and activations hold (CUDA only)."""
    if getattr(device, 'type', '') != 'cuda':
        return {}
    import torch

    return {'gpu_memory_allocated_mb': f'{torch.cuda.memory_allocated(device) / 2**20:.0f}',
            'gpu_memory_reserved_mb': f'{torch.cuda.memory_reserved(device) / 2**20:.0f}'}


def _free_device_memory(pipeline, device=None) -> None:
    """Return cached CUDA memory to the driver when the models live on a GPU."""
    device = device if device is not None else getattr(pipeline, 'device', None)
    if device is not None and getattr(device, 'type', '') == 'cuda':
        import torch

        torch.cuda.empty_cache()


def main(args: list[str] | None = None) -> None:
    """Entry point of ``ros2 run sapiens_ros perception_node`` (``--help`` lists parameters)."""
    program_args(args, 'perception_node', 'Sapiens2 perception: camera frames in, people, '
                 'keypoints, labels, normals and point clouds out (docs/topics.md).',
                 [(p.name, p.default, p.descriptor().description) for p in PARAMS],
                 'image (or image/compressed), camera_info, depth, detections; with cameras '
                 'NAME,...: NAME/image, ...')
    run_node(PerceptionNode, args, multithreaded=True)


if __name__ == '__main__':
    main()
