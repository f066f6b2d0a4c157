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

"""Per-frame error records: a ``diagnostic_msgs/DiagnosticArray`` at the failed frame's stamp."""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from std_msgs.msg import Header


def error_record(header: Header, topic: str, index: int, time_ns: int, reason: str,
                 kind: str) -> DiagnosticArray:
    """Build the record of one frame that produced no outputs, naming the frame and reason."""
    stamp = f'{header.stamp.sec}.{header.stamp.nanosec:09d}'
    status = DiagnosticStatus(
        level=DiagnosticStatus.ERROR, name=f'sapiens_replay: {topic}',
        message=f'frame {index} of {topic} (stamp {stamp}) failed: {reason}',
        hardware_id=header.frame_id)
    values = {'topic': topic, 'frame_index': index, 'bag_time_ns': time_ns, 'stamp': stamp,
              'frame_id': header.frame_id, 'kind': kind, 'reason': reason}
    status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
    return DiagnosticArray(header=header, status=[status])


def record_values(msg) -> dict[str, str]:
    """Key/values of a deserialized error record (rosbags or rclpy message)."""
    if not msg.status:
        return {}
    return {kv.key: kv.value for kv in msg.status[0].values}
