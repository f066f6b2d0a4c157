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
One pipeline call's results while they are still on the device, typed per head.

:class:`DeviceResults` is what the heads' decoders fill and what the finiteness check, the
renderer and the single host copy read, so each step's inputs are named fields, not string keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class DevicePointmap:
    """One frame's pointmap on the device: the map, its kept points and its metric scale."""

    xyz: torch.Tensor  # (Hs, Ws, 3) metres on the strided image grid
    points: torch.Tensor  # (M, 3) the kept points (finite; seg foreground when masked)
    colors: torch.Tensor  # (M, 3) uint8 RGB of the kept points
    labels: torch.Tensor | None  # (M,) seg labels of the kept points, None without seg
    pixels: torch.Tensor  # (M, 2) image pixel (x, y) of each kept point
    scale: torch.Tensor | float  # metres per pointmap unit
    scale_source: str  # 'calibrated', 'predicted' or 'none'
    stride: int

    def render_inputs(self) -> dict:
        """Return the mapping :func:`~..processing.render.render_tensors` reads."""
        return {'xyz': self.xyz, 'points': self.points, 'colors': self.colors,
                'labels': self.labels, 'stride': self.stride}


@dataclass
class DevicePose:
    """Pose over the frames it ran on: boxes on the host, keypoints batched on the device."""

    frames: list[int]  # the frames pose ran on, in batch order
    counts: list[int]  # persons (boxes) per frame of ``frames``
    boxes: dict[int, np.ndarray]  # frame -> (P, 4) xyxy boxes pose ran on
    box_scores: dict[int, np.ndarray]  # frame -> (P,)
    keypoints: torch.Tensor | None = None  # (sum(counts), K, 2) image pixels; None: no person
    keypoint_scores: torch.Tensor | None = None  # (sum(counts), K)
    keypoints_xyz: dict[int, torch.Tensor] = field(default_factory=dict)  # frame -> (P, K, 3)


@dataclass
class DeviceResults:
    """Every head's outputs of one call, keyed by frame index within the call."""

    labels: dict[int, torch.Tensor] = field(default_factory=dict)  # (H, W) seg labels
    seg_boxes: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    normals: dict[int, torch.Tensor] = field(default_factory=dict)  # (H, W, 3) unit normals
    pointmap: dict[int, DevicePointmap] = field(default_factory=dict)
    matting: dict[int, torch.Tensor] = field(default_factory=dict)  # (H, W) alpha
    embedding: dict[int, torch.Tensor] = field(default_factory=dict)  # (D,) CLS token
    pose: DevicePose | None = None
    rendered: dict[int, dict] = field(default_factory=dict)  # render.render_tensors per frame

    def finite_flags(self, n: int) -> tuple[list[str], list[list[bool]]] | None:
        """
        Per frame, whether each head's outputs are all finite: reduced on the device, one copy.

        Covers what ``FrameResult.non_finite`` would otherwise check on the host arrays; a
        frame a head did not run on counts as finite for it. None when no checked head ran.
        """
        per_frame: dict[str, dict[int, tuple]] = {}
        pose = self.pose
        if pose is not None and pose.keypoints is not None:
            chunks = zip(pose.keypoints.split(pose.counts),
                         pose.keypoint_scores.split(pose.counts), strict=True)
            per_frame['pose keypoints'] = dict(zip(pose.frames, chunks, strict=True))
        if self.normals:
            per_frame['normals'] = {i: (t,) for i, t in self.normals.items()}
        if self.pointmap:
            per_frame['pointmap'] = {i: (pm.xyz,) for i, pm in self.pointmap.items()}
        if not per_frame:
            return None
        # The sum of finite values stays finite (unit normals, metres, pixels: far from
        # float32's range) and one NaN/inf makes it non-finite: one read pass, no mask.
        sums = [torch.stack([t.sum() for t in tensors])
                for items in per_frame.values() for tensors in items.values()]
        ok = iter(torch.stack([torch.isfinite(s).all() for s in sums]).tolist())
        flags = {name: {i: next(ok) for i in items} for name, items in per_frame.items()}
        return list(per_frame), [[flags[name].get(i, True) for name in per_frame]
                                 for i in range(n)]
