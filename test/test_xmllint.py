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

"""ament_xmllint on package.xml and the other XML files (the DDS profile), as colcon test does."""

import shutil
import socket
import subprocess

import pytest

ament_xmllint = pytest.importorskip('ament_xmllint.main',
                                    reason='ament_xmllint comes with ROS (or shared/ros-tools)')

#: Where package.xml's schema (its xml-model processing instruction) is fetched from.
SCHEMA_HOST = 'download.ros.org'


def _online(host: str = SCHEMA_HOST, timeout: float = 3.0) -> bool:
    try:
        socket.create_connection((host, 80), timeout).close()
        return True
    except OSError:
        return False


@pytest.mark.linter
@pytest.mark.xmllint
def test_xmllint():
    if shutil.which('xmllint') is None:
        pytest.skip('the xmllint program is missing (apt install libxml2-utils)')
    argv = []
    if not _online():
        # Offline, ament_xmllint cannot fetch package.xml's schema and reports it invalid. The
        # other XML files still go through it; package.xml gets xmllint's well-formedness check
        # and catkin_pkg's format-3 validation (the parser colcon and rosdep use) below.
        argv = ['--exclude', 'package.xml']
        subprocess.run(['xmllint', '--noout', 'package.xml'], check=True)
        from catkin_pkg.package import parse_package

        parse_package('package.xml').validate()
    rc = ament_xmllint.main(argv=argv)
    assert rc == 0, 'Found errors'
