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
Joint rotations for avatars: the VRM 1.0 humanoid bones from the 308 keypoints (ROS-free).

Rig: the VRM 1.0 / Unity humanoid bone set (:data:`BONES`), which UniVRM, three-vrm and VRM
importers for Unreal retarget to any humanoid avatar. Rest pose: the VRM 1.0 T-pose in model
space, glTF axes (+Y up, the avatar faces +Z, +X is its left): arms and hands along +-X, palms
down, fingers along +-X, thumbs level at 45 deg between +-X and +Z, legs down -Y, feet along +Z.
In that rest pose every bone's axes are the model axes, so a bone's rotation is its VRM
*normalized* local rotation (three-vrm's ``setNormalizedPose``, UniVRM's normalized bones):
``global(bone) = global(parent) @ local(bone)``, ``global(hips) = local(hips)``.

Model space is ``body_<id>`` with its axes renamed (:data:`MODEL_FROM_BODY`): X = body y (left),
Y = body z (up), Z = body x (forward). Place the avatar at the body frame; the hips rotation is
then the pelvis against the torso.

Each bone's frame is built from two directions (:data:`BONES`): an *aim* along the bone between
keypoints, and a *side* that fixes its twist, from keypoints (hips, chest, hands, feet), from
the bend of the limb (upper arm, thigh: the plane of the elbow, the knee), or carried from the
parent (forearm, shin, finger and thumb segments turn as hinges). Spine and chest split the
pelvis-to-shoulders rotation, the neck splits the chest-to-head one (the 308 set has no spine
or neck-base points that move with the body). Shoulder (clavicle) and toe bones stay at rest:
no point of the set measures a shrug or the toe joints. The head is the face frame
(:func:`~sapiens_ros.core.people.faces.head_poses`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from .geometry import all_of, clamp, cross, dot, frames, matrix_to_quat, slerp_matrices, unit
from ..models.metadata import keypoint_info

#: Rotation of VRM model space in ``body_<id>``: columns are the model's X, Y, Z in body axes.
MODEL_FROM_BODY = np.array([[0.0, 0, 1], [1, 0, 0], [0, 1, 0]])

_X, _Y, _Z = np.eye(3)
_EYE3, _ONES3 = np.eye(3), np.ones(3)
_S2 = np.sqrt(0.5)
#: ``(4 points x 3) @ this``: the mean of the last two points minus that of the first two.
_END_TO_END = np.kron(np.array([[-0.5], [-0.5], [0.5], [0.5]]), _EYE3)


@dataclass(frozen=True)
class Bone:
    """
    How a bone's frame is measured.

    ``mode``: 'points' (aim and side between keypoints), 'bend' (side: the bend of the next
    segment, ``side`` names its keypoints and sign; ``fallback`` a bone whose ``side_rest``
    axis serves while straight), 'parent' (side: the parent's ``side_rest`` axis), 'slerp'
    (``t`` of the way from bone ``aim[0]`` to ``aim[1]``), 'rest' (the parent's frame), 'face'.
    """

    name: str
    parent: str | None
    mode: str
    aim: tuple[str, str] = ('', '')
    aim_rest: tuple[float, float, float] = (0, 0, 0)
    side: tuple[str, str] = ('', '')
    side_rest: tuple[float, float, float] = (0, 0, 0)
    fallback: str = ''
    t: float = 0.0


def _bones() -> tuple[Bone, ...]:
    out = [Bone('hips', None, 'points', ('mid_hip', 'mid_shoulder'), _Y,
                ('right_hip', 'left_hip'), _X),
           Bone('spine', 'hips', 'slerp', ('hips', 'upperChest'), t=1 / 3),
           Bone('chest', 'spine', 'slerp', ('hips', 'upperChest'), t=2 / 3),
           Bone('upperChest', 'chest', 'points', ('mid_hip', 'mid_shoulder'), _Y,
                ('right_shoulder', 'left_shoulder'), _X),
           Bone('neck', 'upperChest', 'slerp', ('upperChest', 'head'), t=0.5),
           Bone('head', 'neck', 'face')]
    for s, x in (('left', 1.0), ('right', -1.0)):
        out += [
            Bone(f'{s}Shoulder', 'upperChest', 'rest'),
            Bone(f'{s}UpperArm', f'{s}Shoulder', 'bend', (f'{s}_shoulder', f'{s}_elbow'),
                 (x, 0, 0), (f'{s}_elbow', f'{s}_wrist'), _Z, fallback=f'{s}Hand'),
            Bone(f'{s}LowerArm', f'{s}UpperArm', 'parent', (f'{s}_elbow', f'{s}_wrist'),
                 (x, 0, 0), side_rest=_Y),
            Bone(f'{s}Hand', f'{s}LowerArm', 'points',
                 (f'{s}_wrist', f'{s}_middle_finger_third_joint'), (x, 0, 0),
                 (f'{s}_pinky_finger_third_joint', f'{s}_forefinger_third_joint'), _Z)]
        thumb = (x * _S2, 0, _S2)
        hinge = (-x * _S2, 0, _S2)  # the thumb's flexion axis, level and across the thumb
        for seg, a, b in (('Metacarpal', 'thumb_third_joint', 'thumb2'),
                          ('Proximal', 'thumb2', 'thumb3'), ('Distal', 'thumb3', 'thumb4')):
            parent = f'{s}Hand' if seg == 'Metacarpal' else out[-1].name
            out.append(Bone(f'{s}Thumb{seg}', parent, 'parent', (f'{s}_{a}', f'{s}_{b}'), thumb,
                            side_rest=hinge))
        for finger, kp in (('Index', 'forefinger'), ('Middle', 'middle_finger'),
                           ('Ring', 'ring_finger'), ('Little', 'pinky_finger')):
            for seg, a, b in (('Proximal', 'third_joint', '2'), ('Intermediate', '2', '3'),
                              ('Distal', '3', '4')):
                parent = f'{s}Hand' if seg == 'Proximal' else out[-1].name
                sep = '_' if a == 'third_joint' else ''
                out.append(Bone(f'{s}{finger}{seg}', parent, 'parent',
                                (f'{s}_{kp}{sep}{a}', f'{s}_{kp}{b}'), (x, 0, 0),
                                side_rest=_Z))
    for s, x in (('left', 1.0), ('right', -1.0)):
        out += [
            Bone(f'{s}UpperLeg', 'hips', 'bend', (f'{s}_hip', f'{s}_knee'), -_Y,
                 (f'{s}_ankle', f'{s}_knee'), _Z, fallback=f'{s}Foot'),
            Bone(f'{s}LowerLeg', f'{s}UpperLeg', 'parent', (f'{s}_knee', f'{s}_ankle'), -_Y,
                 side_rest=_X),
            Bone(f'{s}Foot', f'{s}LowerLeg', 'points', (f'{s}_heel', f'{s}_mid_toes'), _Z,
                 (f'{s}_big_toe', f'{s}_small_toe') if x > 0 else
                 (f'{s}_small_toe', f'{s}_big_toe'), _X),
            Bone(f'{s}Toes', f'{s}Foot', 'rest')]
    return tuple(out)


#: The VRM 1.0 humanoid bones computed, parents before children (VRM 0.x and Unity call the
#: thumb's Metacarpal, Proximal, Distal: Proximal, Intermediate, Distal).
BONES = _bones()
BONE_NAMES = tuple(b.name for b in BONES)
_B = {n: i for i, n in enumerate(BONE_NAMES)}
_DERIVED = {'mid_hip': ('left_hip', 'right_hip'),
            'mid_shoulder': ('left_shoulder', 'right_shoulder'),
            'left_mid_toes': ('left_big_toe', 'left_small_toe'),
            'right_mid_toes': ('right_big_toe', 'right_small_toe')}


@cache
def _points() -> dict[str, int]:
    """Index of each named point in the keypoints extended by :data:`_DERIVED`."""
    names = keypoint_info().names
    index = {n: i for i, n in enumerate(names)}
    index.update({n: len(names) + i for i, n in enumerate(_DERIVED)})
    return index


@cache
def _rest_frames() -> np.ndarray:
    """``frames(aim_rest, side_rest)`` per bone ``(N, 3, 3)`` (identity where unused)."""
    out = np.tile(np.eye(3), (len(BONES), 1, 1))
    for b in BONES:
        if np.any(b.aim_rest) and np.any(b.side_rest):
            out[_B[b.name]] = frames(np.asarray(b.aim_rest, float),
                                     np.asarray(b.side_rest, float))
    return out


@dataclass(frozen=True)
class _Stage:
    """Bones measured together (their inputs come from earlier stages), in ``_Plan.bones``."""

    rows: slice  # of _Plan.bones
    sides: slice  # of _Plan.pairs' sides: the 'bend' bones' next segments, the 'points' sides
    bend: int  # the first ``bend`` bones are 'bend' bones, the rest 'points' or 'parent'
    points: bool  # the rest are 'points' bones (else 'parent')
    #: (n - points * (n - bend),) rows of _Plan.bones whose frame gives an axis: each bend
    #: bone's fallback (the axis that serves while straight), each 'parent' bone's parent
    source: np.ndarray
    #: (len(source), 1, k) that axis in the source's measured frame: its first k rows (k = 2
    #: where no axis reads the third, aim x side)
    axis: np.ndarray
    side_rest: np.ndarray  # (bend, 3) the bend bones' side at rest (fallback not measured)
    hold: np.ndarray  # (n,) where an unmeasured bone's global comes from (N: identity)
    cross: bool = True  # a later stage reads this one's third rows: compute them in the loop


@dataclass(frozen=True)
class _Plan:
    """The bones measured from keypoints, in stages; the rest follow from them."""

    bones: np.ndarray  # (M,) bone indices, stage after stage
    #: (M + S, 4) keypoints: each bone's aim, then the stages' sides, from the mean of the
    #: first two to the mean of the last two
    ends: np.ndarray
    stages: tuple[_Stage, ...]
    rest_t: np.ndarray  # (M, 3, 3) transposed rest frames of ``bones``


@cache
def _plan() -> _Plan:
    """
    Stage the measured bones by dependency.

    A 'bend' bone needs its fallback, a 'parent' bone its parent. A bone's measured frame
    ``F = frames(aim, side)`` gives its global ``F @ rest^T``, so a parent's axis
    ``G_p @ side_rest`` is ``F_p @ (rest_p^T side_rest)``.
    """
    p = _points()
    rest = _rest_frames()
    measured = [b for b in BONES if b.mode in ('points', 'bend', 'parent')]
    depth: dict[str, int] = {}
    for b in measured:  # parents before children
        depth[b.name] = {'points': 0, 'bend': depth.get(b.fallback, 0) + 1}.get(
            b.mode, depth.get(b.parent, 0) + 1)
    stages, order, sides = [], [], []
    for d in sorted(set(depth.values())):
        bend = [b for b in measured if depth[b.name] == d and b.mode == 'bend']
        rest_bs = [b for b in measured if depth[b.name] == d and b.mode != 'bend']
        modes = {b.mode for b in rest_bs}
        assert len(modes) <= 1 and not (bend and 'points' in modes)
        bs = bend + rest_bs
        par = [b for b in rest_bs if b.mode == 'parent']
        hold = [len(BONES) if b.mode == 'points' or b.parent not in depth else _B[b.parent]
                for b in bs]
        n_sides = len(bend) + (len(rest_bs) if 'points' in modes else 0)
        row = {b.name: i for i, b in enumerate(order)}
        stages.append(_Stage(
            slice(len(order), len(order) + len(bs)), slice(len(sides), len(sides) + n_sides),
            len(bend), 'points' in modes,
            np.array([row[b.fallback] for b in bend] + [row[b.parent] for b in par], np.int64),
            np.array([rest[_B[b.fallback]].T @ b.side_rest for b in bend]
                     + [rest[_B[b.parent]].T @ b.side_rest for b in par]).reshape(-1, 1, 3),
            np.array([b.side_rest for b in bend], np.float64).reshape(-1, 3),
            np.array(hold, np.int64)))
        order += bs
        sides += [[p[b.side[0]], p[b.side[1]]] for b in bs if b.mode in ('bend', 'points')]
    # the third rows (aim x side) are computed in the stage loop only where a later stage
    # reads them, else once after it
    third = [bool(np.any(st.axis[..., 2])) for st in stages]
    stage_of = np.concatenate([np.full(o.rows.stop - o.rows.start, k)
                               for k, o in enumerate(stages)])
    read = {int(k) for st, t in zip(stages, third, strict=True) if t
            for k in stage_of[st.source]}
    stages = [replace(st, axis=st.axis if t else st.axis[..., :2].copy(), cross=k in read)
              for k, (st, t) in enumerate(zip(stages, third, strict=True))]
    bones = np.array([_B[b.name] for b in order], np.int64)
    ext = _extension()
    pairs = np.array([[p[b.aim[0]], p[b.aim[1]]] for b in order] + sides)
    ends = np.stack([ext[0][pairs[:, 0]], ext[1][pairs[:, 0]], ext[0][pairs[:, 1]],
                     ext[1][pairs[:, 1]]], -1)
    return _Plan(bones, ends, tuple(stages), np.swapaxes(rest[bones], -1, -2).copy())


@cache
def _derived_bones() -> tuple[list[int], list[int], list[int], np.ndarray, list[int], list[int]]:
    """Slerped bones (index, from, to, t) and rest bones (index, parent)."""
    sl = [b for b in BONES if b.mode == 'slerp']
    rest = [b for b in BONES if b.mode == 'rest']
    assert not any(BONES[_B[b.parent]].mode == 'rest' for b in rest)
    return ([_B[b.name] for b in sl], [_B[b.aim[0]] for b in sl], [_B[b.aim[1]] for b in sl],
            np.array([b.t for b in sl]), [_B[b.name] for b in rest],
            [_B[b.parent] for b in rest])


@dataclass(frozen=True)
class _Layout:
    """Rows of rig_pose's work array: measured bones (plan order), identity, head, the rest."""

    rows: int
    bones: np.ndarray  # (N,) each bone's row
    parents: np.ndarray  # (N,) its parent's row (the hips: the identity's, model space)
    head: int
    chest: int  # upperChest's row
    slerp: slice  # the slerped bones' rows
    lo: np.ndarray  # rows they slerp from and to, and how far
    hi: np.ndarray
    t: np.ndarray
    rest: slice  # the rest bones' rows
    rest_parents: np.ndarray  # their parents' rows
    hold: tuple[np.ndarray, ...]  # per stage: the rows unmeasured bones hold (identity: M)


@cache
def _layout() -> _Layout:
    """Return the rows of :func:`rig_pose`'s work array."""
    plan = _plan()
    M = len(plan.bones)
    sl, lo, hi, t, rest_bones, rest_parents = _derived_bones()
    order = list(plan.bones) + [len(BONES), _B['head']] + sl + rest_bones  # identity: N
    row = {int(b): i for i, b in enumerate(order)}

    def rows(bones) -> np.ndarray:
        return np.array([row[int(b)] for b in bones], np.int64)

    parents = [b.parent for b in BONES]
    return _Layout(len(order), rows(range(len(BONES))),
                   rows(_B[p] if p else len(BONES) for p in parents), row[_B['head']],
                   row[_B['upperChest']],
                   slice(M + 2, M + 2 + len(sl)), rows(lo), rows(hi), t,
                   slice(M + 2 + len(sl), len(order)), rows(rest_parents),
                   tuple(rows(st.hold) for st in plan.stages))


@cache
def _levels() -> list[tuple[np.ndarray, np.ndarray]]:
    """Bones with a parent by depth in the tree: (bones, their parents) per depth."""
    depth = {}
    for b in BONES:
        depth[b.name] = 0 if b.parent is None else depth[b.parent] + 1
    return [(np.array([_B[b.name] for b in BONES if depth[b.name] == d]),
             np.array([_B[b.parent] for b in BONES if depth[b.name] == d]))
            for d in range(1, max(depth.values()) + 1)]


@dataclass
class RigPose:
    """Bone rotations of one frame's bodies, :data:`BONE_NAMES` order."""

    local: np.ndarray  # (B, N, 4) x, y, z, w: VRM normalized local rotations
    global_: np.ndarray  # (B, N, 3, 3) bone rotations in model space (hips: = local)
    valid: np.ndarray  # (B, N) bool: measured this frame (else at rest: identity local)

    def __len__(self) -> int:
        return int(self.local.shape[0])


def rig_pose(xyz: np.ndarray, rotation: np.ndarray, origin: np.ndarray,
             head: np.ndarray | None = None,
             head_valid: np.ndarray | None = None) -> RigPose:
    """
    VRM bone rotations of bodies from camera-frame keypoints ``xyz (B, 308, 3)``.

    ``rotation (B, 3, 3)`` and ``origin (B, 3)``: ``body_<id>`` in the camera frame (the
    :class:`~.kinematics.KinematicsFrame` ``orientation`` as a matrix and ``position``; the
    bones' directions do not depend on the origin); ``head (B, 3, 3)`` and ``head_valid
    (B,)``: the faces' axes in the camera frame.
    """
    B = len(xyz)
    plan = _plan()
    model = np.asarray(rotation, np.float64) @ MODEL_FROM_BODY  # model axes in the camera
    e = np.asarray(xyz).take(plan.ends, 1).astype(np.float64, copy=False)  # (B, M + S, 4, 3)
    d = (e.reshape(B, -1, 12) @ _END_TO_END) @ model  # (mean of the last two - first two)
    M = len(plan.bones)
    aim, side_pts = unit(d[:, :M]), d[:, M:]  # (B, M, 3), (B, S, 3) model space
    # F: each measured bone's frame (plan order) transposed, rows aim, side, aim x side (model
    # space)
    F = np.empty((B, M, 3, 3))
    for st in plan.stages:
        a = aim[:, st.rows]
        if len(st.source):  # the sources' axes (NaN where a source is not measured)
            ax = (st.axis @ F.take(st.source, 1)[:, :, :st.axis.shape[-1]])[..., 0, :]
        if st.points:
            side = side_pts[:, st.sides]
        elif st.bend:
            # the next segment's direction off this one; the fallback bone's axis when straight
            u = a[:, :st.bend, None]
            fb = ax[:, :st.bend]
            g = np.concatenate([unit(side_pts[:, st.sides])[:, :, None],
                                np.where(np.isfinite(fb), fb, st.side_rest)[:, :, None]], 2)
            g = g - dot(g, u) * u  # (B, bend, 2, 3): both off the aim (else: the rest axis)
            n = np.sqrt(dot(g, g))
            w = 0.1 * clamp(1 - n[:, :, 0] / 0.1, 0, 1)
            side = np.concatenate([g[:, :, 0] + w * (g[:, :, 1] / np.maximum(n[:, :, 1], 1e-9)),
                                   ax[:, st.bend:]], 1)
        else:  # the parent's axis
            side = ax
        s = unit(side - dot(side, a) * a)
        F[:, st.rows, 0], F[:, st.rows, 1] = a, s
        if st.cross:
            F[:, st.rows, 2] = cross(a, s)
    F[:, :, 2] = cross(F[:, :, 0], F[:, :, 1])
    # measured: s is finite (NaN where the aim is, or where a 'parent' bone's parent is not)
    measured = np.isfinite(F[:, :, 1] @ _ONES3)
    # W: globals in _layout's rows (measured bones, identity, head, slerped, rest); V: valid
    L = _layout()
    W, V = np.empty((B, L.rows, 3, 3)), np.zeros((B, L.rows), bool)
    W[:, :M], W[:, M], V[:, :M] = F.swapaxes(-1, -2) @ plan.rest_t, _EYE3, measured
    if not all_of(measured):  # unmeasured bones hold their parent's global
        for st, hold in zip(plan.stages, L.hold, strict=True):
            W[:, st.rows] = np.where(measured[:, st.rows, None, None], W[:, st.rows],
                                     W.take(hold, 1))
    if head is not None and head_valid is not None:
        h = model.swapaxes(-1, -2) @ np.asarray(head, np.float64) @ MODEL_FROM_BODY
        hv = np.asarray(head_valid, bool)
        W[:, L.head], V[:, L.head] = np.where(hv[:, None, None], h, W[:, L.chest]), hv
    else:
        W[:, L.head] = W[:, L.chest]
    W[:, L.slerp] = slerp_matrices(W.take(L.lo, 1), W.take(L.hi, 1), L.t)
    V[:, L.slerp] = V.take(L.lo, 1) & V.take(L.hi, 1)
    W[:, L.rest], V[:, L.rest] = W.take(L.rest_parents, 1), V.take(L.rest_parents, 1)
    G, valid = W.take(L.bones, 1), V.take(L.bones, 1)
    local = W.take(L.parents, 1).swapaxes(-1, -2) @ G  # parent^T global
    q = matrix_to_quat(local)
    if not all_of(valid):  # bones at rest: their globals follow from their parents'
        q[~valid] = (0, 0, 0, 1)
        G = rig_globals(np.where(valid[..., None, None], local, _EYE3))
    return RigPose(q, G, valid)


@cache
def _extension() -> tuple[np.ndarray, np.ndarray]:
    """Each extended point as the mean of two keypoints (a keypoint: itself twice)."""
    names = keypoint_info().names
    index = {n: i for i, n in enumerate(names)}
    a, b = np.arange(len(names) + len(_DERIVED)), np.arange(len(names) + len(_DERIVED))
    for i, (x, y) in enumerate(_DERIVED.values()):
        a[len(names) + i], b[len(names) + i] = index[x], index[y]
    return a, b


#: T-pose positions (model space, m, left side; the right mirrors x) of the points a synthetic
#: body places, each carried by a bone from an anchor point placed before it.
_REST: tuple[tuple[str, tuple[float, float, float], str, str], ...] = (
    ('mid_hip', (0, 0, 0), 'hips', ''), ('left_hip', (0.1, 0, 0), 'hips', 'mid_hip'),
    ('mid_shoulder', (0, 0.5, 0), 'hips', 'mid_hip'),
    ('left_shoulder', (0.18, 0.5, 0), 'upperChest', 'mid_shoulder'),
    ('head_base', (0, 0.6, 0), 'neck', 'mid_shoulder'),
    ('sellion', (0, 0.68, 0.09), 'head', 'head_base'),
    ('left_elbow', (0.46, 0.5, 0), 'leftUpperArm', 'left_shoulder'),
    ('left_wrist', (0.71, 0.5, 0), 'leftLowerArm', 'left_elbow'),
    ('left_middle_finger_third_joint', (0.8, 0.5, 0), 'leftHand', 'left_wrist'),
    ('left_forefinger_third_joint', (0.795, 0.5, 0.022), 'leftHand', 'left_wrist'),
    ('left_ring_finger_third_joint', (0.795, 0.5, -0.018), 'leftHand', 'left_wrist'),
    ('left_pinky_finger_third_joint', (0.785, 0.5, -0.036), 'leftHand', 'left_wrist'),
    ('left_thumb_third_joint', (0.735, 0.485, 0.025), 'leftHand', 'left_wrist'),
    ('left_knee', (0.1, -0.42, 0), 'leftUpperLeg', 'left_hip'),
    ('left_ankle', (0.1, -0.82, 0), 'leftLowerLeg', 'left_knee'),
    ('left_heel', (0.1, -0.89, -0.05), 'leftFoot', 'left_ankle'),
    ('left_big_toe', (0.07, -0.89, 0.14), 'leftFoot', 'left_ankle'),
    ('left_small_toe', (0.13, -0.89, 0.14), 'leftFoot', 'left_ankle'))


def _rest_points() -> list[tuple[str, np.ndarray, str, str]]:
    """:data:`_REST` for both sides plus the finger and thumb points, absolute T-pose xyz."""
    out: list[tuple[str, np.ndarray, str, str]] = []
    at: dict[str, np.ndarray] = {}

    def add(name, xyz, bone, anchor):
        at[name] = np.asarray(xyz, np.float64)
        out.append((name, at[name], bone, anchor))

    for name, xyz, bone, anchor in _REST:
        if 'left' in name:
            for side, x in (('left', 1.0), ('right', -1.0)):
                add(name.replace('left', side), np.asarray(xyz) * (x, 1, 1),
                    bone.replace('left', side), anchor.replace('left', side))
        else:
            add(name, xyz, bone, anchor)
    for side, x in (('left', 1.0), ('right', -1.0)):
        d = np.array([x * _S2, 0, _S2])
        for seg, length in (('Metacarpal', 0.04), ('Proximal', 0.032), ('Distal', 0.025)):
            b = BONES[_B[f'{side}Thumb{seg}']]
            add(b.aim[1], at[b.aim[0]] + d * length, b.name, b.aim[0])
        for finger in ('Index', 'Middle', 'Ring', 'Little'):
            for seg, length in (('Proximal', 0.045), ('Intermediate', 0.025), ('Distal', 0.02)):
                b = BONES[_B[f'{side}{finger}{seg}']]
                add(b.aim[1], at[b.aim[0]] + np.array([x * length, 0, 0]), b.name, b.aim[0])
    return out


def rig_globals(local: np.ndarray) -> np.ndarray:
    """Model-space rotations ``(B, N, 3, 3)`` of local rotations ``(B, N, 3, 3)``."""
    G = np.array(local, np.float64)
    for bones, parents in _levels():  # parents before children
        G[:, bones] = G[:, parents] @ G[:, bones]
    return G


def random_rig_locals(n: int, rng: np.random.Generator) -> np.ndarray:
    """
    Random VRM locals ``(n, N, 3, 3)`` for tests and benchmarks.

    Free rotations where the keypoints show them, an even torso twist, the neck sharing the
    head's turn, and hinges (elbows, knees, fingers, thumbs) bending about their own axes.
    """
    from scipy.spatial.transform import Rotation

    def rotvec(v):
        return Rotation.from_rotvec(np.asarray(v, float)).as_matrix()

    loc = np.tile(np.eye(3), (n, len(BONES), 1, 1))
    for name in ('hips', 'leftUpperArm', 'rightUpperArm', 'leftHand', 'rightHand',
                 'leftUpperLeg', 'rightUpperLeg', 'leftFoot', 'rightFoot'):
        loc[:, _B[name]] = rotvec(rng.normal(0, 0.5, (n, 3)))
    twist = np.outer(rng.uniform(-0.5, 0.5, n) / 3, [0, 1, 0])
    for name in ('spine', 'chest', 'upperChest'):
        loc[:, _B[name]] = rotvec(twist)
    loc[:, _B['neck']] = loc[:, _B['head']] = rotvec(rng.normal(0, 0.3, (n, 3)))
    for s, x in (('left', 1), ('right', -1)):
        loc[:, _B[f'{s}LowerArm']] = rotvec(np.outer(rng.uniform(0.3, 2.0, n), [0, -x, 0]))
        loc[:, _B[f'{s}LowerLeg']] = rotvec(np.outer(rng.uniform(0.3, 2.0, n), [1, 0, 0]))
        for finger in ('Index', 'Middle', 'Ring', 'Little'):
            for seg in ('Proximal', 'Intermediate', 'Distal'):
                loc[:, _B[f'{s}{finger}{seg}']] = rotvec(
                    np.outer(rng.uniform(0, 1.2, n), [0, 0, -x]))
        for seg in ('Metacarpal', 'Proximal', 'Distal'):
            loc[:, _B[f'{s}Thumb{seg}']] = rotvec(
                np.outer(rng.uniform(0, 0.8, n), [-x * np.sqrt(0.5), 0, np.sqrt(0.5)]))
    return loc


def synthetic_rig_keypoints(local: np.ndarray, rotation: np.ndarray,
                            origin: np.ndarray) -> np.ndarray:
    """
    308 keypoints ``(B, 308, 3)`` of a T-pose body posed by VRM locals ``(B, N, 3, 3)``.

    For tests and benchmarks. The body frame is ``rotation (B, 3, 3)``, ``origin (B, 3)`` in
    the camera frame; the face is :data:`~.faces.FACE_TEMPLATE` at the head. Points the rig
    does not read stay NaN.
    """
    from .faces import face_template_points
    G = rig_globals(local)
    model = np.asarray(rotation, np.float64) @ MODEL_FROM_BODY
    B = len(local)
    placed: dict[str, np.ndarray] = {}
    rest: dict[str, np.ndarray] = {}
    for name, xyz, bone, anchor in _rest_points():
        rest[name] = xyz
        placed[name] = np.zeros((B, 3)) if not anchor else \
            placed[anchor] + G[:, _B[bone]] @ (xyz - rest[anchor])
    face = model @ G[:, _B['head']] @ MODEL_FROM_BODY.T  # face axes x fwd, y left, z up
    cam = {n: np.einsum('bij,bj->bi', model, p) + origin for n, p in placed.items()}
    out = face_template_points(face, cam['sellion'])
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    for n, p in cam.items():
        if n in index:
            out[:, index[n]] = p
    return out


__all__ = ['BONES', 'BONE_NAMES', 'Bone', 'MODEL_FROM_BODY', 'RigPose', 'random_rig_locals',
           'rig_globals', 'rig_pose', 'synthetic_rig_keypoints']
