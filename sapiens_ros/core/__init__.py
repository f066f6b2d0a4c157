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
ROS-free Sapiens2 inference core: models, processing, pipeline, people and media subpackages.

Nothing in this package imports rclpy.
"""

from __future__ import annotations

import importlib

#: Names this package hands on, and the submodule of each. Loaded on first use, so that light
#: modules (sizes, rates, errors) import without torch, e.g. in a ``ros2 launch`` process.
_EXPORTS = {
    'CheckpointMismatchError': 'errors', 'FrameError': 'errors', 'InputSizeError': 'errors',
    'SapiensError': 'errors', 'UnknownTaskError': 'errors', 'WeightsNotFoundError': 'errors',
    'Letterbox': 'processing.letterbox', 'load_model': 'models.loading',
    'resolve_sources': 'models.loading', 'keypoint_info': 'models.metadata',
    'seg_class_info': 'models.metadata', 'hub_id': 'models.registry',
    'parse_tasks': 'models.registry', 'PERCEPTION_TASKS': 'models.registry',
    'DEFAULT_TASKS': 'models.registry',
    'TASKS': 'models.registry', 'FrameResult': 'pipeline.pipeline',
    'Pipeline': 'pipeline.pipeline', 'PipelineConfig': 'pipeline.pipeline',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(f'.{_EXPORTS[name]}', __name__), name)
    globals()[name] = value
    return value
