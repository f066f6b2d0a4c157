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

"""Watch a perception node: print per-topic rates and latency, write overlay images."""

from __future__ import annotations

from collections import deque
import json
from pathlib import Path
import time

import cv2
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import Image

from .node_params import declare_float
from .qos import SENSOR_QOS
from .spin import run_node
from .stamps import stamp_seconds
from .topic_types import TOPIC_TYPES
from .topics import KEYPOINT_DTYPE, task_outputs
from ..core.media.image_codec import decode_raw
from ..core.media.visualize import depth_colors, draw_skeleton


def _stamp_of(suffix: str, msg) -> float | None:
    """Return the input stamp an output carries (seconds), or None."""
    if suffix == 'people/ids':  # JSON text: the stamp is a field of it
        try:
            stamp = json.loads(msg.data)['stamp']
            return stamp['sec'] + stamp['nanosec'] * 1e-9
        except (ValueError, KeyError, TypeError):
            return None
    header = msg.markers[0].header if suffix == 'pose/markers' and msg.markers else \
        getattr(msg, 'header', None)
    if header is None:
        return None
    return stamp_seconds(header.stamp)


#: Arrivals per topic the rate is measured over.
RATE_WINDOW = 10


def topic_rate(arrivals: deque, now: float, period: float) -> float:
    """
    Rate of a topic (Hz) from its last arrival times: steady when it is slower than ``period``.

    Counting messages per report period gives 0.50 and 0.00 Hz in turn for a topic at 0.4 Hz
    reported every 2 s; the mean interval between the last :data:`RATE_WINDOW` arrivals does
    not. A topic silent for three of its intervals (and two periods) has stopped: 0.
    """
    if len(arrivals) < 2:
        return 0.0
    interval = (arrivals[-1] - arrivals[0]) / (len(arrivals) - 1)
    if interval <= 0:
        return 0.0
    if now - arrivals[-1] > max(3 * interval, 2 * period):
        return 0.0
    return 1.0 / interval


