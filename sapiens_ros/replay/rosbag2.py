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
What every reader of a rosbag2 directory shares: its error, its storage files, its typestore.

A typestore knows the message types of a distro's core packages; :func:`register_packages`
adds other packages (vision_msgs, hri_msgs...) by name from their installed ``.msg`` files.
Both the rosbags-backed :class:`~.source.InputBag` and the damage-tolerant
:class:`~.scan.ScanBag` build on these, so neither imports the other's module for them.
"""

from __future__ import annotations

from collections.abc import Iterable
import functools
import logging
import os
from pathlib import Path
import re
import sys

from ..core.errors import SapiensError

log = logging.getLogger(__name__)

#: Typestores by ROS 2 distro (bags without message definitions, the running distro's CDR).
_STORES = {'humble': 'ROS2_HUMBLE', 'iron': 'ROS2_IRON', 'jazzy': 'ROS2_JAZZY',
           'kilted': 'ROS2_KILTED'}


class BagError(SapiensError):
    """The input or output bag cannot be used (missing, corrupt, truncated, wrong topics)."""


def storage_files(path: Path) -> list[Path]:
    """Return the ``.mcap`` / ``.db3`` files of a bag directory."""
    return sorted(path.glob('*.mcap')) + sorted(path.glob('*.db3'))


def typestore_of(distro: str, fallback: str = 'jazzy'):
    """Return the rosbags typestore of a ROS 2 distro name (``fallback`` for unknown names)."""
    from rosbags.typesys import get_typestore, Stores

    name = _STORES.get(distro.strip().lower()) or _STORES[fallback]
    return get_typestore(getattr(Stores, name))


#: A field's type in a ``.msg`` line that names another package: ``pkg/Type`` or ``pkg/msg/Type``.
_PACKAGE_REF = re.compile(r'^\s*([A-Za-z][A-Za-z0-9_]*)/(?:msg/)?[A-Za-z][A-Za-z0-9_]*')


def msg_dir(package: str) -> Path | None:
    """
    Return ``share/<package>/msg`` of an installed message package, or None.

    Looked up in ``AMENT_PREFIX_PATH``'s prefixes (a sourced ROS install or workspace), then in
    this Python's prefix (a virtual environment the kit built the packages into).
    """
    prefixes = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    for prefix in [*prefixes, sys.prefix]:
        folder = Path(prefix) / 'share' / package / 'msg'
        if any(folder.glob('*.msg')):
            return folder
    return None


@functools.lru_cache(maxsize=1024)
def _parsed_msg(path: Path, mtime_ns: int, name: str) -> tuple[dict, tuple[str, ...]]:
    """
    Return the types a ``.msg`` file defines and the packages its fields name (once a version).

    Parsing is most of the cost of opening a bag (~50 ms for vision_msgs and hri_msgs), and a
    fleet opens two bags per input. The dict is rosbags' (read only: ``Typestore.register``
    copies what it is given).
    """
    from rosbags.typesys import get_types_from_msg

    text = path.read_text()
    refs = (_PACKAGE_REF.match(line.split('#', 1)[0]) for line in text.splitlines())
    return get_types_from_msg(text, name), tuple(ref.group(1) for ref in refs if ref)


def register_packages(typestore, packages: Iterable[str]) -> list[str]:
    """
    Register the message types of ``packages`` that ``typestore`` lacks, from their ``.msg`` files.

    Packages their fields name (``geometry_msgs/Pose``...) come along when the store lacks
    them too. Return the packages that could not be found (their types stay unknown; a log line
    names them), so a caller can leave their topics out.
    """
    known = {name.split('/', 1)[0] for name in typestore.types}
    todo, seen, missing, types = list(packages), set(), [], {}
    while todo:
        package = todo.pop(0)
        if package in seen:
            continue
        seen.add(package)
        folder = msg_dir(package)
        if folder is None:
            if package not in known:
                missing.append(package)
            continue
        for path in sorted(folder.glob('*.msg')):
            name = f'{package}/msg/{path.stem}'
            if name in typestore.types:
                continue
            parsed, refs = _parsed_msg(path, path.stat().st_mtime_ns, name)
            types.update(parsed)
            todo += [ref for ref in refs if ref not in seen]
    if types:
        typestore.register(types)
    if missing:
        log.warning('no .msg files of %s under AMENT_PREFIX_PATH or %s: their types are not '
                    'registered', ', '.join(missing), sys.prefix)
    return missing
