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
The host path with a zero-cost model: every non-model cost per stage, beside a memcpy.

Runners return fixed tensors of the real heads' shapes (0.4B layout at 1024x768 model input: seg,
normal and pointmap at full input resolution, pose heatmaps at a quarter), so the table shows
only what the package adds around the model: input decode, upload + preprocessing,
post-processing per head, to-host, message building per output, serialization and publishing to
another process through the shipped Fast DDS profile. Each figure stands beside the time of one
memcpy of the same bytes, measured in the same run.

    python benchmarks/bench_host.py [--sizes 1024x768,1920x1080] [--repeat 7]
        [--foreground 0.35] [--device cpu] [--no-publish]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
from pathlib import Path
import subprocess
import sys
import time

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_node import default_domain  # noqa: E402, I100 - beside this script
from sapiens_ros.core.models.input_size import Size  # noqa: E402
from sapiens_ros.core.models.runners import OUTPUT_NAMES  # noqa: E402
from sapiens_ros.core.pipeline.host_memory import keep_freed_memory  # noqa: E402
from sapiens_ros.core.pipeline.pipeline import Pipeline, PipelineConfig  # noqa: E402
import torch  # noqa: E402, I100

INPUT_SIZE = Size(1024, 768)  # model input 768x1024 (the node's default)
PROFILE = ROOT / 'config' / 'fastdds_shm.xml'
TASKS = ('pose', 'seg', 'normal', 'pointmap')


class FixedRunner:
    """A zero-cost "model": returns fixed tensors of the head's real output shapes."""

    name = 'fixed'

    def __init__(self, task: str, outputs: dict[str, torch.Tensor]) -> None:
        assert set(outputs) <= set(OUTPUT_NAMES[task])
        self.task, self.model_id, self.outputs = task, f'fixed-{task}', outputs

    def check_input_size(self, input_size: tuple[int, int]) -> tuple[int, int]:
        """Accept any size (the tensors were made for the benchmark's input size)."""
        return input_size

    def __call__(self, pixel_values: torch.Tensor) -> dict[str, torch.Tensor]:
        """Return the fixed outputs, expanded (no copy) to the batch size."""
        n = pixel_values.shape[0]
        return {k: v[:1].expand(n, *v.shape[1:]) for k, v in self.outputs.items()}


def fixed_outputs(frame_hw: tuple[int, int], foreground: float,
                  device: torch.device) -> dict[str, dict[str, torch.Tensor]]:
    """Return plausible fixed head outputs: one person (an ellipse) covering ``foreground``."""
    from sapiens_ros.core.processing.letterbox import Letterbox

    in_h, in_w = INPUT_SIZE
    lb = Letterbox.fit(frame_hw, INPUT_SIZE)
    (h, w), (top, left) = lb.resized_size, lb.pad
    ys, xs = torch.meshgrid(torch.arange(in_h, dtype=torch.float32),
                            torch.arange(in_w, dtype=torch.float32), indexing='ij')
    # Ellipse area pi*a*b = foreground * h * w, with a/b = h/w * 1.5 (a tall person).
    b = (foreground * h * w / (np.pi * 1.5 * h / w)) ** 0.5
    a = 1.5 * h / w * b
    cy, cx = top + h / 2, left + w / 2
    inside = ((ys - cy) / a) ** 2 + ((xs - cx) / b) ** 2 <= 1.0
    band = ((ys - (cy - a)) / (2 * a) * 28).long().clamp(0, 27) + 1  # 28 body-part bands
    labels = torch.where(inside, band, torch.zeros_like(band))
    # Contiguous NCHW, as the real head returns it (a channels-last view of one_hot made the
    # seg post-processing row ~5x slower than the package is).
    logits = (labels[None] == torch.arange(29)[:, None, None]).float()[None]
    gen = torch.Generator().manual_seed(0)
    normals = torch.randn(1, 3, in_h, in_w, generator=gen)
    z = 2.0 + 0.1 * torch.rand(in_h, in_w, generator=gen)
    pointmap = torch.stack([(xs - in_w / 2) / 768 * z, (ys - in_h / 2) / 768 * z, z])[None]
    hm_h, hm_w = in_h // 4, in_w // 4
    peaks = torch.rand(308, 2, generator=gen) * torch.tensor([hm_w - 1.0, hm_h - 1.0])
    hy = torch.arange(hm_h, dtype=torch.float32)[None, :, None]
    hx = torch.arange(hm_w, dtype=torch.float32)[None, None, :]
    heat = torch.exp(-((hx - peaks[:, 0, None, None]) ** 2 +
                       (hy - peaks[:, 1, None, None]) ** 2) / 8.0)[None]
    out = {'seg': {'logits': logits}, 'normal': {'normals': normals},
           'pointmap': {'pointmaps': pointmap, 'scales': torch.ones(1, 1)},
           'pose': {'heatmaps': heat}}
    return {t: {k: v.to(device) for k, v in d.items()} for t, d in out.items()}


