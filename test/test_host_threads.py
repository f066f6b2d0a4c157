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

"""A host-work thread runs torch on one thread; no other thread's count changes."""

import threading

import pytest
from sapiens_ros.core.pipeline.host_threads import HOST_WORK_THREADS, use_host_work_threads
import torch


def _in_thread(fn):
    out = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join()
    return out[0]


@pytest.fixture
def three_threads():
    """Run the process at 3 intra-op threads (any count above one shows the difference)."""
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield 3
    torch.set_num_threads(before)


def test_the_host_thread_takes_one_and_the_others_keep_theirs(three_threads):
    def host():
        use_host_work_threads()
        use_host_work_threads()  # again: nothing changes
        x = torch.arange(1 << 16, dtype=torch.float32)
        return torch.get_num_threads(), float((x * 2).sum())

    threads, total = _in_thread(host)
    assert threads == HOST_WORK_THREADS == 1
    assert total == float((torch.arange(1 << 16, dtype=torch.float32) * 2).sum())
    assert torch.get_num_threads() == three_threads  # this (the inference) thread
    assert _in_thread(torch.get_num_threads) == three_threads  # a thread started after


def test_replays_writer_runs_on_one_thread(tmp_path, three_threads):
    """The writer (messages, rendering, the bag) leaves the other cores to the inference."""
    from replay_bags import camera_bag, frames
    from sapiens_ros.core.models.configs import save_random_checkpoints
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.replay.loop import replay, ReplayOptions
    from skimage import data

    save_random_checkpoints(tmp_path / 'models', ('seg',), input_size=(64, 48))
    pipe = load_pipeline(('seg',), model_dir=str(tmp_path / 'models'))
    src = camera_bag(tmp_path / 'in', frames(data.astronaut(), 2, (64, 48)), 'mcap', 'jazzy')
    seen = []
    summary = replay(pipe, ReplayOptions(str(src), str(tmp_path / 'out'), progress=False,
                                         on_frame=lambda n: seen.append(
                                             torch.get_num_threads())))
    assert summary.processed == 2 and seen == [1, 1]
    assert torch.get_num_threads() == three_threads
