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
The launch files run for real: ``ros2 launch sapiens_ros ...`` from a colcon install.

``bash scripts/test.sh`` builds that install (colcon, in build/colcon_ws) and runs the suite under
``colcon test``; a sourced ROS workspace with sapiens_ros works too. Where neither the ``ros2``
CLI with ``launch_ros`` nor an install of the package exists, these tests skip and say why.
Nothing is mocked: the nodes load tiny random models (``random_weights:=true``).
"""

import os
from pathlib import Path
import shutil
import signal
import sys
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')
pytest.importorskip('launch_ros', reason='launch_ros has no wheel: run bash scripts/setup.sh '
                    'beside shared/ros-tools, or source a ROS 2 install')
pytest.importorskip('ros2launch', reason='the ros2 launch CLI is missing (see shared/ros-tools)')

from cpu_hog import CpuHog  # noqa: E402, I100
from lifecycle_msgs.srv import GetState  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
from rclpy.parameter import parameter_value_to_python  # noqa: E402
from ros_graph import qos  # noqa: E402
from ros_procs import Proc, ROOT, ros_env  # noqa: E402
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.launch_support import PROFILE_VAR  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo, camera_info_for  # noqa: E402
from sapiens_ros.ros.topic_types import TOPIC_TYPES  # noqa: E402
from sapiens_ros.ros.topics import KEYPOINT_DTYPE  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

PACKAGE = 'sapiens_ros'


def _install_prefix() -> Path | None:
    """Find the install prefix: the ament index, else the workspace of scripts/test.sh."""
    from ament_index_python.packages import get_package_prefix, PackageNotFoundError

    try:
        return Path(get_package_prefix(PACKAGE))
    except (PackageNotFoundError, OSError):  # OSError: AMENT_PREFIX_PATH unset
        pass
    prefix = ROOT / 'build' / 'colcon_ws' / 'install' / PACKAGE
    marker = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages' / PACKAGE
    return prefix if marker.is_file() else None


def _ros2() -> str | None:
    here = Path(sys.executable).parent / 'ros2'
    return str(here) if here.is_file() else shutil.which('ros2')


PREFIX = _install_prefix()
ROS2 = _ros2()
pytestmark = [
    pytest.mark.skipif(PREFIX is None, reason='no colcon install of sapiens_ros: run '
                       'bash scripts/test.sh (it builds one) or source your workspace'),
    pytest.mark.skipif(ROS2 is None, reason='no ros2 CLI (shared/ros-tools or a ROS install)'),
]


def _launch(file: str, *args: str) -> Proc:
    """Start ``ros2 launch sapiens_ros <file> args`` in its own process group."""
    env = ros_env(AMENT_PREFIX_PATH=os.pathsep.join(
        p for p in (str(PREFIX), os.environ.get('AMENT_PREFIX_PATH', '')) if p),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get('PATH', '')]))
    env.pop(PROFILE_VAR, None)  # the launch file must set it
    env.pop('FASTDDS_DEFAULT_PROFILES_FILE', None)
    return Proc([ROS2, 'launch', PACKAGE, file, *args], env=env)


def _call(graph, srv_type, name: str, request, timeout: float = 20.0):
    client = graph.tester.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=timeout), f'no service {name}'
    future = client.call_async(request)
    assert graph.wait(future.done, timeout), f'{name} did not answer'
    return future.result()


def _parameters(graph, node: str, names: list[str]) -> dict:
    """Read parameters back over the node's parameter service."""
    reply = _call(graph, GetParameters, f'{node}/get_parameters', GetParameters.Request(
        names=names))
    return {n: parameter_value_to_python(v) for n, v in zip(names, reply.values, strict=True)}


def _environ(pid: int) -> dict:
    raw = Path(f'/proc/{pid}/environ').read_bytes().split(b'\0')
    return dict(item.decode(errors='replace').split('=', 1) for item in raw if b'=' in item)


def _alive(process) -> bool:
    """Tell whether a psutil process still runs (a zombie does not)."""
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _started(proc: Proc) -> list:
    """Return the processes ``ros2 launch`` started (its descendants)."""
    return proc.family()[1:]


def _assert_clean_stop(proc: Proc, how: str) -> float:
    started = len(_started(proc))
    with CpuHog():  # a busy robot computer: the stop must not depend on the CPU load
        rc, seconds, left = proc.stop(how)
    out = proc.output
    print(f'ros2 launch stop ({how}, CPU hog beside it): rc {rc} in {seconds:.2f} s')
    assert out.count('process has finished cleanly') == started, out
    # ros2 launch itself dies of a second SIGINT that lands after its nodes have all finished
    # and it has put the default handler back (its own exit, not a node's): status -2 then.
    clean = (0, -signal.SIGINT) if how == 'ctrl-c twice' else (0,)
    assert rc in clean, f'rc {rc} after {seconds:.1f} s\n{out}'
    # A hang guard only (a loaded 2-core machine stretches every stop): the check below that
    # launch never escalated to SIGTERM (after its 5 s) proves the nodes stopped on SIGINT.
    assert seconds < 10.0, f'took {seconds:.1f} s\n{out}'
    assert 'Traceback' not in out and 'terminate called' not in out, out
    assert "sending signal 'SIGTERM'" not in out and 'SIGKILL' not in out, out  # no escalation
    assert 'process has died' not in out, out
    assert not left, f'still running: {left}'
    return seconds


