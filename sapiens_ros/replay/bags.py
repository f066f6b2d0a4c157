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

"""Find the bags of a many-bag replay and name their outputs after their relative paths."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import os
from pathlib import Path

from .rosbag2 import BagError, storage_files


@dataclass(frozen=True)
class BagInput:
    """One input bag and the name of its output under ``OUT_DIR``."""

    path: Path
    name: str  # relative path: OUT_DIR/<name> is its output bag


def is_bag(path: Path) -> bool:
    """Return whether ``path`` is a rosbag2 directory (closed, or a killed writer's)."""
    return path.is_dir() and ((path / 'metadata.yaml').is_file() or bool(storage_files(path)))


def find_bags(inputs: Sequence[str | Path], exclude: Path | None = None) -> list[BagInput]:
    """
    Expand bags and directories of bags (searched recursively) into :class:`BagInput` s.

    A bag given directly keeps its directory name; a bag found under a directory D keeps its
    path relative to D. ``exclude`` (the output directory) is never searched.
    """
    found: list[BagInput] = []
    for raw in inputs:
        path = Path(raw)
        if path.is_file() and path.suffix in ('.mcap', '.db3'):
            path = path.parent
        if not path.exists():
            raise BagError(f'input {str(raw)!r} does not exist')
        if is_bag(path):
            found.append(BagInput(path, path.resolve().name))
            continue
        before = len(found)
        for root, dirs, _ in os.walk(path):
            here = Path(root)
            dirs.sort()
            if exclude is not None and here.resolve() == exclude.resolve():
                dirs.clear()
                continue
            if is_bag(here):
                found.append(BagInput(here, here.relative_to(path).as_posix()))
                dirs.clear()
        if len(found) == before:
            raise BagError(f'{raw} is neither a rosbag2 bag nor a directory holding any')
    names: dict[str, Path] = {}
    for bag in found:
        if bag.name in names:
            raise BagError(f'two inputs would write OUT_DIR/{bag.name}: {names[bag.name]} and '
                           f'{bag.path}; give their parent directory instead')
        names[bag.name] = bag.path
    return found
