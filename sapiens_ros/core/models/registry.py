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

"""Registry of Sapiens2 tasks, model sizes, hub ids and transformers classes."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnknownTaskError


@dataclass(frozen=True)
class TaskSpec:
    """What the pipeline needs to know about one Sapiens2 task."""

    name: str
    model_class: str
    hub_task: str
    sizes: tuple[str, ...]
    description: str


_DENSE_SIZES = ('0.4b', '0.8b', '1b', '5b')

TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec('pose', 'Sapiens2ForPoseEstimation', 'pose', _DENSE_SIZES,
                 '308-keypoint top-down 2D pose'),
        TaskSpec('seg', 'Sapiens2ForSemanticSegmentation', 'seg', _DENSE_SIZES,
                 '29-class body-part segmentation'),
        TaskSpec('normal', 'Sapiens2ForNormalEstimation', 'normal', _DENSE_SIZES,
                 'surface normals'),
        TaskSpec('pointmap', 'Sapiens2ForPointmapEstimation', 'pointmap', _DENSE_SIZES,
                 'per-pixel metric XYZ'),
        TaskSpec('matting', 'Sapiens2ForImageMatting', 'matting', _DENSE_SIZES,
                 'alpha matte and foreground'),
        TaskSpec('backbone', 'Sapiens2Model', 'pretrain', ('0.1b',) + _DENSE_SIZES,
                 'pretrained backbone, CLS embedding'),
    )
}

#: The heads the perception node and replay run (each has outputs, a rate and a size).
PERCEPTION_TASKS = ('pose', 'seg', 'normal', 'pointmap', 'matting')
#: The heads loaded when none are named (matting, for XR passthrough, only when asked).
DEFAULT_TASKS = ('pose', 'seg', 'normal', 'pointmap')
DEFAULT_SIZE = '0.4b'
HUB_ORG = 'facebook'


def task_spec(task: str) -> TaskSpec:
    """Return the spec of ``task`` or raise an error listing the valid tasks."""
    try:
        return TASKS[task]
    except KeyError:
        raise UnknownTaskError(
            f'unknown task {task!r}; valid tasks are: {", ".join(TASKS)}') from None


def check_size(task: str, size: str) -> str:
    """Return ``size`` normalised to lower case, or raise naming the sizes ``task`` has."""
    spec = task_spec(task)
    norm = size.strip().lower()
    if norm not in spec.sizes:
        raise UnknownTaskError(
            f'unknown model size {size!r} for task {task!r}; valid sizes are: '
            f'{", ".join(spec.sizes)}')
    return norm


def hub_id(task: str, size: str = DEFAULT_SIZE) -> str:
    """Hub id of the checkpoint for ``task`` at ``size``, e.g. ``facebook/sapiens2-pose-0.4b``."""
    size = check_size(task, size)
    return f'{HUB_ORG}/sapiens2-{task_spec(task).hub_task}-{size}'


def model_class(task: str) -> type:
    """Return the transformers class that implements ``task``."""
    import transformers

    return getattr(transformers, task_spec(task).model_class)


def parse_tasks(tasks: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Parse ``'pose,seg'`` (or a list) into a validated, de-duplicated tuple of tasks."""
    items = tasks.split(',') if isinstance(tasks, str) else list(tasks)
    out: list[str] = []
    for item in (i.strip() for i in items):
        if item and item not in out:
            task_spec(item)
            out.append(item)
    if not out:
        raise UnknownTaskError(f'no task given; choose from: {", ".join(TASKS)}')
    return tuple(out)
