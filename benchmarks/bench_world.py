#!/usr/bin/env python3

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
People in the world: identity switches, position error and cost of the world fusion.

1. Identities on synthetic scenes (``core.people.synthetic``), without appearance, with an
   abstract appearance vector per body (the walker's own, per-camera bias, noise) and with the
   node's own cue (``clothes``: ``appearance.keypoint_colours`` on a rendered view of each body
   in its shirt and trousers colours, through each camera's white balance, pixel noise):
   hand-over (two cameras, 1.1 to 1.9 s between their views, three people who may be in the
   gap together), crossing (two people meet 0.2 to 0.5 m apart and walk on
   or turn back, depth or pointmap cameras) and the test's corridor. Switches: times a true
   person's body went to another person id than before; swaps: person ids given to two true
   people; new ids: true people who got more than one id. Position error: fused person vs the
   true torso centre at each fused body.
2. ``WorldFusion.update`` cost per camera frame (CPU, one thread), 4 cameras x 10 people and
   others, and ``persons()`` (what a publisher calls).
3. What the node pays per camera frame with ``world_frame``: ``WorldPeople.update`` (the 308
   keypoints' People to bodies, the appearance from a 1024x768 image, the fusion, persons),
   and the fused skeletons (one batched triangulation) that ``persons/markers`` and
   ``person_joints_tf`` add, 4 cameras x 10 people standing in a room.

    python benchmarks/bench_world.py [--seeds 20]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import time

import numpy as np
from sapiens_ros.core.people.hri_ids import FiveLetterIds
from sapiens_ros.core.people.synthetic import (
    camera_people, corridor_scene, crossing_scene, crowd_scene, handover_scene, intrinsics, run,
    Scene)
from sapiens_ros.core.people.triangulate import look_at
from sapiens_ros.core.people.world import WorldFusion
from sapiens_ros.core.people.world_people import WorldPeople

SCENES: list[tuple[str, Callable[[int], Scene], float]] = [
    ('hand-over (3 people, 2 depth cameras)', handover_scene, 14.0),
    ('crossing, walk on (depth)', lambda s: crossing_scene(s, False), 5.0),
    ('crossing, turn back (depth)', lambda s: crossing_scene(s, True), 5.0),
    ('crossing, walk on (pointmap)', lambda s: crossing_scene(s, False, 'pointmap'), 5.0),
    ('crossing, turn back (pointmap)', lambda s: crossing_scene(s, True, 'pointmap'), 5.0),
    ('corridor (test scene, 3 cameras, 4 people)', lambda s: corridor_scene(), 12.0),
]


def identity_table(seeds: int) -> None:
    """Print switches, swaps, new ids and position errors per scene, without/with appearance."""
    print(f'| scene ({seeds} seeds) | appearance | true people | switches | swaps | new ids '
          '| error median cm | error p95 cm |')
    print('|---|---|---|---|---|---|---|---|')
    for name, make, end in SCENES:
        for appearance in (False, True, 'clothes'):
            people = switches = swaps = new_ids = 0
            errors: list[float] = []
            for seed in range(seeds):
                scene = make(seed)
                frames = scene.frames(0.0, end, seed=seed, appearance=appearance)
                result = run(scene, frames, WorldFusion(ids=FiveLetterIds(seed)))
                people += len(result.per_walker)
                switches += result.switches()
                swaps += result.shared()
                new_ids += sum(len(ids) > 1 for ids in result.persons_of().values())
                errors += result.errors
            e = np.array(errors) * 100
            label = {False: 'none', True: 'vector', 'clothes': 'clothes'}[appearance]
            print(f'| {name} | {label} | {people} | {switches} '
                  f'| {swaps} | {new_ids} | {np.median(e):.1f} | {np.percentile(e, 95):.1f} |')


def cost_table(repeat: int) -> None:
    """Print the cost of one camera frame's update and of persons()."""
    print('| cameras x people | bodies per frame | update us median | p99 | persons() us |')
    print('|---|---|---|---|---|')
    for cameras, people in ((1, 3), (4, 10), (8, 20)):
        scene = crowd_scene(0, people=people, cameras=cameras)
        frames = scene.frames(0.0, 10.0, seed=0, noise=True)
        times, listing, bodies = [], [], []
        for _ in range(repeat):
            fusion = WorldFusion(ids=FiveLetterIds(0))
            for frame in frames:
                start = time.perf_counter()
                fusion.update(frame.camera, frame.stamp, frame.camera_to_world, frame.bodies)
                middle = time.perf_counter()
                fusion.persons()
                times.append(middle - start)
                listing.append(time.perf_counter() - middle)
                bodies.append(len(frame.bodies))
        us = np.array(times) * 1e6
        print(f'| {cameras} x {people} | {np.mean(bodies):.1f} | {np.median(us):.0f} '
              f'| {np.percentile(us, 99):.0f} | {np.median(listing) * 1e6:.0f} |')


def node_table(repeat: int) -> None:
    """Print WorldPeople.update and skeletons_of per camera frame, 4 cameras x 10 people."""
    rng = np.random.default_rng(0)
    centre = np.array([4.0, 0.0, 1.0])
    cams = [look_at(centre + [4.5 * np.cos(a), 4.5 * np.sin(a), 0.3], centre)
            for a in np.linspace(0, 2 * np.pi, 4, endpoint=False)]
    k = intrinsics(1024, 768, 70.0)
    spots = {i: centre + [rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5), 0.0]
             for i in range(10)}
    frames = [camera_people(pose, k, {10 * c + i: at for i, at in spots.items()})
              for c, pose in enumerate(cams)]
    image = rng.integers(0, 255, (768, 1024, 3), np.uint8)
    update, skeleton = [], []
    for _ in range(repeat):
        world = WorldPeople(ids=FiveLetterIds(0))
        for step in range(30):
            for c, (pose, people) in enumerate(zip(cams, frames, strict=True)):
                start = time.perf_counter()
                state = world.update(f'cam{c}', step / 30 + c * 0.005, pose, people, image, k)
                middle = time.perf_counter()
                world.skeletons_of(state.persons)
                update.append(middle - start)
                skeleton.append(time.perf_counter() - middle)
    print('| per camera frame, 4 cameras x 10 people | median ms | p99 ms |')
    print('|---|---|---|')
    for name, values in (('WorldPeople.update (bodies, appearance, fusion, persons)', update),
                         ('skeletons_of (10 persons, batched triangulation)', skeleton)):
        ms = np.array(values) * 1e3
        print(f'| {name} | {np.median(ms):.2f} | {np.percentile(ms, 99):.2f} |')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--seeds', type=int, default=20)
    parser.add_argument('--repeat', type=int, default=3)
    args = parser.parse_args()
    print('## World fusion: identities and position error\n')
    identity_table(args.seeds)
    print('\n## World fusion cost per camera frame (CPU)\n')
    cost_table(args.repeat)
    print('\n## The world step of the node, per camera frame (CPU)\n')
    node_table(args.repeat)


if __name__ == '__main__':
    main()
