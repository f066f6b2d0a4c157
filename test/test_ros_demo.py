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

"""The demo pieces: sample camera sources (photo, video, bag) and ``sapiens-ros demo``."""

import argparse
import time

import cv2
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402, I100
from ros_fixtures import session_domain_id, tiny_model_dir  # noqa: E402
from ros_graph import qos  # noqa: E402
from sapiens_ros import cli_demo  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo, SampleCamera  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402


def _write_bag(path, frames):
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_HUMBLE)
    types = store.types
    with Writer(path, version=8) as writer:
        conn = writer.add_connection('/cam/image_raw', 'sensor_msgs/msg/Image', typestore=store)
        for i, frame in enumerate(frames):
            header = types['std_msgs/msg/Header'](
                stamp=types['builtin_interfaces/msg/Time'](sec=i, nanosec=0), frame_id='cam')
            msg = types['sensor_msgs/msg/Image'](
                header=header, height=frame.shape[0], width=frame.shape[1], encoding='rgb8',
                is_bigendian=0, step=frame.shape[1] * 3,
                data=np.ascontiguousarray(frame[..., ::-1]).reshape(-1))
            writer.write(conn, i * 10**8, store.serialize_cdr(msg, 'sensor_msgs/msg/Image'))


@pytest.mark.parametrize('kind', ['photo', 'video', 'bag'])
def test_sample_camera_sources(graph, tmp_path, kind):
    photo = cv2.resize(bundled_photo(), (96, 64))
    source = ''
    if kind == 'video':
        source = str(tmp_path / 'clip.avi')
        writer = cv2.VideoWriter(source, cv2.VideoWriter_fourcc(*'MJPG'), 10, (96, 64))
        for _ in range(3):
            writer.write(photo)
        writer.release()
    elif kind == 'bag':
        source = str(tmp_path / 'bag')
        _write_bag(source, [photo] * 3)
    images = graph.collect(Image, 'image', qos(reliable=False))
    infos = graph.collect(CameraInfo, 'camera_info', qos(reliable=False))
    graph.add(SampleCamera(context=graph.context, parameter_overrides=[
        Parameter('source', value=source), Parameter('rate', value=20.0)]))
    assert graph.wait(lambda: len(images) >= 4 and infos, 10.0)
    msg = images[-1]
    if kind == 'photo':
        photo = bundled_photo()
    height, width = photo.shape[:2]
    assert (msg.height, msg.width, msg.encoding) == (height, width, 'bgr8')
    assert msg.header.frame_id == 'camera_optical_frame'
    assert any(i.header.stamp == msg.header.stamp for i in infos)
    assert infos[0].k[0] > 0 and (infos[0].height, infos[0].width) == (height, width)
    pixels = np.frombuffer(msg.data, np.uint8).reshape(height, width, 3).astype(int)
    assert np.abs(pixels - photo).mean() < 8  # MJPG is lossy


def _args(*argv):
    parser = argparse.ArgumentParser()
    cli_demo.add_parser(parser.add_subparsers())
    return parser.parse_args(['demo', *argv])


def test_demo_runs_with_random_weights(tmp_path):
    session_domain_id()
    out = tmp_path / 'overlays'
    start = time.monotonic()
    rc = cli_demo.run(_args('--random-weights', '--duration', '6', '--rate', '4',
                            '--tasks', 'pose,seg', '--output-dir', str(out)))
    assert rc == 0 and time.monotonic() - start < 60
    assert (out / 'seg_overlay.png').is_file()


def test_demo_without_weights_names_random_weights(tmp_path, capsys):
    session_domain_id()
    rc = cli_demo.run(_args('--model-dir', str(tmp_path / 'missing'), '--duration', '1',
                            '--output-dir', str(tmp_path / 'out')))
    assert rc == 1
    assert '--random-weights' in capsys.readouterr().out


def test_demo_with_local_checkpoints(tmp_path):
    session_domain_id()
    rc = cli_demo.run(_args('--model-dir', str(tiny_model_dir()), '--input-size', '192x256',
                            '--tasks', 'seg', '--duration', '1',
                            '--output-dir', str(tmp_path / 'out')))
    assert rc == 0
