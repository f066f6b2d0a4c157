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

"""The sample photo never lands on a predictable path in a shared temp dir."""

import stat

import cv2
import pytest
from sapiens_ros.core.media import sample_image


@pytest.fixture
def no_bundled_png(tmp_path, monkeypatch):
    """Hide scikit-image's data/astronaut.png (it then decodes the photo from its data)."""
    skimage = pytest.importorskip('skimage')
    monkeypatch.setattr(skimage, '__file__', str(tmp_path / 'skimage' / '__init__.py'))
    monkeypatch.setattr(sample_image, '_copy', None, raising=False)
    shared = tmp_path / 'shared_tmp'
    shared.mkdir()
    monkeypatch.setattr('tempfile.tempdir', str(shared))
    return shared


def test_planted_symlink_is_never_followed(no_bundled_png, tmp_path):
    """Another user's symlink at the old fixed name: its target stays as it was."""
    victim = tmp_path / 'victim.txt'
    victim.write_text('not yours')
    (no_bundled_png / 'sapiens_ros_astronaut.png').symlink_to(victim)
    path = sample_image.sample_image_path()
    assert victim.read_text() == 'not yours'
    assert not path.is_symlink() and path.parent == no_bundled_png
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # only its owner can read or swap it
    assert cv2.imread(str(path)).shape == (512, 512, 3)
    assert sample_image.sample_image_path() == path  # written once per process


def test_the_copy_is_new_for_every_process(no_bundled_png):
    """A file planted under the name a process will use cannot exist: names are random."""
    first = sample_image.sample_image_path()
    sample_image._copy = None  # as a second process would
    second = sample_image.sample_image_path()
    assert first != second and first.is_file() and second.is_file()
