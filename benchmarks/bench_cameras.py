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
One GPU (or CPU), many cameras: memory, throughput and latency, pose between seg frames.

Measured side by side in one run (the machine's load changes between runs):

1. memory: peak RSS of the perception processes serving 1, 2 and 4 cameras, one process for all
   of them vs one process per camera (the old layout, ``isolate_cameras:=true``).
2. throughput: per camera processed rate and p50/p95 latency (stamp to output) for 1, 2 and 4
   cameras at 10 Hz each, in one node: batched (every camera's newest frame in one step) vs
   sequential (``max_cameras_per_step:=1``, one camera per step).
3. pose: pose-only cost per frame, person boxes from a seg forward on every frame vs the
   tracker's boxes with seg at 5 Hz (``rates.seg:=5``).

Usage: python benchmarks/bench_cameras.py [--sections memory,throughput,pose]
    [--layout tiny|0.4b] [--tasks pose,seg,normal,pointmap] [--seconds 10] [--warmup 8]
    [--domain N]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_node import _frame, default_domain  # noqa: E402, I100 - beside this script

INPUT = (256, 192)  # (height, width) of the tiny runs


def _models(layout: str, tasks: list[str], root: Path) -> list[str]:
    """Node parameters that load ``layout``: tiny random weights, or saved random 0.4b ones."""
    if layout == 'tiny':
        return ['-p', 'random_weights:=true', '-p', f'input_size:={INPUT[1]}x{INPUT[0]}']
    import torch

    from sapiens_ros.core.models.configs import random_model

    for i, task in enumerate(tasks):
        if not (root / task / 'config.json').is_file():
            random_model(task, layout, tiny=False, seed=i).to(torch.bfloat16).save_pretrained(
                root / task)
    return ['-p', f'model_dir:={root}', '-p', 'dtype:=bf16', '-p', 'input_size:=384x512']


def _rss(pids: list[int]) -> float:
    """Resident memory of these processes and their children, MiB."""
    import psutil

    total = 0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            total += sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)])
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


class Feeder:
    """Publishes a photo on each camera's image topic at ``rate`` Hz from this process."""

    def __init__(self, topics: list[str], rate: float, domain: int) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import Image

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('bench_feeder', context=self.context)
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
        self.pubs = [self.node.create_publisher(Image, t, qos) for t in topics]
        self.rate, self.stop = rate, threading.Event()
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.threads = [threading.Thread(target=self._run, args=(p,), daemon=True)
                        for p in self.pubs]
        self.spin = threading.Thread(target=self.executor.spin, daemon=True)

    def _run(self, pub) -> None:
        from std_msgs.msg import Header

        from sapiens_ros.ros.array_msgs import image_msg

        photo = _frame(160, 160)
        next_t = time.monotonic()
        while not self.stop.is_set():
            header = Header(frame_id=pub.topic_name)
            header.stamp = self.node.get_clock().now().to_msg()
            pub.publish(image_msg(header, photo, 'bgr8'))
            next_t += 1.0 / self.rate
            time.sleep(max(0.0, next_t - time.monotonic()))

    def __enter__(self) -> Feeder:
        self.spin.start()
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        import rclpy

        self.stop.set()
        for t in self.threads:
            t.join()
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def memory(args, root: Path) -> None:
    """Peak RSS of one process for N cameras vs N processes (frames flowing at 2 Hz each)."""
    models = _models(args.layout, args.tasks.split(','), root)
    env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain), OMP_NUM_THREADS='1')
    base = [sys.executable, '-m', 'sapiens_ros.ros.perception_node', '--ros-args',
            '-p', f'tasks:={args.tasks}', '-p', 'cpu_threads:=1', '-p', 'publish_all:=true',
            *models]
    print(f'\nPeak RSS (MiB), {args.layout} models ({args.tasks}), frames at 2 Hz per camera '
          f'for {args.seconds:g} s, CPU')
    print('| cameras | one process | one process per camera | ratio |')
    print('|---|---|---|---|')
    for n in (1, 2, 4):
        names = [f'cam{i}' for i in range(n)]
        peaks = []
        for layout in ('one', 'per-camera'):
            if layout == 'one':
                cmds = [base + ['-p', f'cameras:={",".join(names)}', '-r',
                                '__node:=bench_perception']]
            else:
                cmds = [base + ['-r', f'__ns:=/{c}', '-r', '__node:=bench_perception']
                        for c in names]
            procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True) for cmd in cmds]
            try:
                for proc in procs:  # wait until each one is active
                    for line in proc.stdout:
                        if 'active: listening' in line:
                            break
                peak = 0.0
                with Feeder([f'/{c}/image' for c in names], 2.0, args.domain):
                    end = time.monotonic() + args.seconds
                    while time.monotonic() < end:
                        peak = max(peak, _rss([p.pid for p in procs]))
                        time.sleep(0.2)
                peaks.append(peak)
            finally:
                for proc in procs:
                    proc.terminate()
                for proc in procs:
                    proc.wait(30)
        print(f'| {n} | {peaks[0]:.0f} | {peaks[1]:.0f} | {peaks[1] / peaks[0]:.2f} |')


