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
People, not frames: one object per camera holding tracker, smoothers and depth-scale state.

The node and replay call :meth:`PeopleState.update` once per frame of a camera, in time order,
with the pipeline's :class:`~sapiens_ros.core.pipeline.pipeline.FrameResult` and, when a depth
image is synchronised with the frame, the depth and camera_info's K.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
import logging

import numpy as np
import torch

from .depth import depth_to_metres, DepthScale, fit_depth_scale, keypoints_xyz, torso_poses
from .smoothing import OneEuroConfig, OneEuroFilter
from .tracking import IdAllocator, PersonTracker, TrackerConfig, UNTRACKED
from ..pipeline.pipeline import FrameResult
from ..processing.hostbuf import host_copy

LOG = logging.getLogger(__name__)


@dataclass
class PeopleConfig:
    """Tracking, smoothing and RGB-D parameters of one camera."""

    tracker: TrackerConfig = field(default_factory=TrackerConfig)
    keypoint_filter: OneEuroConfig = field(default_factory=OneEuroConfig)  # pixels
    xyz_filter: OneEuroConfig = field(
        default_factory=lambda: OneEuroConfig(min_cutoff=1.0, beta=2.0))  # metres
    depth_window: int = 5  # depth pixels, median window at each keypoint
    min_score: float = 0.3  # keypoints scored lower get no XYZ (hidden: depth is what hides it)
    scale_time_constant: float = 0.5  # s, smoothing of the depth-fitted pointmap scale
    min_scale_points: int = 50  # foreground points with depth needed for a scale fit
    tracking: bool = True  # False: every row untracked (id -1), so nothing is smoothed
    device: str = 'cpu'


@dataclass
class People:
    """The tracked people of one frame; rows follow the pipeline's pose rows."""

    stamp: float
    ids: np.ndarray  # (P,) int64, tracking.UNTRACKED (-1) for untracked rows
    keypoints: np.ndarray  # (P, K, 2) raw image pixels
    smoothed: np.ndarray  # (P, K, 2) One-Euro filtered image pixels
    scores: np.ndarray  # (P, K)
    xyz: np.ndarray | None  # (P, K, 3) metres, filtered; NaN where unknown
    xyz_raw: np.ndarray | None  # (P, K, 3) metres as measured (depth) or predicted, unfiltered
    xyz_source: str  # 'depth', 'pointmap' or 'none'
    torso_position: np.ndarray  # (P, 3) metres, NaN without 3D
    torso_orientation: np.ndarray  # (P, 4) x/y/z/w quaternion, identity when unknown
    torso_valid: np.ndarray  # (P,) bool
    pointmap_scale: float | None  # multiply the pointmap XYZ by this for metres (depth fit)
    #: XYZ are measured (depth) or metric (pointmap calibrated by camera_info), not a guess
    xyz_metric: bool = False
    #: ids of every live track after this frame (seen within max_age), the rows' and others
    tracks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __len__(self) -> int:
        return int(self.ids.shape[0])


