#!/usr/bin/env python3

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
Replay throughput against the core pipeline's own rate on the same frames, in one run.

A rosbags-written camera bag (real photo frames) is replayed into an mcap bag (read, decode,
infer, build the node's messages, serialize, write); the core rate is ``pipe(frames)`` on the
same decoded frames in the same batches. Target: replay / core >= 0.90.

    python benchmarks/bench_replay.py [--frames 12] [--size 640x480] [--batch 1,4]
        [--tasks pose,seg,normal,pointmap] [--input-size 192x256] [--compressed]
        [--layout tiny|0.4b]

``--ray``: the overhead of Ray. The same bags (``--bags`` of ``--frames`` each) through the
many-bag replay with ``--workers 1`` (in this process, no Ray) and ``--workers 2`` (a local
Ray, one CPU and one torch thread per worker); wall time includes loading the pipeline(s) and,
for Ray, starting it (also shown alone).

    python benchmarks/bench_replay.py --ray [--bags 4] [--frames 6] [--layout tiny|0.4b]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import sys
import tempfile
import time

import cv2

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / 'test')]  # this checkout's package, not an installed one

from replay_bags import camera_bag, frames  # noqa: E402
from sapiens_ros.backends.factory import load_pipeline  # noqa: E402
from sapiens_ros.backends.torch_runner import TorchRunner  # noqa: E402
from sapiens_ros.core.models.configs import random_model, save_random_checkpoints  # noqa: E402
from sapiens_ros.core.models.input_size import format_size, parse_size, Size  # noqa: E402
from sapiens_ros.core.pipeline.host_memory import keep_freed_memory  # noqa: E402
from sapiens_ros.core.pipeline.pipeline import Pipeline, PipelineConfig  # noqa: E402
from sapiens_ros.replay.loop import replay, ReplayOptions  # noqa: E402
from sapiens_ros.ros.render_plan import MessageOptions  # noqa: E402
from sapiens_ros.ros.topics import DEFAULT_OUTPUTS, OUTPUT_TASK  # noqa: E402

TARGET = 0.90


def core_rate(pipe: Pipeline, rgb: list, batch: int, compressed: bool) -> float:
    """Frames/s of the pipeline alone on the already decoded frames."""
    inputs = [f[..., ::-1].copy() if compressed else f for f in rgb]
    order = 'bgr' if compressed else 'rgb'
    start = time.perf_counter()
    for i in range(0, len(inputs), batch):
        pipe(inputs[i:i + batch], color_order=order)
    return len(inputs) / (time.perf_counter() - start)


def make_pipeline(tasks: tuple, layout: str, model_dir: str, input_size: tuple,
                  stride: int = 1) -> Pipeline:
    """Build the benchmark's pipeline (module level: Ray workers unpickle and call it)."""
    config = PipelineConfig(input_size=input_size, pointmap_stride=stride)
    if layout == 'tiny':
        return load_pipeline(tasks, model_dir=model_dir, config=config)
    # Real layouts are GBs: build them in memory instead of saving them.
    keep_freed_memory()  # what load_pipeline does
    return Pipeline({t: TorchRunner(t, random_model(t, layout, tiny=False,
                                                    input_size=input_size))
                     for t in tasks}, config)


def ray_overhead(args, tmp: Path, tasks: tuple, size: tuple, input_size: tuple) -> None:
    """Print the Ray overhead table: --workers 1 without Ray against --workers 2 on Ray."""
    import functools
    import logging

    from skimage import data

    from sapiens_ros.replay.fleet import Fleet, FleetOptions, LocalExecutor
    from sapiens_ros.replay.ray_workers import RayExecutor

    from transformers.utils import logging as hf_logging

    logging.basicConfig(level=logging.WARNING)
    hf_logging.disable_progress_bar()
    os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
    rgb = frames(data.astronaut(), args.frames, size)
    for b in range(args.bags):
        camera_bag(tmp / 'bags' / f'bag{b}', rgb, 'mcap', 'jazzy', compressed=args.compressed)
    if args.layout == 'tiny':
        save_random_checkpoints(tmp / 'models', tasks, input_size=input_size)
    factory = functools.partial(make_pipeline, tasks, args.layout, str(tmp / 'models'),
                                input_size)
    total = args.bags * args.frames
    print(f'{args.bags} bags x {args.frames} frames {size}, tasks '
          f'{",".join(tasks)}, {args.layout} random models at {format_size(input_size)}, '
          f'CPU ({os.cpu_count()} cores); wall time includes loading the models')
    print('| run | workers | Ray start s | wall s | frames/s | ratio | frames/s once loaded '
          '| ratio |')
    print('|---|---|---|---|---|---|---|---|')
    base = None
    for r in range(args.repeat):
        for workers in (1, 2):
            opt = FleetOptions([str(tmp / 'bags')], str(tmp / f'out_{workers}_{r}'),
                               ReplayOptions('', '', batch=1), workers=workers,
                               progress=False)
            start = time.perf_counter()
            fleet = Fleet(opt)
            ray_start = 0.0
            if workers == 1:
                executor = LocalExecutor(factory)
            else:
                executor = RayExecutor(factory, opt)
                ray_start = time.perf_counter() - start
            result = fleet.run(executor)
            end = time.perf_counter()
            assert sum(row.processed for row in result.manifest.rows.values()) == total
            rate, loaded = total / (end - start), total / (end - executor.ready_at)
            base = (rate, loaded) if workers == 1 else base
            print(f'| {r + 1} | {workers}{" (Ray)" if workers > 1 else " (no Ray)"} | '
                  f'{ray_start:.1f} | {end - start:.1f} | {rate:.2f} | {rate / base[0]:.2f} | '
                  f'{loaded:.2f} | {loaded / base[1]:.2f} |', flush=True)


