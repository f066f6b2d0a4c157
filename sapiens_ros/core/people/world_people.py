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
The world's people from every camera's tracked people: what the node and replay share (ROS-free).

:class:`WorldPeople` takes one camera frame at a time (its stamp, the camera's pose in the world
at that stamp, its :class:`~.state.People`, the input image and K) and keeps the persons:

- each tracked body with a metric torso position (measured depth, or a pointmap made metric)
  becomes a :class:`~.world.BodyObservation`, its id the REP-155 body id of its track and its
  appearance the clothes' colours at its keypoints (:mod:`.appearance`);
- :class:`~.world.WorldFusion` associates them with persons;
- :class:`~.world_skeleton.SkeletonFusion` keeps every body's view for the fused skeletons.

A camera whose stamp goes back by more than :data:`TIME_BACK_RESET_S` restarted (a bag loop):
every person is forgotten (``resets`` counts it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .appearance import keypoint_colours
from .body_frames import body_id
from .hri_ids import FiveLetterIds
from .state import People
from .triangulate import projection_matrix
from .world import BodyObservation, FusedFrame, WorldConfig, WorldFusion, WorldPerson
from .world_skeleton import body_views, FusedSkeleton, SkeletonFusion

#: A camera whose stamp goes back by more than this (s) restarted (a bag loop): start over.
TIME_BACK_RESET_S = 3.0


@dataclass
class WorldState:
    """The world after one camera frame: the persons predicted to its stamp."""

    stamp: float
    frame: FusedFrame
    persons: list[WorldPerson]


class WorldPeople:
    """Persons of every camera in one world frame; see the module docstring."""

    def __init__(self, config: WorldConfig | None = None,
                 ids: FiveLetterIds | None = None) -> None:
        self.fusion = WorldFusion(config, ids=ids or FiveLetterIds())
        self.skeletons = SkeletonFusion()
        self._last: dict[str, float] = {}  # camera -> its newest stamp
        self.resets = 0

    def update(self, camera: str, stamp: float, camera_to_world: np.ndarray | None,
               people: People, image: np.ndarray | None = None,
               camera_matrix: np.ndarray | None = None) -> WorldState | None:
        """
        Fold one camera frame into the persons; return the world at its stamp, None if unfused.

        ``camera_to_world`` (4x4, None: no transform at this stamp) places the optical frame;
        ``image`` (HxWx3 RGB uint8) gives the appearance; ``camera_matrix`` (3x3 K of the
        image's pixels) lets two cameras triangulate joints together.
        """
        self._check_time(camera, stamp)
        rows = np.flatnonzero((people.ids >= 0) & people.torso_valid) \
            if people.xyz_metric else np.zeros(0, np.intp)
        names = [body_id(t) for t in people.ids[rows].tolist()]
        looks = keypoint_colours(image, people.smoothed[rows], people.scores[rows]) \
            if image is not None and len(rows) else None
        source = 'depth' if people.xyz_source == 'depth' else 'pointmap'
        bodies = [BodyObservation(name, people.torso_position[row], source,
                                  None if looks is None else looks[i])
                  for i, (name, row) in enumerate(zip(names, rows.tolist(), strict=True))]
        fused = self.fusion.update(camera, stamp, camera_to_world, bodies)
        if fused.status != 'fused':
            return None
        projection = None if camera_matrix is None else \
            projection_matrix(camera_matrix, camera_to_world)
        views = body_views(stamp, people.smoothed[rows], people.scores[rows],
                           None if people.xyz is None else people.xyz[rows], camera_to_world,
                           projection)
        self.skeletons.observe(camera, names, views)
        return WorldState(stamp, fused, self.fusion.persons(stamp))

    def skeletons_of(self, persons: list[WorldPerson]) -> list[FusedSkeleton]:
        """Return the fused skeleton of each of ``persons`` (only when someone wants them)."""
        return self.skeletons.skeletons([(p.person_id, [(b.camera, b.body_id)
                                                        for b in p.bodies]) for p in persons])

    def _check_time(self, camera: str, stamp: float) -> None:
        last = self._last.get(camera)
        self._last[camera] = stamp
        if last is not None and stamp < last - TIME_BACK_RESET_S:
            self.reset()
            self._last = {camera: stamp}
            self.resets += 1

    def reset(self) -> None:
        """Forget every person and view (time went back, or every camera went silent)."""
        self.fusion.reset()
        self.skeletons.reset()

    def forget(self, camera: str) -> None:
        """Drop a camera that stopped: its views (its bodies' persons age out by time)."""
        self.skeletons.forget(camera)
        self._last.pop(camera, None)

    def diagnostics(self) -> dict[str, int]:
        """Return the fusion's counters, the persons now and the resets."""
        return {**self.fusion.diagnostics(), 'resets': self.resets}


__all__ = ['TIME_BACK_RESET_S', 'WorldPeople', 'WorldState']
