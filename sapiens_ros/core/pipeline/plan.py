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
Which heads run for a frame: one decision for the pipeline, the node and replay.

Heads depend on each other: top-down pose needs person boxes (from the seg foreground, a detector,
the tracker's predictions or the full frame), the pointmap's foreground mask comes from seg, and
tracked people need 3D (measured depth, else the pointmap). :func:`plan_tasks` resolves these
for one frame from what is wanted, what is loaded and what each task's rate budget allows now.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Order the heads run in: seg first, since pose boxes and the pointmap mask come from it.
RUN_ORDER = ('seg', 'normal', 'pointmap', 'matting', 'backbone', 'pose')


@dataclass(frozen=True)
class TaskPlan:
    """
    The heads to run on one frame and where its pose boxes come from.

    ``boxes`` is ``'seg'`` (seg foreground components, seg runs), ``'given'`` (the caller's
    boxes: a detector, or the tracker's predictions between seg frames), ``'full'`` (the whole
    frame) or ``''`` (no pose). ``deferred`` holds due tasks that wait for a later frame (the
    pointmap waits for seg's next frame when its foreground mask needs seg).
    """

    run: tuple[str, ...]
    boxes: str = ''
    deferred: tuple[str, ...] = ()

    def __contains__(self, task: str) -> bool:
        return task in self.run

    def __bool__(self) -> bool:
        return bool(self.run)


def load_tasks(tasks: Iterable[str], box_source: str = 'seg') -> tuple[str, ...]:
    """Return the heads to load for ``tasks``: seg too when pose takes its boxes from it."""
    tasks = tuple(tasks)
    if 'pose' in tasks and box_source == 'seg' and 'seg' not in tasks:
        return ('seg',) + tasks
    return tasks


def plan_tasks(wanted: Iterable[str], loaded: Iterable[str], *,
               due: Callable[[str], bool] | None = None, box_source: str = 'seg',
               given_boxes: bool = False, people_3d: bool = False, depth: bool = False,
               foreground_only: bool = True) -> TaskPlan:
    """
    Plan one frame.

    ``wanted``: tasks whose outputs someone wants; ``loaded``: the pipeline's heads; ``due``:
    whether a task's rate budget lets it run now (default: always); ``given_boxes``: the caller
    has person boxes for this frame (pose then needs no seg); ``people_3d``: tracked people
    want 3D, which without ``depth`` comes from the pointmap; ``foreground_only``: the pointmap
    is masked by seg. Tasks that are neither loaded nor due never run; a dependency runs only
    when its own budget allows, otherwise the dependent task waits (pointmap) or goes without
    (pose without boxes does not run: nobody is known to be there).
    """
    loaded = set(loaded)
    due = due or (lambda task: True)
    run = {t for t in wanted if t in loaded and due(t)}
    deferred = []
    boxes = ''
    if 'pose' in run:
        if given_boxes:
            boxes = 'given'
        elif box_source == 'seg' and 'seg' in loaded:
            if 'seg' in run or due('seg'):
                run.add('seg')
                boxes = 'seg'
            else:  # between seg frames with nobody tracked: no boxes, no pose
                run.discard('pose')
        else:
            boxes = 'full'
    if people_3d and 'pose' in run and not depth and 'pointmap' in loaded and due('pointmap'):
        run.add('pointmap')  # torso positions need 3D: without depth, the pointmap's
    if 'pointmap' in run and foreground_only and 'seg' in loaded and 'seg' not in run:
        if due('seg'):
            run.add('seg')  # the pointmap's foreground mask
        else:
            run.discard('pointmap')
            deferred.append('pointmap')
    return TaskPlan(tuple(t for t in RUN_ORDER if t in run), boxes, tuple(deferred))
