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
The topic contract: which outputs each task publishes, their names, encodings and record layouts.

Light on purpose (numpy and names only, no message types, no torch): ``node_params`` and the
launch side read it, and ``ros2 launch`` must stay quick. The message type of each topic is in
:mod:`.topic_types`, the builders in :mod:`.messages`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np

from ..core.models.registry import PERCEPTION_TASKS

#: The outputs of the heads, in publish order, each named ``<task>/<what>``.
_HEAD_OUTPUTS: tuple[str, ...] = (
    'pose/keypoints', 'pose/persons', 'pose/markers', 'pose/overlay', 'seg/labels',
    'seg/overlay', 'normal/image', 'normal/overlay', 'pointmap/points', 'pointmap/depth',
    'pointmap/camera_info', 'matting/alpha')

#: Output topic suffixes per task, in publish order; the tasks are the registry's perception
#: heads (``core.models.registry.PERCEPTION_TASKS``), each output that of its name's task.
TASK_OUTPUTS: dict[str, tuple[str, ...]] = {
    task: tuple(s for s in _HEAD_OUTPUTS if s.split('/')[0] == task) for task in PERCEPTION_TASKS}

#: Outputs built from the tracked people (``build_messages(..., people=...)``), pose task.
PEOPLE_OUTPUTS: tuple[str, ...] = ('people/poses', 'people/ids')

#: Latched (transient-local) JSON metadata topics per task. ``seg/label_info`` itself is the
#: ``vision_msgs/LabelInfo`` (:data:`LABEL_INFO_TOPIC`), as vision_msgs documents.
INFO_TOPICS: dict[str, str] = {'pose': 'pose/keypoint_info', 'seg': 'seg/label_info_json'}

#: ``vision_msgs/Detection2DArray`` of the tracked people, a pose output.
DETECTIONS_OUTPUT = 'pose/detections'
#: ``vision_msgs/LabelInfo`` of the seg classes: latched, beside ``seg/labels`` as vision_msgs
#: documents (the JSON with colours is ``seg/label_info_json``).
LABEL_INFO_TOPIC = 'seg/label_info'

#: Outputs of message packages that may be missing (not in ``TOPIC_TYPES``, ``task_outputs``
#: or ``OUTPUT_TASK``, so bags and tools without them are unchanged): suffix -> task. Built
#: only when named in ``MessageOptions.outputs``; see ``topic_types.optional_outputs``.
OPTIONAL_OUTPUTS: dict[str, str] = {DETECTIONS_OUTPUT: 'pose'}

#: ``<topic>/compressed`` variants (``CompressedImage``, image_transport's naming) and their topic.
COMPRESSED_OUTPUTS: dict[str, str] = {
    f'{s}/compressed': s for s in ('pose/overlay', 'seg/labels', 'seg/overlay', 'normal/overlay',
                                   'matting/alpha')}

#: Which task produces each output suffix (compressed variants included; the optional outputs
#: are :data:`OPTIONAL_OUTPUTS`, :func:`tasks_for` knows both).
OUTPUT_TASK: dict[str, str] = {s: t for t, suffixes in TASK_OUTPUTS.items() for s in suffixes}
OUTPUT_TASK.update(dict.fromkeys(PEOPLE_OUTPUTS, 'pose'))
OUTPUT_TASK.update({c: OUTPUT_TASK[s] for c, s in COMPRESSED_OUTPUTS.items()})

#: Every output suffix a node can publish, optional ones last: suffix -> task.
_TASK_OF: dict[str, str] = {**OUTPUT_TASK, **OPTIONAL_OUTPUTS}

#: The outputs a robot wants at 30 Hz: 3.65 MB per 1024x768 frame with a person on 35 % of it,
#: with the node's defaults (pointmap_stride 2, foreground only); sizes in docs/topics.md. The
#: people outputs are built only with tracked people (tens of bytes per person); matting/alpha
#: (0.79 MB) only when the matting head is loaded (not by default).
DEFAULT_OUTPUTS: tuple[str, ...] = (
    'pose/keypoints', 'pose/persons', 'pose/markers', 'seg/labels', 'seg/overlay/compressed',
    'normal/overlay/compressed', 'pointmap/points', 'pointmap/depth', 'pointmap/camera_info',
    *PEOPLE_OUTPUTS, 'matting/alpha')

#: ``normal/image`` encodings: float32 unit vectors, or int16 components scaled by 32767.
NORMAL_ENCODINGS = ('32FC3', '16SC3')

#: ``pose/keypoints`` records; ``id``: the person's track id in every row (-1: untracked, or no
#: tracking).
KEYPOINT_DTYPE = np.dtype([(n, '<f4') for n in ('u', 'v', 'score', 'x', 'y', 'z')] +
                          [('id', '<i4')])
#: ``pose/persons`` records: one per person.
PERSON_DTYPE = np.dtype([(n, '<f4') for n in ('x_min', 'y_min', 'x_max', 'y_max', 'score')] +
                        [('id', '<i4')])


def task_outputs(tasks: Collection[str], people: bool = True) -> list[str]:
    """Output suffixes of ``tasks`` in publish order, with the people outputs when tracked."""
    out = [s for t in TASK_OUTPUTS if t in tasks for s in TASK_OUTPUTS[t]]
    return out + list(PEOPLE_OUTPUTS) if people and 'pose' in tasks else out


def tasks_for(outputs: Iterable[str]) -> frozenset[str]:
    """
    Return the tasks that produce ``outputs`` (optional outputs included).

    Raises ValueError naming an unknown suffix and the known ones.
    """
    outputs = set(outputs)
    unknown = sorted(outputs - _TASK_OF.keys())
    if unknown:
        raise ValueError(f'unknown outputs {unknown}; known: {", ".join(_TASK_OF)}')
    return frozenset(_TASK_OF[s] for s in outputs)
