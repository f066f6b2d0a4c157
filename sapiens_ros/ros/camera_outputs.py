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

"""One camera's outputs: its publishers, the latched metadata, which outputs someone wants."""

from __future__ import annotations

from collections.abc import Callable

from rclpy.qos import QoSProfile
from std_msgs.msg import Header, String

from .messages import info_messages
from .qos import LATCHED_QOS
from .topic_types import optional_outputs, TOPIC_TYPES
from .topics import COMPRESSED_OUTPUTS, INFO_TOPICS, LABEL_INFO_TOPIC, task_outputs
from .vision_messages import label_info_msg, LabelInfo, VISION_MSGS_ERROR


class CameraOutputs:
    """The publishers of one camera (``topic`` names a suffix in the camera's namespace)."""

    def __init__(self, node, name: str, topic: Callable[[str], str]) -> None:
        self.node = node
        self.name = name
        self.topic = topic
        self.pubs: dict = {}  # output suffix -> publisher
        self.info_pubs: dict = {}  # latched JSON metadata suffix -> publisher
        self.label_info = None  # vision_msgs/LabelInfo publisher (seg, when vision_msgs imports)

    def create(self, tasks: tuple[str, ...], out_qos: QoSProfile) -> None:
        """Create the output publishers of ``tasks`` (``<topic>/compressed`` too, info latched)."""
        compressed = {raw: c for c, raw in COMPRESSED_OUTPUTS.items()}
        for suffix in task_outputs(tasks):
            for name in (suffix, compressed.get(suffix)):
                if name is not None:  # <topic>/compressed only encoded when subscribed
                    self.pubs[name] = self.node.create_lifecycle_publisher(
                        TOPIC_TYPES[name], self.topic(name), out_qos)
        for suffix, msg_type in optional_outputs(tasks).items():  # built only when subscribed
            self.pubs[suffix] = self.node.create_lifecycle_publisher(
                msg_type, self.topic(suffix), out_qos)
        for task in tasks:
            if task in INFO_TOPICS:
                self.info_pubs[INFO_TOPICS[task]] = self.node.create_lifecycle_publisher(
                    String, self.topic(INFO_TOPICS[task]), LATCHED_QOS)
        if 'seg' in tasks and VISION_MSGS_ERROR is None:
            self.label_info = self.node.create_lifecycle_publisher(
                LabelInfo, self.topic(LABEL_INFO_TOPIC), LATCHED_QOS)

    def publish_info(self, tasks: tuple[str, ...], keypoint_format: str) -> None:
        """Publish the latched metadata topics (the JSON ones, and LabelInfo)."""
        for suffix, msg in info_messages(tasks, keypoint_format).items():
            self.info_pubs[suffix].publish(msg)
        if self.label_info is not None:
            self.label_info.publish(label_info_msg(Header(
                stamp=self.node.get_clock().now().to_msg(), frame_id=self.name)))

    def destroy(self) -> None:
        """Destroy every publisher (cleanup)."""
        destroy = getattr(self.node, 'destroy_lifecycle_publisher', self.node.destroy_publisher)
        for pub in [*self.pubs.values(), *self.info_pubs.values(), self.label_info]:
            if pub is not None:
                destroy(pub)
        self.pubs.clear()
        self.info_pubs.clear()
        self.label_info = None

    def wanted(self, forced: set[str], publish_all: bool = False) -> set[str]:
        """Return the outputs with a subscriber, plus the forced ones (all with publish_all)."""
        if publish_all:
            return set(self.pubs)
        subscribed = {s for s, pub in self.pubs.items() if pub.get_subscription_count() > 0}
        return subscribed | (forced & set(self.pubs))
