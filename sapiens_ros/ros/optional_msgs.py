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

"""The optional message packages, what each one enables, and why one is off."""

from __future__ import annotations

from .hri_bodies import HRI_MSGS_ERROR
from .tf_frames import TF2_MSGS_ERROR
from .vision_messages import VISION_MSGS_ERROR

#: Package -> (its import error or None, what is published with it).
OPTIONAL_PACKAGES: dict[str, tuple[str | None, str]] = {
    'vision_msgs': (VISION_MSGS_ERROR,
                    'pose/detections (Detection2DArray) and seg/label_info (LabelInfo)'),
    'tf2_msgs': (TF2_MSGS_ERROR, 'body_<id> frames on /tf (publish_tf)'),
    'hri_msgs': (HRI_MSGS_ERROR, 'REP-155 bodies under /humans/bodies (hri)'),
}


def available(package: str) -> bool:
    """Return whether an optional message package imports."""
    return OPTIONAL_PACKAGES[package][0] is None


def missing_packages() -> dict[str, str]:
    """One log line per missing package: what is not published, why, and the fix."""
    return {name: f'not publishing {what}: {name} does not import ({error}); install '
                  f'ros-$ROS_DISTRO-{name.replace("_", "-")} (rosdep installs it)'
            for name, (error, what) in OPTIONAL_PACKAGES.items() if error is not None}


__all__ = ['OPTIONAL_PACKAGES', 'available', 'missing_packages']
