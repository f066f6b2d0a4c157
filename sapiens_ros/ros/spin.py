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
Run one node as a program: init, spin until Ctrl-C, SIGTERM or its parent's exit, then leave fast.

The stop must not depend on the CPU load: ``ros2 launch`` escalates to SIGTERM 5 s after its
SIGINT, and a supervisor (``docker stop``, systemd) to SIGKILL. So the teardown does a bounded
amount of work, abandons in-flight inference at once and leaves with ``os._exit``, and a watchdog
ends the process :data:`EXIT_DEADLINE_S` after the stop began whatever is still running.

SIGINT and SIGTERM are this module's, not rclpy's: rclpy's handlers would invalidate the context
at once, while a node's threads may still be publishing ("publisher's context is invalid"). Here
a signal only marks the stop; the node is told first and its threads leave, then it is destroyed
and only then is rclpy shut down.

What :func:`run_node` expects from a node (all optional):

* ``begin_shutdown()``: called first, with the context still valid; must return at once: take no
  new frame, publish nothing from now on (a result in flight is dropped and counted), release no
  resource yet.
* ``shutdown_worker(timeout) -> bool``: stop the worker threads within ``timeout`` seconds
  (:data:`WORKER_GRACE_S`), abandoning a frame still in inference; False when a thread is left.
* ``destroy_node()``: as usual (the monitor prints its summary there).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
import logging
import os
import select
import signal
import sys
import threading
import time
import traceback

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args

from .executors import make_executor
from .launch_support import START_FAILED
from ..core.errors import SapiensError

try:
    from rclpy._rclpy_pybind11 import RCLError
except ImportError:  # pragma: no cover - Humble's rclpy names its extension module alike
    RCLError = RuntimeError

#: Seconds ``sapiens-ros demo``'s own teardown waits for a node's worker threads.
STOP_TIMEOUT_S = 2.0
#: Seconds :func:`run_node` gives ``shutdown_worker``: enough for threads to leave their loops,
#: not to finish an inference, whose result would be dropped anyway. A CPU inference cannot be
#: interrupted: its thread is abandoned and the process leaves without it.
WORKER_GRACE_S = 0.5
#: The process exits at most this many seconds after its teardown began, whatever is still
#: running (a model loading in a callback, a DDS call slowed by a busy CPU): inside the 5 s after
#: which ``ros2 launch`` escalates, with room for the signal's delivery and the exit itself.
EXIT_DEADLINE_S = 3.0
#: Seconds between two looks at the stop flag while spinning (a signal handler cannot wake an
#: executor that waits in C).
SPIN_PERIOD_S = 0.1
#: Set to 1 to keep a node running when the process that started it exits (e.g. ``nohup``).
KEEP_WITHOUT_PARENT_VAR = 'SAPIENS_ROS_KEEP_WITHOUT_PARENT'

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_log = logging.getLogger('sapiens_ros.spin')


def ignore_stop_signals() -> dict:
    """
    Ignore further SIGINT/SIGTERM while a process tears down; return the replaced handlers.

    Ctrl-C in a terminal signals the whole process group and ``ros2 launch`` forwards one more
    SIGINT (then SIGTERM): a second signal must not interrupt the teardown with a traceback.
    """
    previous = {}
    for sig in _STOP_SIGNALS:
        try:
            previous[sig] = signal.signal(sig, signal.SIG_IGN)
        except ValueError:  # not the main thread: the caller's teardown is not signal-driven
            break
    return previous


