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

"""PersonTracker on synthetic trajectories: ID switches are counted and must be zero."""

import logging

import numpy as np
import pytest
from sapiens_ros.core.people.tracking import (IdAllocator, person_confidence, PersonTracker,
                                              TrackerConfig, UNTRACKED)

K = 308
TEMPLATE = np.random.default_rng(0).uniform(-0.45, 0.45, (K, 2))


def person(center, size, rng, score=0.9, noise=1.5):
    """Box (4,), keypoints (K, 2) and scores (K,) of a synthetic person."""
    c, s = np.asarray(center, float), np.asarray(size, float)
    box = np.concatenate([c - s / 2, c + s / 2]) + rng.normal(0, noise, 4)
    kps = c + TEMPLATE * s + rng.normal(0, noise, (K, 2))
    return box, kps, np.full(K, score)


def run(tracker, frames, rng):
    """``frames``: list of (stamp, [(truth_id, center, size, score), ...]); ids per truth."""
    seen = {}
    for stamp, people in frames:
        if not people:
            tracker.update(np.zeros((0, 4)), np.zeros((0, K, 2)), np.zeros((0, K)), stamp)
            continue
        order = rng.permutation(len(people))  # detection order must not matter
        parts = [person(people[i][1], people[i][2], rng, people[i][3]) for i in order]
        ids = tracker.update(np.stack([p[0] for p in parts]), np.stack([p[1] for p in parts]),
                             np.stack([p[2] for p in parts]), stamp)
        assert ids.dtype == np.int64 and ids.shape == (len(people),)
        for j, i in enumerate(order):
            seen.setdefault(people[i][0], []).append(int(ids[j]))
    return seen


def id_switches(seen):
    """Count changes of the tracker id along each true identity (untracked frames too)."""
    return sum(int((np.diff(v) != 0).sum()) for v in seen.values())


def walk(start, end, t0, t1, t):
    a = np.clip((t - t0) / (t1 - t0), 0, 1)
    return np.asarray(start, float) + a * (np.asarray(end, float) - start)


def test_crossing_paths_keep_their_ids():
    rng = np.random.default_rng(1)
    frames = []
    for t in np.arange(0, 2.0, 1 / 30):
        a = ('a', walk([100, 300], [700, 320], 0, 2, t), (120, 300), 0.9)
        b = ('b', walk([700, 330], [100, 310], 0, 2, t), (110, 280), 0.9)
        frames.append((float(t), [a, b]))
    seen = run(PersonTracker(), frames, rng)
    assert id_switches(seen) == 0
    assert seen['a'][0] != seen['b'][0]


def test_half_second_occlusion_keeps_the_id():
    rng = np.random.default_rng(2)
    frames = []
    for t in np.arange(0, 3.0, 1 / 30):
        people = [('b', (600, 300), (120, 300), 0.9)]
        if not 1.0 <= t < 1.5:
            people.append(('a', walk([100, 300], [500, 300], 0, 3, t), (120, 300), 0.9))
        frames.append((float(t), people))
    seen = run(PersonTracker(), frames, rng)
    assert id_switches(seen) == 0
    assert len(seen['a']) == 90 - 15


def test_leaving_and_entering_person_gets_a_new_id():
    rng = np.random.default_rng(3)
    frames = []
    for t in np.arange(0, 3.0, 1 / 30):
        people = []
        if t < 1.0:
            people.append(('a', walk([500, 300], [700, 300], 0, 1, t), (120, 300), 0.9))
        if t >= 1.2:
            people.append(('c', walk([80, 300], [300, 300], 1.2, 3, t), (120, 300), 0.9))
        frames.append((float(t), people))
    seen = run(PersonTracker(), frames, rng)
    assert id_switches(seen) == 0
    assert seen['c'][0] != seen['a'][0]


