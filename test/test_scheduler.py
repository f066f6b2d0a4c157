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


"""Many cameras through one pipeline: one forward per head per step, rate budgets, box sources."""

import numpy as np
import pytest
from sapiens_ros.backends.factory import load_pipeline
from sapiens_ros.core import PipelineConfig
from sapiens_ros.core.errors import InputSizeError
from sapiens_ros.core.models.configs import save_random_checkpoints
from sapiens_ros.core.models.input_size import format_size, parse_size
from sapiens_ros.core.pipeline.budget import RateBudget
from sapiens_ros.core.pipeline.plan import choose_boxes, pipeline_box_source, plan_tasks
from sapiens_ros.core.pipeline.scheduler import Camera, FrameRequest, Scheduler

INPUT = (256, 192)
ALL = frozenset({'pose', 'seg', 'normal', 'pointmap'})


class Counting:
    """Wraps a real runner and records the batch size of every call."""

    def __init__(self, runner) -> None:
        self.runner = runner
        self.batches: list[int] = []

    def __getattr__(self, name):
        return getattr(self.runner, name)

    def __call__(self, pixel_values):
        self.batches.append(int(pixel_values.shape[0]))
        return self.runner(pixel_values)


@pytest.fixture
def counted(pipeline):
    """Give the session pipeline runners that count their calls (restored afterwards)."""
    real = dict(pipeline.runners)
    pipeline.runners = {t: Counting(r) for t, r in real.items()}
    yield pipeline
    pipeline.runners = real


def _frames(astronaut):
    """Three cameras of different sizes and colour orders."""
    return {'a': (astronaut, 'rgb'), 'b': (np.ascontiguousarray(astronaut[::2, ::2, ::-1]), 'bgr'),
            'c': (np.ascontiguousarray(astronaut[40:328]), 'rgb')}


def test_one_forward_per_head_per_step_for_several_cameras(counted, astronaut):
    cams = {name: Camera(name) for name in 'abc'}
    boxes = {'a': None, 'b': np.array([[10, 10, 200, 240], [30, 20, 120, 200]], np.float32),
             'c': None}
    sched = Scheduler(counted)
    requests = [FrameRequest(cams[n], px, 1.0, ALL, color_order=order, boxes=boxes[n])
                for n, (px, order) in _frames(astronaut).items()]
    outcomes = sched.run(requests)
    runners = counted.runners
    for task in ('seg', 'normal', 'pointmap'):
        assert runners[task].batches == [3], task  # one forward, all three cameras
    persons = [len(o.result.pose) for o in outcomes]
    assert runners['pose'].batches == [sum(persons)]  # every camera's crops in one batch
    assert persons[1] == 2 and outcomes[1].box_origin == 'detections'
    assert [o.box_origin for o in outcomes] == ['seg', 'detections', 'seg']
    for outcome, (px, _) in zip(outcomes, _frames(astronaut).values(), strict=True):
        assert outcome.error is None and outcome.plan.run == ('seg', 'normal', 'pointmap', 'pose')
        assert outcome.result.image_size == px.shape[:2]
        assert outcome.result.seg.labels.shape == px.shape[:2]
        assert outcome.people is not None and len(outcome.people) == len(outcome.result.pose)


def test_a_step_equals_the_frames_one_by_one(pipeline, astronaut):
    """Batching across cameras changes nothing in any camera's result."""
    frames = _frames(astronaut)
    together = Scheduler(pipeline).run([
        FrameRequest(Camera(n), px, 1.0, ALL, color_order=o) for n, (px, o) in frames.items()])
    for outcome, (name, (px, order)) in zip(together, frames.items(), strict=True):
        alone = Scheduler(pipeline).run([FrameRequest(Camera(name), px, 1.0, ALL,
                                                      color_order=order)])[0]
        assert np.array_equal(outcome.result.seg.labels, alone.result.seg.labels)
        np.testing.assert_allclose(outcome.result.normal.normals, alone.result.normal.normals,
                                   atol=2e-3)  # float sums differ a little with the batch
        moved = np.abs(outcome.result.pose.keypoints - alone.result.pose.keypoints).max(-1)
        assert (moved < 0.5).mean() > 0.99  # random heads have near-ties between peaks


