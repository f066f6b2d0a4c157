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
Other keypoint formats taken from the 308 Sapiens2 keypoints, by name.

Every format is a list of keypoint names. A name of the 308 set is that keypoint; ``neck`` in
the OpenPose and REP-155 formats is the mid-point of the shoulders (as OpenPose and ROS4HRI
define it, not the 308 set's own ``neck`` point), scored as the lower of the two. Indices,
skeleton links and flip pairs are all looked up in ``data/keypoints308.json``; none is typed by
hand. COCO-WholeBody (133) has no faithful mapping: its face is the 68-point iBUG contour, whose
17 jaw-line points the 308 set lacks (it has only ``tip_of_chin``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
import json

import numpy as np

from .metadata import keypoint_info

#: The formats ``pose/keypoints`` and ``pose/markers`` can be published in.
KEYPOINT_FORMATS = ('sapiens308', 'coco17', 'openpose18')

#: Keypoints that are the mid-point of two 308 keypoints.
MIDPOINTS = {'neck': ('left_shoulder', 'right_shoulder')}

_COCO17 = ('nose', 'left_eye', 'right_eye', 'left_ear', 'right_ear', 'left_shoulder',
           'right_shoulder', 'left_elbow', 'right_elbow', 'left_wrist', 'right_wrist', 'left_hip',
           'right_hip', 'left_knee', 'right_knee', 'left_ankle', 'right_ankle')
#: OpenPose's COCO-18 body model (``POSE_COCO_BODY_PARTS``).
_OPENPOSE18 = ('nose', 'neck', 'right_shoulder', 'right_elbow', 'right_wrist', 'left_shoulder',
               'left_elbow', 'left_wrist', 'right_hip', 'right_knee', 'right_ankle', 'left_hip',
               'left_knee', 'left_ankle', 'right_eye', 'left_eye', 'right_ear', 'left_ear')
#: ``hri_msgs/Skeleton2D``'s 18 points (REP-155), in the order of its constants.
_REP155 = ('nose', 'neck', 'right_shoulder', 'right_elbow', 'right_wrist', 'left_shoulder',
           'left_elbow', 'left_wrist', 'right_hip', 'right_knee', 'right_ankle', 'left_hip',
           'left_knee', 'left_ankle', 'left_eye', 'right_eye', 'left_ear', 'right_ear')
#: OpenPose's COCO-18 limbs drawn (``POSE_COCO_PAIRS_RENDER``), by name.
_OPENPOSE_LIMBS = (('neck', 'right_shoulder'), ('neck', 'left_shoulder'),
                   ('right_shoulder', 'right_elbow'), ('right_elbow', 'right_wrist'),
                   ('left_shoulder', 'left_elbow'), ('left_elbow', 'left_wrist'),
                   ('neck', 'right_hip'), ('right_hip', 'right_knee'),
                   ('right_knee', 'right_ankle'), ('neck', 'left_hip'), ('left_hip', 'left_knee'),
                   ('left_knee', 'left_ankle'), ('neck', 'nose'), ('nose', 'right_eye'),
                   ('right_eye', 'right_ear'), ('nose', 'left_eye'), ('left_eye', 'left_ear'))


@dataclass(frozen=True)
class KeypointFormat:
    """
    A keypoint format as a selection of the 308 keypoints.

    ``sources[i]`` holds the two 308 indices whose mean is keypoint ``i`` (the same index twice
    for a keypoint of the 308 set); ``skeleton`` and ``flip_pairs`` index this format.
    """

    name: str
    names: tuple[str, ...]
    sources: np.ndarray  # (N, 2) int64 indices into the 308 keypoints
    skeleton: np.ndarray  # (L, 2) int64
    flip_pairs: np.ndarray  # (F, 2) int64

    @property
    def identity(self) -> bool:
        """Return True for the 308 keypoints themselves."""
        return self.name == 'sapiens308'

    def __len__(self) -> int:
        return len(self.names)

    def points(self, values: np.ndarray) -> np.ndarray:
        """``(..., 308, C)`` coordinates to ``(..., N, C)``; NaN where a source is NaN."""
        values = np.asarray(values)
        if self.identity:
            return values
        a, b = values[..., self.sources[:, 0], :], values[..., self.sources[:, 1], :]
        return np.where(self.sources[:, 0, None] == self.sources[:, 1, None], a,
                        (a + b) * values.dtype.type(0.5))

    def scores(self, scores: np.ndarray) -> np.ndarray:
        """``(..., 308)`` scores to ``(..., N)``: a mid-point scores as its lower source."""
        scores = np.asarray(scores)
        if self.identity:
            return scores
        return np.minimum(scores[..., self.sources[:, 0]], scores[..., self.sources[:, 1]])

    def to_json(self) -> str:
        """``pose/keypoint_info`` of this format: names, links, flip pairs, 308 sources."""
        if self.identity:
            return keypoint_info().to_json()
        return json.dumps({
            'format': self.name,
            'names': list(self.names),
            'skeleton': self.skeleton.tolist(),
            'flip_pairs': self.flip_pairs.tolist(),
            'source_format': keypoint_info().format,
            'from_308': self.sources.tolist(),
            'midpoints': {n: list(MIDPOINTS[n]) for n in self.names if n in MIDPOINTS},
        })


def _subset(name: str, names: tuple[str, ...],
            limbs: tuple[tuple[str, str], ...] | None = None) -> KeypointFormat:
    """Build a format from keypoint names; links from ``limbs`` or the 308 skeleton."""
    info = keypoint_info()
    index = {n: i for i, n in enumerate(info.names)}
    unknown = [n for n in names if n not in index and n not in MIDPOINTS]
    if unknown:
        raise ValueError(f'keypoint format {name}: {unknown} are not keypoints of the 308 set')
    sources = np.array([[index[MIDPOINTS[n][0]], index[MIDPOINTS[n][1]]] if n in MIDPOINTS
                        else [index[n], index[n]] for n in names], np.int64).reshape(-1, 2)
    own = {n: i for i, n in enumerate(names)}
    if limbs is None:  # the 308 skeleton's links between keypoints of this format
        limbs = tuple((info.names[a], info.names[b]) for a, b in info.skeleton.tolist()
                      if info.names[a] in own and info.names[b] in own)
    skeleton = np.array([[own[a], own[b]] for a, b in limbs], np.int64).reshape(-1, 2)
    flips = np.array([[own[info.names[a]], own[info.names[b]]]
                      for a, b in info.flip_pairs.tolist()
                      if info.names[a] in own and info.names[b] in own],
                     np.int64).reshape(-1, 2)
    return KeypointFormat(name, tuple(names), sources, skeleton, flips)


@cache
def keypoint_format(name: str = 'sapiens308') -> KeypointFormat:
    """Return a format of :data:`KEYPOINT_FORMATS` (or ``rep155``, Skeleton2D's 18 points)."""
    info = keypoint_info()
    if name == 'sapiens308':
        n = len(info.names)
        return KeypointFormat(name, info.names, np.repeat(np.arange(n)[:, None], 2, 1),
                              info.skeleton, info.flip_pairs)
    if name == 'coco17':
        return _subset(name, _COCO17)
    if name == 'openpose18':
        return _subset(name, _OPENPOSE18, _OPENPOSE_LIMBS)
    if name == 'rep155':
        return _subset(name, _REP155, _OPENPOSE_LIMBS)
    raise ValueError(f'keypoint_format must be one of {", ".join(KEYPOINT_FORMATS)}, got '
                     f'{name!r}')


__all__ = ['KEYPOINT_FORMATS', 'KeypointFormat', 'MIDPOINTS', 'keypoint_format']
