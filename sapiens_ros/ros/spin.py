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

"""Run one node as a program: init, spin until Ctrl-C or SIGTERM, tear down within a deadline."""

from __future__ import annotations

from collections.abc import Callable
import logging
import os
import signal
import sys

import rclpy
from rclpy.executors import (ExternalShutdownException, MultiThreadedExecutor,
                             SingleThreadedExecutor)
from rclpy.node import Node

from ..core.errors import SapiensError

#: Seconds the teardown waits for a node's worker threads before abandoning them. ``ros2 launch``
#: escalates to SIGTERM 5 s after its SIGINT, so the whole teardown must fit well inside that.
STOP_TIMEOUT_S = 2.0

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, *,
             multithreaded: bool = False, stop_timeout: float = STOP_TIMEOUT_S) -> None:
    """
    Spin the node ``make_node()`` builds until Ctrl-C, SIGTERM or an external shutdown.

    The teardown ignores further stop signals, gives a node's ``shutdown_worker(timeout)`` at most
    ``stop_timeout`` seconds, and exits with status 0. A worker still busy then (a CPU inference
    cannot be interrupted) is abandoned: the process leaves without waiting for it.
    Uses ``rclpy.init`` with try/finally (``with rclpy.init()`` is Kilted-only).
    """
    rclpy.init(args=args)  # rclpy's handlers turn SIGINT and SIGTERM into a context shutdown
    node = None
    executor = MultiThreadedExecutor() if multithreaded else SingleThreadedExecutor()
    stopped, code = True, 0
    try:
        node = make_node()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SapiensError as exc:  # a bad parameter at start-up: one line, no traceback
        print(f'error: {exc}', file=sys.stderr, flush=True)
        code = 2
    finally:
        ignore_stop_signals()
        if node is not None:
            stop = getattr(node, 'shutdown_worker', None)
            if stop is not None:
                stopped = stop(stop_timeout) is not False
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown(timeout_sec=stop_timeout)
        rclpy.try_shutdown()
        ignore_stop_signals()  # rclpy restores the handlers it replaced at shutdown
    if not stopped:
        exit_now(code)
    if code:
        raise SystemExit(code)
