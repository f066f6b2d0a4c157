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
ROS-free Sapiens2 inference core: loading, pre/post-processing, backends seam, pipeline.

Nothing in this package imports rclpy.
"""

from .errors import (CheckpointMismatchError, FrameError, InputSizeError, SapiensError,
                     UnknownTaskError, WeightsNotFoundError)
from .letterbox import Letterbox
from .loading import load_model, resolve_sources
from .metadata import keypoint_info, seg_class_info
from .pipeline import FrameResult, Pipeline, PipelineConfig
from .registry import hub_id, parse_tasks, PERCEPTION_TASKS, TASKS

__all__ = [
    'CheckpointMismatchError', 'FrameError', 'FrameResult', 'InputSizeError', 'Letterbox',
    'PERCEPTION_TASKS', 'Pipeline', 'PipelineConfig', 'SapiensError', 'TASKS',
    'UnknownTaskError', 'WeightsNotFoundError', 'hub_id', 'keypoint_info', 'load_model',
    'parse_tasks', 'resolve_sources', 'seg_class_info',
]
