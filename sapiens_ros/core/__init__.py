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