def test_three_cameras_one_process_models_once_fair_and_ctrl_c(graph, tmp_path):
    """
    ``cameras:=a,b,c`` is one process loading the models once; every camera keeps its topics.

    The cameras send at 10, 5 and 2 Hz: each step takes the newest frame of every camera that
    has one, so the slow camera is never starved by the fast one (its share of frames served
    is no lower), and every output carries its own camera's input header.
    """
    params_file = tmp_path / 'robot.yaml'
    params_file.write_text((ROOT / 'config' / 'perception.yaml').read_text().replace(
        'max_persons: 8', 'max_persons: 3'))
    given = {'tasks': 'seg', 'model_size': '0.8b', 'backend': 'torch', 'dtype': 'fp32',
             'device': 'cpu', 'compressed': False, 'random_weights': True, 'autostart': True,
             'input_size': '192x256', 'cpu_threads': 1, 'allow_build': False,
             'engine_batch': '1:2:4', 'cache_dir': str(tmp_path / 'cache'),
             'model_dir': str(tmp_path / 'models')}
    args = {k: str(v).lower() if isinstance(v, bool) else v for k, v in given.items()}
    proc = _launch('perception.launch.py', 'cameras:=a,b,c', f'params_file:={params_file}',
                   'dds_profile:=true', 'use_rviz:=false',
                   *(f'{k}:={v}' for k, v in args.items()))
    periods = {'a': 0.1, 'b': 0.2, 'c': 0.5}
    stop = threading.Event()
    try:
        assert proc.wait_for('active: listening on /a/image, /b/image, /c/image', 90.0), \
            proc.output
        labels = {ns: graph.collect(Image, f'/{ns}/seg/labels') for ns in periods}
        pubs = {ns: graph.publisher(Image, f'/{ns}/image', qos(reliable=True, depth=1))
                for ns in periods}
        for pub in pubs.values():
            graph.wait_for_subscribers(pub)
        photo = bundled_photo()[::4, ::4].copy()
        sent = {ns: set() for ns in pubs}

        def camera(ns):
            while not stop.is_set():
                header = Header(frame_id=f'{ns}_optical')
                header.stamp = graph.tester.get_clock().now().to_msg()
                sent[ns].add((header.stamp.sec, header.stamp.nanosec))
                pubs[ns].publish(image_msg(header, photo, 'bgr8'))
                time.sleep(periods[ns])

        feeders = [threading.Thread(target=camera, args=(ns,), daemon=True) for ns in pubs]
        for feeder in feeders:
            feeder.start()
        assert graph.wait(lambda: all(len(box) >= 4 for box in labels.values()), 90.0), \
            proc.output
        stop.set()
        for feeder in feeders:
            feeder.join()
        time.sleep(1.0)  # the last frames drain
        share = {}
        for ns, box in labels.items():
            for msg in box:  # each output copies its own camera's input header
                assert msg.header.frame_id == f'{ns}_optical'
                assert (msg.header.stamp.sec, msg.header.stamp.nanosec) in sent[ns]
                assert (msg.height, msg.width) == photo.shape[:2]
            share[ns] = len(box) / len(sent[ns])
        assert share['c'] >= share['a'] - 0.1, share  # the 2 Hz camera is not starved
        got = _parameters(graph, '/perception_node', [*given, 'max_persons', 'cameras'])
        assert got == {**given, 'max_persons': 3, 'cameras': 'a,b,c'}, got
        started = _started(proc)
        assert len(started) == 1, started  # one process serves all three
        assert proc.output.count(': loaded seg in') == 1, proc.output  # models loaded once
        assert 'for cameras a, b, c' in proc.output, proc.output
        env = _environ(started[0].pid)
        assert env.get(PROFILE_VAR, '').endswith('fastdds_shm.xml'), env
        _assert_clean_stop(proc, 'ctrl-c')  # a terminal Ctrl-C while frames flow
    finally:
        stop.set()
        proc.kill()


