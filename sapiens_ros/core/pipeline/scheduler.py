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
Many cameras, one set of models: plan every camera's frame, run each head once per step.

A :class:`Camera` keeps what one camera's frames need across steps: its rate budget and its
tracked people (whose predicted boxes let pose run between seg frames). :meth:`Scheduler.run`
takes one step: it plans each frame (:func:`~.plan.plan_tasks`), runs the pipeline once on all
of them, each head batched over the frames that need it, and updates each camera's people in
order. The ROS node feeds it the newest frame of every camera; replay feeds it bag frames.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
import functools
from typing import Any

import numpy as np

from .budget import RateBudget
from .pipeline import FrameResult, Pipeline
from .plan import plan_tasks, TaskPlan
from ..errors import SapiensError
from ..people.state import People, PeopleConfig, PeopleState
from ..people.tracking import box_iou, IdAllocator
from ..processing.boxes import keypoint_boxes
from ..processing.render import RenderRequest

#: Predicted boxes overlapping more than this are one person (a lost and a new track of them).
DUPLICATE_IOU = 0.7


class Camera:
    """
    One camera's scheduling state: its rate budget and tracked people.

    Cameras of one node (or one replay) share ``ids``, so a track id names one person across
    every camera (and its ``body_<id>`` TF frame is unique).

    ``given_boxes_max_age``: after a frame that brought its own person boxes (a detector's),
    pose on the frames without any runs on the boxes the tracker predicts for this many seconds
    of stamps (0: never); after that the pipeline's own box source takes over.
    """

    def __init__(self, name: str, rates: Mapping[str, float] | None = None,
                 people: PeopleConfig | None = None, track: bool = True,
                 ids: IdAllocator | None = None, given_boxes_max_age: float = 0.0) -> None:
        self.name = name
        self.budget = RateBudget(rates)
        self.people = PeopleState(people, ids) if track else None
        self.given_boxes_max_age = given_boxes_max_age
        self.given_boxes_at: float | None = None  # stamp of the last frame with given boxes

    def between_given_boxes(self, stamp: float) -> bool:
        """Tell whether a frame stamped ``stamp`` lies within the age bound of given boxes."""
        at = self.given_boxes_at
        return at is not None and 0.0 <= stamp - at <= self.given_boxes_max_age

    @property
    def stateless(self) -> bool:
        """Tell whether a frame's plan ignores earlier frames (every task every frame)."""
        return not any(self.budget.rates.values())


@dataclass
class FrameRequest:
    """One camera frame to process and what is wanted of it."""

    camera: Camera
    pixels: np.ndarray  # uint8 HxWx3 (in color_order) or HxW
    stamp: float  # seconds: the header stamp (replay: else bag time)
    wanted: frozenset[str]  # tasks whose outputs someone wants
    color_order: str = 'rgb'
    fx: float | None = None  # calibrated focal length (pixels) for a metric pointmap
    boxes: np.ndarray | None = None  # the caller's person boxes (a detector), xyxy
    box_scores: np.ndarray | None = None  # the detector's score of each box (default 1)
    people_3d: bool = False  # tracked people want 3D (pointmap when there is no depth)
    depth: dict = field(default_factory=dict)  # PeopleState.update keyword arguments
    render: RenderRequest | None = None
    context: Any = None  # the caller's (header, message, ...), handed back untouched


@dataclass
class FrameOutcome:
    """What a step made of one request."""

    request: FrameRequest
    plan: TaskPlan
    result: FrameResult | None = None
    people: People | None = None
    error: tuple[str, str] | None = None  # (kind, text) of a frame that failed

    @property
    def tasks(self) -> tuple[str, ...]:
        """Heads that ran on this frame."""
        return self.plan.run if self.result is not None else ()

    @property
    def box_origin(self) -> str:
        """Where the pose boxes came from: 'seg', 'tracker', 'detections', 'full', '' (no pose)."""
        return self.plan.boxes