def test_dropped_frames_keep_ids_of_people_walking_side_by_side():
    rng = np.random.default_rng(4)
    stamps = np.arange(0, 4.0, 1 / 30)
    stamps = stamps[rng.random(len(stamps)) > 0.4]  # 40 % of frames dropped, gaps of any length
    frames = []
    for t in stamps:
        a = ('a', walk([100, 300], [600, 300], 0, 4, t), (120, 300), 0.9)
        b = ('b', walk([230, 320], [730, 320], 0, 4, t), (120, 300), 0.9)
        frames.append((float(t), [a, b]))
    seen = run(PersonTracker(), frames, rng)
    assert id_switches(seen) == 0


def test_low_confidence_keeps_a_track_but_does_not_start_one():
    rng = np.random.default_rng(5)
    frames = []
    for t in np.arange(0, 1.0, 1 / 30):
        score = 0.9 if t < 0.5 else 0.3  # 'a' fades to a low-confidence detection
        frames.append((float(t), [('a', walk([100, 300], [300, 300], 0, 1, t), (120, 300),
                                   score),
                                  ('ghost', (600, 300), (100, 250), 0.3)]))
    seen = run(PersonTracker(), frames, rng)
    assert id_switches(seen) == 0 and seen['a'][0] != UNTRACKED
    assert set(seen['ghost']) == {UNTRACKED}


def test_track_is_dropped_after_max_age():
    rng = np.random.default_rng(6)
    tracker = PersonTracker(TrackerConfig(max_age=0.5))
    frames = [(0.0, [('a', (300, 300), (120, 300), 0.9)]), (0.1, []),
              (0.7, [('a', (300, 300), (120, 300), 0.9)])]
    seen = run(tracker, frames, rng)
    assert seen['a'][0] != seen['a'][1]  # gone for longer than max_age: a new id


def test_backwards_time_jump_resets_with_a_log_line(caplog):
    rng = np.random.default_rng(7)
    tracker = PersonTracker()
    frames = [(float(t), [('a', (300, 300), (120, 300), 0.9)]) for t in (5.0, 5.1, 5.2, 0.0)]
    with caplog.at_level(logging.WARNING, logger='sapiens_ros.core.people.tracking'):
        seen = run(tracker, frames, rng)
    assert seen['a'][:3] == [seen['a'][0]] * 3 and seen['a'][3] > seen['a'][2]
    assert tracker.resets == 1 and 'time jumped back' in caplog.text


@pytest.mark.parametrize('bad', ['nan_box', 'empty'])
def test_bad_rows_are_untracked_not_fatal(bad):
    tracker = PersonTracker()
    rng = np.random.default_rng(8)
    box, kps, scores = person((300, 300), (120, 300), rng)
    if bad == 'nan_box':
        box = box.copy()
        box[0] = np.nan
        assert tracker.update(box[None], kps[None], scores[None], 0.0).tolist() == [UNTRACKED]
    else:
        ids = tracker.update(np.zeros((0, 4)), np.zeros((0, K, 2)), np.zeros((0, K)), 0.0)
        assert ids.shape == (0,) and ids.dtype == np.int64


def test_person_seen_from_the_back_is_confident():
    """Hidden face and hands (most of the 308 keypoints) do not make a person low-confidence."""
    scores = np.full((1, K), 0.05)
    scores[0, :65] = 0.8  # body, feet and hands visible
    assert person_confidence(scores, 0.2)[0] >= TrackerConfig().high_score
    tracker = PersonTracker()
    box, kps, _ = person((300, 300), (120, 300), np.random.default_rng(9))
    assert tracker.update(box[None], kps[None], scores, 0.0)[0] != UNTRACKED


def test_crossing_with_one_hidden_behind_the_other_and_dropped_frames():
    rng = np.random.default_rng(11)
    stamps = np.arange(0, 2.0, 1 / 30)
    stamps = stamps[rng.random(len(stamps)) > 0.3]
    frames = []
    for t in stamps:
        a = ('a', walk([100, 300], [700, 320], 0, 2, t), (120, 300), 0.9)
        b = ('b', walk([700, 310], [100, 300], 0, 2, t), (110, 280), 0.9)
        frames.append((float(t), [a] if 0.85 < t < 1.15 else [a, b]))  # b hidden by a
    seen = run(PersonTracker(), frames, rng)
    assert id_switches(seen) == 0


