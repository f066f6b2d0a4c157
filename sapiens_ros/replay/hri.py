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
``replay --hri``: the node's REP-155 bodies and faces, and their TF frames, into the output bag.

What the live node publishes with ``hri:=true`` (``ros/hri_bodies``, ``ros/hri_faces``,
``ros/people_world``), built by the same builders from the same core (one
:class:`~sapiens_ros.core.people.body_models.BodyModels` per camera topic), written per frame:
``/humans/bodies/tracked`` and per body ``roi``, ``skeleton2d``, ``joint_states``, ``position``,
``velocity`` and, once its bone lengths froze, ``urdf``; ``/humans/faces/tracked`` and per face
``roi``; face <-> body matches on ``/humans/candidate_matches``; on ``/tf`` the ``body_<id>``
frames with metric 3D, the humanoid's link frames and ``face_<id>``. The input crops
(``cropped``, ``aligned``) are left out: they would double the bag's image data.
"""

from __future__ import annotations

from std_msgs.msg import Header, String

from ..core.people.body_frames import body_frames, body_id
from ..core.people.body_models import BodyModels
from ..core.people.state import People
from ..core.pipeline.pipeline import FrameResult
from ..ros.body_messages import (body_position, body_velocity, face_transform, joint_state,
                                 link_transforms)
from ..ros.hri_bodies import BODIES_NS, normalized_roi, skeleton2d
from ..ros.hri_faces import face_id, FACES_NS
from ..ros.hri_lists import IdsList, IdsMatch, NormalizedRegionOfInterest2D
from ..ros.hri_persons import MATCHES_TOPIC
from ..ros.tf_frames import body_transforms, TF_TOPIC, TFMessage, valid_frame_id


class BagHri:
    """The REP-155 messages of each processed frame; see the module docstring."""

    def __init__(self) -> None:
        self._models: dict[str, BodyModels] = {}
        self._bodies: dict[str, dict[str, int]] = {}  # camera -> body id -> track
        self._faces: dict[str, set[str]] = {}  # camera -> face ids in view
        self._urdf_sent: set[str] = set()
        self._matched: set[str] = set()

    def update(self, camera: str, header: Header, result: FrameResult,
               people: People) -> list[tuple[str, object]]:
        """Return the ``(topic, message)`` pairs of one frame of ``camera``."""
        models = self._models.setdefault(camera, BodyModels())
        frame = models.update(people, result.image_size)
        out: list[tuple[str, object]] = []
        pose, size = result.pose, result.image_size
        self._bodies[camera] = {body_id(t): int(t) for t in people.tracks.tolist()}
        kin = frame.kinematics
        kin_row = {int(r): k for k, r in enumerate(kin.rows.tolist())}
        rows = people.ids >= 0
        for row in [int(r) for r in rows.nonzero()[0]]:
            track = int(people.ids[row])
            name = body_id(track)
            self._bodies[camera].setdefault(name, track)
            ns = f'{BODIES_NS}/{name}'
            out.append((f'{ns}/roi', normalized_roi(header, pose.boxes[row],
                                                    float(pose.box_scores[row]), size)))
            out.append((f'{ns}/skeleton2d', skeleton2d(header, people.smoothed[row],
                                                       pose.scores[row], size)))
            k = kin_row.get(row)
            if k is None:
                continue
            out += [(f'{ns}/joint_states', joint_state(header, name, kin.joint_positions[k])),
                    (f'{ns}/position', body_position(header, kin.position[k])),
                    (f'{ns}/velocity', body_velocity(header, name, kin.velocity[k]))]
            if name not in self._urdf_sent:
                text = models.kinematics.urdf(track, name)
                if text is not None:
                    out.append((f'{ns}/urdf', String(data=text)))
                    self._urdf_sent.add(name)
        ids = sorted({b: t for live in self._bodies.values() for b, t in live.items()}.items(),
                     key=lambda item: item[1])
        out.append((f'{BODIES_NS}/tracked', IdsList(header=header, ids=[b for b, _ in ids])))
        out += self._face_messages(camera, header, frame.faces)
        if valid_frame_id(header.frame_id):
            tf = body_transforms(header, body_frames(people))
            for k, track in enumerate(kin.ids.tolist()):
                tf += link_transforms(header, body_id(track), kin, k)
            faces = frame.faces
            for k, track in enumerate(faces.ids.tolist()):
                if track >= 0 and faces.pose_valid[k]:
                    tf.append(face_transform(header, face_id(track), faces.position[k],
                                             faces.orientation[k]))
            if tf:
                out.append((TF_TOPIC, TFMessage(transforms=tf)))
        return out

    def _face_messages(self, camera: str, header: Header, faces) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = []
        shown = [(k, int(t)) for k, t in enumerate(faces.ids.tolist())
                 if t >= 0 and faces.visible[k]]
        self._faces[camera] = {face_id(t) for _, t in shown}
        for k, track in shown:
            name = face_id(track)
            x0, y0, x1, y1 = (float(v) for v in faces.roi[k])
            out.append((f'{FACES_NS}/{name}/roi', NormalizedRegionOfInterest2D(
                header=header, xmin=x0, ymin=y0, xmax=x1, ymax=y1, c=1.0)))
            if name not in self._matched:
                out.append((MATCHES_TOPIC, IdsMatch(id1=name, id1_type=IdsMatch.FACE,
                                                    id2=body_id(track), id2_type=IdsMatch.BODY,
                                                    confidence=1.0)))
                self._matched.add(name)
        ids = sorted(set().union(*self._faces.values()))
        out.append((f'{FACES_NS}/tracked', IdsList(header=header, ids=ids)))
        return out


__all__ = ['BagHri']
