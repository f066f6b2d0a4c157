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
Launch sapiens_ros perception_node: one camera, or one process serving several cameras.

ros2 launch sapiens_ros perception.launch.py camera:=/camera/image_raw
ros2 launch sapiens_ros perception.launch.py cameras:=front,rear device:=cuda dtype:=bf16
ros2 launch sapiens_ros perception.launch.py cameras:=front,rear isolate_cameras:=true
ros2 launch sapiens_ros perception.launch.py camera:=/cam/color/image_raw \
    depth:=/cam/aligned_depth_to_color/image_raw
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler,
                            SetEnvironmentVariable)
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessExit
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from sapiens_ros.ros.launch_support import (check_params_file, PACKAGE, parameter_arguments,
                                            parameter_overrides, parse_bool, profile_path,
                                            PROFILE_VAR, START_FAILED)
from sapiens_ros.ros.node_params import parse_cameras

#: Track ids of isolated camera processes start this far apart (ids stay unique on the robot).
TRACK_ID_BLOCK = 1_000_000

#: Arguments of the launch itself (topics, processes, files): ``(name, default, description)``.
LAUNCH_ONLY = (
    ('camera', 'image', 'input image topic (remapped onto the node\'s "image")'),
    ('camera_info', '', 'camera_info topic (default: camera_info beside the image topic)'),
    ('namespace', '', 'namespace of the node and its outputs'),
    ('isolate_cameras', 'false', 'true: one process per camera (each loads its own models)'),
    ('params_file', '', 'parameters YAML (default: config/perception.yaml of the package)'),
    ('rates', '', 'most runs per second per task, e.g. seg=5,normal=2 (0: every frame): sets '
                  'the rates.<task> parameters'),
    ('depth', '', ('aligned depth image topic (16UC1 mm / 32FC1 m): sets use_depth and remaps '
                   'the node\'s "depth" onto it (relative names resolve in each camera\'s '
                   'namespace)')),
    ('detections', '', ("a person detector's vision_msgs/Detection2DArray topic: sets "
                        'box_source detections and remaps the node\'s "detections" onto it')),
    ('use_rviz', 'false', 'start RViz'),
    ('dds_profile', 'true', (f'set {PROFILE_VAR} to the shipped 64 MiB SHM profile when the '
                             f'RMW is Fast DDS and none is set')),
)

#: Every argument: the launch's own, then one per node parameter the table marks ``launch``
#: (empty: keep the params_file value; config/perception.yaml holds the documented defaults).
ARGUMENTS = (*LAUNCH_ONLY, *parameter_arguments())


def _share() -> str:
    return get_package_share_directory(PACKAGE)


def _beside(topic: str, name: str) -> str:
    """``name`` in the folder of ``topic`` (camera_info beside the image)."""
    return topic.rsplit('/', 1)[0] + '/' + name if '/' in topic.strip('/') else name


def _node(namespace: str, params: list, remaps: list) -> Node:
    return Node(package=PACKAGE, executable='perception_node', name='perception_node',
                namespace=namespace or None, parameters=params, remappings=remaps,
                output='screen', emulate_tty=True)


def _nodes(context, *args, **kwargs):
    """Build the nodes from the resolved arguments (no eval, no subprocess)."""
    arg = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    actions = []
    profile = profile_path(_share())
    if arg['dds_profile'].lower() == 'true' and profile:
        actions.append(SetEnvironmentVariable(PROFILE_VAR, profile))
    params_file = arg['params_file'] or os.path.join(_share(), 'config', 'perception.yaml')
    check_params_file(params_file)
    overrides = parameter_overrides(arg)  # only arguments given override the parameters file
    cameras = parse_cameras(arg['cameras'])
    namespace = arg['namespace'].strip('/')
    sides = {s: arg[s] for s in ('depth', 'detections') if arg[s]}  # streams paired by stamp
    for stream, topic in sides.items():
        if cameras and topic.startswith('/') and len(cameras) > 1:
            raise ValueError(f'{stream}:={topic} is one absolute topic for {len(cameras)} '
                             f"cameras: give a relative name (resolved in each camera's "
                             f'namespace)')
    if cameras and parse_bool('isolate_cameras', arg['isolate_cameras']):
        for k, camera in enumerate(cameras):  # the old layout: a process (and models) each
            ns = f'{namespace}/{camera}' if namespace else camera
            ids = {'cameras': '', 'track_id_start': 1 + k * TRACK_ID_BLOCK}  # unique ids
            actions.append(_node(ns, [params_file, overrides, ids], list(sides.items())))
    elif cameras:
        remaps = [(f'{c}/{s}', t if t.startswith('/') else f'{c}/{t}')
                  for s, t in sides.items() for c in cameras]
        actions.append(_node(namespace, [params_file, overrides,
                                         {'cameras': ','.join(cameras)}], remaps))
    else:
        topic = arg['camera']
        remaps = [('image', topic), ('image/compressed', topic.rstrip('/') + '/compressed'),
                  ('camera_info', arg['camera_info'] or _beside(topic, 'camera_info')),
                  *sides.items()]
        actions.append(_node(namespace, [params_file, overrides], remaps))
    return actions


def _start_failed(event, context) -> None:
    """Fail the launch (exit status 1) when a node could not start: its error is above."""
    if event.returncode == START_FAILED and not context.is_shutdown:
        raise RuntimeError(f'{event.action.name} could not start (exit status {START_FAILED}): '
                           f'see its error above')


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, then the nodes via an OpaqueFunction."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=desc)
                for name, default, desc in ARGUMENTS]
    rviz = Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                arguments=['-d', os.path.join(get_package_share_directory(PACKAGE), 'config',
                                              'sapiens.rviz')],
                condition=IfCondition(LaunchConfiguration('use_rviz')))
    failed = RegisterEventHandler(OnProcessExit(on_exit=_start_failed))
    return LaunchDescription(declared + [failed, OpaqueFunction(function=_nodes), rviz])