def test_isolated_cameras_one_process_each(graph):
    """``isolate_cameras:=true`` keeps the old layout: a process (and models) per camera."""
    proc = _launch('perception.launch.py', 'cameras:=front,rear', 'isolate_cameras:=true',
                   'random_weights:=true', 'tasks:=seg', 'input_size:=192x256',
                   'cpu_threads:=1')
    try:
        for ns in ('front', 'rear'):
            assert proc.wait_for(f'active: listening on /{ns}/image', 90.0), proc.output
        assert len(_started(proc)) == 2
        for ns in ('front', 'rear'):
            assert _parameters(graph, f'/{ns}/perception_node', ['cameras']) == {'cameras': ''}
        _assert_clean_stop(proc, 'ctrl-c')
    finally:
        proc.kill()


def test_autostart_false_single_camera_and_sigint_to_launch(graph, tmp_path):
    given = {'tasks': 'pose,seg', 'model_size': '1b', 'backend': 'onnxruntime',
             'dtype': 'bf16', 'device': 'cpu', 'compressed': True, 'random_weights': False,
             'autostart': False, 'input_size': '384x512', 'cpu_threads': 2,
             'allow_build': True, 'engine_batch': '2:2:2', 'cache_dir': str(tmp_path)}
    args = {k: str(v).lower() if isinstance(v, bool) else v for k, v in given.items()}
    args['input_size'] = '384x512'
    proc = _launch('perception.launch.py', 'namespace:=solo', 'camera:=/cams/solo/image_raw',
                   *(f'{k}:={v}' for k, v in args.items()))
    try:
        state = _call(graph, GetState, '/solo/perception_node/get_state', GetState.Request())
        assert state.current_state.label == 'unconfigured', state
        assert _parameters(graph, '/solo/perception_node', list(given)) == given
        time.sleep(1.0)
        state = _call(graph, GetState, '/solo/perception_node/get_state', GetState.Request())
        assert state.current_state.label == 'unconfigured', state  # nothing configured it
        assert 'loading' not in proc.output, proc.output
        _assert_clean_stop(proc, 'sigint')  # one SIGINT to ros2 launch only
    finally:
        proc.kill()


def test_depth_argument_pairs_an_rgbd_camera(graph):
    """``depth:=<topic>`` sets use_depth and remaps the node's depth input; frames pair."""
    proc = _launch('perception.launch.py', 'namespace:=rgbd', 'camera:=/rgbd/color/image_raw',
                   'depth:=/rgbd/aligned_depth/image_raw', 'random_weights:=true',
                   'tasks:=pose', 'input_size:=192x256', 'cpu_threads:=1')
    try:
        assert proc.wait_for('active: listening on /rgbd/color/image_raw and '
                             '/rgbd/aligned_depth/image_raw', 90.0), proc.output
        assert _parameters(graph, '/rgbd/perception_node', ['use_depth']) == {'use_depth': True}
        kps = graph.collect(TOPIC_TYPES['pose/keypoints'], '/rgbd/pose/keypoints')
        image = graph.publisher(Image, '/rgbd/color/image_raw')
        depth = graph.publisher(Image, '/rgbd/aligned_depth/image_raw')
        info = graph.publisher(CameraInfo, '/rgbd/color/camera_info')
        for pub in (image, depth, info):
            graph.wait_for_subscribers(pub)
        photo = bundled_photo()[::4, ::4].copy()
        wall = np.full(photo.shape[:2], 1500, np.uint16)  # 1.5 m, 16UC1 millimetres

        def finite_z():
            rows = [np.frombuffer(m.data, KEYPOINT_DTYPE) for m in kps]
            return any(np.isfinite(r['z']).any() for r in rows)

        end = time.monotonic() + 60.0
        while not finite_z() and time.monotonic() < end:
            header = Header(frame_id='rgbd_optical')
            header.stamp = graph.tester.get_clock().now().to_msg()
            info.publish(camera_info_for(header, *photo.shape[:2], 60.0))
            depth.publish(image_msg(header, wall, '16UC1'))
            image.publish(image_msg(header, photo, 'bgr8'))
            graph.wait(finite_z, 0.3)
        assert finite_z(), proc.output
        z = np.concatenate([np.frombuffer(m.data, KEYPOINT_DTYPE)['z'] for m in kps])
        assert np.allclose(z[np.isfinite(z)], 1.5, atol=1e-3)
        _assert_clean_stop(proc, 'ctrl-c')
    finally:
        proc.kill()


def test_demo_launch_profile_everywhere_and_ctrl_c_twice(graph, tmp_path):
    proc = _launch('demo.launch.py', 'random_weights:=true', 'rate:=5',
                   f'output_dir:={tmp_path / "demo"}')
    try:
        assert proc.wait_for('active: listening on /demo/image', 120.0), proc.output
        outputs = graph.collect(String, '/demo/seg/label_info_json', qos(latched=True))
        assert graph.wait(lambda: outputs, 30.0), proc.output
        assert proc.wait_for('[monitor', 30.0), proc.output
        started = _started(proc)
        names = ' '.join(' '.join(p.cmdline()) for p in started)
        for exe in ('sample_camera', 'perception_node', 'monitor'):
            assert exe in names, names
        for child in started:
            env = _environ(child.pid)
            assert env.get(PROFILE_VAR, '').endswith('fastdds_shm.xml'), child.cmdline()
        time.sleep(2.0)  # frames in flight (1024x768 random models on the CPU)
        _assert_clean_stop(proc, 'ctrl-c twice')
        assert 'summary after' in proc.output, proc.output
    finally:
        proc.kill()