def _run_node(args, names: list[str], limit: int) -> tuple[list[int], list[float], float]:
    """
    Run a perception_node process serving ``names`` at 10 Hz each.

    This process publishes the frames and collects the outputs; returns the outputs per camera,
    the latencies and the frames per forward.
    """
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from diagnostic_msgs.msg import DiagnosticArray

    from sapiens_ros.ros.topic_types import TOPIC_TYPES

    env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain), OMP_NUM_THREADS='2')
    node = subprocess.Popen(
        [sys.executable, '-m', 'sapiens_ros.ros.perception_node', '--ros-args',
         '-p', f'cameras:={",".join(names)}', '-p', f'tasks:={args.tasks}',
         '-p', 'random_weights:=true', '-p', 'cpu_threads:=2',
         '-p', f'input_size:={INPUT[1]}x{INPUT[0]}', '-p', f'max_cameras_per_step:={limit}',
         '-r', '__node:=bench_perception'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in node.stdout:
        if 'active: listening' in line:
            break
    threading.Thread(target=lambda: [None for _ in node.stdout], daemon=True).start()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=args.domain)
    sink = rclpy.create_node('bench_sink', context=context)
    latencies: dict[str, list[float]] = {c: [] for c in names}
    head = 'seg' if 'seg' in args.tasks.split(',') else 'pose'
    first = 'seg/labels' if head == 'seg' else 'pose/keypoints'
    batch = {}

    def on_output(msg, camera):
        now = sink.get_clock().now().nanoseconds
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        latencies[camera].append((now - stamp) / 1e6)

    def on_diagnostics(msg):
        for status in msg.status:
            for kv in status.values:
                if kv.key == f'batch.{head}_frames_mean':
                    batch['mean'] = float(kv.value)

    qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
    for c in names:
        sink.create_subscription(TOPIC_TYPES[first], f'/{c}/{first}',
                                 lambda m, c=c: on_output(m, c), qos)
    sink.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(sink)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        with Feeder([f'/{c}/image' for c in names], 10.0, args.domain):
            time.sleep(args.warmup)  # CPU kernels warm up per batch shape
            for box in latencies.values():
                box.clear()
            time.sleep(args.seconds)
            counts = [len(latencies[c]) for c in names]
            every = [x for c in names for x in latencies[c]]
    finally:
        node.terminate()
        node.wait(30)
        executor.shutdown()
        sink.destroy_node()
        rclpy.try_shutdown(context=context)
    return counts, every, batch.get('mean', float('nan'))


def throughput(args) -> None:
    """Per-camera rate and latency at 10 Hz per camera: batched vs one camera per step."""
    print(f'\nPer camera at 10 Hz each, tiny models ({args.tasks}, {INPUT[1]}x{INPUT[0]}), one '
          f'node process (2 torch threads), {args.seconds:g} s after {args.warmup:g} s of '
          f'warm-up, CPU; latency = output receive time - input stamp')
    print('| cameras | steps | processed Hz per camera (min-max) | p50 ms | p95 ms '
          '| frames per forward (whole run) |')
    print('|---|---|---|---|---|---|')
    for n in (1, 2, 4):
        names = [f'cam{i}' for i in range(n)]
        for mode, limit in (('batched', 0), ('sequential', 1)):
            counts, every, per_step = _run_node(args, names, limit)
            rate = [c / args.seconds for c in counts]
            p50, p95 = (np.percentile(every, q) if every else float('nan') for q in (50, 95))
            print(f'| {n} | {mode} | {min(rate):.2f}-{max(rate):.2f} | {p50:.0f} | {p95:.0f} '
                  f'| {per_step:.2f} |')


def pose_boxes(args, root: Path) -> None:
    """Pose-only cost per frame: seg boxes every frame vs tracked boxes with seg at 5 Hz."""
    import torch

    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core import PipelineConfig
    from sapiens_ros.core.pipeline.scheduler import Camera, FrameRequest, Scheduler
    from sapiens_ros.ros.sample_camera import bundled_photo

    torch.set_num_threads(2)
    layouts = ['tiny'] + ([args.layout] if args.layout != 'tiny' else [])
    print('\nPose only, one camera at 10 Hz (stamps), the astronaut photo walking right, CPU '
          '2 threads; ms per frame (median of 3 runs of 20 frames)')
    print('| layout | input | seg every frame | tracker boxes, seg at 5 Hz | ratio | '
          'seg forwards |')
    print('|---|---|---|---|---|---|')
    photo = bundled_photo()[:, :, ::-1].copy()
    for layout in layouts:
        if layout == 'tiny':
            size = INPUT
            pipe = load_pipeline('pose,seg', random_weights=True,
                                 config=PipelineConfig(input_size=size))
        else:
            size = (512, 384)
            _models(layout, ['pose', 'seg'], root)
            pipe = load_pipeline('pose,seg', model_dir=str(root), dtype='bf16',
                                 config=PipelineConfig(input_size=size))
        times, segs = {}, {}
        for name, rates in (('every', {}), ('tracked', {'seg': 5.0})):
            runs = []
            for _ in range(3):
                cam, sched = Camera('a', rates), Scheduler(pipe)
                count = 0
                t0 = time.perf_counter()
                for k in range(20):
                    out = sched.run([FrameRequest(cam, np.roll(photo, 4 * k, axis=1), k / 10,
                                                  frozenset({'pose'}))])[0]
                    count += out.result is not None and out.result.seg is not None
                runs.append((time.perf_counter() - t0) / 20 * 1e3)
            times[name], segs[name] = float(np.median(runs)), count
        print(f'| {layout} | {size[1]}x{size[0]} | {times["every"]:.0f} | {times["tracked"]:.0f} '
              f'| {times["every"] / times["tracked"]:.2f} | {segs["every"]} vs {segs["tracked"]} '
              f'of 20 |')


def main() -> None:
    """Run the chosen sections and print their tables."""
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    ap.add_argument('--sections', default='memory,throughput,pose')
    ap.add_argument('--layout', default='tiny', help='tiny, or a real size for random weights '
                                                     '(0.4b: bf16 pose+seg at 384x512)')
    ap.add_argument('--tasks', default='pose,seg,normal,pointmap')
    ap.add_argument('--seconds', type=float, default=10.0)
    ap.add_argument('--warmup', type=float, default=8.0, help='seconds before measuring')
    ap.add_argument('--domain', type=int, default=default_domain(70, 30),
                    help='ROS_DOMAIN_ID of every process (default: $ROS_DOMAIN_ID, else '
                         '70 + pid %% 30)')
    args = ap.parse_args()
    os.environ['ROS_DOMAIN_ID'] = str(args.domain)
    os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
    sections = args.sections.split(',')
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / 'models'
        if 'memory' in sections:
            memory(args, root)
        if 'throughput' in sections:
            throughput(args)
        if 'pose' in sections:
            pose_boxes(args, root)


if __name__ == '__main__':
    main()
