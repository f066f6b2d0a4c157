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

"""Output topic names: the node's topic contract under a namespace, one per camera."""

from __future__ import annotations

from collections.abc import Sequence

#: Default namespace of the replay outputs (the node's outputs, as if launched in /sapiens).
DEFAULT_NAMESPACE = '/sapiens'


def _clean(namespace: str) -> str:
    return '/' + namespace.strip('/') if namespace.strip('/') else ''


def errors_topic(namespace: str = DEFAULT_NAMESPACE) -> str:
    """Return the topic of the per-frame error records."""
    return f'{_clean(namespace)}/errors'


def world_topic(namespace: str, suffix: str) -> str:
    """Return a topic of the whole replay (not of one camera): ``/sapiens/persons/markers``."""
    return f'{_clean(namespace)}/{suffix}'


def camera_namespace(topic: str) -> str:
    """Return the camera part of an image topic: ``/front/image_raw/compressed`` -> ``/front``."""
    parts = [p for p in topic.split('/') if p]
    if parts and parts[-1] in ('compressed', 'theora', 'zstd'):
        parts = parts[:-1]
    return '/' + '/'.join(parts[:-1]) if len(parts) > 1 else ''


def output_prefixes(topics: Sequence[str], namespace: str = DEFAULT_NAMESPACE) -> dict[str, str]:
    """
    Map each input image topic to the prefix of its output topics.

    One camera: ``<namespace>`` (``/sapiens/pose/keypoints``). Several: ``<namespace>/<camera>``
    (``/sapiens/front/pose/keypoints``), or the whole topic where two cameras would collide.
    """
    ns = _clean(namespace)
    if len(topics) == 1:
        return {topics[0]: ns}
    out = {t: ns + camera_namespace(t) for t in topics}
    if len(set(out.values())) < len(out) or ns in out.values():
        out = {t: ns + '/' + t.strip('/') for t in topics}
    return out


def output_topic(prefix: str, suffix: str) -> str:
    """Join a prefix and a contract suffix (``pose/keypoints``)."""
    return f'{prefix}/{suffix}'
