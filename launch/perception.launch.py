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
Launch sapiens_ros perception_node for one camera, or one node per camera namespace.

ros2 launch sapiens_ros perception.launch.py camera:=/camera/image_raw
ros2 launch sapiens_ros perception.launch.py cameras:=front,rear device:=cuda dtype:=bf16
ros2 launch sapiens_ros perception.launch.py camera:=/cam/color/image_raw \
    depth:=/cam/aligned_depth_to_color/image_raw
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from sapiens_ros.ros.launch_support import (PACKAGE, parameter_overrides, profile_path,
                                            PROFILE_VAR)

ARGUMENTS = (
    ('camera', 'image', 'input image topic (remapped onto the node\'s "image")'),
    ('namespace', '', 'namespace of the node and its outputs (single camera)'),
    ('cameras', '', ('comma-separated namespaces: one node per camera, each reading '
                     '<ns>/image (overrides camera and namespace)')),
    # Empty = keep the value of params_file (config/perception.yaml: the documented defaults).
    ('tasks', '', 'heads to run, e.g. pose,seg (default: params_file)'),
    ('model_size', '', '0.4b, 0.8b, 1b or 5b (default: params_file)'),
    ('backend', '', 'torch, onnxruntime or tensorrt (default: params_file)'),
    ('dtype', '', 'auto, fp32, bf16 or fp16 (default: params_file)'),
    ('device', '', 'cpu, cuda or cuda:N (default: params_file)'),
    ('params_file', '', 'parameters YAML (default: config/perception.yaml of the package)'),
    ('compressed', '', 'true: subscribe <camera>/compressed (default: params_file)'),
    ('random_weights', '', 'true: tiny random models, no weights needed (default: params_file)'),
    ('autostart', '', 'false: stay unconfigured until a lifecycle transition (default: true)'),
    ('input_size', '', 'model input HEIGHTxWIDTH, e.g. 1024x768 (default: params_file)'),
    ('cpu_threads', '', 'torch CPU threads per node, 0 = torch default (default: params_file)'),
    ('allow_build', '', 'false: never build ONNX graphs / TensorRT engines at start-up'),
    ('engine_batch', '', 'TensorRT/ONNX batch profile min:opt:max (default: params_file)'),
    ('cache_dir', '', 'ONNX/TensorRT cache folder (default: ~/.cache/sapiens_ros)'),
    ('depth', '', ('aligned depth image topic (16UC1 mm / 32FC1 m): sets use_depth and remaps '
                   'the node\'s "depth" onto it (relative names resolve in each namespace)')),
    ('use_rviz', 'false', 'start RViz'),
    ('dds_profile', 'true', (f'set {PROFILE_VAR} to the shipped 64 MiB SHM profile when the '
                             f'RMW is Fast DDS and none is set')),
)


def _share() -> str:
    return get_package_share_directory(PACKAGE)


def _nodes(context, *args, **kwargs):
    """Build the nodes from the resolved arguments (no eval, no subprocess)."""
    arg = {name: LaunchConfiguration(name).perform(context) for name, _, _ in ARGUMENTS}
    actions = []
    profile = profile_path(_share())
    if arg['dds_profile'].lower() == 'true' and profile:
        actions.append(SetEnvironmentVariable(PROFILE_VAR, profile))
    params_file = arg['params_file'] or os.path.join(_share(), 'config', 'perception.yaml')
    overrides = parameter_overrides(arg)  # only arguments given override the parameters file
    cameras = [c.strip().strip('/') for c in arg['cameras'].split(',') if c.strip()]
    if cameras:
        targets = [(c, 'image') for c in cameras]
    else:
        targets = [(arg['namespace'].strip('/'), arg['camera'])]
    for namespace, topic in targets:
        remaps = [('image', topic), ('image/compressed', topic.rstrip('/') + '/compressed'),
                  ('camera_info', topic.rsplit('/', 1)[0] + '/camera_info'
                   if '/' in topic.strip('/') else 'camera_info')]
        if arg['depth']:
            remaps.append(('depth', arg['depth']))
        actions.append(Node(package=PACKAGE, executable='perception_node',
                            name='perception_node', namespace=namespace or None,
                            parameters=[params_file, overrides], remappings=remaps,
                            output='screen', emulate_tty=True))
    return actions


def generate_launch_description() -> LaunchDescription:
    """Declare the arguments, then the nodes via an OpaqueFunction."""
    declared = [DeclareLaunchArgument(name, default_value=default, description=desc)
                for name, default, desc in ARGUMENTS]
    rviz = Node(package='rviz2', executable='rviz2', name='rviz2', output='screen',
                arguments=['-d', os.path.join(get_package_share_directory(PACKAGE), 'config',
                                              'sapiens.rviz')],
                condition=IfCondition(LaunchConfiguration('use_rviz')))
    return LaunchDescription(declared + [OpaqueFunction(function=_nodes), rviz])
