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

"""ApproximateTimeSync: the message_filters ApproximateTimeSynchronizer policy, ROS-free."""

from sapiens_ros.core.sync import ApproximateTimeSync


def test_pairs_within_slop_nearest_first():
    got = []
    sync = ApproximateTimeSync(2, queue_size=10, slop=0.02, callback=lambda *m: got.append(m))
    assert sync.add(0, 1.000, 'c1') is None  # no depth yet
    assert sync.add(1, 0.950, 'd0') is None  # too far from c1
    assert sync.add(1, 1.012, 'd1') == ('c1', 'd1')
    assert got == [('c1', 'd1')]
    sync.add(1, 1.040, 'd2')
    sync.add(1, 1.030, 'd3')
    assert sync.add(0, 1.033, 'c2') == ('c2', 'd3')  # the nearer of d2/d3
    assert sync.queues[1] == {0.950: 'd0', 1.040: 'd2'}  # matched messages are consumed


def test_slop_is_strict_on_the_combination_and_each_message_is_used_once():
    sync = ApproximateTimeSync(2, queue_size=10, slop=0.25)  # exact binary fractions
    sync.add(0, 2.0, 'c')
    assert sync.add(1, 2.25, 'd') is None  # |dt| == slop: a candidate, but not < slop
    assert sync.add(1, 2.125, 'd2') == ('c', 'd2')
    assert sync.add(1, 2.0625, 'd3') is None  # c was consumed


def test_queue_size_drops_the_oldest():
    sync = ApproximateTimeSync(2, queue_size=2, slop=0.01)
    for i, t in enumerate((1.0, 2.0, 3.0)):
        sync.add(0, t, f'c{i}')
    assert sorted(sync.queues[0]) == [2.0, 3.0] and sync.dropped == 1
    assert sync.add(1, 1.001, 'd') is None  # its partner was dropped
    assert sync.add(1, 2.001, 'd') == ('c1', 'd')


def test_three_inputs_and_clear():
    sync = ApproximateTimeSync(3, queue_size=5, slop=0.05)
    sync.add(0, 1.0, 'image')
    sync.add(2, 1.03, 'info')
    assert sync.add(1, 1.02, 'depth') == ('image', 'depth', 'info')
    sync.add(0, 2.0, 'image2')
    sync.clear()
    assert all(not q for q in sync.queues)
