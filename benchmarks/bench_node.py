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
Node overhead and image transport, measured side by side in one run (tiny models, CPU).

1. Core rate: the pipeline alone on the frames the camera sends.
2. Node rate: camera process -> perception_node process -> subscriber process, through the
   shipped Fast DDS profile (config/fastdds_shm.xml); ratio = node rate / core rate.
3. Transport: a 1024x768 bgr8 frame between two processes, best effort and reliable, with and
   without the profile: frames delivered and latency (receive time - stamp).

Usage: python benchmarks/bench_node.py [--tasks pose,seg,normal,pointmap] [--seconds 15]
    [--repeat N] [--no-transport] [--domain N]
    (--domain default: $ROS_DOMAIN_ID, else one picked from the process id)
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROFILE = ROOT / 'config' / 'fastdds_shm.xml'

from sapiens_ros.core.models.input_size import Size  # noqa: E402 - after sys.path

INPUT_SIZE = Size(256, 192)


def _frame(width: int, height: int) -> np.ndarray:
    import cv2

    from sapiens_ros.ros.sample_camera import bundled_photo

    return cv2.resize(bundled_photo(), (width, height), interpolation=cv2.INTER_AREA)


def role_pub(args) -> None:
    """Publish ``count`` bgr8 frames at ``rate`` on ``topic``."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Header

    from sapiens_ros.ros.array_msgs import image_msg
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node('bench_pub')
    rel = ReliabilityPolicy.RELIABLE if args.reliable else ReliabilityPolicy.BEST_EFFORT
    pub = node.create_publisher(Image, args.topic, QoSProfile(depth=1, reliability=rel))
    pixels = _frame(args.width, args.height)
    end = time.monotonic() + 10.0
    while pub.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(args.delay)
    start = time.monotonic()
    try:
        for i in range(args.count):
            header = Header(frame_id='bench')
            header.stamp = node.get_clock().now().to_msg()
            pub.publish(image_msg(header, pixels, 'bgr8'))
            time.sleep(max(0.0, start + (i + 1) / args.rate - time.monotonic()))
        time.sleep(0.5)
    except (KeyboardInterrupt, RuntimeError):  # RCLError: context gone on SIGINT/SIGTERM
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def role_sub(args) -> None:
    """Count messages on ``topic`` between ``warmup`` and ``warmup + seconds``; print JSON."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from sapiens_ros.ros.topic_types import TOPIC_TYPES
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node('bench_sub')
    rel = ReliabilityPolicy.RELIABLE if args.reliable else ReliabilityPolicy.BEST_EFFORT
    stamps, latencies = [], []

    def on_msg(msg):
        now = node.get_clock().now().nanoseconds
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        stamps.append(time.monotonic())
        latencies.append((now - stamp) / 1e6)

    for topic in args.topic.split(','):
        callback = on_msg if topic == args.topic.split(',')[0] else (lambda m: None)
        node.create_subscription(TOPIC_TYPES.get(topic, Image), topic, callback,
                                 QoSProfile(depth=2, reliability=rel))
    first = None
    end = time.monotonic() + args.timeout
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.05)
        if stamps and first is None:
            first = stamps[0]
        if args.seconds and first is not None and \
                time.monotonic() > first + args.warmup + args.seconds:
            break
        if not args.seconds and stamps and time.monotonic() - stamps[-1] > 2.0:
            break
    if first is None:
        print(json.dumps({'count': 0}))
    else:
        lo, hi = first + args.warmup, first + args.warmup + args.seconds
        sel = [i for i, t in enumerate(stamps) if lo <= t < hi] if args.seconds else \
            list(range(len(stamps)))
        lat = np.asarray([latencies[i] for i in sel]) if sel else np.asarray([np.nan])
        print(json.dumps({'count': len(sel), 'total': len(stamps),
                          'rate': len(sel) / args.seconds if args.seconds else None,
                          'p50': float(np.median(lat)), 'p95': float(np.percentile(lat, 95))}))
    node.destroy_node()
    rclpy.try_shutdown()


def _env(domain: int, profile: bool) -> dict:
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED='1',
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]))
    env.pop('FASTRTPS_DEFAULT_PROFILES_FILE', None)
    env.pop('FASTDDS_DEFAULT_PROFILES_FILE', None)
    if profile:
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = str(PROFILE)
    return env


def _me(role: str, *extra: str) -> list[str]:
    return [sys.executable, __file__, '--role', role, *extra]


