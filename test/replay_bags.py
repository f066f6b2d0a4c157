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

"""Test helpers: write real rosbag2 camera bags with rosbags (any storage, any distro)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

STEP_NS = 100_000_000  # 10 Hz
BASE_NS = 1_700_000_000 * 1_000_000_000


def typestore(distro: str):
    """Return the rosbags typestore of ``distro`` ('humble', 'jazzy', 'kilted')."""
    from rosbags.typesys import get_typestore, Stores

    return get_typestore(getattr(Stores, f'ROS2_{distro.upper()}'))


def _header(ts, time_ns: int, frame_id: str):
    Header = ts.types['std_msgs/msg/Header']
    Time = ts.types['builtin_interfaces/msg/Time']
    return Header(stamp=Time(sec=time_ns // 10**9, nanosec=time_ns % 10**9), frame_id=frame_id)


def image_msg(ts, rgb: np.ndarray, time_ns: int, frame_id: str = 'camera_optical',
              encoding: str = 'rgb8'):
    """``sensor_msgs/Image`` (rgb8 or bgr8) of an RGB frame."""
    pixels = rgb if encoding == 'rgb8' else np.ascontiguousarray(rgb[..., ::-1])
    Image = ts.types['sensor_msgs/msg/Image']
    return Image(header=_header(ts, time_ns, frame_id), height=pixels.shape[0],
                 width=pixels.shape[1], encoding=encoding, is_bigendian=0,
                 step=pixels.shape[1] * 3, data=pixels.reshape(-1).copy())


def jpeg_msg(ts, rgb: np.ndarray | None, time_ns: int, frame_id: str = 'camera_optical',
             data: bytes | None = None):
    """``sensor_msgs/CompressedImage`` holding a JPEG of ``rgb`` (or the raw ``data``)."""
    if data is None:
        data = cv2.imencode('.jpg', np.ascontiguousarray(rgb[..., ::-1]))[1].tobytes()
    Msg = ts.types['sensor_msgs/msg/CompressedImage']
    return Msg(header=_header(ts, time_ns, frame_id), format='jpeg',
               data=np.frombuffer(data, np.uint8).copy())


def write_bag(path: Path, messages: list[tuple[str, str, object, int]], storage: str = 'mcap',
              distro: str = 'jazzy', raw: dict | None = None) -> Path:
    """Write ``(topic, msgtype, msg, time_ns)`` messages; ``raw`` maps an index to bytes."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    ts = typestore(distro)
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    raw = raw or {}
    with Writer(path, version=8 if distro == 'humble' else 9, storage_plugin=plugin) as writer:
        conns = {}
        for i, (topic, msgtype, msg, time_ns) in enumerate(messages):
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=ts)
            data = raw[i] if i in raw else ts.serialize_cdr(msg, msgtype)
            writer.write(conns[topic], time_ns, data)
    return path


def frames(astronaut: np.ndarray, count: int, size: tuple[int, int] = (160, 160)) -> list:
    """``count`` real frames: the astronaut photo shifted a little each time, resized."""
    out = []
    for i in range(count):
        shifted = np.roll(astronaut, 8 * i, axis=1)
        out.append(np.ascontiguousarray(cv2.resize(shifted, size[::-1],
                                                   interpolation=cv2.INTER_AREA)))
    return out


def camera_bag(path: Path, rgb_frames: list, storage: str = 'mcap', distro: str = 'jazzy',
               topic: str = '/camera/image_raw', compressed: bool = False,
               extra: list | None = None) -> Path:
    """Write a bag with one camera topic (Image rgb8, or CompressedImage JPEG) plus ``extra``."""
    ts = typestore(distro)
    msgs = []
    for i, rgb in enumerate(rgb_frames):
        t = BASE_NS + i * STEP_NS
        if compressed:
            msgs.append((topic, 'sensor_msgs/msg/CompressedImage', jpeg_msg(ts, rgb, t), t))
        else:
            msgs.append((topic, 'sensor_msgs/msg/Image', image_msg(ts, rgb, t), t))
    msgs += extra or []
    msgs.sort(key=lambda m: m[3])
    return write_bag(path, msgs, storage, distro)


def cli_env() -> dict:
    """Environment that runs this checkout's ``sapiens_ros`` in a subprocess."""
    import os

    root = Path(__file__).resolve().parents[1]
    return dict(os.environ, PYTHONPATH=f'{root}{os.pathsep}{os.environ.get("PYTHONPATH", "")}')


def start_cli(args: list[str]):
    """Start ``sapiens-ros ARGS`` as a real subprocess (text pipes, line buffered)."""
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, '-m', 'sapiens_ros.cli', *args], env=cli_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1)


def wait_for_progress(proc, lines: int = 1, timeout: float = 180.0) -> list[str]:
    """
    Read stderr until ``lines`` progress lines with frames done have been printed.

    The plain progress line (``replay: N/T frames, ...``) comes at most once a second, after
    the frames it counts were written; two such lines are at least one checkpoint apart.
    """
    import time

    deadline = time.monotonic() + timeout
    seen, out = 0, []
    for line in proc.stderr:
        out.append(line)
        if line.startswith('replay: ') and not line.startswith('replay: 0/'):
            seen += 1
            if seen >= lines:
                return out
        if time.monotonic() > deadline:
            break
    raise AssertionError('no progress:\n' + ''.join(out))
