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

Both the rosbags-backed :class:`~.source.InputBag` and the damage-tolerant
:class:`~.scan.ScanBag` build on these, so neither imports the other's module for them.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import SapiensError

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
