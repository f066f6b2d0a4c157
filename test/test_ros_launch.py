"""The node as a separate process, as the launch file starts it; the launch file itself."""

import importlib.util
import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import pytest

rclpy = pytest.importorskip('rclpy')

from ros_fixtures import session_domain_id  # noqa: E402, I100
from ros_graph import qos  # noqa: E402
from sapiens_ros.ros.messages import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_node_process_with_params_file_namespace_and_dds_profile(graph):
    env = dict(os.environ, ROS_DOMAIN_ID=str(session_domain_id()),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]),
               FASTRTPS_DEFAULT_PROFILES_FILE=str(ROOT / 'config' / 'fastdds_shm.xml'),
               PYTHONUNBUFFERED='1')
    cmd = [sys.executable, '-m', 'sapiens_ros.ros.perception_node', '--ros-args',
           '-r', '__ns:=/cam1', '--params-file', str(ROOT / 'config' / 'perception.yaml'),
           '-p', 'random_weights:=true', '-p', 'input_size:=[256,192]', '-p', 'tasks:=seg',
           '-p', 'cpu_threads:=1']
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        labels = graph.collect(Image, '/cam1/seg/labels')
        pub = graph.publisher(Image, '/cam1/image', qos(reliable=True, depth=1))
        photo = bundled_photo()[::4, ::4].copy()
        deadline = 60.0

        def frame():
            header = Header(frame_id='cam1_optical')
            header.stamp = graph.tester.get_clock().now().to_msg()
            return image_msg(header, photo, 'bgr8')

        end = time.monotonic() + deadline
        while not labels and time.monotonic() < end and proc.poll() is None:
            pub.publish(frame())
            graph.wait(lambda: bool(labels), 0.3)
        assert labels, 'no /cam1/seg/labels from the node process'
        assert labels[0].header.frame_id == 'cam1_optical'
        assert (labels[0].height, labels[0].width) == photo.shape[:2]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert proc.returncode == 0, out
    assert 'Traceback' not in out and 'XMLPARSER' not in out, out
    assert 'active: listening on /cam1/image' in out


def _load_launch(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / 'launch' / f'{name}.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launch_file_one_node_per_camera():
    pytest.importorskip('launch')
    pytest.importorskip('launch_ros')
    from launch import LaunchContext
    from launch.actions import OpaqueFunction

    module = _load_launch('perception.launch')
    description = module.generate_launch_description()
    context = LaunchContext()
    args = {'cameras': 'front,rear', 'params_file': str(ROOT / 'config' / 'perception.yaml'),
            'dds_profile': 'false', 'tasks': 'pose,seg'}
    for action in description.entities:
        if type(action).__name__ == 'DeclareLaunchArgument':
            default = ''.join(d.perform(context) for d in action.default_value or [])
            context.launch_configurations[action.name] = args.get(action.name, default)
    opaque = next(e for e in description.entities if isinstance(e, OpaqueFunction))
    nodes = opaque.execute(context)
    assert len(nodes) == 2
    namespaces = sorted(n.expanded_node_namespace if hasattr(n, 'expanded_node_namespace')
                        else n._Node__node_namespace for n in nodes)
    assert namespaces[0].strip('/') in ('front', 'rear')
    demo = _load_launch('demo.launch').generate_launch_description()
    assert demo.entities
