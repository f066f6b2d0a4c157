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
Freed host memory stays in the process: a per-frame buffer does not page-fault again.

Each case runs in a fresh interpreter (malloc's settings are per process) and counts the
page faults of the real glibc malloc with ``getrusage``; no timing.
"""

import ctypes
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith('linux') or
    not hasattr(ctypes.CDLL(None), 'gnu_get_libc_version'), reason='glibc malloc only')

# Two 30 MiB buffers a frame (below the 32 MiB that every glibc lets ``mallopt`` keep): by
# default malloc trims the 60 MiB they leave at its heap's top back to the kernel, so every
# frame faults their pages in again as numpy fills them (as many faults as the first frame's:
# fewer than pages where the kernel maps transparent huge pages).
_FRAMES = r"""
import json, resource, sys
import numpy as np
from sapiens_ros.core.pipeline.host_memory import keep_freed_memory
said = keep_freed_memory() if sys.argv[1] == 'call' else 'not called'
faults = []
for _ in range(6):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    bufs = [np.ones(30 << 20, np.uint8) for _ in range(2)]
    del bufs
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({'said': said, 'faults': faults}))
"""


def _frames(call: bool, **env) -> dict:
    ours = ('GLIBC_TUNABLES', 'LD_PRELOAD', 'SAPIENS_ROS_MALLOC_TUNING')
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith('MALLOC_') and k not in ours}
    out = subprocess.run([sys.executable, '-c', _FRAMES, 'call' if call else 'no'],
                         env={**environ, **env}, capture_output=True, text=True, check=True,
                         timeout=120)
    return json.loads(out.stdout.splitlines()[-1])


def test_default_malloc_faults_every_frame_in_again():
    """The reference: without the call every frame's buffer faults all its pages again."""
    faults = _frames(call=False)['faults']
    assert faults[0] > 10 and min(faults[1:]) >= faults[0] * 0.9, faults


def test_kept_memory_is_reused_without_faults():
    run = _frames(call=True)
    assert run['said'].startswith('freed blocks up to'), run['said']
    faults = run['faults']
    assert faults[0] > 10 and max(faults[1:]) < faults[0] * 0.05, faults  # mapped once


@pytest.mark.parametrize('env, named', [
    ({'SAPIENS_ROS_MALLOC_TUNING': '0'}, 'SAPIENS_ROS_MALLOC_TUNING=0'),
    ({'MALLOC_TRIM_THRESHOLD_': '131072'}, 'MALLOC_TRIM_THRESHOLD_'),
    ({'GLIBC_TUNABLES': 'glibc.malloc.mmap_threshold=65536'}, 'GLIBC_TUNABLES'),
])
def test_the_users_own_malloc_settings_win(env, named):
    """An opt-out or the user's own malloc settings: left alone, and the reason named."""
    run = _frames(call=True, **env)
    assert run['said'].startswith('malloc left as it is') and named in run['said'], run
    faults = run['faults']
    assert min(faults[1:]) >= faults[0] * 0.9, faults  # still the default behaviour
