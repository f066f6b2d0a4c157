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
The REP-155 humanoid model of ROS4HRI: its URDF per body and its forward kinematics (ROS-free).

Links and joints carry the names, parents, axes and origins of ``human_description``'s
``human-tpl.xacro``, which ``hri_body_detect`` fills in per body (``<name>_<body id>``, root link
``body_<body id>``: x forward, y to the person's left, z up), so hri_rviz and libhri read ours as
theirs. The segment lengths are the body's own (:class:`BoneLengths`), not proportions of a
height. Limits are human_description's except where they would clip everyday poses
(:data:`LIMIT_CHANGES`). Written from the xacro's structure; no code is taken from it.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from functools import cache
from xml.sax.saxutils import quoteattr

import numpy as np


@dataclass(frozen=True)
class BoneLengths:
    """Segment lengths of one body in metres (human_description's parameter names)."""

    head_radius: float = 0.075  # half the distance between the ears (the xacro: 0.11)
    neck_length: float = 0.055  # shoulder line up to the head joints
    neck_shoulder_length: float = 0.176  # half the shoulder width
    upperarm_length: float = 0.352
    forearm_length: float = 0.22
    torso_height: float = 0.605  # hip centre up to the shoulder line
    waist_length: float = 0.264  # hip width
    tight_length: float = 0.33  # thigh (human_description's spelling)
    tibia_length: float = 0.44

    def array(self) -> np.ndarray:
        """Return the lengths in field order, ``(9,)``."""
        return np.asarray(astuple(self), np.float64)

    @classmethod
    def from_array(cls, values: np.ndarray) -> BoneLengths:
        """Inverse of :meth:`array`."""
        return cls(*(float(v) for v in values))


#: Field names of :class:`BoneLengths`, the column order of length arrays.
LENGTH_NAMES = tuple(f.name for f in fields(BoneLengths))


@dataclass(frozen=True)
class Joint:
    """One URDF joint: ``child`` hangs off ``parent`` at ``origin`` and turns about ``axis``."""

    name: str
    kind: str  # 'revolute' or 'fixed'
    parent: str
    child: str
    axis: tuple[float, float, float]
    lower: float
    upper: float


#: The 20 revolute joints in hri_body_detect's ``joint_states`` order (suffix ``_<body id>``).
JOINT_NAMES = ('waist', 'r_head', 'y_head', 'p_head',
               'l_y_shoulder', 'l_p_shoulder', 'l_r_shoulder', 'l_elbow',
               'r_y_shoulder', 'r_p_shoulder', 'r_r_shoulder', 'r_elbow',
               'l_y_hip', 'l_p_hip', 'l_r_hip', 'l_knee',
               'r_y_hip', 'r_p_hip', 'r_r_hip', 'r_knee')

#: Where our limits differ from human_description's (its value first), and why.
LIMIT_CHANGES = {
    'y_hip': ((-0.1, 0.6), (-0.8, 0.8), 'its axis is not mirrored: the same range both ways'),
    'r_hip': ((-0.4, 0.7), (-0.6, 2.4), 'hip flexion to 137 deg: sitting and squatting'),
    'r_shoulder': ((-1.7, 1.5), (-2.8, 2.8), 'the upper-arm roll absorbs the yaw of a raised '
                   'arm (the chain has a singularity with the arm down)'),
}


def _joints() -> tuple[Joint, ...]:
    out = [Joint('waist', 'revolute', 'body', 'waist', (0, 1, 0), -0.2, 1.0),
           Joint('torso', 'fixed', 'waist', 'torso', (0, 0, 1), 0, 0),
           Joint('r_head', 'revolute', 'torso', 'r_head', (1, 0, 0), -1.0, 1.0),
           Joint('y_head', 'revolute', 'r_head', 'y_head', (0, 0, 1), -1.4, 1.4),
           Joint('p_head', 'revolute', 'y_head', 'p_head', (0, -1, 0), -1.5, 1.5),
           Joint('head', 'fixed', 'p_head', 'head', (0, 0, 1), 0, 0)]
    for s, r in (('l', 1), ('r', -1)):
        out += [Joint(f'{s}_y_shoulder', 'revolute', 'torso', f'{s}_y_shoulder', (0, 0, -r),
                      -1.1, 1.9),
                Joint(f'{s}_p_shoulder', 'revolute', f'{s}_y_shoulder', f'{s}_p_shoulder',
                      (r, 0, 0), -0.4, 3.3),
                Joint(f'{s}_r_shoulder', 'revolute', f'{s}_p_shoulder', f'{s}_shoulder',
                      (0, 0, r), -2.8, 2.8),
                Joint(f'{s}_elbow', 'revolute', f'{s}_shoulder', f'{s}_elbow', (0, -1, 0),
                      0.0, 2.5),
                Joint(f'{s}_wrist', 'fixed', f'{s}_elbow', f'{s}_wrist', (0, 0, 1), 0, 0)]
    for s, r in (('l', 1), ('r', -1)):
        out += [Joint(f'{s}_y_hip', 'revolute', 'body', f'{s}_y_hip', (0, 0, -1), -0.8, 0.8),
                Joint(f'{s}_p_hip', 'revolute', f'{s}_y_hip', f'{s}_p_hip', (r, 0, 0),
                      -0.4, 3.3),
                Joint(f'{s}_r_hip', 'revolute', f'{s}_p_hip', f'{s}_hip', (0, -1, 0), -0.6, 2.4),
                Joint(f'{s}_knee', 'revolute', f'{s}_hip', f'{s}_knee', (0, -1, 0), -2.5, 0.0),
                Joint(f'{s}_ankle', 'fixed', f'{s}_knee', f'{s}_ankle', (0, 0, 1), 0, 0)]
    return tuple(out)


#: Every joint, parents before children.
JOINTS = _joints()
#: Every link: the root ``body`` then each joint's child, in :data:`JOINTS` order.
LINK_NAMES = ('body',) + tuple(j.child for j in JOINTS)
_REVOLUTE = {n: i for i, n in enumerate(JOINT_NAMES)}
LOWER = np.array([next(j.lower for j in JOINTS if j.name == n) for n in JOINT_NAMES])
UPPER = np.array([next(j.upper for j in JOINTS if j.name == n) for n in JOINT_NAMES])


def joint_origins(lengths: np.ndarray) -> dict[str, np.ndarray]:
    """Each joint's origin in its parent link, ``(..., 3)`` per name, from lengths ``(..., 9)``."""
    lengths = np.asarray(lengths, np.float64)
    L = {n: lengths[..., i] for i, n in enumerate(LENGTH_NAMES)}
    zero = np.zeros_like(L['head_radius'])

    def xyz(x, y, z):
        return np.stack(np.broadcast_arrays(x + zero, y + zero, z + zero), -1)

    o = {'waist': xyz(0, 0, 0), 'torso': xyz(0, 0, L['torso_height']),
         'r_head': xyz(0, 0, L['neck_length']), 'y_head': xyz(0, 0, 0), 'p_head': xyz(0, 0, 0),
         'head': xyz(L['head_radius'] / 2, 0, L['head_radius'])}
    for s, r in (('l', 1), ('r', -1)):
        o[f'{s}_y_shoulder'] = xyz(0, r * L['neck_shoulder_length'], 0)
        o[f'{s}_p_shoulder'] = o[f'{s}_r_shoulder'] = xyz(0, 0, 0)
        o[f'{s}_elbow'] = xyz(0, 0, -L['upperarm_length'])
        o[f'{s}_wrist'] = xyz(0, 0, -L['forearm_length'])
        o[f'{s}_y_hip'] = xyz(0, r * L['waist_length'] / 2, 0)
        o[f'{s}_p_hip'] = o[f'{s}_r_hip'] = xyz(0, 0, 0)
        o[f'{s}_knee'] = xyz(0, 0, -L['tight_length'])
        o[f'{s}_ankle'] = xyz(0, 0, -L['tibia_length'])
    return o


@cache
def _fk_plan() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per joint: origin (linear in the lengths), rotation terms, angle column, parent, child."""
    names = [j.name for j in JOINTS]
    basis = np.stack([np.stack([joint_origins(np.eye(9)[i])[n] for n in names])
                      for i in range(9)], -1)  # (J, 3, 9): origins are linear in the lengths
    axes = np.array([j.axis for j in JOINTS], np.float64)
    # Rodrigues: R = outer + cos (I - outer) + sin [axis]x, as 4x4 terms (the origin apart)
    terms = np.zeros((3, len(JOINTS), 4, 4))
    outer = axes[:, :, None] * axes[:, None, :]
    terms[0, :, :3, :3], terms[0, :, 3, 3] = outer, 1
    terms[1, :, :3, :3] = np.eye(3) - outer
    terms[2, :, :3, :3] = np.cross(axes[:, None, :], -np.eye(3))  # [axis]x
    column = np.array([_REVOLUTE.get(j.name, -1) for j in JOINTS])
    link = {n: i for i, n in enumerate(LINK_NAMES)}
    parent = np.array([link[j.parent] for j in JOINTS])
    child = np.array([link[j.child] for j in JOINTS])
    return basis.reshape(-1, 9).T.copy(), terms, column, parent, child


@cache
def _fk_levels() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Joints by depth in the tree: (joints, their parent links, their child links) per depth."""
    _, _, _, parent, child = _fk_plan()
    depth = {0: 0}
    for p, c in zip(parent, child, strict=True):  # parents before children
        depth[c] = depth[p] + 1
    joints = np.arange(len(JOINTS))
    return [(joints[sel], parent[sel], child[sel]) for sel in
            (np.array([depth[c] == d for c in child]) for d in range(1, max(depth.values()) + 1))]


def joint_transforms(lengths: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """
    Each joint's child link in its parent link, ``(..., len(JOINTS), 4, 4)`` in JOINTS order.

    What robot_state_publisher sends on TF (``JOINTS[i].parent`` -> ``JOINTS[i].child``, with
    the ``_<body id>`` suffix), fixed joints included. ``lengths (..., 9)``, ``positions
    (..., 20)`` as for :func:`forward_kinematics`.
    """
    positions = np.asarray(positions, np.float64)
    lengths = np.asarray(lengths, np.float64)
    basis, terms, column, _, _ = _fk_plan()
    revolute, col = _fk_columns()
    angle = np.where(revolute, positions.take(col, -1), 0.0)[..., None, None]
    local = terms[0] + np.cos(angle) * terms[1] + np.sin(angle) * terms[2]
    local[..., :3, 3] = (lengths @ basis).reshape(lengths.shape[:-1] + (len(JOINTS), 3))
    return local


@cache
def _fk_columns() -> tuple[np.ndarray, np.ndarray]:
    """Which joints turn, and the column of ``positions`` that each reads (fixed: 0)."""
    column = _fk_plan()[2]
    return column >= 0, np.maximum(column, 0)


def forward_kinematics(lengths: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """
    Every link's pose in the body frame: ``(..., len(LINK_NAMES), 4, 4)``.

    ``lengths (..., 9)`` in :data:`LENGTH_NAMES` order, ``positions (..., 20)`` joint angles in
    :data:`JOINT_NAMES` order (what ``joint_states`` carries).
    """
    return links_from_joints(joint_transforms(lengths, positions))


def links_from_joints(local: np.ndarray) -> np.ndarray:
    """Link poses in the body frame from :func:`joint_transforms` ``(..., J, 4, 4)``."""
    poses = np.empty(local.shape[:-3] + (len(LINK_NAMES), 4, 4))
    poses[..., 0, :, :] = np.eye(4)
    for joints, parent, child in _fk_levels():  # parents before children
        poses[..., child, :, :] = poses[..., parent, :, :] @ local[..., joints, :, :]
    return poses


def _limb_visual(length: float, radius: float) -> str:
    return (f'<visual><origin xyz="0 0 {-length / 2:.4f}" rpy="0 0 0"/><geometry>'
            f'<cylinder length="{length:.4f}" radius="{radius}"/></geometry>'
            f'<material name="skin"/></visual>')


def humanoid_urdf(body_id: str, lengths: BoneLengths | None = None) -> str:
    """
    Return the URDF of body ``body_id`` (``robot_description`` of its ``urdf`` topic).

    Link and joint names are human_description's with the suffix ``_<body_id>``; limbs are
    drawn as cylinders, the head as a sphere (what hri_rviz's skeleton display shows).
    """
    lengths = lengths or BoneLengths()
    L = lengths.array()
    origins = joint_origins(L)
    r = 0.03
    seg = {'l_shoulder': lengths.upperarm_length, 'r_shoulder': lengths.upperarm_length,
           'l_elbow': lengths.forearm_length, 'r_elbow': lengths.forearm_length,
           'l_hip': lengths.tight_length, 'r_hip': lengths.tight_length,
           'l_knee': lengths.tibia_length, 'r_knee': lengths.tibia_length,
           'torso': lengths.torso_height}
    lines = ['<?xml version="1.0"?>', f'<robot name={quoteattr("human_" + body_id)}>',
             '<material name="skin"><color rgba="1 0.7 0 1"/></material>']
    for link in LINK_NAMES:
        visual = ''
        if link in seg:
            visual = _limb_visual(seg[link], r)
        elif link == 'head':
            visual = (f'<visual><origin xyz="{-lengths.head_radius / 2:.4f} 0 0" rpy="0 0 0"/>'
                      f'<geometry><sphere radius="{lengths.head_radius:.4f}"/></geometry>'
                      '<material name="skin"/></visual>')
        lines.append(f'<link name={quoteattr(f"{link}_{body_id}")}>{visual}</link>')
    for j in JOINTS:
        x, y, z = origins[j.name]
        body = (f'<parent link={quoteattr(f"{j.parent}_{body_id}")}/>'
                f'<child link={quoteattr(f"{j.child}_{body_id}")}/>'
                f'<origin xyz="{x:.4f} {y:.4f} {z:.4f}" rpy="0 0 0"/>')
        if j.kind == 'revolute':
            body += (f'<axis xyz="{j.axis[0]:g} {j.axis[1]:g} {j.axis[2]:g}"/>'
                     f'<limit effort="1000" lower="{j.lower:g}" upper="{j.upper:g}" '
                     'velocity="0.5"/>')
        lines.append(f'<joint name={quoteattr(f"{j.name}_{body_id}")} type="{j.kind}">'
                     f'{body}</joint>')
    lines.append('</robot>')
    return '\n'.join(lines)


def joint_names(body_id: str) -> list[str]:
    """``joint_states`` names of body ``body_id``: :data:`JOINT_NAMES` with ``_<body_id>``."""
    return [f'{n}_{body_id}' for n in JOINT_NAMES]


def link_frames(body_id: str) -> list[str]:
    """TF frame names of the links of body ``body_id``, :data:`LINK_NAMES` order."""
    return [f'{n}_{body_id}' for n in LINK_NAMES]


#: Where the toe tips sit in the ``<s>_knee`` link frame, for synthetic bodies (m), left side.
_TOES = {'big_toe': (0.15, -0.03, -0.07), 'small_toe': (0.13, 0.03, -0.07),
         'heel': (-0.06, 0.0, -0.08)}


def synthetic_keypoints(lengths: np.ndarray, positions: np.ndarray, rotation: np.ndarray,
                        origin: np.ndarray) -> np.ndarray:
    """
    308 keypoints ``(B, 308, 3)`` of humanoids posed by ``positions (B, 20)`` (NaN elsewhere).

    For tests and benchmarks: shoulders, elbows, wrists, hips, knees and ankles at their links,
    toes and heels off the shin, the face template at the ``head`` link; then moved by
    ``rotation (B, 3, 3)`` and ``origin (B, 3)`` (the body frame in the camera frame).
    """
    from .faces import face_template_points
    from ..models.metadata import keypoint_info
    index = {n: i for i, n in enumerate(keypoint_info().names)}
    links = forward_kinematics(lengths, positions)  # (B, L, 4, 4)
    li = {n: i for i, n in enumerate(LINK_NAMES)}
    head = links[:, li['head']]
    out = face_template_points(head[:, :3, :3], head[:, :3, 3])
    for s, side in (('l', 'left'), ('r', 'right')):
        for kp, link in (('shoulder', 'shoulder'), ('elbow', 'elbow'), ('wrist', 'wrist'),
                         ('hip', 'hip'), ('knee', 'knee'), ('ankle', 'ankle')):
            out[:, index[f'{side}_{kp}']] = links[:, li[f'{s}_{link}'], :3, 3]
        shin = links[:, li[f'{s}_ankle']]
        for kp, (x, y, z) in _TOES.items():
            offset = np.array([x, y if s == 'l' else -y, z])
            out[:, index[f'{side}_{kp}']] = shin[:, :3, 3] + shin[:, :3, :3] @ offset
    return np.einsum('bij,bkj->bki', rotation, out) + origin[:, None]


__all__ = ['BoneLengths', 'JOINTS', 'JOINT_NAMES', 'Joint', 'LENGTH_NAMES', 'LIMIT_CHANGES',
           'LINK_NAMES', 'LOWER', 'UPPER', 'forward_kinematics', 'humanoid_urdf', 'joint_names',
           'joint_origins', 'joint_transforms', 'link_frames', 'links_from_joints',
           'synthetic_keypoints']
