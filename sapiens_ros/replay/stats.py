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

"""Summarise a replay output bag: topic counts and rates, keypoint scores, person fraction."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
import io
import logging

import numpy as np

from .records import record_values
from .rosbag2 import BagError
from .source import InputBag
from ..core.models.metadata import keypoint_info
from ..ros.array_msgs import cloud_field
from ..ros.topic_types import OUTPUT_TYPE_NAMES

log = logging.getLogger(__name__)

_KEYPOINTS = '/pose/keypoints'


@dataclass
class TopicStats:
    """Message count and rate of one topic."""

    topic: str
    msgtype: str
    count: int = 0
    first_ns: int | None = None
    last_ns: int | None = None

    @property
    def rate_hz(self) -> float:
        """Mean rate between the first and the last message (0 for fewer than two)."""
        if self.count < 2 or self.last_ns == self.first_ns:
            return 0.0
        return (self.count - 1) / ((self.last_ns - self.first_ns) / 1e9)


@dataclass
class CameraStats:
    """Pose statistics of one camera's ``pose/keypoints`` topic."""

    prefix: str
    frames: int = 0
    with_person: int = 0
    persons: int = 0
    score_sum: np.ndarray | None = None

    @property
    def person_fraction(self) -> float:
        """Fraction of processed frames with at least one person."""
        return self.with_person / self.frames if self.frames else 0.0

    def mean_scores(self) -> np.ndarray:
        """Mean score of each keypoint over every detected person (NaN without persons)."""
        if self.score_sum is None or not self.persons:
            return np.full(len(keypoint_info().names), np.nan)
        return self.score_sum / self.persons


@dataclass
class BagStats:
    """Everything ``sapiens-ros stats`` reports."""

    topics: list[TopicStats] = field(default_factory=list)
    cameras: list[CameraStats] = field(default_factory=list)
    failures: Counter = field(default_factory=Counter)

    @property
    def outputs(self) -> list[str]:
        """Topics a replay writes (``.../pose/keypoints``, ``.../errors``...) in the bag."""
        return [t.topic for t in self.topics if _is_output(t)]

    @property
    def camera_topics(self) -> list[str]:
        """Image topics in the bag (an input bag's cameras)."""
        return [t.topic for t in self.topics if t.msgtype in _IMAGE_TYPES and not _is_output(t)]


_IMAGE_TYPES = ('sensor_msgs/msg/Image', 'sensor_msgs/msg/CompressedImage')


def _is_output(topic: TopicStats) -> bool:
    """Return whether a topic is one a replay (or the node) writes."""
    if topic.topic.endswith('/errors') and topic.msgtype.endswith('DiagnosticArray'):
        return True
    return any(topic.topic.endswith('/' + suffix) and topic.msgtype == name
               for suffix, name in OUTPUT_TYPE_NAMES.items())


def not_an_output(stats: BagStats, path: str) -> str | None:
    """Say what a bag without replay outputs is (an input bag?), or None for an output bag."""
    if stats.outputs:
        return None
    if stats.camera_topics:
        return (f'{path} holds no replay outputs: it is an input bag with the camera topics '
                f'{", ".join(stats.camera_topics)}. Replay it first (sapiens-ros replay {path} '
                f'--out OUTPUT_BAG), then run stats on OUTPUT_BAG')
    return (f'{path} holds no replay outputs (no .../pose/keypoints, .../seg/labels or '
            f'.../errors topic): stats reads the bags sapiens-ros replay writes')


def _scores(msg) -> np.ndarray:
    """``(persons, keypoints)`` scores of a deserialized ``pose/keypoints`` PointCloud2."""
    scores = cloud_field(msg, 'score')
    if scores is None:
        return np.zeros((int(msg.height), int(msg.width)), np.float32)
    return scores.astype(np.float32)


def bag_stats(path: str) -> BagStats:
    """Read an output bag, closed or not (deserializing only keypoints and error records)."""
    out = BagStats()
    with InputBag(path, salvage=True) as bag:  # a killed run's bag too: its readable part
        topics = {}
        for c in bag.connections:
            topics.setdefault(c.topic, TopicStats(c.topic, c.msgtype))
        cameras: dict[str, CameraStats] = {}
        try:
            for conn, time_ns, raw in bag.messages():
                ts = topics[conn.topic]
                ts.count += 1
                ts.first_ns = time_ns if ts.first_ns is None else min(ts.first_ns, time_ns)
                ts.last_ns = time_ns if ts.last_ns is None else max(ts.last_ns, time_ns)
                if conn.topic.endswith(_KEYPOINTS) and conn.msgtype.endswith('PointCloud2'):
                    prefix = conn.topic[:-len(_KEYPOINTS)]
                    cam = cameras.setdefault(prefix, CameraStats(prefix))
                    scores = _scores(bag.deserialize(raw, conn.msgtype))
                    cam.frames += 1
                    cam.with_person += int(scores.shape[0] > 0)
                    cam.persons += scores.shape[0]
                    if scores.shape[0]:
                        total = scores.sum(0, dtype=np.float64)
                        cam.score_sum = total if cam.score_sum is None else cam.score_sum + total
                elif conn.msgtype == 'diagnostic_msgs/msg/DiagnosticArray' and \
                        conn.topic.endswith('/errors'):
                    values = record_values(bag.deserialize(raw, conn.msgtype))
                    out.failures[values.get('kind', 'unknown') or 'unknown'] += 1
        except BagError as exc:  # an unclosed or damaged bag: what was readable counts
            log.warning('%s', exc)
        out.topics = sorted(topics.values(), key=lambda t: t.topic)
        out.cameras = [cameras[k] for k in sorted(cameras)]
    return out


def _rows_to_csv(header: list[str], rows: list[list]) -> str:
    import csv

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator='\n')
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _rows_to_table(header: list[str], rows: list[list]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in cells]
    lines.insert(1, '  '.join('-' * w for w in widths))
    return '\n'.join(lines) + '\n'


def tables(stats: BagStats) -> list[tuple[list[str], list[list]]]:
    """Return the reports as (header, rows): topics, cameras, failures, keypoint scores."""
    names = keypoint_info().names
    topics = (['topic', 'type', 'count', 'rate_hz'],
              [[t.topic, t.msgtype, t.count, f'{t.rate_hz:.3f}'] for t in stats.topics])
    cams = (['camera', 'frames', 'with_person', 'person_fraction', 'mean_persons'],
            [[c.prefix or '/', c.frames, c.with_person, f'{c.person_fraction:.3f}',
              f'{c.persons / c.frames if c.frames else 0.0:.2f}'] for c in stats.cameras])
    kps = (['camera', 'index', 'keypoint', 'mean_score'],
           [[c.prefix or '/', i, names[i] if i < len(names) else str(i), f'{s:.4f}']
            for c in stats.cameras for i, s in enumerate(c.mean_scores())])
    fails = (['failure', 'count'], [[k, v] for k, v in sorted(stats.failures.items())])
    return [topics, cams, fails, kps]


def format_stats(stats: BagStats, csv: bool = False, only_topics: bool = False) -> str:
    """Render the reports as aligned tables or CSV blocks separated by blank lines."""
    render = _rows_to_csv if csv else _rows_to_table
    reports = tables(stats)[:1] if only_topics else tables(stats)
    return '\n'.join(render(h, r) for h, r in reports)
