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
Two hosts on one machine: network namespaces joined by a veth pair, and a camera-like stream.

``HostPair`` builds two namespaces (root only) with one address each on a /24 of their own, and a
multicast route, so Fast DDS discovers across them as across two machines on a LAN: different
addresses, hence different Fast DDS host ids, so no shared memory between them, only UDP.

``python dds_link.py publish|subscribe`` is one side of the stream: 1024x768 bgr8 ``Image``
frames, best effort, at a fixed rate; the subscriber prints one JSON line with what arrived (run it
with ``ip netns exec``). Used by test_dds_hosts.py and to measure the figures in docs/install.md.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import subprocess
import time

#: The camera of the field report: 1024x768 bgr8 (2.36 MB a frame) at 10 Hz, best effort.
WIDTH, HEIGHT, RATE = 1024, 768, 10.0


def _ip(*args: str) -> None:
    subprocess.run(['ip', *args], check=True, capture_output=True, text=True)


def udp_rcvbuf_errors(netns: str) -> int:
    """Return the UDP receive-buffer error counter of ``netns`` (/proc/net/snmp, per namespace)."""
    out = subprocess.run(['ip', 'netns', 'exec', netns, 'cat', '/proc/net/snmp'], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    rows = [line.split() for line in out if line.startswith('Udp:')]
    return int(dict(zip(rows[0][1:], rows[1][1:], strict=True))['RcvbufErrors'])


class HostPair:
    """Two network namespaces ``<tag>_a`` and ``<tag>_b`` joined by a veth pair (root only)."""

    def __init__(self, tag: str, subnet: int) -> None:
        self.names = (f'{tag}_a', f'{tag}_b')
        self.addresses = (f'10.231.{subnet}.1', f'10.231.{subnet}.2')
        self._veth = (f'{tag}a'[:15], f'{tag}b'[:15])

    def __enter__(self) -> HostPair:
        try:
            for ns in self.names:
                _ip('netns', 'add', ns)
            _ip('link', 'add', self._veth[0], 'type', 'veth', 'peer', 'name', self._veth[1])
            for ns, dev, addr in zip(self.names, self._veth, self.addresses, strict=True):
                _ip('link', 'set', dev, 'netns', ns)
                _ip('-n', ns, 'addr', 'add', f'{addr}/24', 'dev', dev)
                _ip('-n', ns, 'link', 'set', dev, 'up')
                _ip('-n', ns, 'link', 'set', 'lo', 'up')
                _ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', dev)  # SPDP multicast
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in self.names:  # deleting a namespace deletes its end of the veth, and the peer
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)

    def command(self, side: int, argv: list[str]) -> list[str]:
        """Return ``argv`` run inside namespace ``side`` (0 or 1)."""
        return ['ip', 'netns', 'exec', self.names[side], *argv]


def can_make_namespaces() -> str | None:
    """Return why namespaces cannot be built here, or None when they can."""
    if os.geteuid() != 0:
        return 'building network namespaces needs root (CI runs as root)'
    probe = f'sapiens_probe_{os.getpid()}'
    run = subprocess.run(['ip', 'netns', 'add', probe], capture_output=True, text=True)
    if run.returncode != 0:
        return f'ip netns add failed: {run.stderr.strip() or run.returncode}'
    subprocess.run(['ip', 'netns', 'del', probe], capture_output=True)
    return None


def _publish(args) -> None:
    import numpy as np
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node('camera')
    pub = node.create_publisher(Image, 'image', QoSProfile(
        depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
    end = time.monotonic() + args.match_timeout
    while pub.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.05)
    if pub.get_subscription_count() == 0:
        raise SystemExit('publish: no subscriber matched (discovery across the link failed)')
    time.sleep(args.settle)  # the subscriber's side of the match
    frame = np.random.default_rng(0).integers(0, 255, (HEIGHT, WIDTH, 3), np.uint8)
    msg = Image(height=HEIGHT, width=WIDTH, encoding='bgr8', step=WIDTH * 3,
                data=frame.tobytes())
    start = time.monotonic()
    for i in range(args.frames):
        msg.header.frame_id = str(i)
        msg.header.stamp = node.get_clock().now().to_msg()
        pub.publish(msg)
        time.sleep(max(0.0, start + (i + 1) / args.rate - time.monotonic()))
    print(json.dumps({'sent': args.frames}), flush=True)
    time.sleep(0.5)
    node.destroy_node()
    rclpy.try_shutdown()


def _subscribe(args) -> None:
    import rclpy
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node('perception')
    seen, latency = set(), []

    def on_image(msg: Image) -> None:
        now = node.get_clock().now().nanoseconds
        stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        if len(msg.data) == WIDTH * HEIGHT * 3:
            seen.add(int(msg.header.frame_id))
            latency.append((now - stamp) / 1e6)

    node.create_subscription(Image, 'image', on_image, QoSProfile(
        depth=5, reliability=ReliabilityPolicy.BEST_EFFORT))
    done = Path(args.until)
    end = time.monotonic() + args.timeout
    while not done.exists() and time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.1)
    for _ in range(10):  # what is still in flight
        rclpy.spin_once(node, timeout_sec=0.1)
    latency.sort()
    print(json.dumps({'received': len(seen),
                      'latency_p50_ms': latency[len(latency) // 2] if latency else None}),
          flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


def main() -> None:
    """Run one side of the stream."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='side', required=True)
    pub = sub.add_parser('publish')
    pub.add_argument('--frames', type=int, default=50)
    pub.add_argument('--rate', type=float, default=RATE)
    pub.add_argument('--match-timeout', type=float, default=30.0)
    pub.add_argument('--settle', type=float, default=1.0)
    rec = sub.add_parser('subscribe')
    rec.add_argument('--until', required=True, help='stop once this file exists')
    rec.add_argument('--timeout', type=float, default=120.0)
    args = parser.parse_args()
    (_publish if args.side == 'publish' else _subscribe)(args)


if __name__ == '__main__':
    main()
