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
A fused 3D skeleton per person in the world frame, from every camera's body that sees them.

:class:`SkeletonFusion` keeps each (camera, body)'s latest view: its 2D joints, their scores,
its 3D joints in the world frame (from measured depth or the metric pointmap, NaN where
unknown) and, where the camera's ``camera_info`` and pose are known, its projection matrix.
:meth:`SkeletonFusion.skeleton` then fuses the views of one person's bodies:

- a joint seen by two or more views with projections, taken within ``window`` of each other
  (cameras are not synchronised: a walking person moves ~1.5 cm in 10 ms), is triangulated
  from the 2D keypoints (:func:`.triangulate.triangulate`: score-weighted DLT and a
  Gauss-Newton step), so two plain RGB cameras give metric 3D without a depth sensor;
- any other joint takes the 3D of the most certain view that has it (the person's best body
  first);
- otherwise it is NaN.

The joints are REP-155's 18 (``keypoint_format('rep155')``: nose, neck, shoulders, elbows,
wrists, hips, knees, ankles, eyes, ears), the skeleton's limbs its ``skeleton`` pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .triangulate import triangulate
from ..models.keypoint_formats import keypoint_format

#: The fused joints' keypoint format.
SKELETON_FORMAT = 'rep155'


@dataclass
class BodyView:
    """One camera frame's view of a body, in the format's joints."""

    stamp: float
    uv: np.ndarray  # (J, 2) pixels
    scores: np.ndarray  # (J,)
    xyz: np.ndarray  # (J, 3) world metres, NaN where unknown
    projection: np.ndarray | None  # (3, 4) world -> pixels, None without camera_info


@dataclass
class FusedSkeleton:
    """One person's joints in the world frame."""

    person_id: str
    xyz: np.ndarray  # (J, 3) metres, NaN where no view has the joint
    triangulated: np.ndarray  # (J,) bool: from two or more views' 2D keypoints
    views: int  # bodies that contributed


def joint_names() -> tuple[str, ...]:
    """Return the names of the fused joints."""
    return keypoint_format(SKELETON_FORMAT).names


def limbs() -> np.ndarray:
    """Return the ``(L, 2)`` joint index pairs of the skeleton's limbs."""
    return keypoint_format(SKELETON_FORMAT).skeleton


def body_views(stamp: float, keypoints: np.ndarray, scores: np.ndarray,
               xyz_camera: np.ndarray | None, camera_to_world: np.ndarray,
               projection: np.ndarray | None) -> list[BodyView]:
    """
    Return the views of a frame's persons, in the world frame.

    ``keypoints`` ``(P, 308, 2)``, ``scores`` ``(P, 308)``, ``xyz_camera`` ``(P, 308, 3)``
    metres in the optical frame (None: no 3D).
    """
    fmt = keypoint_format(SKELETON_FORMAT)
    uv = fmt.points(np.asarray(keypoints, np.float64))
    sc = np.nan_to_num(fmt.scores(np.asarray(scores, np.float64)), nan=0.0)
    if xyz_camera is None:
        xyz = np.full(uv.shape[:-1] + (3,), np.nan)
    else:
        pose = np.asarray(camera_to_world, np.float64)
        xyz = fmt.points(np.asarray(xyz_camera, np.float64)) @ pose[:3, :3].T + pose[:3, 3]
    return [BodyView(stamp, uv[i], sc[i], xyz[i], projection) for i in range(uv.shape[0])]


class SkeletonFusion:
    """The latest view of every (camera, body); fused per person on demand."""

    def __init__(self, window: float = 0.04, min_score: float = 0.3,
                 max_age: float = 0.5) -> None:
        self.window = window
        self.min_score = min_score
        self.max_age = max_age  # s, a view older than the newest by this is forgotten
        self._views: dict[tuple[str, str], BodyView] = {}

    def observe(self, camera: str, body_ids: Sequence[str], views: Sequence[BodyView]) -> None:
        """Keep this frame's views of ``camera``'s bodies (ids as the fusion knows them)."""
        for body, view in zip(body_ids, views, strict=True):
            self._views[(camera, body)] = view
        if views:
            newest = max(v.stamp for v in self._views.values())
            self._views = {k: v for k, v in self._views.items()
                           if v.stamp >= newest - self.max_age}

    def forget(self, camera: str) -> None:
        """Drop a camera's views (it stopped)."""
        self._views = {k: v for k, v in self._views.items() if k[0] != camera}

    def reset(self) -> None:
        """Forget every view (time went back)."""
        self._views.clear()

    def skeleton(self, person_id: str, bodies: Sequence[tuple[str, str]]) -> FusedSkeleton:
        """Fuse the views of one person's ``bodies`` ((camera, body id), most certain first)."""
        return self.skeletons([(person_id, bodies)])[0]

    def skeletons(self, persons: Sequence[tuple[str, Sequence[tuple[str, str]]]]
                  ) -> list[FusedSkeleton]:
        """
        Fuse every person's views: ``persons`` is ``[(person id, bodies)]``, bodies as above.

        One triangulation for all of them: the joints of every person that two views with
        projections see are stacked, each view a row of the distinct projections (a moving
        camera's frames differ), its weight 0 for the persons it does not see.
        """
        joints = len(joint_names())
        out, rows = [], []  # rows: (person index, its in-step views with a projection)
        for person_id, bodies in persons:
            views = [self._views[b] for b in bodies if b in self._views]
            xyz = np.full((joints, 3), np.nan)
            out.append(FusedSkeleton(person_id, xyz, np.zeros(joints, bool), len(views)))
            if not views:
                rows.append((views, []))
                continue
            newest = max(v.stamp for v in views)
            together = [v for v in views if v.stamp >= newest - self.window]
            stale = [v for v in views if v.stamp < newest - self.window]
            with_p = [v for v in together if v.projection is not None]
            rows.append((together + stale, with_p if len(with_p) >= 2 else []))
        self._triangulate(out, [r[1] for r in rows])
        for skel, (ordered, _) in zip(out, rows, strict=True):
            for view in ordered:  # in step, most certain first: the first that has it
                take = ~np.isfinite(skel.xyz).all(1) & np.isfinite(view.xyz).all(1) & \
                    (view.scores >= self.min_score)
                skel.xyz[take] = view.xyz[take]
        return out

    def _triangulate(self, out: list[FusedSkeleton], views: list[list[BodyView]]) -> None:
        """Triangulate, in one call, the joints of each person with two or more ``views``."""
        who = [k for k, v in enumerate(views) if v]
        if not who:
            return
        joints = len(joint_names())
        cams: dict[int, int] = {}  # id of a projection array -> its row
        projections = []
        for k in who:
            for view in views[k]:
                if id(view.projection) not in cams:
                    cams[id(view.projection)] = len(projections)
                    projections.append(view.projection)
        points = np.zeros((len(projections), len(who) * joints, 2))
        scores = np.zeros((len(projections), len(who) * joints))
        for slot, k in enumerate(who):
            cols = slice(slot * joints, (slot + 1) * joints)
            for view in views[k]:
                row = cams[id(view.projection)]
                points[row, cols], scores[row, cols] = view.uv, view.scores
        result = triangulate(points, scores, np.stack(projections), min_score=self.min_score)
        for slot, k in enumerate(who):
            cols = slice(slot * joints, (slot + 1) * joints)
            valid = result.valid[cols]
            out[k].xyz[valid] = result.xyz[cols][valid]
            out[k].triangulated = valid.copy()


__all__ = ['BodyView', 'FusedSkeleton', 'SKELETON_FORMAT', 'SkeletonFusion', 'body_views',
           'joint_names', 'limbs']
