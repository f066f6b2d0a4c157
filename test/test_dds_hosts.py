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
The shipped Fast DDS profile across hosts: camera and node in two network namespaces.

A veth pair joins the namespaces (two addresses on one /24, SUBNET discovery), so the stream goes
over UDP as between two machines. 1024x768 bgr8 frames at 10 Hz, best effort, each 2.36 MB in
about 37 datagrams: with the kernel's default socket buffers (208 KiB) most frames lose a
fragment. Needs root to build the namespaces (CI runs as root); skips with the reason elsewhere.
"""

import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

pytest.importorskip('rclpy')

from dds_link import can_make_namespaces, HostPair, udp_rcvbuf_errors  # noqa: E402, I100
from ros_fixtures import session_domain_id  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / 'config' / 'fastdds_shm.xml'
#: The profile asks for 4 MiB UDP buffers; the kernel caps the request at net.core.rmem_max.
BUFFER = 4 * 1024 * 1024
FRAMES = 40

_why_not = can_make_namespaces()
pytestmark = pytest.mark.skipif(_why_not is not None, reason=str(_why_not))


def _sysctl(hosts: HostPair, name: str) -> int:
    out = subprocess.run(hosts.command(1, ['cat', f'/proc/sys/net/core/{name}']), check=True,
                         capture_output=True, text=True).stdout
    return int(out)


def _stream(hosts: HostPair, tmp_path: Path, profile: Path | None) -> dict:
    """Publish FRAMES frames from side 0 to side 1; return the subscriber's JSON line."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(session_domain_id()), PYTHONUNBUFFERED='1',
               ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET')
    for var in ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE',
                'ROS_LOCALHOST_ONLY', 'ROS_STATIC_PEERS'):
        env.pop(var, None)
    if profile is not None:
        env['FASTRTPS_DEFAULT_PROFILES_FILE'] = str(profile)
    link = str(Path(__file__).with_name('dds_link.py'))
    until = tmp_path / 'published'
    sub = subprocess.Popen(hosts.command(1, [sys.executable, link, 'subscribe', '--until',
                                             str(until)]),
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pub = subprocess.run(hosts.command(0, [sys.executable, link, 'publish', '--frames',
                                               str(FRAMES)]),
                             env=env, capture_output=True, text=True, timeout=120)
        until.touch()
        out, err = sub.communicate(timeout=60)
    finally:
        sub.kill()
    assert pub.returncode == 0, pub.stdout + pub.stderr
    assert sub.returncode == 0, out + err
    return json.loads(out.strip().splitlines()[-1])


def test_shipped_profile_carries_1024x768_frames_between_hosts(tmp_path):
    tag = f'sr{os.getpid() % 100000}'
    with HostPair(tag, os.getpid() % 250) as hosts:
        for name in ('rmem_max', 'wmem_max'):
            if _sysctl(hosts, name) < BUFFER:
                pytest.skip(f'net.core.{name} is {_sysctl(hosts, name)}, below the {BUFFER} bytes '
                            'the profile asks for: raise it as docs/install.md says')
        errors = udp_rcvbuf_errors(hosts.names[1])
        got = _stream(hosts, tmp_path, PROFILE)
        errors = udp_rcvbuf_errors(hosts.names[1]) - errors
    print(f'shipped profile across hosts: {got["received"]}/{FRAMES} frames, '
          f'p50 latency {got["latency_p50_ms"]} ms, {errors} UDP receive-buffer errors')
    # The field report measured 86-100 % with 4 MiB buffers, 21-23 % with the old profile.
    assert got['received'] >= 0.8 * FRAMES, (got, errors)