def core_rate(model_dir: str, tasks: str, frames: int) -> float:
    """Frames per second of the pipeline alone on the camera's frame."""
    import torch

    from sapiens_ros.backends.factory import load_pipeline
    from sapiens_ros.core.pipeline.pipeline import PipelineConfig

    torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '1')))

    from sapiens_ros.ros.node_params import PARAM_BY_NAME

    cfg = PipelineConfig(input_size=INPUT_SIZE, box_source='seg' if 'seg' in tasks else 'full',
                         pointmap_stride=PARAM_BY_NAME['pointmap_stride'].default)  # as the node
    pipe = load_pipeline(tasks, model_dir=model_dir, config=cfg)
    frame = _frame(512, 512)
    for _ in range(3):
        pipe(frame, color_order='bgr')
    start = time.perf_counter()
    for _ in range(frames):
        pipe(frame, color_order='bgr')
    return frames / (time.perf_counter() - start)


def node_rate(model_dir: str, tasks: str, seconds: float, cam_rate: float, domain: int,
              outputs_set: str = 'default') -> dict:
    """
    Measure the processed rate seen by a subscriber process, through the shipped profile.

    ``outputs_set``: 'default' subscribes every output of ``DEFAULT_OUTPUTS``, 'all' every raw
    output, 'one' one output per task.
    """
    env = _env(domain, True)
    outputs = {'seg': 'seg/labels', 'pose': 'pose/keypoints', 'normal': 'normal/image',
               'pointmap': 'pointmap/points'}
    from sapiens_ros.ros.topics import DEFAULT_OUTPUTS, OUTPUT_TASK, TASK_OUTPUTS

    first = [outputs[t] for t in tasks.split(',')]
    if outputs_set == 'default':
        first = [s for s in DEFAULT_OUTPUTS if OUTPUT_TASK[s] in tasks.split(',')]
    rest = [s for t in tasks.split(',') for s in TASK_OUTPUTS[t] if s not in first]
    if outputs_set != 'all':
        rest = []
    node = subprocess.Popen(
        [sys.executable, '-m', 'sapiens_ros.ros.perception_node', '--ros-args',
         '-p', f'model_dir:={model_dir}', '-p', f'tasks:={tasks}',
         '-p', f'input_size:={INPUT_SIZE}'],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sub = subprocess.Popen(_me('sub', '--topic', ','.join(first[:1] + first[1:] + rest),
                               '--reliable', '--seconds', str(seconds), '--warmup', '3',
                               '--timeout', str(seconds + 60)),
                           env=env, stdout=subprocess.PIPE, text=True)
    count = int(cam_rate * (seconds + 40))
    pub = subprocess.Popen(_me('pub', '--topic', 'image', '--rate', str(cam_rate), '--count',
                               str(count), '--width', '512', '--height', '512', '--delay', '5'),
                           env=env)
    try:
        out, _ = sub.communicate(timeout=seconds + 90)
    finally:
        for proc in (pub, node):
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
    return json.loads(out.strip().splitlines()[-1])


def transport(profile: bool, reliable: bool, domain: int, count: int = 100) -> dict:
    """Deliver ``count`` 1024x768 bgr8 frames at 10 Hz between two processes."""
    env = _env(domain, profile)
    flag = ['--reliable'] if reliable else []
    sub = subprocess.Popen(_me('sub', '--topic', 'big', '--seconds', '0', '--warmup', '0',
                               '--timeout', str(count / 10 + 20), *flag),
                           env=env, stdout=subprocess.PIPE, text=True)
    pub = subprocess.Popen(_me('pub', '--topic', 'big', '--rate', '10', '--count', str(count),
                               '--width', '1024', '--height', '768', '--delay', '1', *flag),
                           env=env)
    pub.wait(count / 10 + 40)
    try:
        out, _ = sub.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        sub.kill()
        out, _ = sub.communicate()
    lines = out.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {'count': 0}
    result['total'] = result.get('total', result.get('count', 0))
    return result


def default_domain(base: int, span: int) -> int:
    """Return ``$ROS_DOMAIN_ID`` when set (the caller's graph), else ``base + pid % span``."""
    env = os.environ.get('ROS_DOMAIN_ID', '').strip()
    return int(env) if env.isdigit() else base + os.getpid() % span


def build_parser() -> argparse.ArgumentParser:
    """Return the command line of the benchmark (and of its publisher/subscriber roles)."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument('--role', default='main', choices=('main', 'pub', 'sub'))
    parser.add_argument('--topic', default='image')
    parser.add_argument('--rate', type=float, default=10.0)
    parser.add_argument('--count', type=int, default=100)
    parser.add_argument('--width', type=int, default=1024)
    parser.add_argument('--height', type=int, default=768)
    parser.add_argument('--delay', type=float, default=0.0)
    parser.add_argument('--reliable', action='store_true')
    parser.add_argument('--seconds', type=float, default=15.0)
    parser.add_argument('--warmup', type=float, default=3.0)
    parser.add_argument('--timeout', type=float, default=60.0)
    parser.add_argument('--tasks', default='pose,seg,normal,pointmap')
    parser.add_argument('--threads', type=int, default=1,
                        help='torch/OpenMP threads in the core run and the node process (on a '
                             'shared or small CPU, oversubscribed OpenMP threads are ~10x slower)')
    parser.add_argument('--input-size', default='192x256', help='model input WIDTHxHEIGHT')
    parser.add_argument('--outputs', default='default', choices=('default', 'all'),
                        help='subscribe the default output set (DEFAULT_OUTPUTS) or every raw '
                             'output in the main node run')
    parser.add_argument('--repeat', type=int, default=1,
                        help='interleaved core and node runs; the medians of their ratios')
    parser.add_argument('--no-transport', action='store_true',
                        help='skip the transport table')
    parser.add_argument('--domain', type=int, default=default_domain(60, 40),
                        help='ROS_DOMAIN_ID of every process it starts (default: '
                             '$ROS_DOMAIN_ID, else 60 + pid %% 40)')
    return parser


def main() -> None:
    """Run everything and print the tables."""
    args = build_parser().parse_args()
    global INPUT_SIZE
    from sapiens_ros.core.models.input_size import parse_size

    INPUT_SIZE = parse_size(args.input_size)
    os.environ['OMP_NUM_THREADS'] = str(args.threads)  # inherited by the node process
    if args.role == 'pub':
        return role_pub(args)
    if args.role == 'sub':
        return role_sub(args)

    from sapiens_ros.core.models.configs import random_model

    domain = args.domain
    model_dir = tempfile.mkdtemp(prefix='bench_node_')
    for i, task in enumerate(args.tasks.split(',')):
        random_model(task, seed=i, input_size=INPUT_SIZE).save_pretrained(Path(model_dir) / task)
    # Core before and after each node run (their mean is that run's reference), so a change in
    # machine load shows up as a spread instead of a silent bias; with --repeat the runs are
    # interleaved and the ratios' medians reported (a 2-core machine's rates vary by 20 %).
    rows = []
    for _ in range(args.repeat):
        core_before = core_rate(model_dir, args.tasks, 20)
        cam = max(2.0 * core_before, 10.0)
        node = node_rate(model_dir, args.tasks, args.seconds, cam, domain, args.outputs)
        light = node_rate(model_dir, args.tasks, args.seconds, cam, domain, 'one')
        core_after = core_rate(model_dir, args.tasks, 20)
        rows.append((core_before, core_after, cam, node, light))
    which = 'output of the default set' if args.outputs == 'default' else 'raw output'
    print(f'\nNode overhead (tiny models, {INPUT_SIZE} input, 512x512 bgr8 camera at twice the '
          f'core rate, tasks {args.tasks}, CPU, {os.cpu_count()} cores, {args.threads} torch '
          f'thread(s), load average {os.getloadavg()[0]:.1f})')
    print(f'| run | core fps (before / after) | camera Hz | node fps, every {which} '
          '| ratio | node fps, one output per task | ratio | latency p50 / p95 ms |')
    print('|---|---|---|---|---|---|---|---|')
    ratios, light_ratios = [], []
    for k, (before, after, cam, node, light) in enumerate(rows, 1):
        core = 0.5 * (before + after)
        ratios.append(node.get('rate', 0.0) / core)
        light_ratios.append(light.get('rate', 0.0) / core)
        print(f"| {k} | {before:.2f} / {after:.2f} | {cam:.1f} | {node.get('rate', 0.0):.2f} | "
              f"{ratios[-1]:.2f} | {light.get('rate', 0.0):.2f} | {light_ratios[-1]:.2f} | "
              f"{node.get('p50', 0):.0f} / {node.get('p95', 0):.0f} |")
    print(f'\nMedian ratio node / core: {np.median(ratios):.2f} (every {which}), '
          f'{np.median(light_ratios):.2f} (one output per task), over {len(rows)} run(s)')
    if args.no_transport:
        return
    print('\nTransport of 100 frames 1024x768 bgr8 at 10 Hz between two processes')
    print('| QoS | profile | delivered | latency p50 | latency p95 |\n|---|---|---|---|---|')
    for reliable in (False, True):
        for profile in (False, True):
            r = transport(profile, reliable, domain)
            print(f"| {'reliable' if reliable else 'best effort'} | "
                  f"{'fastdds_shm.xml' if profile else 'default'} | {r.get('total', 0)}/100 | "
                  f"{r.get('p50', float('nan')):.1f} ms | {r.get('p95', float('nan')):.1f} ms |",
                  flush=True)


if __name__ == '__main__':
    main()
