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
Synthetic multi-camera scenes for the world fusion's tests and benchmarks (ROS-free).

Two levels. :func:`camera_people` gives one camera frame's tracked :class:`~.state.People`
(308 keypoints in pixels and metres) for standing people at world points: what
:class:`~.world_people.WorldPeople` takes. The scenes below give the torso observations alone,
for the fusion:

People walk through a room along piecewise-linear paths (world frame: z up). Cameras have a
pose (optical frame: z forward, x right, y down), intrinsics and a rate. Each camera frame sees
the people whose torso centre projects into its image within range and is not behind a nearer
person; what it gives is what a camera's tracker would: the torso's *surface* point (the centre
moved ``body_radius`` towards the camera) with the source's noise, the camera's own body ids (a
new one when a person comes back after ``track_max_age`` out of its view) and, optionally, an
appearance vector (the person's own, a per-camera bias and per-frame noise). Frames arrive after
a latency, some of them late, in arrival order: the order a node would fuse them in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
import itertools
import math

import numpy as np

from .depth import torso_poses
from .state import People
from .triangulate import look_at
from .world import BodyObservation, WorldConfig
from ..models.metadata import keypoint_info

#: A standing person in its own REP-155 body frame (x forward, y left, z up; metres), origin
#: mid-hips; the other keypoints of the 308 scatter about the head.
STANDING = {'left_hip': (0, 0.1, 0), 'right_hip': (0, -0.1, 0), 'left_shoulder': (0, 0.18, 0.5),
            'right_shoulder': (0, -0.18, 0.5), 'left_elbow': (0, 0.22, 0.25),
            'right_elbow': (0, -0.22, 0.25), 'left_wrist': (0.1, 0.22, 0.05),
            'right_wrist': (0.1, -0.22, 0.05), 'left_knee': (0, 0.1, -0.45),
            'right_knee': (0, -0.1, -0.45), 'left_ankle': (0, 0.1, -0.9),
            'right_ankle': (0, -0.1, -0.9), 'left_eye': (0.08, 0.03, 0.75),
            'right_eye': (0.08, -0.03, 0.75), 'nose': (0.1, 0, 0.72)}


def standing_body(seed: int = 0) -> np.ndarray:
    """
    Return ``(308, 3)`` keypoints of the standing person in its body frame.

    :data:`STANDING` where it names them, the face template (``faces.FACE_TEMPLATE``, looking
    forward) for the other face points, and random points about the head for the rest.
    """
    from .faces import face_template_points

    names = keypoint_info().names
    pts = np.random.default_rng(seed).uniform(-0.05, 0.05, (len(names), 3)) + [0.05, 0, 0.7]
    face = face_template_points(np.eye(3), np.array([0.09, 0.0, 0.755]))
    known = np.isfinite(face).all(1)
    pts[known] = face[known]
    for name, xyz in STANDING.items():
        pts[names.index(name)] = xyz
    return pts


def camera_people(camera_to_world: np.ndarray, camera_matrix: np.ndarray,
                  persons: dict[int, np.ndarray], yaw_deg: float = 180.0) -> People:
    """
    Return one camera frame's tracked people standing at world points (measured-depth 3D).

    ``persons`` maps a track id to the world point of the person's mid-hips; each is
    :func:`standing_body` (seeded by its row) turned by ``yaw_deg`` about the world's z (180:
    facing -x), seen by the camera at ``camera_to_world`` with ``camera_matrix``.
    """
    from scipy.spatial.transform import Rotation

    tracks = list(persons)
    turn = Rotation.from_euler('z', yaw_deg, degrees=True)
    world_to_cam = np.linalg.inv(camera_to_world)
    xyz = np.stack([(turn.apply(standing_body(i)) + persons[t]) @ world_to_cam[:3, :3].T
                    + world_to_cam[:3, 3] for i, t in enumerate(tracks)]).astype(np.float32)
    uvw = xyz.astype(np.float64) @ np.asarray(camera_matrix, np.float64).T
    uv = (uvw[..., :2] / uvw[..., 2:]).astype(np.float32)
    scores = np.full(uv.shape[:2], 0.9, np.float32)
    position, orientation, valid = torso_poses(xyz)
    ids = np.asarray(tracks, np.int64)
    return People(0.0, ids, uv, uv, scores, xyz, xyz, 'depth', position, orientation, valid,
                  None, True, ids)


@dataclass
class Walker:
    """A person following ``(t, x, y)`` waypoints at torso height ``z``; absent outside them."""

    name: str
    waypoints: np.ndarray  # (W, 3) t, x, y
    z: float = 1.2
    appearance: np.ndarray | None = None  # (D,) unit

    def position(self, t: float) -> np.ndarray | None:
        """Return the torso centre at ``t`` (3,), None when not in the scene."""
        ts = self.waypoints[:, 0]
        if t < ts[0] or t > ts[-1]:
            return None
        return np.array([np.interp(t, ts, self.waypoints[:, 1]),
                         np.interp(t, ts, self.waypoints[:, 2]), self.z])


def walker(name: str, *points: tuple[float, float, float], z: float = 1.2) -> Walker:
    """Build a :class:`Walker` from ``(t, x, y)`` points."""
    return Walker(name, np.array(points, float), z)


def intrinsics(width: int, height: int, hfov_deg: float) -> np.ndarray:
    """Return a pinhole K with the given horizontal field of view, principal point centred."""
    f = width / (2.0 * math.tan(math.radians(hfov_deg) / 2.0))
    return np.array([[f, 0.0, width / 2.0], [0.0, f, height / 2.0], [0.0, 0.0, 1.0]])


@dataclass
class SimCamera:
    """A camera of the scene."""

    name: str
    pose: np.ndarray  # (4, 4) optical frame -> world
    K: np.ndarray = field(default_factory=lambda: intrinsics(640, 480, 50.0))
    size: tuple[int, int] = (640, 480)  # width, height
    rate: float = 30.0  # Hz
    phase: float = 0.0  # s, its first stamp
    source: str = 'depth'
    max_range: float = 6.0
    transform_from: float = -math.inf  # its transform is unknown before this stamp


@dataclass
class SimFrame:
    """One camera frame as the fusion gets it, with the truth behind its bodies."""

    camera: str
    stamp: float
    arrival: float
    camera_to_world: np.ndarray | None
    bodies: list[BodyObservation]
    truth: list[str]  # walker name per body
    late: float = 0.0  # s of extra delay given to this frame


@dataclass
class Scene:
    """Walkers and cameras; :meth:`frames` renders them."""

    walkers: list[Walker]
    cameras: list[SimCamera]
    body_radius: float = 0.1  # m, torso centre to the surface a camera sees
    occluder_radius: float = 0.25  # m, half a person's width, hides whoever is behind
    track_max_age: float = 1.0  # s, a camera's tracker keeps a body id this long unseen
    noise: WorldConfig = field(default_factory=WorldConfig)  # the source noise models
    body_noise: float = 0.01  # m, isotropic, on top of the source noise
    appearance_dim: int = 16
    appearance_camera_bias: float = 0.15  # per (camera, walker), relative to a unit vector
    appearance_noise: float = 0.25  # per frame
    white_balance: float = 0.15  # 'clothes': each camera's RGB gains in 1 +- this

    def visible(self, camera: SimCamera, t: float) -> dict[str, np.ndarray]:
        """Return the torso centres (camera frame) of the walkers ``camera`` sees at ``t``."""
        world_to_cam = np.linalg.inv(camera.pose)
        here = {}
        for w in self.walkers:
            p = w.position(t)
            if p is not None:
                here[w.name] = world_to_cam[:3, :3] @ p + world_to_cam[:3, 3]
        width, height = camera.size
        seen = {}
        for name, p in here.items():
            dist = float(np.linalg.norm(p))
            if not 0.3 < p[2] < camera.max_range:
                continue
            u, v = (camera.K @ (p / p[2]))[:2]
            if not (0 <= u < width and 0 <= v < height):
                continue
            if any(_hides(q, p, self.occluder_radius)
                   for other, q in here.items() if other != name and np.linalg.norm(q) < dist):
                continue
            seen[name] = p
        return seen

    def frames(self, start: float, end: float, seed: int = 0, appearance: bool | str = False,
               latency: float = 0.03, late: dict[tuple[str, int], float] | None = None,
               noise: bool = True) -> list[SimFrame]:
        """
        Render every camera's frames stamped in ``[start, end)``, in arrival order.

        ``late`` maps (camera, frame index) to an extra delay (s); ``latency`` is everyone's.
        ``appearance``: False (none), True (an abstract vector: the walker's own, a per-camera
        bias and per-frame noise) or ``'clothes'``: the node's own cue
        (:func:`.appearance.keypoint_colours`) on a rendered view of each body, its shirt and
        trousers colours seen through each camera's white balance, with pixel noise.
        """
        rng = np.random.default_rng(seed)
        late = late or {}
        clothes = appearance == 'clothes'
        looks = self._clothes(rng) if clothes else self._looks(rng) if appearance else {}
        counter = itertools.count(1)
        out = []
        for cam in self.cameras:
            ids: dict[str, tuple[str, float]] = {}  # walker -> (body id, last seen)
            source = getattr(self.noise, cam.source)
            n_frames = int(math.ceil((end - start - cam.phase) * cam.rate))
            for index in range(max(n_frames, 0)):
                t = start + cam.phase + index / cam.rate
                bodies, truth = [], []
                for name, p in self.visible(cam, t).items():
                    body = ids.get(name)
                    if body is None or t - body[1] > self.track_max_age:
                        body = (f'b{next(counter)}', t)
                    ids[name] = (body[0], t)
                    position = self._observe(p, source, rng if noise else None)
                    vector = None
                    if clothes:
                        vector = clothes_vector(looks[name], looks[cam.name], rng)
                    elif appearance:
                        base, bias = looks[name], looks[(cam.name, name)]
                        vector = base + bias + self.appearance_noise * _unit_noise(rng, base.size)
                    bodies.append(BodyObservation(body[0], position, cam.source, vector))
                    truth.append(name)
                delay = late.get((cam.name, index), 0.0)
                transform = cam.pose if t >= cam.transform_from else None
                out.append(SimFrame(cam.name, t, t + latency + delay, transform, bodies, truth,
                                    delay))
        out.sort(key=lambda f: (f.arrival, f.camera))
        return out

    def truth(self, name: str, t: float) -> np.ndarray | None:
        """Return walker ``name``'s torso centre at ``t``."""
        return next(w for w in self.walkers if w.name == name).position(t)

    def _observe(self, centre: np.ndarray, source, rng: np.random.Generator | None) -> np.ndarray:
        dist = float(np.linalg.norm(centre))
        ray = centre / dist
        surface = centre - self.body_radius * ray
        if rng is None:
            return surface
        sig_range, sig_lat = source.sigmas(np.array([surface[2]]))
        lateral = rng.normal(0.0, float(sig_lat[0]), 3)
        lateral -= ray * (lateral @ ray)
        return (surface + ray * rng.normal(0.0, float(sig_range[0])) + lateral
                + rng.normal(0.0, self.body_noise, 3))

    def _clothes(self, rng: np.random.Generator) -> dict:
        """Shirt and trousers RGB (0..1) per walker, a white balance (RGB gains) per camera."""
        looks: dict = {w.name: rng.uniform(0.1, 0.9, (2, 3)) for w in self.walkers}
        for cam in self.cameras:
            looks[cam.name] = rng.uniform(1.0 - self.white_balance, 1.0 + self.white_balance, 3)
        return looks

    def _looks(self, rng: np.random.Generator) -> dict:
        looks: dict = {}
        for w in self.walkers:
            base = w.appearance if w.appearance is not None else _unit_noise(
                rng, self.appearance_dim)
            looks[w.name] = base / np.linalg.norm(base)
            for cam in self.cameras:
                looks[(cam.name, w.name)] = self.appearance_camera_bias * _unit_noise(
                    rng, base.size)
        return looks


@cache
def _clothes_layout() -> tuple[np.ndarray, np.ndarray]:
    """Return the standing body seen from the front in a 96x48 view: keypoints, shirt mask."""
    body = standing_body(0)
    u = 24.0 + body[:, 1] * 40.0  # 40 px per metre: the body 1.7 m in 68 px
    v = 40.0 - body[:, 2] * 40.0
    rows, cols = np.mgrid[0:96, 0:48]
    z = (40.0 - rows) / 40.0  # metres above the hips
    y = (cols - 24.0) / 40.0
    shirt = (z >= -0.05) & (z <= 0.55) & (np.abs(y) <= 0.26)
    return np.stack([u, v], -1), shirt


def clothes_view(shirt: np.ndarray, trousers: np.ndarray, gains: np.ndarray,
                 rng: np.random.Generator, noise: float = 0.04) -> np.ndarray:
    """Return a 96x48 RGB uint8 view of a body in its clothes through a camera's gains."""
    _, mask = _clothes_layout()
    rows = np.arange(96)[:, None]
    legs = (rows > 42) & (np.abs(np.arange(48)[None, :] - 24.0) <= 8.0)
    rgb = np.full((96, 48, 3), 0.5) + rng.normal(0.0, 0.1, 3)  # the background
    rgb[legs] = trousers
    rgb[mask] = shirt
    rgb = rgb * gains + rng.normal(0.0, noise, rgb.shape)
    return (np.clip(rgb, 0.0, 1.0) * 255).astype(np.uint8)


def clothes_vector(clothes: np.ndarray, gains: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Return the node's appearance vector of a body in ``clothes`` (shirt, trousers RGB)."""
    from .appearance import keypoint_colours

    keypoints, _ = _clothes_layout()
    image = clothes_view(clothes[0], clothes[1], gains, rng)
    scores = np.ones((1, len(keypoints)))
    return keypoint_colours(image, keypoints[None], scores)[0]


def _hides(front: np.ndarray, behind: np.ndarray, radius: float) -> bool:
    """Whether a person at ``front`` (camera frame) hides the torso centre at ``behind``."""
    cos = float(front @ behind) / (np.linalg.norm(front) * np.linalg.norm(behind))
    return math.acos(min(1.0, cos)) < math.atan2(radius, float(np.linalg.norm(front)))


def _unit_noise(rng: np.random.Generator, dim: int) -> np.ndarray:
    v = rng.normal(size=dim)
    return v / np.linalg.norm(v)


@dataclass
class Identity:
    """How persons followed walkers over a run: switches, merges, position errors."""

    per_walker: dict[str, list[str]] = field(default_factory=dict)  # person ids in order
    errors: list[float] = field(default_factory=list)  # m, fused person vs walker

    def add(self, walker_name: str, person: str) -> None:
        """Record that ``walker_name``'s body went to ``person``."""
        self.per_walker.setdefault(walker_name, []).append(person)

    def switches(self) -> int:
        """Count the times a walker's body went to another person than the one before."""
        return sum(sum(a != b for a, b in itertools.pairwise(ids))
                   for ids in self.per_walker.values())

    def persons_of(self) -> dict[str, set[str]]:
        """Return each walker's person ids."""
        return {w: set(ids) for w, ids in self.per_walker.items()}

    def shared(self) -> int:
        """Count the person ids given to more than one walker."""
        owners: dict[str, set[str]] = {}
        for w, ids in self.per_walker.items():
            for p in ids:
                owners.setdefault(p, set()).add(w)
        return sum(len(o) > 1 for o in owners.values())


def run(scene: Scene, frames: list[SimFrame], fusion) -> Identity:
    """Feed ``frames`` to ``fusion`` (a WorldFusion) in order; return the identities."""
    result = Identity()
    for frame in frames:
        fused = fusion.update(frame.camera, frame.stamp, frame.camera_to_world, frame.bodies)
        if fused.status != 'fused':
            continue
        where = {p.person_id: p.position for p in fusion.persons(frame.stamp)}
        for name, person in zip(frame.truth, fused.person_ids, strict=True):
            if person:
                result.add(name, person)
                if person in where:
                    truth = scene.truth(name, frame.stamp)
                    result.errors.append(float(np.linalg.norm(where[person] - truth)))
    return result


# --- scenes of the tests and benchmarks -----------------------------------------------------

def corridor_scene() -> Scene:
    """
    Build a 10 x 4 m corridor, three depth cameras, four people, 12 s (the fusion's test).

    Cameras ``a`` and ``b`` on the wall y = 0, ``c`` facing ``b`` from y = 4 (its transform
    only from 1 s on); their rates and phases differ. ``handover`` walks from ``a``'s view to
    ``b``'s (1.2 s seen by nobody between), where ``c`` sees it too, then leaves every view;
    it stops 1.2 s in front of ``stander`` (hidden from ``a`` so long that ``a``'s tracker gives
    it a new body id); ``cross1`` and ``cross2`` cross paths (0.27 m apart at the closest) in
    ``b``'s and ``c``'s views, one hiding the other from ``b``.
    """
    cameras = [
        SimCamera('a', look_at((1.5, 0.0, 1.6), (1.5, 3.0, 1.2)), phase=0.0, rate=30.0),
        SimCamera('b', look_at((5.0, 0.0, 1.6), (5.0, 3.0, 1.2)), phase=0.011, rate=25.0),
        SimCamera('c', look_at((5.5, 4.0, 1.6), (5.5, 1.0, 1.2)), phase=0.023, rate=15.0,
                  transform_from=1.0)]
    walkers = [
        walker('handover', (0.0, 0.5, 2.5), (1.0, 1.5, 2.5), (2.2, 1.5, 2.5), (10.2, 9.5, 2.5)),
        walker('stander', (0.0, 1.5, 3.5), (12.0, 1.5, 3.5)),
        walker('cross1', (1.0, 3.9, 1.4), (4.0, 6.6, 2.8)),
        walker('cross2', (1.3, 3.9, 2.9), (4.3, 6.6, 1.3))]
    return Scene(walkers, cameras)


def handover_scene(seed: int, people: int = 3) -> Scene:
    """
    Two depth cameras 4 m apart, ``people`` walking from the first's view into the second's.

    Between the views (1.7 m at 2.5 m range) nobody sees them for 1.1 to 1.9 s (speeds 0.9 to
    1.5 m/s); they start 0.6 to 1.2 s apart at random depths, so some are in the gap together.
    """
    rng = np.random.default_rng(seed)
    cameras = [SimCamera('a', look_at((1.5, 0.0, 1.6), (1.5, 3.0, 1.2))),
               SimCamera('b', look_at((5.5, 0.0, 1.6), (5.5, 3.0, 1.2)), phase=0.013)]
    walkers, start = [], 0.0
    for i in range(people):
        speed, y0, y1 = rng.uniform(0.9, 1.5), rng.uniform(1.8, 3.2), rng.uniform(1.8, 3.2)
        end = start + 7.2 / speed
        walkers.append(walker(f'p{i}', (start, 0.3, y0), (end, 7.5, y1)))
        start += rng.uniform(0.6, 1.2)
    return Scene(walkers, cameras)


def crossing_scene(seed: int, bounce: bool, source: str = 'depth') -> Scene:
    """
    Two people walk up to each other, pass 0.2 to 0.5 m apart, and walk on or turn back.

    One camera in front (the nearer hides the farther as they meet), one at the side, both
    giving ``source`` positions (a pointmap's 0.1 m at 3 m blurs who is where).
    ``bounce``: both turn back where they met, which a constant-velocity model cannot foresee
    (it predicts them walking on: the hard case, where appearance decides).
    """
    rng = np.random.default_rng(seed)
    cameras = [SimCamera('front', look_at((0.0, 0.0, 1.6), (0.0, 3.0, 1.2)),
                         K=intrinsics(640, 480, 70.0), source=source),
               SimCamera('side', look_at((2.5, 0.5, 1.6), (0.0, 3.0, 1.2)),
                         K=intrinsics(640, 480, 70.0), phase=0.017, source=source)]
    gap = rng.uniform(0.2, 0.5)
    walkers = []
    for name, side, y in (('left', -1.0, 3.0 - gap / 2), ('right', 1.0, 3.0 + gap / 2)):
        speed = rng.uniform(0.8, 1.3)
        meet = 1.6 / speed
        back = side * 1.6 if bounce else -side * 1.6
        walkers.append(walker(name, (0.0, side * 1.6, y), (meet, 0.0, y),
                              (2.0 * meet, back, y)))
    return Scene(walkers, cameras)


def crowd_scene(seed: int, people: int = 10, cameras: int = 4, duration: float = 10.0) -> Scene:
    """``people`` walking at random in a 6 x 6 m room seen by ``cameras`` from its corners."""
    rng = np.random.default_rng(seed)
    corners = [(0.0, 0.0), (6.0, 6.0), (6.0, 0.0), (0.0, 6.0)]
    cams = [SimCamera(f'c{i}', look_at((*corners[i % 4], 2.2), (3.0, 3.0, 1.2)),
                      K=intrinsics(640, 480, 90.0), phase=0.007 * i, max_range=9.0)
            for i in range(cameras)]
    walkers = []
    for i in range(people):
        points = rng.uniform(0.8, 5.2, (6, 2))
        legs = np.linalg.norm(np.diff(points, axis=0), axis=1) / rng.uniform(0.6, 1.4)
        times = np.concatenate([[0.0], np.cumsum(legs)]) * duration / max(legs.sum(), 1e-9)
        walkers.append(Walker(f'p{i}', np.column_stack([times, points])))
    return Scene(walkers, cams)