def median_ms(fn, repeat: int) -> float:
    """Median wall time of ``fn()`` in ms (one warm-up call first)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def package_serializer():
    """Return the package's serializer (``ros.wire.serialize``), or rclpy's before it existed."""
    try:
        from sapiens_ros.ros.wire import serialize
    except ImportError:
        from rclpy.serialization import serialize_message as serialize
    return serialize


def minor_faults() -> int:
    """Minor page faults of this process so far (a fresh page touched for the first time)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


_MEMCPY: dict[int, float] = {}
_ARENA = 96 << 20  # 3x this machine's L3: every copy reads and writes memory, not cache


def memcpy_ms(nbytes: int, repeat: int = 7) -> float:
    """
    Median time of one memcpy of ``nbytes`` between preallocated host buffers.

    The copies rotate through 96 MB arenas, so each one moves the bytes through memory as a
    message's data must (a cache-hot copy of a 2 MB buffer would be ~4x faster), and no page
    is faulted in (the arenas are touched first): the reference is a copy into warm memory,
    the fastest a copy of these bytes gets, not one into a fresh allocation.
    """
    if nbytes not in _MEMCPY:
        copy, inner = copier(nbytes)
        _MEMCPY[nbytes] = median_ms(copy, repeat) / inner
    return _MEMCPY[nbytes]


