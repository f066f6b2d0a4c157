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
Why an input topic delivers nothing: nobody publishes it, or it carries another type.

A misspelt remap (``camera:=/a/imgae``) or a side stream pointed at the wrong topic otherwise
looks like a camera that never sends. The answer names the topics of the expected type that do
exist, as ``ros2 topic list -t`` prints them.
"""

from __future__ import annotations

#: Most candidate topics named in one line.
MAX_CANDIDATES = 8


def type_name(msg_type) -> str:
    """Return a message class's ROS type name, ``sensor_msgs/msg/Image``."""
    module = msg_type.__module__.split('.')
    return f'{module[0]}/{module[1]}/{msg_type.__name__}'


def resolved(node, topic: str) -> str:
    """Return the fully qualified, remapped name of ``topic`` for ``node``."""
    try:
        return node.resolve_topic_name(topic)
    except AttributeError:  # pragma: no cover - rclpy without it
        return topic


def candidates(node, msg_type, exclude: str = '') -> str:
    """
    List the graph's published topics of ``msg_type`` (``ros2 topic list -t`` style), or none.

    The node's own outputs (its ``pose/detections`` for a missing ``detections``) and topics
    nobody publishes (another camera's input, waiting like this one) are left out.
    """
    wanted = type_name(msg_type)
    own = {name for name, _ in node.get_publisher_names_and_types_by_node(
        node.get_name(), node.get_namespace())}
    names = sorted(name for name, types in node.get_topic_names_and_types()
                   if wanted in types and name != exclude and name not in own
                   and node.count_publishers(name))
    if not names:
        return 'nobody publishes a topic of that type yet'
    more = f' and {len(names) - MAX_CANDIDATES} more' if len(names) > MAX_CANDIDATES else ''
    return ('topics of that type: ' + ', '.join(f'{n} [{wanted}]'
                                                for n in names[:MAX_CANDIDATES]) + more)


def topic_problem(node, topic: str, msg_type) -> str | None:
    """Say why ``topic`` (resolved) delivers no ``msg_type``; None when one publishes it."""
    wanted = type_name(msg_type)
    types = {info.topic_type for info in node.get_publishers_info_by_topic(topic)}
    if wanted in types:
        return None
    if types:
        return (f'{topic} carries {", ".join(sorted(types))}, not {wanted}; '
                f'{candidates(node, msg_type, topic)}')
    return f'nobody publishes {topic} ({wanted}); {candidates(node, msg_type, topic)}'


def existing_type_conflict(node, topic: str, msg_type) -> str | None:
    """
    Say why a subscription of ``msg_type`` on ``topic`` cannot be created in this process.

    Fast DDS refuses a second type on a topic one participant already uses (rcl then reports
    "invalid allocator"); the graph knows that topic's type beforehand.
    """
    wanted = type_name(msg_type)
    for name, types in node.get_topic_names_and_types():
        if name == topic and wanted not in types:
            return (f'{topic} carries {", ".join(types)}, not {wanted}; '
                    f'{candidates(node, msg_type, topic)}')
    return None
