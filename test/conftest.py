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

"""Shared fixtures: tiny random Sapiens2 checkpoints (saved and loaded for real) and photos."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')

#: Small model input keeps the tiny models fast; it is a valid multiple of the patch size.
INPUT_SIZE = (256, 192)


@pytest.fixture(scope='session')
def model_dir(tmp_path_factory):
    """Save one tiny random save_pretrained checkpoint per task, in ``<dir>/<task>/``."""
    from transformers.utils import logging as hf_logging

    from sapiens_ros.core.models.configs import save_random_checkpoints

    hf_logging.disable_progress_bar()
    root = tmp_path_factory.mktemp('models')
    return save_random_checkpoints(root, ('pose', 'seg', 'normal', 'pointmap'),
                                   input_size=INPUT_SIZE)


@pytest.fixture(scope='session')
def astronaut() -> np.ndarray:
    """Return the astronaut photo from scikit-image (RGB 512x512): a real human image."""
    from skimage import data

    return data.astronaut()


@pytest.fixture(scope='session')
def wide_frame(astronaut) -> np.ndarray:
    """Return a non-4:3 frame (16:9-ish landscape crop of the photo, 288x512)."""
    return np.ascontiguousarray(astronaut[40:328])


@pytest.fixture(scope='session')
def pipeline(model_dir):
    """Load all four heads through the real loader."""
    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core import PipelineConfig

    return load_pipeline('pose,seg,normal,pointmap', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=INPUT_SIZE))


@pytest.fixture
def graph():
    """Give each ROS test its own Context and executor thread, joined before shutdown."""
    from ros_graph import Graph

    g = Graph()
    try:
        yield g
    finally:
        g.close()