class PeopleState:
    """
    Per-camera state: ``update(result, stamp, depth=None, K=None) -> People``.

    ``ids``: the track id source; give the cameras of one process the same
    :class:`~sapiens_ros.core.people.tracking.IdAllocator` so that their ids never collide.
    """

    def __init__(self, config: PeopleConfig | None = None,
                 ids: IdAllocator | None = None) -> None:
        self.config = config or PeopleConfig()
        self.tracker = PersonTracker(self.config.tracker, ids)
        self.keypoint_filter = OneEuroFilter(self.config.keypoint_filter)
        self.xyz_filter = OneEuroFilter(self.config.xyz_filter)
        self.depth_scale = DepthScale(self.config.scale_time_constant)
        self.resets = 0
        self._stamp: float | None = None

    def reset(self) -> None:
        """Forget tracks, filters and the fitted scale (ids keep counting up)."""
        self.tracker.reset()
        self.keypoint_filter.reset()
        self.xyz_filter.reset()
        self.depth_scale.reset()
        self._stamp = None

    def diagnostics(self) -> dict[str, float | int | None]:
        """Numbers for the node's diagnostics."""
        return {'tracks': len(self.tracker), 'resets': self.resets,
                'depth_scale': self.depth_scale.scale, 'depth_scale_raw': self.depth_scale.raw,
                'depth_scale_variation': self.depth_scale.variation}

    def update(self, result: FrameResult, stamp: float,
               depth: np.ndarray | torch.Tensor | None = None, K: np.ndarray | None = None,
               depth_encoding: str = '16UC1') -> People:
        """
        Track, smooth and (with ``depth`` and ``K``) lift to metres one frame's people.

        ``depth`` is aligned to the colour camera, ``16UC1`` mm or ``32FC1`` m, any resolution.
        Without it, XYZ is the pipeline's pointmap XYZ (as before), when present. A result
        without pose (only seg/pointmap ran) still fits the pointmap scale and has no rows.
        """
        cfg = self.config
        if self._stamp is not None and stamp < self._stamp:
            LOG.warning('time jumped back %.3f s: people state reset (new ids follow)',
                        self._stamp - stamp)
            self.resets += 1
            self.reset()
        self._stamp = stamp
        depth_m = None
        if depth is not None and K is not None:
            depth_m = depth_to_metres(depth, depth_encoding, cfg.device)
        scale = self._fit_scale(result, depth_m, stamp)
        pose = result.pose
        if pose is None:  # no people this frame; the depth still calibrates the pointmap
            return _nobody(stamp, scale, self.tracker.ids.copy())
        if cfg.tracking:
            ids = self.tracker.update(pose.boxes, pose.keypoints, pose.scores, stamp,
                                      result.image_size)
        else:
            ids = np.full(len(pose.boxes), UNTRACKED, np.int64)
        smoothed = self.keypoint_filter(ids, pose.keypoints, stamp).astype(np.float32)

        xyz_raw, source, metric = None, 'none', False
        if depth_m is not None:
            xyz_raw = keypoints_xyz(depth_m, pose.keypoints, result.image_size, K,
                                    cfg.depth_window)
            if scale is not None and result.keypoints_xyz is not None:
                # depth holes: fall back to the depth-calibrated pointmap
                xyz_raw = np.where(np.isfinite(xyz_raw), xyz_raw,
                                   result.keypoints_xyz * np.float32(scale))
            source, metric = 'depth', True
        elif result.keypoints_xyz is not None:
            xyz_raw, source = result.keypoints_xyz, 'pointmap'
            metric = result.pointmap is not None and \
                result.pointmap.scale_source in ('calibrated', 'depth')
        xyz = None
        if xyz_raw is not None:
            xyz = np.where((pose.scores >= cfg.min_score)[..., None], xyz_raw, np.float32(np.nan))
            xyz = self.xyz_filter(ids, xyz, stamp).astype(np.float32)
            position, orientation, valid = torso_poses(xyz)
        else:
            position, orientation, valid = _no_torso(len(ids))
        tracks = self.tracker.ids.copy() if cfg.tracking else np.zeros(0, np.int64)
        return People(stamp, ids, pose.keypoints, smoothed, pose.scores, xyz, xyz_raw, source,
                      position, orientation, valid, scale, metric, tracks)

    def predict_boxes(self, stamp: float, image_size: tuple[int, int] | None = None,
                      current: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """
        Boxes where the live tracks are expected at ``stamp``: ``(ids (N,), boxes (N, 4))``.

        xyxy float32 image pixels (clipped to ``image_size`` ``(height, width)`` when given),
        for running pose on them without a seg forward; see
        :meth:`~sapiens_ros.core.people.tracking.PersonTracker.predict_boxes`. Empty without
        tracking.
        """
        if not self.config.tracking:
            return np.zeros(0, np.int64), np.zeros((0, 4), np.float32)
        return self.tracker.predict_boxes(stamp, image_size, current)

    def _fit_scale(self, result: FrameResult, depth_m: torch.Tensor | None,
                   stamp: float) -> float | None:
        """Fold this frame's depth fit of the pointmap scale in; the smoothed scale or None."""
        pm = result.pointmap
        if depth_m is None or pm is None or not len(pm.points):
            return None
        raw = fit_depth_scale(pm.points[:, 2], pm.pixels, depth_m, result.image_size,
                              self.config.min_scale_points)
        return self.depth_scale.update(raw, stamp)


def _no_torso(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.full((n, 3), np.nan, np.float32), np.tile(np.float32([0, 0, 0, 1]), (n, 1)),
            np.zeros(n, bool))


def _nobody(stamp: float, scale: float | None, tracks: np.ndarray) -> People:
    """Return the people of a frame without pose: no rows, the pointmap scale, the tracks."""
    empty = np.zeros((0, 0, 2), np.float32)
    return People(stamp, np.zeros(0, np.int64), empty, empty, np.zeros((0, 0), np.float32),
                  None, None, 'none', *_no_torso(0), scale, tracks=tracks)


def with_pointmap_scale(result: FrameResult, scale: float | None) -> FrameResult:
    """
    Return ``result`` with its pointmap (and pointmap keypoint XYZ) multiplied by ``scale``.

    ``scale`` is :attr:`People.pointmap_scale` (the depth-fitted factor); None or no pointmap
    returns ``result`` itself. The copy's ``pointmap.scale_source`` is ``'depth'``.
    """
    pm = result.pointmap
    if scale is None or pm is None:
        return result
    s = np.float32(scale)
    rendered = dict(result.rendered)  # the device-rendered cloud and depth scale too
    points = pm.points * s
    if 'cloud' in rendered:  # one message-ready copy, scaled in place; points stay its view
        cloud = rendered['cloud'] = host_copy(rendered['cloud'])
        for axis in 'xyz':
            cloud[axis] *= s
        points = cloud.view(np.float32).reshape(len(cloud), -1)[:, :3]
    if 'depth' in rendered:
        rendered['depth'] = host_copy(rendered['depth'])
        rendered['depth'] *= s
    pointmap = dataclasses.replace(pm, xyz=pm.xyz * s, points=points,
                                   scale=pm.scale / float(scale), scale_source='depth')
    xyz = None if result.keypoints_xyz is None else result.keypoints_xyz * s
    return dataclasses.replace(result, pointmap=pointmap, keypoints_xyz=xyz, rendered=rendered)


__all__ = ['People', 'PeopleConfig', 'PeopleState', 'with_pointmap_scale']
