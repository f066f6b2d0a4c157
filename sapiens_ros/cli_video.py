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

"""``sapiens-ros infer --video``: a clip's people, tracked and smoothed, drawn into an mp4."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
import json
from pathlib import Path
import time

import numpy as np


def people_record(index: int, people) -> dict:
    """One JSON line per frame: ids, boxes' rows order, torso positions (metres) when 3D."""
    record = {'frame': index, 'stamp': round(people.stamp, 6), 'ids': people.ids.tolist()}
    if people.torso_valid.any():
        record['torso_position'] = [p if ok else None for p, ok in zip(
            np.round(people.torso_position.astype(np.float64), 4).tolist(),
            people.torso_valid.tolist(), strict=True)]
    return record


def run_video(args: argparse.Namespace, pipe, fps: float, frames: Iterator[np.ndarray],
              boxes=None) -> int:
    """
    Run ``pipe`` on every frame of ``args.video`` with one PeopleState (stamps from ``fps``).

    Writes ``<stem>.people.mp4`` (One-Euro smoothed skeletons, each person in its id's colour
    with its id) and ``<stem>.people.jsonl`` (per frame: ids, torso positions) into ``args.out``.
    """
    from .core.errors import FrameError
    from .core.media.video import Mp4Writer
    from .core.media.visualize import draw_skeleton
    from .core.people.state import PeopleState

    path = Path(args.video)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state, seen, done, failed = PeopleState(), set(), 0, 0
    start = time.perf_counter()
    with Mp4Writer(out / f'{path.stem}.people.mp4', fps) as video, \
            open(out / f'{path.stem}.people.jsonl', 'w', encoding='utf-8') as lines:
        for index, frame in enumerate(frames):
            rgb = np.ascontiguousarray(frame[..., ::-1])
            try:
                result = pipe(frame, color_order='bgr', fx=args.fx, boxes=boxes)[0]
            except FrameError as exc:
                failed += 1
                print(f'{path.name} frame {index}: skipped: {exc}')
                video.write(rgb)
                continue
            done += 1
            if result.pose is None:
                video.write(rgb)
                continue
            people = state.update(result, index / fps)
            seen.update(int(i) for i in people.ids if i >= 0)
            video.write(draw_skeleton(rgb, people.smoothed, people.scores, result.pose.boxes,
                                      ids=people.ids))
            lines.write(json.dumps(people_record(index, people)) + '\n')
    ms = (time.perf_counter() - start) * 1e3 / max(done + failed, 1)
    who = 'person' if len(seen) == 1 else 'people'
    print(f'{path.name}: {done + failed} frames at {fps:g} fps, {len(seen)} {who} '
          f'(ids {sorted(seen)}), {ms:.0f} ms/frame -> {video.path} and '
          f'{path.stem}.people.jsonl')
    return 1 if failed else 0
