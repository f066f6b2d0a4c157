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
``sapiens-ros demo``: sample camera -> perception node -> monitor.

The perception node runs in a process of its own, as on a robot (one Python process for all
three shares one GIL: on 2 cores the node then processed under 1 frame a second instead of the
camera's 5); the camera and the monitor share this one, on one executor. They talk over real
topics, through the shipped Fast DDS profile.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
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
    from .core.models.loading import parse_device

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


def _node_command(args: argparse.Namespace, input_size: str, rgbd: bool) -> list[str]:
    """Return the perception node's command line for these demo flags."""
    from .cli_infer import parse_overrides

    params = {'tasks': args.tasks, 'model_size': args.model_size, 'model_dir': args.model_dir,
              'device': args.device, 'dtype': args.dtype, 'backend': args.backend,
              'input_size': input_size, 'random_weights': bool(args.random_weights),
              'use_depth': rgbd}
    params.update({f'models.{task}': source
                   for task, source in parse_overrides(args.model).items()})
    cmd = [sys.executable, '-m', 'sapiens_ros.ros.perception_node', '--ros-args',
           '-r', '__ns:=/demo']
    for name, value in params.items():
        if value != '':
            text = str(value).lower() if isinstance(value, bool) else str(value)
            cmd += ['-p', f'{name}:={text}']
    return cmd


class NodeProcess:
    """The perception node's process: its output echoed, its start and failure seen."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.active, self.failed = threading.Event(), threading.Event()
        threading.Thread(target=self._echo, daemon=True).start()

    def _echo(self) -> None:
        for line in self.proc.stdout:
            print(line, end='', flush=True)
            if 'active: listening' in line:
                self.active.set()
            elif 'configure failed' in line or 'activate failed' in line:
                self.failed.set()
        self.failed.set()  # the process ended

    def wait_started(self) -> bool:
        """Wait until the node is active (True) or failed or exited (False)."""
        while not (self.active.is_set() or self.failed.is_set()):
            self.active.wait(0.2)
        return self.active.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop it as Ctrl-C does (it leaves within 3 s whatever it is doing); kill if not."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(args: argparse.Namespace) -> int:
    """Start the three nodes; return 1 with a hint naming --random-weights if loading fails."""
    import rclpy
    from rclpy.parameter import Parameter

    from .core.errors import SapiensError
    from .ros.executors import make_executor
    from .ros.launch_support import PROFILE_VAR, shipped_profile
    from .ros.monitor import Monitor
    from .ros.sample_camera import check_source, SampleCamera
    from .ros.spin import ignore_stop_signals, restore_signals, STOP_TIMEOUT_S

    try:  # a wrong --source fails now, not after the models have loaded
        bag = check_source(args.source, args.topic)
        input_size = _input_size(args.input_size, args.random_weights)
    except (SapiensError, ValueError) as exc:
        print(f'demo: {exc}', flush=True)
        return 2

    os.environ.setdefault('RCUTILS_CONSOLE_OUTPUT_FORMAT', '[{severity}] [{name}]: {message}')
    profile = shipped_profile()
    if profile:  # frames of 512x512 and more between processes (docs/install.md)
        os.environ[PROFILE_VAR] = profile
    if args.random_weights:
        from .cli import NOISE_BANNER

        print(NOISE_BANNER, flush=True)
    if bag is not None:
        print(f'demo: {bag.describe(args.source)}', flush=True)
    rgbd = bag is not None and bool(bag.depth)
    if rgbd:  # an RGB-D bag: the node pairs its depth
        print(f'demo: RGB-D bag: colour {bag.image}, depth {bag.depth}, camera_info '
              f'{bag.camera_info or "(synthesised)"}', flush=True)
    on_main = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, _interrupt) if on_main else None
    node, nodes, spinner, context = None, [], None, None
    stopping = threading.Event()
    try:
        node = NodeProcess(_node_command(args, input_size, rgbd))
        if not node.wait_started():
            hint = ('' if args.random_weights else
                    ' The Sapiens2 weights could not be loaded (see the error above). To see the '
                    'graph work without them, run: sapiens-ros demo --random-weights')
            print(f'demo: the perception node failed to configure.{hint}', flush=True)
            return 1
        context = rclpy.Context()
        rclpy.init(context=context)
        executor = make_executor(True, context=context)
        nodes.append(SampleCamera(namespace='demo', context=context, parameter_overrides=[
            Parameter('source', value=args.source), Parameter('topic', value=args.topic),
            Parameter('rate', value=args.rate)]))
        nodes.append(Monitor(namespace='demo', context=context, parameter_overrides=[
            Parameter('output_dir', value=args.output_dir),
            Parameter('tasks', value=args.tasks)]))
        for n in nodes:
            executor.add_node(n)
        spinner = threading.Thread(target=_spin, args=(executor, stopping), daemon=True)
        spinner.start()
        print(f'demo: running (overlays in {args.output_dir}/); Ctrl+C to stop', flush=True)
        end = time.monotonic() + args.duration if args.duration > 0 else None
        try:
            while spinner.is_alive() and node.proc.poll() is None and \
                    (end is None or time.monotonic() < end):
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        return 0
    except KeyboardInterrupt:  # Ctrl-C while the models load
        return 0
    finally:
        previous = ignore_stop_signals()  # a second Ctrl-C must not cut the teardown short
        stopping.set()
        if node is not None:
            node.stop()
        callbacks_done = True
        if spinner is not None:
            executor.shutdown(timeout_sec=STOP_TIMEOUT_S)
            spinner.join(STOP_TIMEOUT_S)
            callbacks_done = not spinner.is_alive()
        if callbacks_done:  # never destroy nodes under a callback still running
            for n in reversed(nodes):
                n.destroy_node()
        if context is not None:
            rclpy.try_shutdown(context=context)
        args.abandoned_threads = not callbacks_done  # the CLI then exits without them
        restore_signals(previous)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
