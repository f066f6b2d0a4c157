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
Every QoS profile the package's publishers and subscriptions use, and why it is that one.

The node's inputs and outputs take their depth (and the inputs their reliability) from
parameters: :func:`input_qos` and :func:`output_qos` turn those into profiles. The topic
contract in docs/topics.md lists the QoS of each topic.
"""

from __future__ import annotations

from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data,
                       qos_profile_system_default, QoSProfile, ReliabilityPolicy)

#: Camera streams as drivers publish them (rclpy's sensor-data profile: best effort, keep last
#: 5): the sample camera's default, what the monitor subscribes the image with.
SENSOR_QOS: QoSProfile = qos_profile_sensor_data

#: The sample camera with ``reliable``: reliable, volatile, keep last 5 (rclpy's for a depth 5).
RELIABLE_CAMERA_QOS = QoSProfile(depth=5)

#: The latched metadata topics (``*_info``, LabelInfo): reliable, transient local, keep last 1.
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: ``/diagnostics``: rclpy's system default, as ``diagnostic_updater`` publishes it.
DIAGNOSTICS_QOS: QoSProfile = qos_profile_system_default

#: REP-155 bodies, as ``hri_body_detect`` publishes them: reliable, volatile, keep last 1.
HRI_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                     reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)

#: REP-155 per-person values (``body_id``, ``anonymous``, ``location_confidence``): latched,
#: so that a consumer that comes later gets the last value.
HRI_LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: REP-155 ``/humans/candidate_matches``: every match counts, keep last 50.
HRI_MATCHES_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=50,
                             reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.VOLATILE)

#: ``/tf``: tf2_ros's ``DynamicBroadcasterQoS``: reliable, volatile, keep last 100.
TF_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100,
                    reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def output_qos(depth: int) -> QoSProfile:
    """Return the node's outputs' profile: reliable, keep last ``depth`` (``output_depth``)."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE,
                      history=HistoryPolicy.KEEP_LAST)


def input_qos(depth: int, reliability: str) -> QoSProfile:
    """
    Return the node's inputs' profile: keep last ``depth`` (``input_depth``).

    ``reliability`` is ``input_reliability``: ``'reliable'``, else best effort (which matches
    both reliable and best-effort publishers).
    """
    policy = ReliabilityPolicy.RELIABLE if reliability == 'reliable' else \
        ReliabilityPolicy.BEST_EFFORT
    return QoSProfile(depth=depth, reliability=policy, history=HistoryPolicy.KEEP_LAST)
