"""Run one node as a program: init, spin until Ctrl-C or shutdown, tear down (Humble-safe)."""

from __future__ import annotations

from collections.abc import Callable

import rclpy
from rclpy.executors import (ExternalShutdownException, MultiThreadedExecutor,
                             SingleThreadedExecutor)
from rclpy.node import Node


def run_node(make_node: Callable[[], Node], args: list[str] | None = None, *,
             multithreaded: bool = False) -> None:
    """
    Spin the node ``make_node()`` builds until Ctrl-C or an external shutdown.

    Uses ``rclpy.init`` with try/finally (``with rclpy.init()`` is Kilted-only). A node with a
    ``shutdown_worker()`` method has it joined before the node is destroyed.
    """
    rclpy.init(args=args)
    node = None
    executor = MultiThreadedExecutor() if multithreaded else SingleThreadedExecutor()
    try:
        node = make_node()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if node is not None:
            stop = getattr(node, 'shutdown_worker', None)
            if stop is not None:
                stop()
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown()
        rclpy.try_shutdown()
