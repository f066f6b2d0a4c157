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

"""Our executors keep spinning while other threads destroy entities (ros2/rclpy#1284)."""

import threading

import pytest
import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.executors import SingleThreadedExecutor
from ros_fixtures import session_domain_id
from ros_graph import Graph, qos, switching_threads_often
from sapiens_ros.ros import executors
from std_msgs.msg import String


@pytest.mark.parametrize('multithreaded', [False, True])
def test_spins_on_while_another_thread_destroys_entities(multithreaded):
    # As a lifecycle transition served in a pool thread does: publishers and subscriptions
    # (each with rclpy's default QoS event handlers) created and destroyed while it spins.
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=session_domain_id())
    node = rclpy.create_node('churn', context=context)
    executor = executors.make_executor(multithreaded, context=context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        with switching_threads_often():
            for i in range(150):
                pub = node.create_publisher(String, f'churn_{i % 3}', 1)
                sub = node.create_subscription(String, f'churn_{i % 3}', lambda _: None, 1)
                node.destroy_publisher(pub)
                node.destroy_subscription(sub)
        assert spinner.is_alive(), 'the executor thread died'
        got = []
        node.create_subscription(String, 'after', got.append, qos())
        pub = node.create_publisher(String, 'after', qos())
        assert Graph.wait(lambda: pub.get_subscription_count() == 1)
        pub.publish(String(data='still spinning'))
        assert Graph.wait(lambda: got) and got[0].data == 'still spinning'
    finally:
        executor.shutdown()
        spinner.join(10)
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def test_a_handle_that_stays_invalid_is_raised_after_a_bounded_number_of_rebuilds():
    calls = []

    class Broken(SingleThreadedExecutor):  # stands in for rclpy's wait-set building

        def wait_for_ready_callbacks(self, *args, **kwargs):
            calls.append(1)
            raise InvalidHandle('cannot use Destroyable because destruction was requested')

    class Robust(executors._RebuildOnInvalidHandle, Broken):
        pass

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=session_domain_id())
    try:
        with pytest.raises(InvalidHandle):
            Robust(context=context).spin_once(timeout_sec=0)
        assert len(calls) == executors.MAX_REBUILDS + 1
    finally:
        rclpy.try_shutdown(context=context)
