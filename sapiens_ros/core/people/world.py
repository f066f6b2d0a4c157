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
People in the world: every camera's tracked bodies associated with persons (ROS-free).

A camera's tracker gives *bodies* (its own ids, its own frame); the robot wants *persons*: one
per human, in its world frame, whichever cameras see them. :class:`WorldFusion` keeps the
persons as a constant-velocity Kalman filter (numpy, vectorised over persons) and folds in one
camera frame at a time, at that frame's stamp (cameras are not synchronised):

1. the bodies go to the world frame with a covariance from their source's noise model (measured
   depth or a predicted pointmap; both grow with range);
2. each person is predicted to the frame's stamp; a (person, body) pair is gated by the
   Mahalanobis distance of the innovation (prediction plus observation covariance) and a
   distance in metres, and costs its negative log-likelihood, less a bonus where that body was
   linked to that person before, plus the cosine distance of their appearance vectors when both
   have one;
3. an optimal assignment (Hungarian) gives each body at most one person; the matched persons
   are updated, each unmatched body starts a person;
4. a person unseen by every camera for ``max_unseen`` is lost.

A person seen by two cameras is updated by both in turn: two bodies, one person. A frame
stamped up to ``association_window`` before the newest fused stamp is fused: its persons are
predicted back to its stamp, updated, and predicted forward again (a person's state never goes
back in time; the process noise of the detour is added, which only errs on the safe side). An
older frame is counted (``out_of_step``), not fused. Ids are ROS4HRI's five letters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaincc

from .hri_ids import FiveLetterIds

#: Body sources: measured depth, or a pointmap predicted by the model.
SOURCES = ('depth', 'pointmap')
_INFEASIBLE = 1e9