def test_rate_budgets_hold_within_10_percent_over_30_s(pipeline):
    """
    The scheduler's plans for a 20 Hz camera over 30 s of stamps: each head at its rate.

    Nobody is tracked here (no pose results feed the tracker), so pose runs with seg only;
    pose on tracked boxes between seg frames is the next test's.
    """
    rates = {'pose': 0.0, 'seg': 5.0, 'normal': 2.0, 'pointmap': 2.0}
    cam = Camera('a', rates)
    sched = Scheduler(pipeline)
    runs = dict.fromkeys(rates, 0)
    jitter = np.random.default_rng(0).uniform(-0.01, 0.01, 600)
    for k in range(600):  # 30 s at 20 Hz, +-10 ms of jitter
        stamp = k / 20 + jitter[k]
        plan, _ = sched.plan(FrameRequest(cam, np.zeros((8, 8, 3), np.uint8), stamp, ALL))
        cam.budget.consume(plan.run, stamp)
        for task in plan.run:
            runs[task] += 1
    assert runs['pose'] == runs['seg']
    for task in ('seg', 'normal', 'pointmap'):
        assert abs(runs[task] - 30 * rates[task]) <= 0.1 * 30 * rates[task], (task, runs)


def test_budget_restarts_after_a_gap_and_a_bag_loop():
    budget = RateBudget({'seg': 5.0})
    assert budget.due('seg', 0.0)
    budget.consume(['seg'], 0.0)
    assert not budget.due('seg', 0.1) and budget.due('seg', 0.2)
    budget.consume(['seg'], 10.0)  # idle for 10 s: no burst of catching up afterwards
    assert not budget.due('seg', 10.1)
    assert budget.due('seg', 3.0)  # time went back (a bag loop): the schedule restarts
    with pytest.raises(ValueError, match='>= 0 Hz'):
        budget.set_rates({'seg': -1.0})


def test_plan_dependencies():
    loaded = ('seg', 'normal', 'pointmap', 'pose')
    every = plan_tasks({'pose'}, loaded)
    assert every.run == ('seg', 'pose') and every.boxes == 'seg'
    given = plan_tasks({'pose'}, loaded, given_boxes=True)
    assert given.run == ('pose',) and given.boxes == 'given'
    assert plan_tasks({'pose'}, loaded, box_source='full').run == ('pose',)
    no_seg = plan_tasks({'pose', 'pointmap'}, loaded, due=lambda t: t != 'seg')
    assert no_seg.run == () and no_seg.deferred == ('pointmap',)  # no boxes, no mask yet
    people = plan_tasks({'pose'}, loaded, people_3d=True)
    assert people.run == ('seg', 'pointmap', 'pose')
    assert plan_tasks({'pose'}, loaded, people_3d=True, depth=True).run == ('seg', 'pose')
    assert plan_tasks({'pointmap'}, loaded, foreground_only=False).run == ('pointmap',)
    assert plan_tasks({'normal'}, ('seg',)).run == ()  # not loaded: never runs


def test_choose_boxes_is_the_whole_fallback_chain():
    loaded, seg_due, seg_idle = ('seg', 'pose'), lambda t: True, lambda t: t != 'seg'
    nobody, two = (lambda: 0), (lambda: 2)
    assert choose_boxes('seg', loaded, seg_due, given='detections', tracked=two) == 'detections'
    # after a detector's frame the tracker's boxes, even with nobody tracked (nobody is there)
    assert choose_boxes('seg', loaded, seg_due, tracked=nobody, after_given=True) == 'tracker'
    assert choose_boxes('seg', loaded, seg_due, after_given=True) == 'seg'  # no tracker
    assert choose_boxes('seg', loaded, seg_due, tracked=two) == 'seg'
    assert choose_boxes('seg', loaded, seg_idle, tracked=two) == 'tracker'
    assert choose_boxes('seg', loaded, seg_idle, tracked=nobody) == ''  # no pose
    assert choose_boxes('seg', ('pose',), seg_idle, tracked=two) == 'full'  # seg not loaded
    assert choose_boxes('full', loaded, seg_idle, tracked=two) == 'full'
    assert pipeline_box_source('detections', loaded) == 'seg'
    assert pipeline_box_source('detections', ('pose',)) == 'full'
    assert choose_boxes('detections', loaded, seg_due) == 'seg'  # the pipeline's own source
    plan = plan_tasks({'pose'}, loaded, due=seg_idle, tracked=two)
    assert plan.run == ('pose',) and plan.boxes == 'tracker' and plan.given_boxes


