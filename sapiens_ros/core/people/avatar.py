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
The VRM rig as a tree of frames: where each bone sits in its parent, for TF (ROS-free).

:mod:`.rig` gives each bone's *local rotation* (VRM 1.0 normalized: against its parent, rest
pose = identity). A bridge that drives an avatar needs those rotations only; a tree of frames
also needs each bone's place in its parent. In a normalized rig every rest orientation is the
identity, so that place is the bone head's T-pose offset from its parent's head, in model axes
(X the model's left, Y up, Z forward); :func:`bone_offsets` gives them for the rig's T-pose
(``rig._REST``, 1.7 m tall), so that the frames draw a plausible skeleton in RViz while the
rotations are the measured ones.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from .rig import _rest_points, BONE_NAMES, BONES

#: Bone heads of the torso and head, which no keypoint names: fractions of mid-hip to
#: mid-shoulder (spine, chest, upper chest) or model-space T-pose points (m).
_TORSO = {'spine': 0.2, 'chest': 0.45, 'upperChest': 0.7}
_AT = {'neck': (0.0, 0.55, 0.0), 'head': (0.0, 0.62, 0.0)}


@cache
def rest_heads() -> np.ndarray:
    """Return the T-pose head of every bone ``(N, 3)`` (model space, m), BONE_NAMES order."""
    points = {name: xyz for name, xyz, _, _ in _rest_points()}
    hip, shoulder = points['mid_hip'], points['mid_shoulder']
    heads = {}
    for bone in BONES:
        if bone.name in _TORSO:
            heads[bone.name] = hip + _TORSO[bone.name] * (shoulder - hip)
        elif bone.name in _AT:
            heads[bone.name] = np.asarray(_AT[bone.name], np.float64)
        elif bone.name.endswith('Shoulder'):  # the clavicle: half-way to the upper arm
            side = bone.name[:-len('Shoulder')]
            heads[bone.name] = (points[f'{side}_shoulder'] + shoulder) / 2
        elif bone.name.endswith('Toes'):
            side = bone.name[:-len('Toes')]
            heads[bone.name] = (points[f'{side}_big_toe'] + points[f'{side}_small_toe']) / 2
        else:
            heads[bone.name] = points[bone.aim[0]]
    return np.stack([heads[n] for n in BONE_NAMES])


@cache
def bone_offsets() -> np.ndarray:
    """Return each bone head's offset from its parent's head ``(N, 3)`` (hips: 0), model axes."""
    heads = rest_heads()
    index = {n: i for i, n in enumerate(BONE_NAMES)}
    out = np.zeros_like(heads)
    for i, bone in enumerate(BONES):
        if bone.parent:
            out[i] = heads[i] - heads[index[bone.parent]]
    out.flags.writeable = False
    return out


def bone_parents() -> list[str | None]:
    """Return each bone's parent bone (None for the hips), BONE_NAMES order."""
    return [b.parent for b in BONES]


__all__ = ['bone_offsets', 'bone_parents', 'rest_heads']
