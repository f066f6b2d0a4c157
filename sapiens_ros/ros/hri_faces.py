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
REP-155 (ROS4HRI) faces from the face keypoints of the 308: ``/humans/faces/tracked`` and more.

A body's face has its body's track, so face ids are a function of the track id too (five
letters, another key than the bodies': ``FACE_NAMES``). Per face, while its track lives and
enough face keypoints are seen: ``/humans/faces/<id>/roi`` (``NormalizedRegionOfInterest2D``),
``/cropped`` (``Image``, the face box of the input) and ``/aligned`` (``Image`` 112x112, the
similarity warp that puts the eyes, nose and mouth corners where face-recognition models want
them); each face is matched to its body on ``/humans/candidate_matches`` (confidence 1, when
it first shows). The ``face_<id>`` TF frame (head pose) needs metric 3D and comes from
``people_world``. The 308 set has no jaw contour, so no 68/70-point landmarks are published.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image
from std_msgs.msg import Header

from .array_msgs import image_msg
from .hri_bodies import cropped_image
from .hri_lists import destroyable_publisher, HriList, IdsMatch, NormalizedRegionOfInterest2D
from .hri_persons import MATCHES_TOPIC
from .qos import HRI_MATCHES_QOS, HRI_QOS
from ..core.people.body_frames import body_id
from ..core.people.faces import Faces
from ..core.people.hri_ids import TrackNames

#: REP-155's face namespace (global).
FACES_NS = '/humans/faces'
#: Face ids of this process's tracks (another key than the bodies').
FACE_NAMES = TrackNames()
#: Side of the aligned face crop (pixels).
ALIGNED_SIZE = 112


def face_id(track: int) -> str:
    """Return the REP-155 face id of a track (five lowercase letters)."""
    return FACE_NAMES(track)


@dataclass
class _Face:
    roi: object
    cropped: object
    aligned: object

    @property
    def publishers(self) -> tuple:
        return (self.roi, self.cropped, self.aligned)


class HriFaces(HriList):
    """Publishes the faces of one node's cameras; ``update`` per frame, like HriBodies."""

    def __init__(self, node: Node) -> None:
        super().__init__(node, f'{FACES_NS}/tracked')
        self._matches = destroyable_publisher(node, IdsMatch, MATCHES_TOPIC, HRI_MATCHES_QOS)

    @property
    def faces(self) -> list[str]:
        """Return the face ids with publishers."""
        with self._lock:
            return sorted(self._entries)

    def update(self, camera: str, header: Header, faces: Faces,
               image: np.ndarray | None) -> None:
        """Publish one frame's faces of ``camera`` (``faces``: the frame's body models')."""
        with self._lock:
            shown = [(k, int(t)) for k, t in enumerate(faces.ids.tolist())
                     if t >= 0 and faces.visible[k]]
            self._set_live(camera, {face_id(t): t for _, t in shown})
            for k, track in shown:
                self._publish_face(header, face_id(track), track, faces, k, image)
            self._drop_lost()
            self._publish_tracked(header)

    def _publish_face(self, header: Header, name: str, track: int, faces: Faces, k: int,
                      image: np.ndarray | None) -> None:
        face = self._entries.get(name)
        if face is None:
            ns = f'{FACES_NS}/{name}'
            face = self._entries[name] = _Face(
                destroyable_publisher(self._node, NormalizedRegionOfInterest2D, f'{ns}/roi',
                                      HRI_QOS),
                destroyable_publisher(self._node, Image, f'{ns}/cropped', HRI_QOS),
                destroyable_publisher(self._node, Image, f'{ns}/aligned', HRI_QOS))
            # a new face: its body is matched once (it keeps its body's track)
            self._matches.publish(IdsMatch(id1=name, id1_type=IdsMatch.FACE, id2=body_id(track),
                                           id2_type=IdsMatch.BODY, confidence=1.0))
        if face.roi.get_subscription_count():
            x0, y0, x1, y1 = (float(v) for v in faces.roi[k])
            face.roi.publish(NormalizedRegionOfInterest2D(header=header, xmin=x0, ymin=y0,
                                                          xmax=x1, ymax=y1, c=1.0))
        if image is None:
            return
        if face.cropped.get_subscription_count():
            crop = cropped_image(header, image, faces.box[k])
            if crop is not None:
                face.cropped.publish(crop)
        warp = faces.aligned[k]
        if face.aligned.get_subscription_count() and np.isfinite(warp).all():
            out = cv2.warpAffine(image, warp.astype(np.float64), (ALIGNED_SIZE, ALIGNED_SIZE),
                                 flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
            face.aligned.publish(image_msg(header, out, 'rgb8'))

    def _closed(self) -> None:
        self._node.destroy_publisher(self._matches)


__all__ = ['ALIGNED_SIZE', 'FACES_NS', 'FACE_NAMES', 'HriFaces', 'face_id']