def test_pose_between_seg_frames_runs_on_tracked_boxes(pipeline, astronaut):
    """With seg at 2 Hz, pose runs every frame: on seg boxes, then on the tracker's boxes."""
    cam = Camera('a', {'seg': 2.0})
    sched = Scheduler(pipeline)
    origins = []
    for k in range(10):  # 10 Hz
        frame = np.roll(astronaut, 3 * k, axis=1)  # the person walks right
        out = sched.run([FrameRequest(cam, frame, k / 10, frozenset({'pose'}))])[0]
        origins.append(out.box_origin)
        assert out.result is not None and out.result.pose is not None
        assert (out.result.seg is not None) == (out.box_origin == 'seg')
    assert origins == ['seg'] + ['tracker'] * 4 + ['seg'] + ['tracker'] * 4
    seg_runs = sum(o == 'seg' for o in origins)
    assert seg_runs == 2  # 2 Hz over 1 s: pose-only pays for two seg forwards, not ten


def test_a_bad_frame_costs_no_other_camera_its_frame(pipeline, astronaut):
    good = FrameRequest(Camera('good'), astronaut, 1.0, ALL)
    bad = FrameRequest(Camera('bad'), astronaut, 1.0, ALL, fx=-5.0)  # refused by the core
    outcomes = Scheduler(pipeline).run([bad, good])
    assert outcomes[0].error[0] == 'inference' and 'fx' in outcomes[0].error[1]
    assert outcomes[1].error is None and outcomes[1].result.seg is not None


def test_a_camera_twice_in_a_step_only_without_rates(pipeline, astronaut):
    free, limited = Camera('free'), Camera('limited', {'seg': 5.0})
    sched = Scheduler(pipeline)
    reqs = [FrameRequest(c, astronaut, t, ALL) for c in (free, free, limited, limited)
            for t in (0.0,)]
    assert sched.batchable(reqs) == 3  # the limited camera's second frame waits
    with pytest.raises(Exception, match='twice in one step'):
        sched.run(reqs)


def test_input_sizes_are_width_by_height_and_ambiguity_is_refused():
    assert parse_size('768x1024') == (1024, 768) and format_size((1024, 768)) == '768x1024'
    assert parse_size('512x512') == (512, 512)
    with pytest.raises(InputSizeError,
                       match=r'width 1024 x height 768 .* width 768 x height 1024'):
        parse_size('1024x768')
    with pytest.raises(InputSizeError, match=r'"768x1024"'):
        parse_size([1024, 768])  # the old [height, width] parameter
    with pytest.raises(InputSizeError, match='WIDTHxHEIGHT'):
        parse_size('1024')


def test_default_tasks_configure_at_a_small_input_size(tmp_path, astronaut):
    """The pointmap's scale head takes 656x912 at least: it gets that, the others stay small."""
    root = save_random_checkpoints(tmp_path, ('pose', 'seg', 'normal', 'pointmap'))  # 768x1024
    pipe = load_pipeline('pose,seg,normal,pointmap', model_dir=str(root),
                         config=PipelineConfig(input_size=INPUT))
    assert {t: pipe.config.size_of(t) for t in pipe.tasks} == {
        'seg': INPUT, 'normal': INPUT, 'pose': INPUT, 'pointmap': (912, 656)}
    result = pipe(astronaut, tasks=('seg', 'pointmap'))[0]
    assert result.pointmap.xyz.shape == (*astronaut.shape[:2], 3)
    with pytest.raises(InputSizeError, match=r'widths 656-768 x heights 912-1024.*656x912'):
        load_pipeline('pointmap', model_dir=str(root),
                      config=PipelineConfig(input_size=INPUT, input_sizes={'pointmap': INPUT}))