def test_sigterm_to_launch_leaves_no_node_behind(graph):
    """``docker stop``, systemd, ``timeout``: SIGTERM to ``ros2 launch`` alone, under load."""
    proc = _launch('perception.launch.py', 'namespace:=term', 'random_weights:=true',
                   'tasks:=seg', 'input_size:=192x256', 'cpu_threads:=1')
    try:
        assert proc.wait_for('active: listening on /term/image', 90.0), proc.output
        nodes = _started(proc)
        assert nodes, proc.output
        with CpuHog():
            start = time.monotonic()
            proc.stop('sigterm')
            end = start + 10.0
            while any(_alive(p) for p in nodes) and time.monotonic() < end:
                time.sleep(0.1)
        print(f'SIGTERM to ros2 launch (CPU hog beside it): nodes gone after '
              f'{time.monotonic() - start:.2f} s')
        left = [' '.join(p.cmdline()) for p in nodes if _alive(p)]
        assert not left, f'still running after ros2 launch got SIGTERM: {left}\n{proc.output}'
        assert 'Traceback' not in proc.output, proc.output
    finally:
        proc.kill()  # the nodes share launch's process group: orphans go too


@pytest.mark.parametrize('text, says', [
    ('/**:\n  ros__parameters:\n    tasks: [pose\n', 'is not valid YAML'),
    ('perception_node:\n  tasks: pose\n', 'is outside a ros__parameters block'),
])
def test_bad_params_file_fails_the_launch_naming_the_problem(tmp_path, text, says):
    """The launch reads the file's form itself: nothing starts, one line names the problem."""
    params = tmp_path / 'bad.yaml'
    params.write_text(text)
    proc = _launch('perception.launch.py', f'params_file:={params}')
    try:
        rc = proc.popen.wait(60)
        assert rc == 1 and says in proc.output and str(params) in proc.output, proc.output
        assert 'Traceback' not in proc.output and 'process started' not in proc.output
    finally:
        proc.kill()


@pytest.mark.parametrize('text, says', [
    ('device: 3', "Trying to set parameter 'device' to '3' of type 'INTEGER', expecting type "
                  "'STRING'"),
    ('max_persons: 0', 'Parameter max_persons out of range. Min: 1, Max: 64, value: 0'),
    ('unrelated: [1, "a"]', 'error: cannot start'),  # PyYAML reads it, rcl refuses it
])
def test_a_node_that_cannot_start_fails_the_launch(tmp_path, text, says):
    """A value the node refuses: one ``error:`` line, exit status 2, and the launch fails."""
    params = tmp_path / 'bad.yaml'
    params.write_text(f'/**:\n  ros__parameters:\n    random_weights: true\n    {text}\n')
    proc = _launch('perception.launch.py', f'params_file:={params}')
    try:
        rc = proc.popen.wait(60)
        out = proc.output
        assert rc == 1 and says in out and 'could not start (exit status 2)' in out, out
        assert 'Traceback' not in out, out
    finally:
        proc.kill()


def test_parameters_the_node_does_not_have_are_named(graph, tmp_path):
    params = tmp_path / 'typo.yaml'
    params.write_text('/**:\n  ros__parameters:\n    random_weights: true\n'
                      '    autostart: false\n    detection_timeout: 2.0\n')
    proc = _launch('perception.launch.py', f'params_file:={params}')
    try:
        assert proc.wait_for('detection_timeout (did you mean detections_timeout?)', 60), \
            proc.output
        _assert_clean_stop(proc, 'sigint')
    finally:
        proc.kill()


@pytest.mark.parametrize('program', ['sample_camera', 'perception_node'])
def test_programs_explain_themselves(program):
    proc = Proc([ROS2, 'run', PACKAGE, program, '--help'], env=ros_env(
        AMENT_PREFIX_PATH=str(PREFIX), PATH=os.pathsep.join(
            [str(Path(sys.executable).parent), os.environ.get('PATH', '')])))
    try:
        assert proc.popen.wait(60) == 0
        out = proc.output
        assert 'parameters (--ros-args -p NAME:=VALUE' in out and 'rate (default 5.0)' in out \
            if program == 'sample_camera' else 'max_stamp_offset (default 1.0)' in out, out
        assert 'published' not in out
    finally:
        proc.kill()
