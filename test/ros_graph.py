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

"""A small harness for ROS tests: one Context per test, an executor thread joined at close."""

from __future__ import annotations

import contextlib
import sys
import threading
import time

import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from ros_fixtures import session_domain_id, TEST_INPUT_SIZE, tiny_model_dir
from sapiens_ros.ros.executors import make_executor


@contextlib.contextmanager
def switching_threads_often(interval: float = 1e-6):
    """Let the interpreter switch threads every ``interval`` s: races show in a few cycles."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def cloud_array(msg):
    """Return a ``PointCloud2``'s points as a structured ``(height, width)`` array (a view)."""
    import numpy as np

    kinds = {7: '<f4', 5: '<i4', 6: '<u4'}
    dtype = np.dtype({'names': [f.name for f in msg.fields],
                      'formats': [kinds[f.datatype] for f in msg.fields],
                      'offsets': [f.offset for f in msg.fields], 'itemsize': msg.point_step})
    return np.frombuffer(msg.data, dtype).reshape(msg.height, msg.width)


def qos(reliable: bool = True, depth: int = 10, latched: bool = False) -> QoSProfile:
    """Build a QoS profile for test publishers and subscribers."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE if reliable
                      else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
                      else DurabilityPolicy.VOLATILE)


class Graph:
    """Owns a Context, a tester node and a spinning multi-threaded executor (the node's own)."""

    def __init__(self) -> None:
        import torch

        self._torch_threads = torch.get_num_threads()
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=session_domain_id())
        self.tester = rclpy.create_node('tester', context=self.context)
        self.executor = make_executor(True, num_threads=4, context=self.context)
        self.executor.add_node(self.tester)
        self.nodes = [self.tester]
        self.received: dict[str, list] = {}
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def perception(self, remap: dict | None = None, **params):
        """
        Start a PerceptionNode on the tiny checkpoints (test input size) with ``params``.

        ``remap`` maps the node's topic names to others, as ``-r from:=to`` does.
        """
        from sapiens_ros.ros.perception_node import PerceptionNode

        # One torch thread: the node shares the CPU with the tester (and other test processes);
        # oversubscribed OpenMP threads make the tiny models ~30x slower.
        height, width = TEST_INPUT_SIZE
        values = {'model_dir': str(tiny_model_dir()), 'input_size': f'{width}x{height}',
                  'cpu_threads': 1}
        values.update(params)
        args = [a for old, new in (remap or {}).items() for a in ('-r', f'{old}:={new}')]
        node = PerceptionNode(context=self.context, parameter_overrides=[
            Parameter(k, value=v) for k, v in values.items()],
            cli_args=['--ros-args', *args] if args else None)
        self.add(node)
        if values.get('autostart', True):  # configure runs from the executor: wait for it
            assert node.autostarted.wait(120), 'autostart did not finish'
        return node

    def add(self, node):
        """Spin ``node`` on the executor."""
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def collect(self, msg_type, topic: str, profile: QoSProfile | None = None) -> list:
        """Subscribe the tester to ``topic`` and return the list messages are appended to."""
        box = self.received.setdefault(topic, [])
        self.tester.create_subscription(msg_type, topic, box.append, profile or qos())
        return box

    def publisher(self, msg_type, topic: str, profile: QoSProfile | None = None):
        """Create a tester publisher."""
        return self.tester.create_publisher(msg_type, topic, profile or qos())

    @staticmethod
    def wait(pred, timeout: float = 10.0, period: float = 0.02) -> bool:
        """Poll ``pred`` until it is true or ``timeout`` passes."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred():
                return True
            time.sleep(period)
        return bool(pred())

    def wait_for_subscribers(self, pub, count: int = 1, timeout: float = 5.0) -> None:
        """Wait until ``pub`` is matched (discovery), so the first message is not lost."""
        assert self.wait(lambda: pub.get_subscription_count() >= count, timeout), \
            f'no subscriber matched {pub.topic_name}'

    def close(self) -> None:
        """Stop workers, join the spin thread, destroy the nodes, shut the context down."""
        for node in self.nodes:
            stop = getattr(node, 'shutdown_worker', None)
            if stop:
                stop()
        self.executor.shutdown()
        self._thread.join(10)
        for node in self.nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        import torch

        torch.set_num_threads(self._torch_threads)  # the node's cpu_threads is process-wide
