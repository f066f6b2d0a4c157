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
``sapiens-ros demo``: sample camera -> perception node -> monitor, in one process.

The three are separate rclpy nodes on one multi-threaded executor, talking over real topics.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``demo`` subcommand to the CLI's subparsers."""
    p = subparsers.add_parser(
        'demo', help='see the ROS graph work without a camera (photo, video or bag)',
        description='Play the bundled photo (or a video/bag) as a camera, run the perception '
                    'node on it and print per-topic rates and latency.')
    p.add_argument('--source', default='', help='video file or bag (default: bundled photo); '
                   'a bag with an aligned depth topic plays as an RGB-D camera')
    p.add_argument('--topic', default='',
                   help="the bag's camera topic to play (default: the first colour one)")
    p.add_argument('--rate', type=float, default=5.0, help='camera frames per second')
    p.add_argument('--tasks', default='pose,seg,normal,pointmap')
    p.add_argument('--size', '--model-size', dest='model_size', default='0.4b',
                   help='hub model size (facebook/sapiens2-<task>-<size>)')
    p.add_argument('--model-dir', default='', help='folder with <dir>/<task>/ checkpoints')
    p.add_argument('--model', action='append', default=[], metavar='TASK=ID_OR_PATH',
                   help='override one task (repeatable), as in `sapiens-ros infer`')
    p.add_argument('--device', default='cpu', help='cpu, cuda or cuda:N')
    p.add_argument('--dtype', default='auto', choices=('auto', 'fp32', 'bf16', 'fp16'))
    p.add_argument('--backend', default='torch', choices=('torch', 'onnxruntime', 'tensorrt'))
    p.add_argument('--input-size', default='', help='WIDTHxHEIGHT model input, e.g. 384x512')
    p.add_argument('--random-weights', action='store_true',
                   help='tiny random models: checks the graph without downloading weights')
    p.add_argument('--duration', type=float, default=0.0, help='seconds to run (0: until ^C)')
    p.add_argument('--output-dir', default='sapiens_demo', help='overlay images go here')
    p.set_defaults(run=run_program, check=check)
    return p


def check(args: argparse.Namespace) -> None:
    """Check ``--device`` before the slow imports (CUDA asked for without CUDA)."""
    from .core.loading import parse_device

    parse_device(args.device)


def _input_size(text: str, random_weights: bool) -> str:
    from .ros.launch_support import parse_input_size

    if text:
        return parse_input_size(text)
    return '192x256' if random_weights else '768x1024'


def _interrupt(signum, frame) -> None:
    """SIGTERM handler: stop like Ctrl-C (a non-default rclpy context installs no handlers)."""
    raise KeyboardInterrupt


def run_program(args: argparse.Namespace) -> int:
    """
    :func:`run` as the ``sapiens-ros demo`` program: stop signals stay ignored after it.

    Ctrl-C in a terminal reaches the whole process group, and a second one may come while the
    interpreter exits: it must not turn a clean exit into a death by signal.
    """
    from .ros.spin import ignore_stop_signals

    try:
        return run(args)
    finally:
        ignore_stop_signals()


def _spin(executor, stopping: threading.Event) -> None:
    """Spin until shutdown; errors of callbacks cut short by the teardown are expected."""
    try:
        executor.spin()
    except Exception:  # noqa: BLE001 - rclpy raises InvalidHandle etc. while tearing down
        if not stopping.is_set():
            raise