def main() -> None:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--frames', type=int, default=12)
    ap.add_argument('--size', default='640x480', help='camera frame WIDTHxHEIGHT')
    ap.add_argument('--batch', default='1,4')
    ap.add_argument('--tasks', default='pose,seg,normal,pointmap')
    ap.add_argument('--input-size', default='192x256', help='model input WIDTHxHEIGHT')
    ap.add_argument('--layout', default='tiny',
                    help='random-weight layout: tiny (saved and loaded) or a real size, e.g. 0.4b')
    ap.add_argument('--compressed', action='store_true', help='JPEG CompressedImage input')
    ap.add_argument('--repeat', type=int, default=2, help='alternating runs; best of each')
    ap.add_argument('--ray', action='store_true',
                    help='Ray overhead: --workers 1 (no Ray) vs --workers 2 (Ray) on --bags')
    ap.add_argument('--bags', type=int, default=4, help='--ray: number of bags')
    ap.add_argument('--outputs', default='default', choices=['default', 'all'],
                    help="default: the CLI's default set at pointmap stride 2; all: every raw "
                         'output at stride 1')
    args = ap.parse_args()
    size = Size.parse(args.size)
    input_size = parse_size(args.input_size)
    tasks = tuple(args.tasks.split(','))
    tmp = Path(tempfile.mkdtemp(prefix='bench_replay_'))
    if args.ray:
        ray_overhead(args, tmp, tasks, size, input_size)
        return
    from skimage import data

    rgb = frames(data.astronaut(), args.frames, size)
    src = camera_bag(tmp / 'in', rgb, 'mcap', 'jazzy', compressed=args.compressed)
    if args.compressed:  # the pipeline sees what the decoder gives: the JPEG's pixels
        rgb = [cv2.imdecode(cv2.imencode('.jpg', f[..., ::-1])[1], cv2.IMREAD_COLOR)[..., ::-1]
               for f in rgb]
    if args.layout == 'tiny':
        save_random_checkpoints(tmp / 'models', tasks, input_size=input_size)
    stride, outputs = 1, None
    if args.outputs == 'default':
        stride = 2
        outputs = frozenset(s for s in DEFAULT_OUTPUTS if OUTPUT_TASK[s] in tasks)
    pipe = make_pipeline(tasks, args.layout, str(tmp / 'models'), input_size, stride)
    pipe(rgb[:1])  # warm-up
    print(f'{args.frames} frames {size[1]}x{size[0]} '
          f'{"jpeg" if args.compressed else "rgb8"}, tasks {",".join(tasks)}, {args.layout} '
          f'random models at {format_size(input_size)}, CPU, outputs {args.outputs} '
          f'(pointmap stride {stride})')
    print(f'| batch | core frames/s | replay frames/s | ratio | target >= {TARGET:.2f} | '
          'replay frames/s, running | ratio | writer CPU ms/frame | core ÷ (core + writer) |')
    print('|---|---|---|---|---|---|---|---|---|')
    for batch in (int(b) for b in args.batch.split(',')):
        core = rate = running = 0.0
        writer_ms = []
        for r in range(args.repeat):  # alternate so drift hits both sides alike
            core = max(core, core_rate(pipe, rgb, batch, args.compressed))
            out = tmp / f'out_b{batch}_{r}'
            written: list[tuple[float, int, float]] = []  # per batch the writer wrote
            start = time.perf_counter()
            summary = replay(pipe, ReplayOptions(
                str(src), str(out), batch=batch, progress=False,
                messages=MessageOptions(outputs=outputs),
                on_frame=lambda n, w=written: w.append(  # called on the writer thread
                    (time.perf_counter(), n, time.thread_time()))))
            rate = max(rate, summary.processed / (time.perf_counter() - start))
            assert summary.processed == args.frames
            running = max(running, steady_rate(written))
            writer_ms.append(writer_cpu_ms(written))
        ratio = rate / core
        writer = sorted(writer_ms)[len(writer_ms) // 2]
        bound = 1e3 / core / (1e3 / core + writer)
        print(f'| {batch} | {core:.2f} | {rate:.2f} | {ratio:.2f} | '
              f'{"ok" if ratio >= TARGET else "MISSED"} | {running:.2f} | '
              f'{running / core:.2f} | {writer:.1f} | {bound:.2f} |', flush=True)
    print('\n"running": from the first batch written to the last, without opening the bags '
          '(which a long replay pays once) and closing them. "writer CPU": the CPU time of '
          'the writer thread per frame (build, render, encode, serialize, write), median of the '
          'runs. "core ÷ (core + writer)": the ratio if each writer millisecond delays the '
          "inference by one, as it does where the inference's threads fill every core.")


def steady_rate(written: list[tuple[float, int, float]]) -> float:
    """Frames/s between the first and the last batch the writer wrote (the first one excluded)."""
    if len(written) < 2:
        return 0.0
    return sum(n for _, n, _ in written[1:]) / (written[-1][0] - written[0][0])


def writer_cpu_ms(written: list[tuple[float, int, float]]) -> float:
    """Writer-thread CPU ms per frame between its first and last batch (the first excluded)."""
    if len(written) < 2:
        return 0.0
    return (written[-1][2] - written[0][2]) * 1e3 / sum(n for _, n, _ in written[1:])


if __name__ == '__main__':
    main()
