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
The optional message packages: whether each imports, what it enables, and why one is off.

The one place that decides it. Light on purpose (only the packages' generated message
modules are imported, on first use), so the parameter table can ask it at ``ros2 launch``.
"""

from __future__ import annotations

import functools
import importlib

#: Package -> (the message types the node uses from it, what is published with it).
OPTIONAL_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    'vision_msgs': (('Detection2D', 'Detection2DArray', 'LabelInfo', 'ObjectHypothesisWithPose',
                     'VisionClass'),
                    'pose/detections (Detection2DArray) and seg/label_info (LabelInfo)'),
    'tf2_msgs': (('TFMessage',), 'body_<id> frames on /tf (publish_tf)'),
    'hri_msgs': (('IdsList', 'NormalizedRegionOfInterest2D', 'Skeleton2D', 'IdsMatch'),
                 'REP-155 bodies under /humans/bodies (hri) and persons under /humans/persons '
                 '(world_frame)'),
}


@functools.cache
def _load(package: str) -> tuple[tuple, str | None]:
    names = OPTIONAL_PACKAGES[package][0]
    try:
        module = importlib.import_module(f'{package}.msg')
        return tuple(getattr(module, name) for name in names), None
    except (ImportError, AttributeError) as exc:  # an optional package: the node runs without
        return (None,) * len(names), f'{type(exc).__name__}: {exc}'


def message_types(package: str) -> tuple:
    """Return the package's message types the node uses (in table order), or Nones."""
    return _load(package)[0]


def import_error(package: str) -> str | None:
    """Return why an optional package does not import, or None when it does."""
    return _load(package)[1]


def available(package: str) -> bool:
    """Return whether an optional message package imports."""
    return import_error(package) is None


def missing_packages() -> dict[str, str]:
    """One log line per missing package: what is not published, why, and the fix."""
    return {name: f'not publishing {what}: {name} does not import ({import_error(name)}); '
                  f'install ros-$ROS_DISTRO-{name.replace("_", "-")} (rosdep installs it)'
            for name, (_, what) in OPTIONAL_PACKAGES.items() if not available(name)}


__all__ = ['OPTIONAL_PACKAGES', 'available', 'import_error', 'message_types', 'missing_packages']
