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
Which heads run for a frame and where its pose boxes come from: one decision for all callers.

Heads depend on each other: top-down pose needs person boxes (from the seg foreground, a detector,
the tracker's predictions or the full frame), the pointmap's foreground mask comes from seg, and
tracked people need 3D (measured depth, else the pointmap). :func:`plan_tasks` resolves these
for one frame from what is wanted, what is loaded and what each task's rate budget allows now;
:func:`choose_boxes` is its choice of pose boxes, the whole fallback chain (a frame's own boxes,
the tracker's, seg's, the full frame's). The pipeline, the scheduler (so the node and replay)
and the node's ``box_source`` parameter (:func:`pipeline_box_source`) all go through here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

#: Order the heads run in: seg first, since pose boxes and the pointmap mask come from it.
RUN_ORDER = ('seg', 'normal', 'pointmap', 'matting', 'backbone', 'pose')

#: ``box_source`` choices: the seg foreground, the whole frame, a detector's boxes (the node's
#: ``<camera>/detections``). The pipeline's own are the first two (:data:`PIPELINE_BOX_SOURCES`).
BOX_SOURCES = ('seg', 'full', 'detections')
PIPELINE_BOX_SOURCES = BOX_SOURCES[:2]

#: Pose box origins that are boxes the caller hands the pipeline with the frame: a caller's
#: (``given``: ``infer --boxes``), a detector's, or the tracker's predictions.
GIVEN_ORIGINS = ('given', 'detections', 'tracker')


@dataclass(frozen=True)
class TaskPlan:
    """
    The heads to run on one frame and where its pose boxes come from.

    ``boxes`` is the origin :func:`choose_boxes` picked: ``'seg'`` (seg foreground components,
    seg runs), one of :data:`GIVEN_ORIGINS` (boxes the caller hands over with the frame),
    ``'full'`` (the whole frame) or ``''`` (no pose). ``deferred`` holds due tasks that wait for
    a later frame (the pointmap waits for seg's next frame when its foreground mask needs seg).
    """

    run: tuple[str, ...]
    boxes: str = ''
    deferred: tuple[str, ...] = ()

    def __contains__(self, task: str) -> bool:
        return task in self.run

    def __bool__(self) -> bool:
        return bool(self.run)

    @property
    def given_boxes(self) -> bool:
        """Tell whether pose runs on boxes the caller hands over with the frame."""
        return self.boxes in GIVEN_ORIGINS


def pipeline_box_source(box_source: str, loaded: Collection[str]) -> str:
    """Return the pipeline's own box source: a detector's boxes fall back to seg, else full."""
    if box_source == 'detections':
        return 'seg' if 'seg' in loaded else 'full'
    return box_source


def choose_boxes(box_source: str, loaded: Iterable[str], due: Callable[[str], bool], *,
                 given: str = '', tracked: Callable[[], int] | None = None,
                 after_given: bool = False) -> str:
    """
    Return where the pose boxes of a frame that runs pose come from: the first that applies.

    1. ``given``: the frame's own boxes (``'given'`` or ``'detections'``; ``''``: none).
    2. ``'tracker'`` within the age bound after a frame with a detector's boxes
       (``after_given``): nobody tracked then means nobody, so no fallback boxes.
    3. ``'seg'`` when the pipeline's ``box_source`` is seg, seg is loaded and due now.
    4. ``'tracker'`` between seg frames while the tracker sees anyone; else ``''``: no pose
       (nobody is known to be there).
    5. ``'full'``: the whole frame.

    ``tracked`` counts the people the tracker would give boxes for (None: no tracker); it is
    called only when the answer depends on it.
    """
    if given:
        return given
    if tracked is not None and after_given:
        return 'tracker'
    loaded = tuple(loaded)
    if pipeline_box_source(box_source, loaded) == 'seg' and 'seg' in loaded:
        if due('seg'):
            return 'seg'
        return 'tracker' if tracked is not None and tracked() else ''
    return 'full'


def load_tasks(tasks: Iterable[str], box_source: str = 'seg') -> tuple[str, ...]:
    """Return the heads to load for ``tasks``: seg too when pose takes its boxes from it."""
    tasks = tuple(tasks)
    if 'pose' in tasks and box_source == 'seg' and 'seg' not in tasks:
        return ('seg',) + tasks
    return tasks


def plan_tasks(wanted: Iterable[str], loaded: Iterable[str], *,
               due: Callable[[str], bool] | None = None, box_source: str = 'seg',
               given_boxes: bool | str = False, tracked: Callable[[], int] | None = None,
               after_given: bool = False, people_3d: bool = False, depth: bool = False,
               foreground_only: bool = True) -> TaskPlan:
    """
    Plan one frame.

    ``wanted``: tasks whose outputs someone wants; ``loaded``: the pipeline's heads; ``due``:
    whether a task's rate budget lets it run now (default: always); ``given_boxes``: the caller
    has person boxes for this frame (pose then needs no seg): True, or where they come from
    (``'detections'``); ``tracked`` and ``after_given``: the tracker, for :func:`choose_boxes`;
    ``people_3d``: tracked people want 3D, which without ``depth`` comes from the pointmap;
    ``foreground_only``: the pointmap is masked by seg. Tasks that are neither loaded nor due
    never run; a dependency runs only when its own budget allows, otherwise the dependent task
    waits (pointmap) or goes without (pose without boxes does not run).
    """
    loaded = set(loaded)
    due = due or (lambda task: True)
    run = {t for t in wanted if t in loaded and due(t)}
    deferred = []
    boxes = ''
    if 'pose' in run:
        given = ('given' if given_boxes is True else given_boxes) or ''
        boxes = choose_boxes(box_source, loaded, due, given=given, tracked=tracked,
                             after_given=after_given)
        if boxes == 'seg':
            run.add('seg')
        elif not boxes:
            run.discard('pose')
    if people_3d and 'pose' in run and not depth and 'pointmap' in loaded and due('pointmap'):
        run.add('pointmap')  # torso positions need 3D: without depth, the pointmap's
    if 'pointmap' in run and foreground_only and 'seg' in loaded and 'seg' not in run:
        if due('seg'):
            run.add('seg')  # the pointmap's foreground mask
        else:
            run.discard('pointmap')
            deferred.append('pointmap')
    return TaskPlan(tuple(t for t in RUN_ORDER if t in run), boxes, tuple(deferred))