def test_predict_boxes_follow_the_tracks_velocity_from_their_keypoints():
    rng = np.random.default_rng(12)
    tracker = PersonTracker()
    v = np.array([150.0, -20.0])  # px/s
    for t in (0.0, 0.1, 0.2):
        box, kps, scores = person(np.array([300, 300]) + v * t, (120, 300), rng, noise=0.0)
        first = tracker.update(box[None], kps[None], scores[None], t)
    ids, boxes = tracker.predict_boxes(0.5)
    assert ids.tolist() == first.tolist() and boxes.shape == (1, 4) and boxes.dtype == np.float32
    truth_box, truth_kps, _ = person(np.array([300, 300]) + v * 0.5, (120, 300), rng, noise=0.0)
    centre = (boxes[0, :2] + boxes[0, 2:]) / 2
    np.testing.assert_allclose(centre, (truth_box[:2] + truth_box[2:]) / 2, atol=1.0)
    # the keypoint box, enlarged a little, holds every keypoint where they are expected
    assert (truth_kps >= boxes[0, :2]).all() and (truth_kps <= boxes[0, 2:]).all()
    size = boxes[0, 2:] - boxes[0, :2]
    span = truth_kps.max(0) - truth_kps.min(0)
    np.testing.assert_allclose(size, span * (1 + TrackerConfig().predict_margin), rtol=0.01)


def test_predict_boxes_without_keypoints_use_the_last_box_and_drop_old_or_outside_tracks():
    rng = np.random.default_rng(13)
    tracker = PersonTracker(TrackerConfig(predict_min_keypoints=K + 1, max_age=0.5))
    for t in (0.0, 0.1):
        box, kps, scores = person((300 + 100 * t, 300), (120, 300), rng, noise=0.0)
        tracker.update(box[None], kps[None], scores[None], t)
    ids, boxes = tracker.predict_boxes(0.3)
    np.testing.assert_allclose(boxes[0], [270, 150, 390, 450], atol=1e-3)
    assert tracker.predict_boxes(0.61)[0].shape == (0,)  # unseen for more than max_age
    ids, boxes = tracker.predict_boxes(0.3, image_size=(400, 350))  # clipped to the image
    np.testing.assert_allclose(boxes[0], [270, 150, 349.5, 399.5], atol=1e-3)
    assert tracker.predict_boxes(0.3, image_size=(100, 100))[0].shape == (0,)  # outside


def test_people_state_predict_boxes_is_empty_without_tracking():
    from sapiens_ros.core.people.state import PeopleConfig, PeopleState

    ids, boxes = PeopleState(PeopleConfig(tracking=False)).predict_boxes(1.0)
    assert ids.shape == (0,) and boxes.shape == (0, 4)


def test_trackers_sharing_an_id_allocator_never_give_the_same_id():
    rng = np.random.default_rng(14)
    shared = IdAllocator()
    front, rear = PersonTracker(ids=shared), PersonTracker(ids=shared)
    given = []
    for t in np.arange(0, 1.0, 0.1):
        for tracker, x in ((front, 200), (rear, 500)):
            people = [person((x + 300 * k, 300), (120, 300), rng) for k in range(2)]
            ids = tracker.update(np.stack([p[0] for p in people]),
                                 np.stack([p[1] for p in people]),
                                 np.stack([p[2] for p in people]), float(t))
            given.append(ids)
    front.reset()  # a bag loop on one camera: new ids, still unique across both
    box, kps, scores = person((200, 300), (120, 300), rng)
    given.append(front.update(box[None], kps[None], scores[None], 0.0))
    rear.continue_ids(100)  # replay resume: the shared counter moves on for both
    given.append(front.update(box[None] + 400, kps[None] + 400, scores[None], 0.1))
    first = {int(i) for ids in given[:20] for i in ids}
    assert len(first) == 4  # two people per camera, stable, different ids
    assert int(given[20][0]) not in first and int(given[21][0]) >= 100