def run(args: argparse.Namespace) -> int:
    """Start the three nodes; return 1 with a hint naming --random-weights if loading fails."""
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from .cli_infer import parse_overrides
    from .core.errors import SapiensError
    from .ros.monitor import Monitor
    from .ros.perception_node import PerceptionNode
    from .ros.sample_camera import check_source, SampleCamera
    from .ros.spin import ignore_stop_signals, restore_signals, STOP_TIMEOUT_S

    try:  # a wrong --source fails now, not after the models have loaded
        bag = check_source(args.source, args.topic)
        input_size = _input_size(args.input_size, args.random_weights)
    except (SapiensError, ValueError) as exc:
        print(f'demo: {exc}', flush=True)
        return 2

    os.environ.setdefault('RCUTILS_CONSOLE_OUTPUT_FORMAT', '[{severity}] [{name}]: {message}')
    if args.random_weights:
        from .cli import NOISE_BANNER

        print(NOISE_BANNER, flush=True)
    on_main = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, _interrupt) if on_main else None
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes = []
    executor = MultiThreadedExecutor(context=context)
    stopping, spinner = threading.Event(), None
    try:
        overrides = [Parameter('tasks', value=args.tasks),
                     Parameter('model_size', value=args.model_size),
                     Parameter('model_dir', value=args.model_dir),
                     Parameter('device', value=args.device), Parameter('dtype', value=args.dtype),
                     Parameter('backend', value=args.backend),
                     Parameter('input_size', value=input_size),
                     Parameter('random_weights', value=bool(args.random_weights)),
                     Parameter('autostart', value=False)]
        overrides += [Parameter(f'models.{task}', value=source)
                      for task, source in parse_overrides(args.model).items()]
        if bag is not None:
            print(f'demo: {bag.describe(args.source)}', flush=True)
        if bag is not None and bag.depth:  # an RGB-D bag: the node pairs its depth
            print(f'demo: RGB-D bag: colour {bag.image}, depth {bag.depth}, camera_info '
                  f'{bag.camera_info or "(synthesised)"}', flush=True)
            overrides.append(Parameter('use_depth', value=True))
        perception = PerceptionNode(namespace='demo', context=context,
                                    parameter_overrides=overrides)
        nodes.append(perception)
        executor.add_node(perception)
        spinner = threading.Thread(target=_spin, args=(executor, stopping), daemon=True)
        spinner.start()  # services answer while the models load
        if perception.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            hint = ('' if args.random_weights else
                    ' The Sapiens2 weights could not be loaded (see the error above). To see the '
                    'graph work without them, run: sapiens-ros demo --random-weights')
            print(f'demo: the perception node failed to configure.{hint}', flush=True)
            return 1
        perception.trigger_activate()
        nodes.append(SampleCamera(namespace='demo', context=context, parameter_overrides=[
            Parameter('source', value=args.source), Parameter('topic', value=args.topic),
            Parameter('rate', value=args.rate)]))
        nodes.append(Monitor(namespace='demo', context=context, parameter_overrides=[
            Parameter('output_dir', value=args.output_dir),
            Parameter('tasks', value=args.tasks)]))
        for node in nodes[1:]:
            executor.add_node(node)
        print(f'demo: running (overlays in {args.output_dir}/); Ctrl+C to stop', flush=True)
        end = time.monotonic() + args.duration if args.duration > 0 else None
        try:
            while spinner.is_alive() and (end is None or time.monotonic() < end):
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        return 0
    except KeyboardInterrupt:  # Ctrl-C while the models load
        return 0
    finally:
        previous = ignore_stop_signals()  # a second Ctrl-C must not cut the teardown short
        stopping.set()
        # Nothing is published once the stop began; an abandoned inference step never touches
        # ROS again, so its node can be destroyed.
        perception = [node for node in nodes if isinstance(node, PerceptionNode)]
        for node in perception:
            node.begin_shutdown()
        workers = all(node.shutdown_worker(STOP_TIMEOUT_S) is not False for node in perception)
        executor.shutdown(timeout_sec=STOP_TIMEOUT_S)
        callbacks_done = True
        if spinner is not None:
            spinner.join(STOP_TIMEOUT_S)
            callbacks_done = not spinner.is_alive()
        if callbacks_done:  # never destroy nodes under a callback still running
            for node in reversed(nodes):
                node.destroy_node()
        rclpy.try_shutdown(context=context)
        # the CLI then exits without waiting for them (a CPU inference cannot be interrupted)
        args.abandoned_threads = not (workers and callbacks_done)
        restore_signals(previous)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
