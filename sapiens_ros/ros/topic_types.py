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

"""The message type of every output topic, and of the optional ones whose package imports."""

from __future__ import annotations

from collections.abc import Collection

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseArray
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from .topics import COMPRESSED_OUTPUTS, DETECTIONS_OUTPUT, LABEL_INFO_TOPIC, OPTIONAL_OUTPUTS
from .vision_messages import Detection2DArray

#: Message type of every topic suffix (the optional outputs are in :func:`optional_outputs`).
TOPIC_TYPES: dict[str, type] = {
    'pose/keypoints': PointCloud2, 'pose/persons': PointCloud2, 'pose/markers': MarkerArray,
    'pose/keypoint_info': String, 'pose/overlay': Image, 'seg/labels': Image,
    'seg/overlay': Image, 'matting/alpha': Image,
    'seg/label_info_json': String, 'normal/image': Image, 'normal/overlay': Image,
    'pointmap/points': PointCloud2, 'pointmap/depth': Image, 'pointmap/camera_info': CameraInfo,
    'diagnostics': DiagnosticArray,
    'people/poses': PoseArray, 'people/ids': String,
    **{s: CompressedImage for s in COMPRESSED_OUTPUTS},
}

#: Type of each optional output; None where its package does not import.
_OPTIONAL_TYPES: dict[str, type | None] = {DETECTIONS_OUTPUT: Detection2DArray}


def optional_outputs(tasks: Collection[str]) -> dict[str, type]:
    """Return the optional outputs of ``tasks`` whose package imports: suffix -> type."""
    return {s: _OPTIONAL_TYPES[s] for s, task in OPTIONAL_OUTPUTS.items()
            if task in tasks and _OPTIONAL_TYPES[s] is not None}


def type_name(msg_type: type) -> str:
    """ROS type name of an rclpy message class: ``sensor_msgs/msg/Image``."""
    return f"{msg_type.__module__.split('.')[0]}/msg/{msg_type.__name__}"


#: ROS type name of every topic suffix a node or a replay writes, the optional packages' too
#: (named, so that a bag is read right where the package is not installed).
OUTPUT_TYPE_NAMES: dict[str, str] = {
    **{suffix: type_name(t) for suffix, t in TOPIC_TYPES.items()},
    DETECTIONS_OUTPUT: 'vision_msgs/msg/Detection2DArray',
    LABEL_INFO_TOPIC: 'vision_msgs/msg/LabelInfo',
}
