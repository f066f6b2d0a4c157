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

"""FramePairing: colour frames with side streams, which no side stream can block or poison."""

import pytest
from sapiens_ros.core.pipeline.sync import FramePairing, MAX_WAIT_S, SideStream


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _pairing(*streams, **kw):
    clock, out = Clock(), []
    pairing = FramePairing(streams or (SideStream('det', 0.02, 1.0),),
                           lambda msg, sides: out.append((msg, dict(sides))),
                           clock=clock, **kw)
    return pairing, clock, out


def test_pairs_nearest_within_slop_either_order():
    pairing, clock, out = _pairing()
    pairing.add_side('det', 10.00, 'd0')  # before its frame: queued
    pairing.add_side('det', 10.03, 'd1')
    pairing.add_frame(10.012, 'c0')
    assert out == [('c0', {'det': 'd0'})]  # the nearer of d0 (12 ms) and d1 (18 ms)
    pairing.add_frame(10.2, 'c1')  # after its frame: the frame waits for it
    assert len(out) == 1
    clock.now += 0.05
    pairing.add_side('det', 10.2, 'd2')
    assert out[-1] == ('c1', {'det': 'd2'})
    counts = pairing.counters()
    assert counts['pairing.det_paired'] == 2 and counts['pairing.frames'] == 2


def test_frames_without_a_side_message_go_on_after_the_learned_wait():
    """A 2 Hz detector on a 10 Hz camera: frames between detections wait briefly, then go on."""
    pairing, clock, out = _pairing()
    assert pairing.sides['det'].wait() == MAX_WAIT_S  # nothing learned yet
    for k in range(20):
        stamp = 10 + k / 10
        pairing.add_frame(stamp, f'c{k}')
        clock.now += 0.01
        if k % 5 == 0:
            pairing.add_side('det', stamp, f'd{k}')  # 10 ms after its frame
        clock.now += 0.09
        pairing.flush()
    assert [m for m, _ in out] == [f'c{k}' for k in range(20)]  # in order, none lost
    assert [s for _, s in out][::5] == [{'det': f'd{k}'} for k in range(0, 20, 5)]
    assert pairing.sides['det'].wait() == pytest.approx(1.5 * 0.01 + 0.02)
    assert pairing.counters()['pairing.det_frames_without'] == 16


def test_a_later_side_message_releases_the_frames_before_it_at_once():
    pairing, clock, out = _pairing()
    pairing.add_frame(10.0, 'c0')
    pairing.add_frame(10.1, 'c1')
    assert out == []
    pairing.add_side('det', 10.1, 'd1')  # the detector skipped c0
    assert out == [('c0', {}), ('c1', {'det': 'd1'})]


def test_future_stamps_are_refused_and_cannot_poison_the_pairing():
    """The issue's repro: detections stamped +1e6 s for 2 s, then correct ones pair at once."""
    pairing, clock, out = _pairing(SideStream('det', 0.02, 1.0), queue_size=10)
    refusals = []
    for k in range(10):  # 2 s at 5 Hz
        stamp = 10 + k / 5
        pairing.add_frame(stamp, f'c{k}')
        refusals.append(pairing.add_side('det', stamp + 1e6, f'bad{k}'))
        clock.now += 0.2
        pairing.flush()
    assert all(r is not None for r in refusals)
    assert refusals[0].offset == pytest.approx(1e6) and 'clock skew' in str(refusals[0])
    assert not pairing.sides['det'].queue  # nothing queued
    assert len(out) == 10 and all(not sides for _, sides in out)  # every frame went on
    assert 'det' in pairing.down()
    pairing.add_frame(12.0, 'good')  # goes on at once: the stream is down
    pairing.add_side('det', 12.0, 'd')  # late for it, but it pairs: the stream is up again
    assert out[-1] == ('good', {}) and not pairing.down()
    pairing.add_frame(12.2, 'next')
    pairing.add_side('det', 12.2, 'd2')
    assert out[-1] == ('next', {'det': 'd2'})
    assert pairing.counters()['pairing.det_refused'] == 10


def test_zero_stamps_and_clock_skew_are_refused_with_their_cause():
    pairing, clock, out = _pairing(max_offset=1.0)
    pairing.add_frame(1.7e9, 'c0')
    zero = pairing.add_side('det', 0.0, 'z')
    assert 'stamp is 0' in str(zero)
    skew = pairing.add_side('det', 1.7e9 - 2.0, 's')
    assert skew.offset == pytest.approx(-2.0) and 'clock skew' in skew.cause
    clock.now += 1.5
    pairing.add_frame(1.7e9 + 1.5, 'c1')
    pairing.add_side('det', 1.7e9 - 0.5, 's2')
    reason = pairing.down()['det']
    assert 'no det message paired for 1.5 s' in reason and 'refused' in reason, reason
    assert 'stamped -2.000 s' in reason, reason  # the last one: 2 s before c1
    assert [m for m, _ in out] == ['c0', 'c1']  # a down stream holds no frame