class Scheduler:
    """Plans and runs steps of frames from any number of cameras through one pipeline."""

    def __init__(self, pipeline: Pipeline, *, foreground_only: bool = True,
                 on_batch: Callable[[str, int], None] | None = None) -> None:
        self.pipeline = pipeline
        self.foreground_only = foreground_only
        self.on_batch = on_batch  # (task, frames) once per head per step, for diagnostics
        self.steps = 0

    def plan(self, request: FrameRequest) -> tuple[TaskPlan, np.ndarray | None]:
        """
        Plan ``request`` on its camera's budget: ``(plan, the boxes pose runs on)``.

        The boxes are the request's (``plan.boxes == 'detections'``), the tracker's predictions
        (``'tracker'``) or None (the pipeline's own: seg or the full frame); the choice is
        :func:`~.plan.choose_boxes`'s.
        """
        cam, stamp = request.camera, request.stamp

        def due(task: str) -> bool:
            return cam.budget.due(task, stamp)

        predicted = functools.cache(
            lambda: self._tracked_boxes(cam.people, stamp, request.pixels.shape[:2]))
        plan = plan_tasks(request.wanted, self.pipeline.tasks, due=due,
                          box_source=self.pipeline.config.box_source,
                          given_boxes='detections' if request.boxes is not None else False,
                          tracked=None if cam.people is None else lambda: len(predicted()),
                          after_given=cam.between_given_boxes(stamp),
                          people_3d=request.people_3d, depth=bool(request.depth),
                          foreground_only=self.foreground_only)
        boxes = {'detections': lambda: request.boxes, 'tracker': predicted}.get(plan.boxes)
        return plan, None if boxes is None else boxes()

    def _tracked_boxes(self, people: PeopleState, stamp: float,
                       size: tuple[int, int]) -> np.ndarray:
        """
        Boxes of the people the tracker still sees, for pose between seg frames.

        Only tracks the last frame matched (a person lost waits for seg to find them again),
        one box per person (predictions overlapping more than :data:`DUPLICATE_IOU` merge into
        the first), at most ``max_persons``.
        """
        _, boxes = people.predict_boxes(stamp, size, current=True)
        keep: list[int] = []
        if len(boxes):
            iou = box_iou(boxes, boxes)
            for i in range(len(boxes)):
                if all(iou[i, j] <= DUPLICATE_IOU for j in keep):
                    keep.append(i)
        return boxes[keep[:self.pipeline.config.max_persons]]

    def batchable(self, requests: Sequence[FrameRequest]) -> int:
        """
        How many leading ``requests`` one step can take.

        A camera's second frame joins only when its plan cannot depend on the first (every
        task every frame): otherwise its budget and tracked boxes wait for the first's results.
        """
        seen = set()
        for n, req in enumerate(requests):
            if id(req.camera) in seen and not req.camera.stateless:
                return n
            seen.add(id(req.camera))
        return len(requests)

    def run(self, requests: Sequence[FrameRequest]) -> list[FrameOutcome]:
        """
        Take one step: plan each frame, run the pipeline once, update people in order.

        Frames with nothing to run come back with an empty plan. A step that fails is retried
        frame by frame, so one camera's bad frame costs no other camera its frame.
        """
        if self.batchable(requests) < len(requests):
            raise SapiensError('a camera appears twice in one step with a rate budget: '
                               'split the step with Scheduler.batchable')
        outcomes, boxes = [], []
        for req in requests:
            plan, given = self.plan(req)
            req.camera.budget.consume(plan.run, req.stamp)
            if plan.boxes == 'detections':
                req.camera.given_boxes_at = req.stamp
            outcomes.append(FrameOutcome(req, plan))
            boxes.append(given)
        todo = [k for k, o in enumerate(outcomes) if o.plan]
        self._infer([outcomes[k] for k in todo], [boxes[k] for k in todo])
        for out in outcomes:
            self._people(out)
        self.steps += 1
        return outcomes

    def _infer(self, outcomes: list[FrameOutcome], boxes: list) -> None:
        if not outcomes:
            return
        reqs = [o.request for o in outcomes]
        try:
            results = self.pipeline([r.pixels for r in reqs],
                                    color_order=[r.color_order for r in reqs], boxes=boxes,
                                    fx=[r.fx for r in reqs], plans=[o.plan for o in outcomes],
                                    render=[r.render for r in reqs])
        except Exception as exc:  # noqa: BLE001 - one camera's frame must not cost the others
            if len(outcomes) > 1:
                for out, box in zip(outcomes, boxes, strict=True):
                    self._infer([out], [box])
                return
            text = str(exc) if isinstance(exc, SapiensError) else f'{type(exc).__name__}: {exc}'
            outcomes[0].error = ('inference', text)
            return
        if self.on_batch is not None:
            for task in self.pipeline.tasks:
                count = sum(task in o.plan for o in outcomes)
                if count:
                    self.on_batch(task, count)
        for out, result in zip(outcomes, results, strict=True):
            problem = result.non_finite()
            if problem:
                out.error = ('model_nan', f'the model produced non-finite {problem}')
                continue
            out.result = result
            scores = out.request.box_scores
            if out.box_origin == 'detections' and scores is not None and result.pose is not None:
                result.pose.box_scores = np.asarray(scores, np.float32)

    @staticmethod
    def _people(out: FrameOutcome) -> None:
        people, req = out.request.camera.people, out.request
        if people is None or out.result is None:
            return
        pose = out.result.pose
        if out.box_origin == 'tracker' and pose is not None:
            # the boxes of where the people are now, not of where they were predicted to be
            pose.boxes = keypoint_boxes(pose.keypoints, pose.scores, pose.boxes,
                                        out.result.image_size, people.config.min_score)
        if 'pose' in out.plan or req.depth:
            out.people = people.update(out.result, req.stamp, **req.depth)
