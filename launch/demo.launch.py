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
Demo without a camera: sample camera + perception node + monitor.

ros2 launch sapiens_ros demo.launch.py random_weights:=true
ros2 launch sapiens_ros demo.launch.py source:=rgbd_bag/ depth:=depth random_weights:=true
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, SetEnvironmentVariable
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from sapiens_ros.ros.launch_support import profile_path, PROFILE_VAR
from sapiens_ros.ros.node_params import PARAM_BY_NAME


def generate_launch_description() -> LaunchDescription:
    """Play the bundled photo (or a video/bag) into the perception node and monitor it."""
    share = get_package_share_directory('sapiens_ros')
    args = [
        DeclareLaunchArgument('source', default_value='', description='video file or bag; '
                              'empty plays the bundled photo'),
        DeclareLaunchArgument('rate', default_value='5.0', description='frames per second'),
        # The perception node's own arguments, with the demo's defaults.
        DeclareLaunchArgument('random_weights', default_value='false',
                              description=PARAM_BY_NAME['random_weights'].help_text),
        DeclareLaunchArgument('device', default_value='cpu',
                              description=PARAM_BY_NAME['device'].help_text),
        DeclareLaunchArgument('output_dir', default_value='sapiens_demo',
                              description='where the monitor writes overlay images'),
        DeclareLaunchArgument('depth', default_value='',
                              description='depth:=depth for an RGB-D bag source (the sample '
                              'camera publishes its aligned depth on "depth")'),
    ]
    camera = Node(package='sapiens_ros', executable='sample_camera', name='sample_camera',
                  namespace='demo', output='screen',
                  parameters=[{'source': LaunchConfiguration('source'),
                               'rate': LaunchConfiguration('rate')}])
    perception = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, 'launch', 'perception.launch.py')),
        launch_arguments={'namespace': 'demo', 'camera': 'image',
                          'random_weights': LaunchConfiguration('random_weights'),
                          # tiny random models at 192x256 (WxH), as `sapiens-ros demo` runs them
                          'input_size': PythonExpression([
                              "'192x256' if '", LaunchConfiguration('random_weights'),
                              "'.lower() in ('true', '1') else ''"]),
                          'device': LaunchConfiguration('device'),
                          'depth': LaunchConfiguration('depth')}.items())
    monitor = Node(package='sapiens_ros', executable='monitor', name='monitor',
                   namespace='demo', output='screen',
                   parameters=[{'output_dir': LaunchConfiguration('output_dir')}])
    # The profile first, so the camera's process has it too (the include sets it again: no-op).
    profile = profile_path(share)
    env = [SetEnvironmentVariable(PROFILE_VAR, profile)] if profile else []
    return LaunchDescription(args + env + [camera, perception, monitor])
