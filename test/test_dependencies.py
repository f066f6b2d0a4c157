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
The declared dependencies: floors that hold, and pins that install on Python 3.10.

CI also runs the core tests with ``scripts/check_deps.py floors`` installed (transformers at its
floor) and checks with pip's dry run that every set resolves for Python 3.10 on x86_64 and
aarch64 (``.ci/run``); these tests check the files offline.
"""

import importlib.util
from pathlib import Path

from packaging.version import Version
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location('check_deps', ROOT / 'scripts' / 'check_deps.py')
check_deps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_deps)

#: transformers 5.21.0 and later declare Requires-Python >=3.11 (their wheels' metadata).
FIRST_TRANSFORMERS_WITHOUT_PY310 = Version('5.21.0')


def _pinned(lines: list[str], name: str) -> list[Version]:
    from packaging.requirements import Requirement

    out = []
    for text in lines:
        req = Requirement(text)
        if req.name == name:
            assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == '==', text
            out.append(Version(next(iter(req.specifier)).version))
    return out


@pytest.mark.parametrize('python', ['3.10', '3.11', '3.12'])
@pytest.mark.parametrize('machine', ['x86_64', 'aarch64'])
def test_requirements_pin_one_transformers_that_installs_on_each_python(python, machine):
    lines = check_deps.requirement_lines(ROOT / 'requirements.txt')
    pins = _pinned(check_deps.for_target(lines, check_deps.marker_env(python, machine)),
                   'transformers')
    assert len(pins) == 1, pins
    floor = Version(check_deps.floors()['transformers'])
    assert pins[0] >= floor
    if python == '3.10':  # Humble and JetPack 6
        assert pins[0] < FIRST_TRANSFORMERS_WITHOUT_PY310, pins


def test_floor_requirements_pin_setup_py_floors_and_keep_the_rest():
    floors = check_deps.floors()
    assert {'transformers', 'xxhash'} <= set(floors), floors
    lines = check_deps.floor_requirements()
    for name, version in floors.items():
        assert _pinned(lines, name) == [Version(version)], name
    assert 'numpy<2' in lines  # a Jetson's NumPy 1.x
    plain = check_deps.requirement_lines(ROOT / 'requirements.txt')
    others = [t for t in plain if not t.startswith(tuple(floors))]
    assert [t for t in lines if not t.startswith(tuple(floors)) and t != 'numpy<2'] == others
    assert 'torch' not in check_deps.for_target(check_deps.install_requires(),
                                                check_deps.marker_env('3.10', 'aarch64'))


def test_installed_transformers_has_every_class_the_code_uses():
    """In CI's second venv this runs on transformers at setup.py's floor."""
    import transformers

    from sapiens_ros.core.models.registry import model_class, TASKS

    assert Version(transformers.__version__) >= Version(check_deps.floors()['transformers'])
    for task in TASKS:
        assert model_class(task).__name__.startswith('Sapiens2')
    assert transformers.Sapiens2Config and transformers.Sapiens2HeadConfig


def test_marker_env_follows_the_target():
    env = check_deps.marker_env('3.10', 'aarch64')
    assert env['python_version'] == '3.10' and env['python_full_version'] == '3.10.0'
    assert env['platform_machine'] == 'aarch64'
    tags = check_deps.platform_tags('aarch64')
    assert tags[0] == 'manylinux_2_35_aarch64' and 'manylinux2014_aarch64' in tags


def test_torch_floors_match_the_installed_transformers():
    """The table of torch floors says what the installed transformers itself checks."""
    import inspect
    import re

    import transformers
    from transformers.utils import import_utils

    source = inspect.getsource(import_utils.is_torch_available)
    floor = re.search(r'version\.parse\("([0-9.]+)"\)', source).group(1)
    assert check_deps.torch_floor(transformers.__version__) == floor


@pytest.mark.parametrize('torch, transformers, expected', [
    ('2.13.0+cpu', '5.23.0', None),
    ('2.6.0', '5.20.2', None),
    ('2.5.0a0+872d972e41.nv24.08', '5.20.2', 'transformers>=5.10.1,<5.15.0'),  # JetPack 6.1
    ('2.5.0', '5.20.2', 'transformers>=5.10.1,<5.20.0'),
    ('2.4.1', '5.20.2', 'transformers>=5.10.1,<5.15.0'),
])
def test_a_transformers_for_an_older_torch(torch, transformers, expected):
    assert check_deps.transformers_for_torch(torch, transformers) == expected


def test_a_torch_older_than_every_sapiens2_transformers_is_refused():
    with pytest.raises(SystemExit, match='torch 2.3.0 is older'):
        check_deps.transformers_for_torch('2.3.0', '5.20.2')
