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
Executors that survive entities destroyed by another thread while they build their wait set.

rclpy's executor lists a node's entities, then adds each to a wait set. A publisher or
subscription destroyed by another thread in between (a lifecycle transition served in a
``MultiThreadedExecutor`` pool thread, a body's topics dropped by the step worker) makes it
raise ``InvalidHandle`` in the spinning thread (ros2/rclpy#1284), which stops the node. The
entity has already left the node's lists when it is destroyed, so building the wait set again
is all it takes: these executors do that, a bounded number of times in a row.
"""

from __future__ import annotations

from rclpy.exceptions import InvalidHandle
from rclpy.executors import Executor, MultiThreadedExecutor, SingleThreadedExecutor

#: Wait-set rebuilds in a row before the error is raised (each needs another thread to destroy
#: another entity in the same microseconds: a handful is already rare).
MAX_REBUILDS = 100


class _RebuildOnInvalidHandle:

    def wait_for_ready_callbacks(self, *args, **kwargs):
        """As rclpy's, building the wait set again when an entity was destroyed meanwhile."""
        for _ in range(MAX_REBUILDS):
            try:
                return super().wait_for_ready_callbacks(*args, **kwargs)
            except InvalidHandle:
                pass  # the generator that raised is finished: rclpy starts a new one next call
        return super().wait_for_ready_callbacks(*args, **kwargs)


class RobustSingleThreadedExecutor(_RebuildOnInvalidHandle, SingleThreadedExecutor):
    """``SingleThreadedExecutor`` that rebuilds its wait set after a concurrent destroy."""


class RobustMultiThreadedExecutor(_RebuildOnInvalidHandle, MultiThreadedExecutor):
    """``MultiThreadedExecutor`` that rebuilds its wait set after a concurrent destroy."""


def make_executor(multithreaded: bool = False, **kwargs) -> Executor:
    """Return a robust single- or multi-threaded executor; ``kwargs`` go to its constructor."""
    cls = RobustMultiThreadedExecutor if multithreaded else RobustSingleThreadedExecutor
    return cls(**kwargs)


__all__ = ['MAX_REBUILDS', 'RobustMultiThreadedExecutor', 'RobustSingleThreadedExecutor',
           'make_executor']