def test_an_offset_within_the_bound_never_pairs_and_the_stream_goes_down_saying_why():
    pairing, clock, out = _pairing()
    for k in range(15):
        pairing.add_frame(10 + k / 10, f'c{k}')
        pairing.add_side('det', 10 + k / 10 + 0.55, f'd{k}')  # never within 20 ms of a frame
        clock.now += 0.1
        pairing.flush()
    assert len(out) >= 14  # frames went on
    reason = pairing.down()['det']
    assert 'stamped +0.550 s' in reason and 'slop' in reason, reason
    assert len(pairing.sides['det'].queue) <= 10


def test_a_silent_stream_goes_down_after_its_timeout_and_holds_no_frame():
    pairing, clock, out = _pairing()
    pairing.add_frame(10.0, 'c0')
    clock.now += MAX_WAIT_S
    pairing.flush()
    assert out == [('c0', {})]
    clock.now += 1.0
    assert pairing.down() == {'det': 'no det message received (for 1.5 s)'}
    pairing.add_side('det', 11.0, 'alone')  # pairs with nothing: queued
    clock.now += 1.2
    assert pairing.down()['det'] == ('no det message paired for 2.7 s; the last one came '
                                     '1.2 s ago')
    pairing.add_frame(11.5, 'c1')
    assert out[-1] == ('c1', {})  # at once: a down stream holds nothing
    pairing.add_side('det', 11.5, 'late')  # its frame went on: late, but the stream is up
    assert not pairing.down() and pairing.counters()['pairing.det_late'] == 1


def test_timeout_zero_keeps_the_stream_up_and_still_never_drops_a_frame():
    pairing, clock, out = _pairing(SideStream('depth', 0.02, 0.0))
    pairing.add_frame(10.0, 'c0')
    clock.now += 100
    pairing.flush()
    assert out == [('c0', {})] and not pairing.down()


def test_a_bag_loop_restarts_the_pairing():
    pairing, clock, out = _pairing()
    pairing.add_side('det', 20.0, 'ahead')  # queued, for a frame to come
    pairing.add_frame(19.99, 'c0')
    pairing.add_side('det', 20.5, 'd')
    pairing.add_frame(5.0, 'loop')  # stamps went back by more than max_offset
    assert pairing.restarts == 1 and [m for m, _ in out][:1] == ['c0']
    assert pairing.add_side('det', 5.0, 'd5') is None
    assert out[-1] == ('loop', {'det': 'd5'})


def test_two_streams_a_frame_waits_for_both_and_goes_on_with_what_paired():
    pairing, clock, out = _pairing(SideStream('depth', 0.02, 1.0), SideStream('det', 0.05, 1.0))
    pairing.add_frame(10.0, 'c0')
    pairing.add_side('depth', 10.001, 'd0')
    assert out == []  # still waiting for det
    clock.now += MAX_WAIT_S
    pairing.flush()
    assert out == [('c0', {'depth': 'd0'})]
    assert pairing.counters()['pairing.det_frames_without'] == 1


def test_the_queue_is_bounded_and_bad_arguments_raise():
    pairing, clock, out = _pairing(queue_size=3)
    pairing.add_frame(10.0, 'c')
    for k in range(6):
        pairing.add_side('det', 10.1 + k / 10, k)
    assert sorted(pairing.sides['det'].queue) == [10.4, 10.5, 10.6]
    with pytest.raises(ValueError):
        FramePairing((), lambda *a: None, max_offset=0)


def test_side_messages_before_the_first_frame_are_judged_by_it():
    pairing, clock, out = _pairing()
    pairing.add_side('det', 1e6, 'future')  # nothing to judge it by yet: queued
    pairing.add_side('det', 0.0, 'zero')
    pairing.add_side('det', 9.5, 'near')
    refusals = pairing.add_frame(10.0, 'c0')
    assert sorted(r.offset for r in refusals) == [-10.0, 1e6 - 10.0]
    assert list(pairing.sides['det'].queue) == [9.5]
    pairing.add_side('det', 10.2, 'd')
    pairing.add_frame(11.1, 'c1')  # 9.5 is now too old to pair: expired, not refused
    counts = pairing.counters()
    assert counts['pairing.det_refused'] == 2 and counts['pairing.det_expired'] == 1


def test_a_late_message_is_offered_to_the_newest_released_frame():
    offered = []
    pairing, clock, out = _pairing()
    pairing.on_late = lambda frame, name, msg: offered.append((frame, name, msg)) or True
    pairing.add_frame(10.0, 'c0')
    clock.now += MAX_WAIT_S
    pairing.flush()
    pairing.add_frame(10.1, 'c1')
    clock.now += MAX_WAIT_S
    pairing.flush()
    assert [m for m, _ in out] == ['c0', 'c1']
    pairing.add_side('det', 10.0, 'd0')  # late for c0, which is not the newest: not offered
    pairing.add_side('det', 10.1, 'd1')  # late for c1, the newest: offered, attached
    assert offered == [('c1', 'det', 'd1')]
    counts = pairing.counters()
    assert counts['pairing.det_late'] == 1 and counts['pairing.det_paired'] == 1
    assert counts['pairing.det_frames_without'] == 1