def restore_signals(previous: dict) -> None:
    """Put back the handlers :func:`ignore_stop_signals` replaced."""
    for sig, handler in previous.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def exit_now(code: int = 0) -> None:
    """Flush and leave at once, without interpreter finalisation (abandoned threads stay put)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _say(text: str) -> None:
    """Write one line to stderr (rosout may be gone once a signal shut the context down)."""
    try:
        print(f'[sapiens_ros] {text}', file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def watch_parent(parent: int | None = None) -> threading.Thread | None:
    """
    Stop this process, as SIGTERM does, when ``parent`` (default: its starter) exits.

    ``ros2 launch`` that gets SIGTERM (``docker stop``, systemd, ``timeout``) or SIGKILL dies
    without stopping its nodes, which would keep running under PID 1. The watch is on the parent
    process (a pidfd, else polling ``getppid``), not its thread as ``PR_SET_PDEATHSIG`` would be:
    a launcher whose spawning thread ends keeps its nodes. Off when :data:`KEEP_WITHOUT_PARENT_VAR`
    is 1; returns the watching thread, or None.
    """
    if os.environ.get(KEEP_WITHOUT_PARENT_VAR, '') in ('1', 'true'):
        return None
    parent = os.getppid() if parent is None else parent
    if parent <= 0:  # no parent in this PID namespace
        return None
    try:
        pidfd = os.pidfd_open(parent)
    except (AttributeError, OSError):  # Python < 3.9, Linux < 5.3, or already gone
        pidfd = None
    thread = threading.Thread(target=_wait_for_parent, args=(parent, pidfd),
                              name='sapiens_parent_watch', daemon=True)
    thread.start()
    return thread


def _wait_for_parent(parent: int, pidfd: int | None) -> None:
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll()  # readable once the parent has exited
        os.close(pidfd)
    else:
        while os.getppid() == parent:
            time.sleep(0.25)
    _say(f'the process that started this one (pid {parent}) exited: stopping')
    os.kill(os.getpid(), signal.SIGTERM)  # the process's own handler: a SIGTERM's teardown


def arm_exit_deadline(code: int, seconds: float = EXIT_DEADLINE_S) -> threading.Event:
    """
    Exit with ``code`` ``seconds`` from now unless the returned event is set first.

    A watchdog thread does it; SIGALRM (default action: end the process) one second later is the
    backstop should no thread get to run.
    """
    done = threading.Event()

    def watchdog() -> None:
        if not done.wait(seconds):
            _say(f'teardown still running after {seconds:.1f} s: leaving now')
            exit_now(code)

    threading.Thread(target=watchdog, name='sapiens_exit_deadline', daemon=True).start()
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, seconds + 1.0)
    return done


class StopSignals:
    """
    SIGINT/SIGTERM handlers that mark the stop (the spin loop sees it within SPIN_PERIOD_S).

    Before the node spins (init, construction) the first signal raises KeyboardInterrupt, as
    Python's default handler does; otherwise a signal only sets :attr:`received`.
    """

    def __init__(self) -> None:
        self.received: int | None = None
        self.spinning = False

    def install(self) -> None:
        """Take SIGINT and SIGTERM (main thread only)."""
        for sig in _STOP_SIGNALS:
            signal.signal(sig, self)

    def __call__(self, signum: int, frame) -> None:
        """Mark the stop; interrupt a start that has not reached the spin loop yet."""
        first = self.received is None
        if first:
            self.received = signum
        if first and not self.spinning:
            raise KeyboardInterrupt


def program_args(argv: list[str] | None, prog: str, description: str,
                 parameters: Iterable[tuple[str, object, str]], topics: str,
                 options: Iterable[tuple[str, str]] = ()) -> argparse.Namespace:
    """
    Parse a node program's own options (the ROS arguments left out); ``--help`` lists them.

    ``parameters`` are ``(name, default, description)``, printed with how to set them;
    ``options`` are extra ``--flag`` switches ``(flag, help)``. Unknown options exit with
    status 2 naming them, as argparse does; ``--help`` exits 0.
    """
    argv = sys.argv if argv is None else argv
    listed = '\n'.join(f'  {name} (default {default!r}): {text}'
                       for name, default, text in parameters)
    parser = argparse.ArgumentParser(
        prog=f'ros2 run sapiens_ros {prog}', description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage='%(prog)s [options] [--ros-args -p NAME:=VALUE ... -r TOPIC:=NEW ...]',
        epilog=f'parameters (--ros-args -p NAME:=VALUE, or --params-file FILE.yaml):\n'
               f'{listed}\n\ntopics (--ros-args -r TOPIC:=NEW): {topics}')
    for flag, text in options:
        parser.add_argument(flag, action='store_true', help=text)
    try:
        own = remove_ros_args(argv)[1:]
    except RCLError as exc:  # a parameters file rcl cannot parse, a bad --ros-args
        print(f'error: cannot start: {exc}', file=sys.stderr, flush=True)
        sys.exit(START_FAILED)
    return parser.parse_args(own)


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, *,
             multithreaded: bool = False, stop_timeout: float = WORKER_GRACE_S) -> None:
    """
    Spin the node ``make_node()`` builds until it is stopped, then exit: never returns.

    Ctrl-C, SIGTERM, an external shutdown or the exit of the process that started it (see
    :func:`watch_parent`) stop it. The teardown ignores further stop signals, calls the node's
    ``begin_shutdown()``, gives its ``shutdown_worker(timeout)`` ``stop_timeout`` seconds,
    destroys the node, shuts rclpy down and leaves with ``os._exit``: status 0 on a stop, 2 for
    a bad parameter (one line), 1 with the traceback for anything else. Whatever still runs
    :data:`EXIT_DEADLINE_S` after the stop began (an inference, a model loading in a callback)
    is abandoned: the process leaves then.
    """
    stop = StopSignals()
    stop.install()
    code, node, executor = 0, None, None
    try:
        try:
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        except RCLError as exc:  # a parameters file rcl cannot parse, a bad --ros-args
            raise SapiensError(f'cannot start: {exc}') from None
        watch_parent()
        executor = make_executor(multithreaded)
        node = make_node()
        executor.add_node(node)
        stop.spinning = True
        while stop.received is None and executor.context.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SapiensError as exc:  # a bad parameter at start-up: one line, no traceback
        print(f'error: {exc}', file=sys.stderr, flush=True)
        code = START_FAILED
    except Exception:  # noqa: BLE001 - a bug: show it, then the same bounded teardown
        traceback.print_exc()
        code = 1
    finish(executor, [] if node is None else [node], code, stop_timeout=stop_timeout)


def finish(executor, nodes: list[Node], code: int = 0, *, context=None,
           stop_timeout: float = WORKER_GRACE_S) -> None:
    """
    Stop ``nodes`` and exit with ``code`` within :data:`EXIT_DEADLINE_S`: never returns.

    The bounded teardown of :func:`run_node`, for a program that spins several nodes itself
    (``sapiens-ros demo``): every node's ``begin_shutdown()`` first, then its
    ``shutdown_worker(stop_timeout)``, then destroy them, shut ``context`` down, ``os._exit``.
    """
    ignore_stop_signals()
    arm_exit_deadline(code)
    try:
        for node in nodes:
            begin = getattr(node, 'begin_shutdown', None)
            if begin is not None:
                begin()
        for node in nodes:
            stop = getattr(node, 'shutdown_worker', None)
            if stop is not None:
                stop(stop_timeout)
        for node in reversed(nodes):
            if executor is not None:
                executor.remove_node(node)
            node.destroy_node()
        if executor is not None:
            executor.shutdown(timeout_sec=0)
        rclpy.try_shutdown(context=context)
    except Exception:  # noqa: BLE001 - the process leaves anyway: say what went wrong
        traceback.print_exc()
    exit_now(code)