class Monitor(Node):
    """Subscribes to every output; every ``period`` s prints rates and latency p50."""

    def __init__(self, **kwargs) -> None:
        super().__init__(kwargs.pop('node_name', 'monitor'), **kwargs)
        self.period = declare_float(self, 'period', 2.0, 'seconds between reports')
        self.declare_parameter('output_dir', '')
        self.declare_parameter('tasks', 'pose,seg,normal,pointmap')
        self.arrivals: dict[str, deque] = {}
        self.total: dict[str, int] = {}
        self.latency: dict[str, list] = {}
        self.diagnostics: dict[str, str] = {}
        self._counters: list[tuple[float, int, int]] = []
        self._start = time.monotonic()
        self._image = None
        self._keypoints = None
        out = self.get_parameter('output_dir').value
        self.output_dir = Path(out) if out else None
        if self.output_dir:
            self.output_dir.mkdir(parents=True, exist_ok=True)
        tasks = [t.strip() for t in self.get_parameter('tasks').value.split(',')]
        for suffix in task_outputs(tasks):
            self.create_subscription(TOPIC_TYPES[suffix], suffix,
                                     lambda m, s=suffix: self._on_output(s, m), 2)
        self.create_subscription(Image, 'image', self._on_image, SENSOR_QOS)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 5)
        self.create_timer(self.period, self.report)

    def _on_image(self, msg: Image) -> None:
        self._image = msg

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if 'sapiens perception' in status.name:
                self.diagnostics = {kv.key: kv.value for kv in status.values}
                self._counters.append((time.monotonic(), _count(self.diagnostics, 'received'),
                                       _count(self.diagnostics, 'processed')))

    def node_rates(self) -> tuple[float, float] | None:
        """
        Input and processed frame rates of the node over the run so far, or None.

        Taken from its cumulative counters, not its 1 s rates: at 0.5 Hz most 1 s windows hold
        no frame, and a frame received in one window may be processed in the next.
        """
        if len(self._counters) < 2:
            return None
        (t0, rec0, proc0), (t1, rec1, proc1) = self._counters[0], self._counters[-1]
        dt = max(t1 - t0, 1e-6)
        return (rec1 - rec0) / dt, min(proc1 - proc0, rec1 - rec0) / dt

    def _on_output(self, suffix: str, msg) -> None:
        self.arrivals.setdefault(suffix, deque(maxlen=RATE_WINDOW)).append(time.monotonic())
        self.total[suffix] = self.total.get(suffix, 0) + 1
        stamp = _stamp_of(suffix, msg)
        if stamp:
            now = self.get_clock().now().nanoseconds * 1e-9
            self.latency.setdefault(suffix, []).append((now - stamp) * 1e3)
        if suffix == 'pose/keypoints':
            rows = np.frombuffer(msg.data, KEYPOINT_DTYPE)
            self._keypoints = rows.reshape(msg.height, msg.width)
        if self.output_dir is not None:
            self._write(suffix, msg)

    def _write(self, suffix: str, msg) -> None:
        name = suffix.replace('/', '_')
        if suffix in ('seg/overlay', 'normal/overlay'):
            frame = decode_raw(msg.encoding, msg.height, msg.width, msg.step, msg.data)
            cv2.imwrite(str(self.output_dir / f'{name}.png'),
                        cv2.cvtColor(frame.rgb(), cv2.COLOR_RGB2BGR))
        elif suffix == 'pointmap/depth':
            depth = np.frombuffer(msg.data, np.float32).reshape(msg.height, msg.width)
            cv2.imwrite(str(self.output_dir / f'{name}.png'), depth_colors(depth)[..., ::-1])
        elif suffix == 'pose/keypoints' and self._image is not None:
            img = self._image
            rgb = decode_raw(img.encoding, img.height, img.width, img.step, img.data).rgb()
            kp = self._keypoints
            drawn = draw_skeleton(rgb, np.stack([kp['u'], kp['v']], -1), kp['score'],
                                  ids=kp['id'][:, 0] if kp.shape[1] else None)
            cv2.imwrite(str(self.output_dir / 'pose_skeleton.png'), drawn[..., ::-1])

    def report(self) -> None:
        """Print one line per topic: its rate (last arrivals) and latency p50 of the period."""
        lines = []
        now = time.monotonic()
        for suffix in sorted(self.total):
            lat = self.latency.get(suffix)
            p50 = f'{float(np.median(lat)):7.1f} ms' if lat else '      - ms'
            rate = topic_rate(self.arrivals[suffix], now, self.period)
            lines.append(f'  {suffix:18s} {rate:6.2f} Hz  latency p50 {p50}')
        self.latency.clear()
        print('\n'.join([f"[{time.strftime('%H:%M:%S')}] {self._node_line()}"] +
                        (lines or ['  (no output yet)'])), flush=True)

    def _node_line(self) -> str:
        diag = self.diagnostics
        if not diag:
            return 'node: no diagnostics yet'
        rates = self.node_rates()
        rate = f'in {rates[0]:.2f} Hz, processed {rates[1]:.2f} Hz' if rates else 'rates: -'
        p95 = diag.get('latency_p95_ms', 'nan')
        p95 = f'{p95} ms' if p95 not in ('nan', '') else '-'
        return (f"node: {rate}, dropped {diag.get('frames_dropped', '0')}, latency p95 {p95}, "
                f"{diag.get('state', '?')}")

    def summary(self) -> str:
        """Return the run's totals: frames per topic, the node's rates, drops and failures."""
        elapsed = max(time.monotonic() - self._start, 1e-6)
        lines = [f'summary after {elapsed:.1f} s: {self._node_line()}']
        diag = self.diagnostics
        if diag:
            lines.append(f"  frames received {diag.get('frames_received', '0')}, processed "
                         f"{diag.get('frames_processed', '0')}, dropped "
                         f"{diag.get('frames_dropped', '0')}, bad inputs "
                         f"{diag.get('bad_inputs_total', '0')}")
        lines += [f'  {s:18s} {n:6d} messages ({n / elapsed:.2f} Hz)'
                  for s, n in sorted(self.total.items())]
        return '\n'.join(lines)

    def destroy_node(self) -> None:
        """Print the summary, then destroy the node."""
        print(self.summary(), flush=True)
        super().destroy_node()


def _count(diag: dict, name: str) -> int:
    try:
        return int(diag.get(f'frames_{name}', 0))
    except ValueError:
        return 0


def main(args: list[str] | None = None) -> None:
    """Entry point of ``ros2 run sapiens_ros monitor``."""
    run_node(Monitor, args)


if __name__ == '__main__':
    main()