def copier(nbytes: int):
    """
    ``(copy, inner)``: ``copy()`` makes ``inner`` memcpys of ``nbytes`` (see :func:`memcpy_ms`).

    Tiny copies are repeated ``inner`` times so that one call is long enough to time.
    """
    n = max(nbytes, 1)
    slots = max(2, _ARENA // n)
    src = np.ones(slots * n, np.uint8)
    dst = np.ones_like(src)
    inner = max(1, min(slots, int(2e6 // n)))
    state = {'i': 0}

    def copy():
        for _ in range(inner):
            i = state['i'] = (state['i'] + 1) % slots
            np.copyto(dst[i * n:(i + 1) * n], src[i * n:(i + 1) * n])

    return copy, inner


def data_bytes(msg) -> int:
    """Bulk payload of a message (its serialized size for marker arrays)."""
    from rclpy.serialization import serialize_message

    data = getattr(msg, 'data', None)
    return len(data) if data is not None and not isinstance(data, str) else \
        len(serialize_message(msg))


def host_bytes(result) -> int:
    """Bytes of the numpy arrays a ``FrameResult`` holds (what crossed to the host), once each."""
    arrays = {}
    for value in vars(result).values():
        items = vars(value).values() if hasattr(value, '__dict__') else \
            (value.values() if isinstance(value, dict) else [value])
        for v in items:
            if isinstance(v, np.ndarray):  # a view (the cloud's points) counts once
                start = v.__array_interface__['data'][0]
                arrays[start] = max(arrays.get(start, 0), v.nbytes)
    return sum(arrays.values())


def _render_kwargs(plan, outputs, options) -> dict:
    """Ask the pipeline to render the wanted outputs on the device, where it can (after #12)."""
    request = getattr(plan, 'render_request', None)
    if request is None or 'render' not in inspect.signature(Pipeline.__call__).parameters:
        return {}
    return {'render': request(outputs, options)}


def _fmt(ms: float, nbytes: int) -> str:
    copy = memcpy_ms(nbytes)
    return f'{ms:.2f} | {copy:.2f} | {ms / copy:.1f}x' if copy > 0 else f'{ms:.2f} | - | -'


def run_size(frame_hw: tuple[int, int], args, device: torch.device) -> dict:
    """Print the stage table for one frame size; return the built messages (for publishing)."""
    from sensor_msgs.msg import CompressedImage
    from std_msgs.msg import Header

    from sapiens_ros.core.media.image_codec import decode_message
    from sapiens_ros.core.processing.frames import FrameBatch
    from sapiens_ros.core.processing.pointmap_camera import PointmapCamera
    from sapiens_ros.ros import messages as M
    from sapiens_ros.ros import render_plan
    from sapiens_ros.ros.array_msgs import byte_array, image_msg
    from sapiens_ros.ros.node_params import PARAM_BY_NAME
    from sapiens_ros.ros.render_plan import MessageOptions, render_request
    from sapiens_ros.ros.topics import DEFAULT_OUTPUTS

    height, width = frame_hw
    photo = cv2.resize(cv2.cvtColor(_astronaut(), cv2.COLOR_RGB2BGR), (width, height),
                       interpolation=cv2.INTER_AREA)
    header = Header(frame_id='camera')
    raw = image_msg(header, photo, 'bgr8')
    jpeg = CompressedImage(header=header, format='jpeg')
    jpeg.data = byte_array(cv2.imencode('.jpg', photo)[1])
    frame_bytes = photo.nbytes
    outs = fixed_outputs(frame_hw, args.foreground, device)
    runners = {t: FixedRunner(t, outs[t]) for t in TASKS}
    options = MessageOptions()
    pipe = Pipeline(runners, PipelineConfig(input_size=INPUT_SIZE), device)
    kwargs = _render_kwargs(render_plan, None, options)
    rep = args.repeat

    print(f'\n### Frame {width}x{height} (model input {INPUT_SIZE}, '
          f'zero-cost model, {device}, foreground {args.foreground:.0%})\n')
    print('| stage | ms | memcpy ms (same bytes) | ratio | bytes |\n|---|---|---|---|---|')
    row = '| {} | {} | {:,} |'
    decode_ms = median_ms(lambda: decode_message(raw), rep)
    print(row.format('decode bgr8 Image', _fmt(decode_ms, frame_bytes), frame_bytes))
    print(row.format('decode jpeg CompressedImage', _fmt(
        median_ms(lambda: decode_message(jpeg), rep), frame_bytes), frame_bytes))
    print(row.format('upload + preprocess', _fmt(median_ms(
        lambda: FrameBatch([photo], INPUT_SIZE, device, 'bgr').pixel_values.sum().item(), rep),
        frame_bytes), frame_bytes))

    timings, results = [], []
    for _ in range(rep + 1):
        results.append(pipe(photo, color_order='bgr', **kwargs)[0])
        timings.append(results[-1].timings)
    result = results[-1]
    stage = {k: float(np.median([t.get(k, 0.0) for t in timings[1:]])) for k in timings[-1]}
    image = photo[..., ::-1].copy()
    draw_ms = predraw_pose_overlay(result, options, image, rep)
    head_bytes = {'seg': result.seg.labels.nbytes, 'normal': result.normal.normals.nbytes,
                  'pointmap': host_bytes(result.pointmap),
                  'pose': result.pose.keypoints.nbytes + result.pose.scores.nbytes}
    for task, names in (('seg', ('seg.decode',)), ('normal', ('normal.decode',)),
                        ('pointmap', ('pointmap.decode',)), ('pose', ('pose.crop',
                                                                      'pose.decode'))):
        ms = sum(stage.get(n, 0.0) for n in names)
        print(row.format(f'post-process {task}', _fmt(ms, head_bytes[task]), head_bytes[task]))
    if 'render' in stage:  # after issue 12: overlays, cloud, depth on the device
        rendered = sum(v.nbytes for v in result.rendered.values())
        print(row.format('render (every raw output)', _fmt(stage['render'], rendered),
                         rendered))
    drawn = result.rendered['pose_overlay'].nbytes
    print(row.format('draw pose overlay (publish thread, after tracking)',
                     _fmt(draw_ms, drawn), drawn))
    to_host = host_bytes(result)
    print(row.format('to-host (all heads)', _fmt(stage.get('to_host', 0.0), to_host), to_host))
    print(row.format('pipeline total, no model', _fmt(stage['total'], frame_bytes), frame_bytes))

    print('\nEvery raw output (pointmap_stride 1, as before issue 12; the pose overlay drawn '
          'above, as the pipeline draws the other overlays in its render stage):')
    msgs = output_table(header, result, options, image, rep)
    serialize = package_serializer()
    camera = PointmapCamera()  # the node's per-camera fit of the pointmap intrinsics

    def after_pipeline():
        result.non_finite()
        for msg in M.build_messages(header, result, options, image, camera=camera).values():
            serialize(msg)

    messages_ms = median_ms(after_pipeline, rep)
    dense = ('normal.decode', 'pointmap.decode', 'render', 'to_host')
    outputs_ms = sum(stage.get(k, 0.0) for k in dense)
    print(f'\nHost cost of the dense outputs per frame (normal + pointmap post-processing, '
          f'render, to-host, NaN check, build, serialize; seg and pose decoding excluded, '
          f'unchanged): **{outputs_ms + messages_ms:.1f} ms** ({outputs_ms:.1f} in the pipeline '
          f'+ {messages_ms:.1f} after it).')
    # The default output set with the node's defaults.
    default = DEFAULT_OUTPUTS
    stride = PARAM_BY_NAME['pointmap_stride'].default
    opts = MessageOptions(outputs=set(default))
    config = PipelineConfig(input_size=INPUT_SIZE, pointmap_stride=stride)
    small = Pipeline(runners, config, device)(
        photo, color_order='bgr', render=render_request(default, opts))[0]
    print(f'\nDefault output set (node defaults: pointmap_stride {stride}, foreground only, '
          f'overlays as {opts.compressed_format} q{opts.jpeg_quality}):')
    output_table(header, small, opts, None, rep)
    bytes_table(header, photo, runners, device)
    return msgs


def predraw_pose_overlay(result, options, image: np.ndarray, rep: int) -> float:
    """
    Draw ``pose/overlay`` into ``result.rendered`` as the publish thread does; return its ms.

    The node draws it when it builds the messages (it shows the track ids, known after
    tracking); drawn here first, the message tables time building and serializing alone, as for
    the overlays the pipeline renders.
    """
    from sapiens_ros.core.processing import render as R
    from sapiens_ros.ros import messages as M
    from sapiens_ros.ros.render_plan import render_request

    request = render_request(['pose/overlay'], options)

    def draw():
        return R.render_result(result, image, request, M.pose_drawing(result, options))

    ms = median_ms(draw, rep)
    result.rendered.update(draw())
    return ms


_PUBLISHER: dict = {}


def publishers(msgs: dict) -> dict:
    """Return a publisher per output in this process (shipped profile, no subscriber)."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    if 'node' not in _PUBLISHER:  # its own context: the publish table inits the default one
        context = _PUBLISHER['context'] = rclpy.Context()
        rclpy.init(context=context)
        _PUBLISHER['node'] = rclpy.create_node('bench_host_inproc', context=context)
    node = _PUBLISHER['node']
    qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
    for suffix, msg in msgs.items():
        key = (suffix, type(msg))
        if key not in _PUBLISHER:
            _PUBLISHER[key] = node.create_publisher(type(msg), f'inproc/{suffix}', qos)
    return {s: _PUBLISHER[(s, type(m))] for s, m in msgs.items()}


def one_call(label: str, fn, nbytes: int, rep: int) -> None:
    """
    Print the median ms of ``fn`` (a whole frame's messages), its ratio to a memcpy, faults.

    Each call of ``fn`` follows its own memcpy of ``nbytes``, and the ratio is the median of
    the calls' ratios: on a shared CPU a reference timed apart from the figure can be taken at
    another load (the two differed 2x in runs here).
    """
    copy, inner = copier(nbytes)
    fn()
    copy()
    times, ratios, faults = [], [], []
    for _ in range(max(rep, 3)):
        start = time.perf_counter()
        copy()
        middle = time.perf_counter()
        before = minor_faults()
        fn()
        faults.append(minor_faults() - before)
        end = time.perf_counter()
        times.append((end - middle) * 1e3)
        ratios.append((end - middle) * inner / (middle - start))
    print(f'| {label} | {np.median(times):.2f} | **{np.median(ratios):.1f}x** | '
          f'{int(np.median(faults))} |')


def output_table(header, result, options, image, rep: int) -> dict:
    """
    Print build and serialize time per output beside a memcpy; return the messages.

    Messages are built as the node builds them: with the camera's ``PointmapCamera``, whose
    fit of the pointmap intrinsics (no input camera_info here) runs once per grid size, on the
    first frame; its one-off cost is printed below the table.
    """
    from rclpy.serialization import serialize_message

    from sapiens_ros.core.processing.pointmap_camera import fitted_intrinsics, PointmapCamera
    from sapiens_ros.ros import messages as M

    serialize = package_serializer()
    camera = PointmapCamera()
    msgs = M.build_messages(header, result, options, image, camera=camera)
    total = {'build': 0.0, 'ser': 0.0, 'bytes': 0}
    print('\n| output | build ms | serialize ms | build + serialize ms | memcpy ms | ratio | '
          'bytes |\n|---|---|---|---|---|---|---|')
    for suffix, msg in msgs.items():
        one = dataclasses.replace(options, outputs={suffix})
        build = median_ms(lambda one=one: M.build_messages(header, result, one, image,
                                                           camera=camera), rep)
        ser = median_ms(lambda msg=msg: serialize(msg), rep)
        nbytes = data_bytes(msg)
        total['build'] += build
        total['ser'] += ser
        total['bytes'] += nbytes
        copy = memcpy_ms(nbytes)
        print(f'| `{suffix}` | {build:.2f} | {ser:.2f} | {build + ser:.2f} | {copy:.3f} | '
              f'{(build + ser) / copy:.1f}x | {nbytes:,} |')
    copy = memcpy_ms(total['bytes'])
    both = total['build'] + total['ser']
    print(f"| **all of them** | {total['build']:.2f} | {total['ser']:.2f} | {both:.2f} | "
          f"{copy:.2f} | **{both / copy:.1f}x** | {total['bytes']:,} |")
    print(f'\n(Serialize: `{serialize.__module__}.{serialize.__name__}`. Each output alone, '
          f'repeated: its bytes stay in the cache between calls.) The whole frame in one call, '
          f'as the node and replay do it, against one memcpy of the {total["bytes"] / 1e6:.2f} '
          f'MB ({copy:.2f} ms; each ratio against a memcpy timed just before each call):'
          f'\n\n| one call per frame | ms | ÷ memcpy | page faults |\n|---|---|---|---|')

    def build():
        return M.build_messages(header, result, options, image, camera=camera)

    pubs = publishers(msgs)
    nbytes = total['bytes']
    one_call('build', build, nbytes, rep)
    one_call(f'build + `{serialize.__module__}.{serialize.__name__}` (replay)',
             lambda: [serialize(m) for m in build().values()], nbytes, rep)
    one_call('build + rclpy `serialize_message`',
             lambda: [serialize_message(m) for m in build().values()], nbytes, rep)
    one_call('build + `publish()` (the node; in-process, no subscriber)',
             lambda: [pubs[s].publish(m) for s, m in build().items()], nbytes, rep)
    if result.pointmap is not None:
        fit = median_ms(lambda: fitted_intrinsics(result.pointmap.xyz), rep)
        print(f'\nFit of the pointmap intrinsics, once per grid size and camera (not per frame): '
              f'{fit:.2f} ms.')
    return msgs


def bytes_table(header, photo, runners, device) -> None:
    """Bytes per frame of every output (raw and compressed) at pointmap strides 1 and 2."""
    from sapiens_ros.ros import messages as M
    from sapiens_ros.ros.render_plan import MessageOptions, render_request
    from sapiens_ros.ros.topics import DEFAULT_OUTPUTS, NORMAL_ENCODINGS, OUTPUT_TASK

    sizes = {}
    for stride in (1, 2):
        for encoding in NORMAL_ENCODINGS:
            opts = MessageOptions(outputs=set(OUTPUT_TASK), normal_encoding=encoding)
            pipe = Pipeline(runners, PipelineConfig(input_size=INPUT_SIZE,
                                                    pointmap_stride=stride), device)
            result = pipe(photo, color_order='bgr', render=render_request(None, opts))[0]
            for suffix, msg in M.build_messages(header, result, opts, photo[..., ::-1]).items():
                key = f'{suffix} {encoding}' if suffix == 'normal/image' else suffix
                sizes.setdefault(key, {})[stride] = data_bytes(msg)
    print('\n| output | bytes, pointmap_stride 1 | bytes, stride 2 | in the default set |'
          '\n|---|---|---|---|')
    for key, by_stride in sizes.items():
        print(f'| `{key}` | {by_stride[1]:,} | {by_stride[2]:,} | '
              f'{"yes" if key in DEFAULT_OUTPUTS else ""} |')


def _astronaut() -> np.ndarray:
    from skimage import data

    return data.astronaut()


def publish_table(msgs: dict, args) -> None:
    """Publish each output to a subscriber process (shipped profile): call time and latency."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from sapiens_ros.ros.topic_types import TOPIC_TYPES

    env = dict(os.environ, FASTRTPS_DEFAULT_PROFILES_FILE=str(PROFILE),
               ROS_DOMAIN_ID=str(args.domain), PYTHONPATH=str(ROOT))
    os.environ.update(env)
    topics = {s: TOPIC_TYPES.get(s, type(m)) for s, m in msgs.items()}
    sub = subprocess.Popen([sys.executable, __file__, '--role', 'sub', '--topics',
                            ','.join(topics), '--count', str(args.messages)],
                           env=env, stdout=subprocess.PIPE, text=True)
    rclpy.init()
    node = rclpy.create_node('bench_host_pub')
    qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
    pubs = {s: node.create_publisher(type(msgs[s]), s, qos) for s in topics}
    deadline = time.monotonic() + 20
    while any(p.get_subscription_count() == 0 for p in pubs.values()) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    call_ms: dict[str, list] = {s: [] for s in topics}
    for suffix, pub in pubs.items():
        msg = msgs[suffix]
        for _ in range(args.messages):
            stamp = node.get_clock().now().to_msg()
            for m in getattr(msg, 'markers', [msg]):
                m.header.stamp = stamp
            start = time.perf_counter()
            pub.publish(msg)
            call_ms[suffix].append((time.perf_counter() - start) * 1e3)
            time.sleep(0.05)
    out, _ = sub.communicate(timeout=60)
    node.destroy_node()
    rclpy.try_shutdown()
    latency = json.loads(out.strip().splitlines()[-1])
    print('\n| output | publish() ms | delivered | latency p50 ms (stamp to subscriber '
          'callback) | memcpy ms |\n|---|---|---|---|---|')
    for suffix in topics:
        lat = latency.get(suffix, [])
        p50 = f'{np.median(lat):.2f}' if lat else '-'
        print(f'| `{suffix}` | {np.median(call_ms[suffix]):.2f} | {len(lat)}/{args.messages} | '
              f'{p50} | {memcpy_ms(data_bytes(msgs[suffix])):.3f} |')


def role_sub(args) -> None:
    """Run the subscriber process: print every message's latency per topic as JSON."""
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from sapiens_ros.ros.topic_types import TOPIC_TYPES

    rclpy.init()
    node = rclpy.create_node('bench_host_sub')
    qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
    latency: dict[str, list] = {}
    topics = args.topics.split(',')

    def callback(topic):
        def on_msg(msg):
            now = node.get_clock().now().nanoseconds
            head = msg.markers[0].header if hasattr(msg, 'markers') else msg.header
            stamp = head.stamp.sec * 10**9 + head.stamp.nanosec
            latency.setdefault(topic, []).append((now - stamp) / 1e6)
        return on_msg

    for topic in topics:
        node.create_subscription(TOPIC_TYPES[topic], topic, callback(topic), qos)
    end = time.monotonic() + 50
    while time.monotonic() < end and sum(map(len, latency.values())) < len(topics) * args.count:
        rclpy.spin_once(node, timeout_sec=0.05)
    print(json.dumps(latency))
    node.destroy_node()
    rclpy.try_shutdown()


def main() -> None:
    """Print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument('--role', default='main', choices=('main', 'sub'))
    ap.add_argument('--sizes', default='1024x768,1920x1080', help='frame sizes WxH')
    ap.add_argument('--repeat', type=int, default=7)
    ap.add_argument('--foreground', type=float, default=0.35,
                    help='fraction of the frame the (fixed) person covers')
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--threads', type=int, default=1,
                    help='torch threads (0: torch default); 1 avoids OpenMP oversubscription '
                         'on a shared CPU')
    ap.add_argument('--no-publish', action='store_true', help='skip the cross-process table')
    ap.add_argument('--messages', type=int, default=20, help='messages per output published')
    ap.add_argument('--topics', default='')
    ap.add_argument('--count', type=int, default=20)
    ap.add_argument('--domain', type=int, default=default_domain(100, 50),
                    help='ROS_DOMAIN_ID of the publishing processes (default: $ROS_DOMAIN_ID, '
                         'else 100 + pid %% 50; now %(default)s)')
    args = ap.parse_args()
    if args.role == 'sub':
        return role_sub(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    os.environ.update(FASTRTPS_DEFAULT_PROFILES_FILE=str(PROFILE),
                      ROS_DOMAIN_ID=str(args.domain))  # the in-process publishers too
    import rclpy

    memory = keep_freed_memory()  # as in the node's process (load_pipeline does it)
    print(f'bench_host: torch {torch.__version__}, {torch.get_num_threads()} threads, '
          f'{os.cpu_count()} CPUs, rclpy {getattr(rclpy, "__version__", "?")}, '
          f'load average {os.getloadavg()[0]:.1f}, host memory: {memory}')
    first = None
    for text in args.sizes.split(','):
        width, height = (int(v) for v in text.split('x'))
        msgs = run_size((height, width), args, device)
        first = first or msgs
    if 'node' in _PUBLISHER:
        _PUBLISHER['node'].destroy_node()
        _PUBLISHER['context'].try_shutdown()
    if not args.no_publish:
        print(f'\n### Publish to another process ({args.sizes.split(",")[0]}, reliable, '
              f'depth 2, {PROFILE.name})')
        publish_table(first, args)


if __name__ == '__main__':
    main()