@dataclass
class SourceNoise:
    """
    Standard deviation (m) of a body position from one source, ``z`` its range in metres.

    Along the viewing ray ``range_floor + range_at_1m * z ** range_exponent``; across it
    ``lateral_floor + lateral_per_m * z`` (a keypoint's pixel error times the range over f).
    """

    range_at_1m: float
    range_exponent: float
    range_floor: float
    lateral_per_m: float
    lateral_floor: float

    def sigmas(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the (range, lateral) standard deviations, each shaped like ``z``."""
        z = np.maximum(z, 0.0)
        return (self.range_floor + self.range_at_1m * z ** self.range_exponent,
                self.lateral_floor + self.lateral_per_m * z)


def _depth_noise() -> SourceNoise:
    # stereo / structured-light depth: ~1 cm at 1 m, quadratic in range (disparity error)
    return SourceNoise(range_at_1m=0.01, range_exponent=2.0, range_floor=0.002,
                       lateral_per_m=0.004, lateral_floor=0.002)


def _pointmap_noise() -> SourceNoise:
    # monocular pointmap (metric by a depth fit or camera_info): ~3 % of range, 0.1 m at 3 m
    return SourceNoise(range_at_1m=0.1 / 3.0, range_exponent=1.0, range_floor=0.01,
                       lateral_per_m=0.01, lateral_floor=0.005)


@dataclass
class WorldConfig:
    """Parameters of :class:`WorldFusion` (metres, seconds)."""

    depth: SourceNoise = field(default_factory=_depth_noise)
    pointmap: SourceNoise = field(default_factory=_pointmap_noise)
    # where on the body the torso point lies (front or back surface, which keypoints were
    # seen): isotropic, added to every source; also what keeps two cameras' views of one
    # person within each other's gate
    body_sigma: float = 0.03
    # a camera sees the torso's surface: the body's centre lies this much further along the ray
    surface_offset: float = 0.1
    # white-noise acceleration (m^2/s^3) of the constant-velocity model: walking people start,
    # stop and turn; after 2 s unseen a person's position is uncertain by ~1 m
    acceleration_noise: float = 0.5
    # the same along the world's z (REP-103: up), where a torso hardly moves
    vertical_acceleration_noise: float = 0.05
    initial_speed_sigma: float = 1.0  # m/s, a new person's velocity is unknown
    gate: float = 16.0  # squared Mahalanobis distance, chi-square 3 dof: 99.9 %
    max_gate_distance: float = 2.0  # m, also for a person unseen long (a wide covariance)
    # weight of ln det S in the cost (1: the negative log-likelihood, which prefers the person
    # seen last over one unseen for a while; 0: Mahalanobis distance alone)
    covariance_cost: float = 1.0
    link_bonus: float = 4.0  # cost (squared-Mahalanobis units) off a body's former person
    outlier_time: float = 0.3  # s, a linked body outside its person's gate starts none so long
    # cost per unit cosine distance (0 .. 2) of appearance: 16 keeps every id of the hand-over
    # scenes with the clothes-colour cue through cameras of different white balance (8: 1 swap
    # in 10 seeds), and changes nothing with a cleaner cue (benchmarks/bench_world.py)
    appearance_weight: float = 16.0
    appearance_smoothing: float = 0.2  # weight of a new appearance in the person's average
    association_window: float = 0.2  # s, older frames (than the newest fused) are not fused
    max_unseen: float = 2.0  # s, a person unseen by every camera this long is lost
    # a person seen fewer times than this is tentative, and lost after tentative_unseen: one
    # stray body (a missed gate) leaves no ghost for max_unseen
    confirm_hits: int = 2
    tentative_unseen: float = 0.5  # s
    # two persons closer than merge_distance for merge_time, both seen all along (within
    # merge_seen), never matched to two bodies of one camera frame, are one (a duplicate from
    # a missed gate): the younger id ends. Unseen persons (predictions) never merge.
    merge_distance: float = 0.25  # m
    merge_time: float = 0.5  # s
    merge_seen: float = 0.2  # s
    max_link_age: float = 0.5  # s, a camera's latest frame still "sees" its bodies this long
    confidence_sigma: float = 0.25  # m, location_confidence = exp(-sigma / confidence_sigma)


@dataclass
class BodyObservation:
    """One tracked body of a camera frame."""

    body_id: str  # the camera's track id
    position: np.ndarray  # (3,) metres in the camera's optical frame (z forward)
    source: str = 'depth'  # 'depth' (measured) or 'pointmap' (predicted)
    appearance: np.ndarray | None = None  # (D,) any embedding, compared by cosine distance


@dataclass
class BodyLink:
    """A body that sees a person, for REP-155 ``/humans/candidate_matches``."""

    camera: str
    body_id: str
    confidence: float  # 0 .. 1: gate likelihood (chi-square tail) times appearance agreement
    sigma: float  # m, RMS standard deviation of the body's position (smaller is better)
    stamp: float


@dataclass
class WorldPerson:
    """A person in the world frame, predicted to ``stamp``."""

    person_id: str  # ROS4HRI five letters
    stamp: float
    position: np.ndarray  # (3,) m
    velocity: np.ndarray  # (3,) m/s
    covariance: np.ndarray  # (3, 3) m^2, of the position
    location_confidence: float  # 0 .. 1
    last_seen: float
    bodies: list[BodyLink]  # bodies that see it now, best (smallest sigma) first

    @property
    def best_body(self) -> BodyLink | None:
        """Return the body with the most certain position, or None when none sees it now."""
        return self.bodies[0] if self.bodies else None


@dataclass
class FusedFrame:
    """What :meth:`WorldFusion.update` did with one camera frame."""

    camera: str
    stamp: float
    status: str  # 'fused', 'out_of_step' or 'no_transform'
    person_ids: list[str]  # per body in input order; '' = not fused (or no valid position)
    confidences: np.ndarray  # (M,) link confidence, 0 where not fused
    created: list[str] = field(default_factory=list)  # persons this frame started


class WorldFusion:
    """
    Persons in the world from the bodies of every camera; ``update`` once per camera frame.

    ``ids``: the person id source (give one shared with other id spaces of the run, or leave
    it None for its own).
    """

    def __init__(self, config: WorldConfig | None = None,
                 ids: FiveLetterIds | None = None) -> None:
        self.config = config or WorldConfig()
        self.ids = ids or FiveLetterIds()
        self.counters = dict.fromkeys(
            ('frames_fused', 'out_of_step', 'no_transform', 'bodies_fused', 'bodies_invalid',
             'bodies_outside_gate', 'persons_created', 'persons_lost', 'persons_discarded',
             'persons_merged'), 0)
        self._clear()

    def _clear(self) -> None:
        self._names: list[str] = []
        self._x = np.zeros((0, 6))
        self._P = np.zeros((0, 6, 6))
        self._t = np.zeros(0)  # each person's state stamp
        self._seen = np.zeros(0)
        self._hits = np.zeros(0, int)
        self._close_since: dict[tuple[str, str], float] = {}  # (older, younger) -> stamp
        self._app: np.ndarray | None = None  # (N, D) unit vectors, zero rows = none yet
        self._links: dict[tuple[str, str], str] = {}  # (camera, body id) -> person id
        self._views: dict[str, tuple[float, dict[str, BodyLink]]] = {}  # per camera: person
        self._outlier_since: dict[tuple[str, str], float] = {}  # body outside its gate since
        self.newest: float | None = None

    def reset(self) -> None:
        """Forget every person (time went back: a bag loop); counters and used ids stay."""
        self._clear()

    def __len__(self) -> int:
        return len(self._names)

    @property
    def _q(self) -> np.ndarray:
        c = self.config  # read on each use: a changed config applies from the next frame
        return np.array([c.acceleration_noise, c.acceleration_noise,
                         c.vertical_acceleration_noise])

    def diagnostics(self) -> dict[str, int]:
        """Counters for the node's diagnostics, and the persons now."""
        return {**self.counters, 'persons': len(self)}

    # --- one camera frame -------------------------------------------------------------------

    def update(self, camera: str, stamp: float, camera_to_world: np.ndarray | None,
               bodies: Sequence[BodyObservation]) -> FusedFrame:
        """
        Fold one camera frame's bodies into the persons.

        ``camera_to_world`` is the 4x4 transform of the camera's optical frame at ``stamp``;
        None (no transform yet) leaves the frame out, counted as ``no_transform``.
        """
        cfg = self.config
        count = len(bodies)
        frame = FusedFrame(camera, stamp, 'fused', [''] * count, np.zeros(count))
        if camera_to_world is None:
            self.counters['no_transform'] += 1
            frame.status = 'no_transform'
            return frame
        if self.newest is not None and stamp < self.newest - cfg.association_window:
            self.counters['out_of_step'] += 1
            frame.status = 'out_of_step'
            return frame
        unknown = {b.source for b in bodies} - set(SOURCES)
        if unknown:
            raise ValueError(f'unknown body source {unknown.pop()!r}, expected one of {SOURCES}')
        positions = np.array([b.position for b in bodies], float).reshape(count, 3)
        valid = np.isfinite(positions).all(1) & (positions[:, 2] > 0)
        rows = np.flatnonzero(valid)
        obs = [bodies[i] for i in rows]
        appearance = self._appearances(obs)  # raises before anything changed
        self.counters['frames_fused'] += 1
        self.counters['bodies_invalid'] += int(count - valid.sum())
        self.newest = stamp if self.newest is None else max(self.newest, stamp)
        z, R, sigma = self._to_world(positions[rows], [b.source for b in obs],
                                     np.asarray(camera_to_world, float))

        persons, matched, cost_d2, cos, predicted = self._associate(camera, stamp, obs, z, R,
                                                                    appearance)
        self._update_matched(persons, matched, predicted, stamp, z, R, appearance)
        confidence = gammaincc(1.5, cost_d2 / 2.0)  # chi-square 3 dof tail: 1 at d2 = 0
        has_cos = np.isfinite(cos)
        confidence[has_cos] *= np.clip((1.0 + cos[has_cos]) / 2.0, 0.0, 1.0)

        new_rows = self._unexplained(camera, stamp, obs, matched)
        created = self._start(new_rows, stamp, z, R, appearance)
        names = [''] * len(obs)
        conf = np.zeros(len(obs))
        for p, j, c in zip(persons, matched, confidence, strict=True):
            names[j], conf[j] = self._names[p], float(c)
        for j, name in zip(new_rows, created, strict=True):
            names[j], conf[j] = name, 1.0
        self._remember(camera, stamp, obs, names, conf, sigma)
        renamed = self._merge_duplicates(stamp, set(names) - {''})
        for j, i in enumerate(rows):
            frame.person_ids[i], frame.confidences[i] = _merged(names[j], renamed), conf[j]
        frame.created = [name for name in created if name in self._names]
        self.counters['bodies_fused'] += len(obs)
        self._drop_lost()
        return frame

    def _to_world(self, positions: np.ndarray, sources: list[str],
                  camera_to_world: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return body centres (M, 3), covariances (M, 3, 3) and RMS sigmas in the world."""
        cfg = self.config
        dist = np.linalg.norm(positions, axis=1)
        ray = positions / np.maximum(dist, 1e-9)[:, None]
        centres = positions + cfg.surface_offset * ray
        rng = np.empty(len(sources))
        lat = np.empty(len(sources))
        for name in SOURCES:
            mask = np.array([s == name for s in sources], bool)
            if mask.any():
                rng[mask], lat[mask] = getattr(cfg, name).sigmas(positions[mask, 2])
        lat2 = lat ** 2 + cfg.body_sigma ** 2
        rng2 = rng ** 2 + cfg.body_sigma ** 2
        cov = (lat2[:, None, None] * np.eye(3)
               + (rng2 - lat2)[:, None, None] * ray[:, :, None] * ray[:, None, :])
        rot, trans = camera_to_world[:3, :3], camera_to_world[:3, 3]
        sigma = np.sqrt((2 * lat2 + rng2) / 3.0)
        return centres @ rot.T + trans, rot @ cov @ rot.T, sigma

    def _appearances(self, obs: list[BodyObservation]) -> np.ndarray | None:
        """Return (M, D) unit appearance vectors (zero rows: none), None when no body has one."""
        given = [b.appearance for b in obs]
        if all(a is None for a in given):
            return None
        dims = {np.asarray(a).size for a in given if a is not None}
        dim = self._app.shape[1] if self._app is not None else min(dims)
        if dims != {dim}:
            raise ValueError(f'appearance vectors of {sorted(dims)} values, expected {dim}')
        out = np.zeros((len(obs), dim))
        for j, a in enumerate(given):
            if a is not None:
                v = np.asarray(a, float).ravel()
                out[j] = v / max(float(np.linalg.norm(v)), 1e-12)
        if self._app is None:
            self._app = np.zeros((len(self), dim))
        return out

    def _associate(self, camera: str, stamp: float, obs: list[BodyObservation], z: np.ndarray,
                   R: np.ndarray, appearance: np.ndarray | None):
        """
        Gate and assign.

        Return the matched persons, bodies, d2 and cosine (NaN: no appearance), and every
        person's state and covariance predicted to ``stamp``.
        """
        cfg = self.config
        n, m = len(self), len(obs)
        empty = np.zeros(0, int)
        if n == 0 or m == 0:
            return empty, empty, np.zeros(0), np.zeros(0), None
        x, P = _predict(self._x, self._P, stamp - self._t, self._q)
        innov = z[None, :, :] - x[:, None, :3]  # (N, M, 3)
        S = P[:, None, :3, :3] + R[None]  # (N, M, 3, 3)
        S_inv = np.linalg.inv(S)
        d2 = np.einsum('nmi,nmij,nmj->nm', innov, S_inv, innov)
        logdet = np.linalg.slogdet(S)[1]
        feasible = (d2 <= cfg.gate) & (np.linalg.norm(innov, axis=2) <= cfg.max_gate_distance)
        cost = d2 + cfg.covariance_cost * logdet
        cos = np.full((n, m), np.nan)
        if appearance is not None and self._app is not None:
            have = (np.abs(self._app).sum(1) > 0)[:, None] & (np.abs(appearance).sum(1) > 0)
            cos = np.where(have, self._app @ appearance.T, np.nan)
            cost = cost + cfg.appearance_weight * np.where(have, 1.0 - cos, 0.0)
        if cfg.link_bonus and self._links:
            index = {name: i for i, name in enumerate(self._names)}
            for j, body in enumerate(obs):
                i = index.get(self._links.get((camera, body.body_id), ''))
                if i is not None:
                    cost[i, j] -= cfg.link_bonus
        cost = np.where(feasible, cost, _INFEASIBLE)
        rows, cols = linear_sum_assignment(cost)
        keep = feasible[rows, cols]
        rows, cols = rows[keep], cols[keep]
        return rows, cols, d2[rows, cols], cos[rows, cols], (x, P)

    def _unexplained(self, camera: str, stamp: float, obs: list[BodyObservation],
                     matched: np.ndarray) -> np.ndarray:
        """
        Return the unmatched bodies that start persons.

        A body whose camera linked it to a live person, now outside that person's gate, is an
        outlier (a depth spike, a turn the model did not foresee) for ``outlier_time``: not
        fused, counted, and no second person for one human; after that it starts one.
        """
        live = set(self._names)
        for j in matched:
            self._outlier_since.pop((camera, obs[j].body_id), None)
        start = []
        done = set(matched.tolist())
        for j in (j for j in range(len(obs)) if j not in done):
            key = (camera, obs[j].body_id)
            if self._links.get(key) in live:
                since = self._outlier_since.setdefault(key, stamp)
                if stamp - since < self.config.outlier_time:
                    self.counters['bodies_outside_gate'] += 1
                    continue
            self._outlier_since.pop(key, None)
            start.append(j)
        return np.array(start, int)

    def _update_matched(self, persons: np.ndarray, bodies: np.ndarray,
                        predicted: tuple[np.ndarray, np.ndarray] | None, stamp: float,
                        z: np.ndarray, R: np.ndarray, appearance: np.ndarray | None) -> None:
        """Kalman update of the matched persons at ``stamp``; their stamps never go back."""
        if len(persons) == 0 or predicted is None:
            return
        t_before = self._t[persons]
        x, P = _correct(predicted[0][persons], predicted[1][persons], z[bodies], R[bodies])
        back = np.maximum(t_before - stamp, 0.0)  # an older frame: predict forward again
        if back.any():
            x, P = _predict(x, P, back, self._q)
        self._x[persons], self._P[persons] = x, P
        self._t[persons] = np.maximum(t_before, stamp)
        self._seen[persons] = np.maximum(self._seen[persons], stamp)
        self._hits[persons] += 1
        if appearance is not None and self._app is not None:
            a = appearance[bodies]
            given = np.abs(a).sum(1) > 0
            p, a = persons[given], a[given]
            old = self._app[p]
            w = np.where(np.abs(old).sum(1) > 0, self.config.appearance_smoothing, 1.0)[:, None]
            mixed = (1.0 - w) * old + w * a
            self._app[p] = mixed / np.maximum(np.linalg.norm(mixed, axis=1), 1e-12)[:, None]

    def _start(self, rows: np.ndarray, stamp: float, z: np.ndarray, R: np.ndarray,
               appearance: np.ndarray | None) -> list[str]:
        """Start a person at each unmatched body; return their new ids."""
        if len(rows) == 0:
            return []
        k = len(rows)
        names = self.ids.take_many(k)
        x = np.zeros((k, 6))
        x[:, :3] = z[rows]
        P = np.zeros((k, 6, 6))
        P[:, :3, :3] = R[rows]
        P[:, 3:, 3:] = np.eye(3) * self.config.initial_speed_sigma ** 2
        self._names.extend(names)
        self._x = np.concatenate([self._x, x])
        self._P = np.concatenate([self._P, P])
        self._t = np.concatenate([self._t, np.full(k, stamp)])
        self._seen = np.concatenate([self._seen, np.full(k, stamp)])
        self._hits = np.concatenate([self._hits, np.ones(k, int)])
        if self._app is not None:
            new = appearance[rows] if appearance is not None else np.zeros((k, self._app.shape[1]))
            self._app = np.concatenate([self._app, new])
        self.counters['persons_created'] += k
        return names

    def _remember(self, camera: str, stamp: float, obs: list[BodyObservation], names: list[str],
                  conf: np.ndarray, sigma: np.ndarray) -> None:
        """Keep this frame's body -> person links (the newest frame of each camera)."""
        links = {}
        for body, name, c, s in zip(obs, names, conf, sigma, strict=True):
            if name:  # not an outlier
                self._links[(camera, body.body_id)] = name
                links[name] = BodyLink(camera, body.body_id, float(c), float(s), stamp)
        view = self._views.get(camera)
        if view is None or stamp >= view[0]:
            self._views[camera] = (stamp, links)

    def _merge_duplicates(self, stamp: float, seen_now: set[str]) -> dict[str, str]:
        """
        Merge persons that stayed together without two bodies of one frame telling apart.

        Returns the merges made: ended person -> the person it merged into.
        """
        cfg = self.config
        renamed: dict[str, str] = {}
        if len(self) < 2:
            self._close_since = {}
            return renamed
        x = self._x[:, :3] + self._x[:, 3:] * (stamp - self._t)[:, None]
        dist = np.linalg.norm(x[:, None] - x[None], axis=2)
        seen = self._seen >= stamp - cfg.merge_seen
        near = (dist < cfg.merge_distance) & seen[:, None] & seen[None, :]
        older, younger = np.nonzero(np.triu(near, 1))
        close = {}
        for i, j in zip(older, younger, strict=True):
            pair = (self._names[i], self._names[j])
            if pair[0] in seen_now and pair[1] in seen_now:
                continue  # two bodies of this frame: two people
            close[pair] = self._close_since.get(pair, stamp)
        self._close_since = close
        for (keep, gone), since in sorted(close.items(), key=lambda item: item[1]):
            if stamp - since >= cfg.merge_time and keep in self._names and gone in self._names:
                self._merge(keep, gone)
                renamed[gone] = keep
        return renamed

    def _merge(self, keep: str, gone: str) -> None:
        """End person ``gone``: its bodies now see ``keep`` (created before it)."""
        i, j = self._names.index(keep), self._names.index(gone)
        self._seen[i] = max(self._seen[i], self._seen[j])
        self._hits[i] += self._hits[j]
        self._links = {key: keep if name == gone else name for key, name in self._links.items()}
        for _, links in self._views.values():
            link = links.pop(gone, None)
            if link is not None and keep not in links:
                links[keep] = link
        self._remove(np.arange(len(self)) == j)
        self._close_since = {pair: t for pair, t in self._close_since.items() if gone not in pair}
        self.counters['persons_merged'] += 1

    def _drop_lost(self) -> None:
        """Forget persons unseen for ``max_unseen`` (tentative ones sooner)."""
        cfg = self.config
        unseen = self.newest - self._seen
        tentative = (self._hits < cfg.confirm_hits) & (unseen > cfg.tentative_unseen)
        lost = (unseen > cfg.max_unseen) & ~tentative
        self._outlier_since = {key: t for key, t in self._outlier_since.items()
                               if t >= self.newest - cfg.max_unseen}
        if lost.any() or tentative.any():
            self.counters['persons_lost'] += int(lost.sum())
            self.counters['persons_discarded'] += int(tentative.sum())
            self._remove(lost | tentative)

    def _remove(self, drop: np.ndarray) -> None:
        """Forget the persons where ``drop``, and the links to them."""
        gone = {self._names[i] for i in np.flatnonzero(drop)}
        keep = ~drop
        self._names = [n for n, k in zip(self._names, keep, strict=True) if k]
        self._x, self._P, self._t, self._seen, self._hits = (
            self._x[keep], self._P[keep], self._t[keep], self._seen[keep], self._hits[keep])
        if self._app is not None:
            self._app = self._app[keep]
        self._links = {key: name for key, name in self._links.items() if name not in gone}

    # --- what the world looks like ----------------------------------------------------------

    def persons(self, stamp: float | None = None) -> list[WorldPerson]:
        """Return every live person predicted to ``stamp`` (default: the newest fused)."""
        if not self._names:
            return []
        cfg = self.config
        stamp = self.newest if stamp is None else stamp
        x, P = _predict(self._x, self._P, stamp - self._t, self._q)
        sigma = np.sqrt(np.trace(P[:, :3, :3], axis1=1, axis2=2) / 3.0)
        confidence = np.exp(-sigma / cfg.confidence_sigma)
        seeing: dict[str, list[BodyLink]] = {}
        for view_stamp, links in self._views.values():
            if view_stamp >= self.newest - cfg.max_link_age:
                for name, link in links.items():
                    seeing.setdefault(name, []).append(link)
        return [WorldPerson(name, stamp, x[i, :3].copy(), x[i, 3:].copy(), P[i, :3, :3].copy(),
                            float(confidence[i]), float(self._seen[i]),
                            sorted(seeing.get(name, []), key=lambda b: b.sigma))
                for i, name in enumerate(self._names)]


def _predict(x: np.ndarray, P: np.ndarray, dt: np.ndarray,
             q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Constant-velocity prediction of (N, 6) states by ``dt`` (N,) s, forward or back.

    ``q`` (3,): white-noise acceleration per axis (m^2/s^3).
    """
    dt = np.broadcast_to(np.asarray(dt, float), (x.shape[0],))
    x = x.copy()
    x[:, :3] += x[:, 3:] * dt[:, None]
    d = dt[:, None, None]
    a = np.abs(d)  # white-noise acceleration: the detour's noise is added either way
    q = np.diag(q)
    pp, pv, vp, vv = P[:, :3, :3], P[:, :3, 3:], P[:, 3:, :3], P[:, 3:, 3:]
    out = np.empty_like(P)  # F P F^T + Q by blocks, F = [[I, dt I], [0, I]]
    out[:, :3, :3] = pp + d * (pv + vp) + d * d * vv + a ** 3 / 3.0 * q
    out[:, :3, 3:] = pv + d * vv + a ** 2 / 2.0 * q
    out[:, 3:, :3] = vp + d * vv + a ** 2 / 2.0 * q
    out[:, 3:, 3:] = vv + a * q
    return x, out


def _correct(x: np.ndarray, P: np.ndarray, z: np.ndarray,
             R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kalman update of (K, 6) states with (K, 3) positions of covariance (K, 3, 3)."""
    S = P[:, :3, :3] + R
    gain = P[:, :, :3] @ np.linalg.inv(S)  # (K, 6, 3)
    x = x + np.einsum('kij,kj->ki', gain, z - x[:, :3])
    I_KH = np.broadcast_to(np.eye(6), P.shape).copy()
    I_KH[:, :, :3] -= gain
    P = I_KH @ P @ I_KH.transpose(0, 2, 1) + gain @ R @ gain.transpose(0, 2, 1)  # Joseph
    return x, 0.5 * (P + P.transpose(0, 2, 1))


def _merged(name: str, renamed: dict[str, str]) -> str:
    """Return the person ``name`` is now: itself, or the one it merged into (chains followed)."""
    while name in renamed:
        name = renamed[name]
    return name
