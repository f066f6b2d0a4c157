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

"""Shared helpers for the ROS tests: tiny random checkpoints and the session's domain id."""

from __future__ import annotations

import os
from pathlib import Path
import tempfile

TEST_INPUT_SIZE = (256, 192)
ALL_TASKS = ('pose', 'seg', 'normal', 'pointmap')
#: Every task with node outputs: the four, and matting (loaded only when asked).
OUTPUT_TASKS = ALL_TASKS + ('matting',)
_ROOT: Path | None = None


#: Python that hides the optional message packages from import (they are installed here), as on
#: a ROS install without them; a script starts with it.
HIDE_OPTIONAL_PACKAGES = """
import sys


class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('vision_msgs', 'tf2_msgs', 'hri_msgs'):
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)


sys.meta_path.insert(0, Hide())
"""


def tiny_model_dir() -> Path:
    """
    Directory with one tiny random checkpoint per perception task (built once a session).

    The pointmap config is built for the test input size, since its scale MLP depends on it.
    """
    global _ROOT
    if _ROOT is None:
        from sapiens_ros.core.models.configs import save_random_checkpoints

        _ROOT = save_random_checkpoints(tempfile.mkdtemp(prefix='sapiens_ros_tiny_'),
                                        OUTPUT_TASKS, input_size=TEST_INPUT_SIZE)
    return _ROOT


def tiny_pipeline(tasks=ALL_TASKS, **config):
    """Load a pipeline of tiny checkpoints through the real loader."""
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    return load_pipeline(list(tasks), model_dir=str(tiny_model_dir()),
                         config=PipelineConfig(input_size=TEST_INPUT_SIZE, **config))


def session_domain_id() -> int:
    """Pick this test session's ROS_DOMAIN_ID once and export it for child processes."""
    if 'SAPIENS_TEST_DOMAIN' not in os.environ:
        try:
            import domain_coordinator

            ctx = domain_coordinator.domain_id()
            domain = int(ctx.__enter__())
            _HELD.append(ctx)  # held until the interpreter exits
        except Exception:  # noqa: BLE001 - the coordinator is optional
            domain = 1 + os.getpid() % 100
        os.environ['SAPIENS_TEST_DOMAIN'] = str(domain)
        os.environ['ROS_DOMAIN_ID'] = str(domain)
    return int(os.environ['SAPIENS_TEST_DOMAIN'])


_HELD: list = []
