"""Watch a perception node: print per-topic rates and latency, write overlay images."""

from __future__ import annotations

from pathlib import Path
import time

import cv2
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import Image

from .messages import KEYPOINT_DTYPE, TASK_OUTPUTS, TOPIC_TYPES
from .spin import run_node
from ..core.image_codec import decode_raw
from ..core.visualize import depth_colors, draw_skeleton


class Monitor(Node):
    """Subscribes to every output; every ``period`` s prints rates and latency p50."""

    def __init__(self, **kwargs) -> None:
        super().__init__(kwargs.pop('node_name', 'monitor'), **kwargs)
        self.declare_parameter('period', 2.0)
        self.declare_parameter('output_dir', '')
        self.declare_parameter('tasks', 'pose,seg,normal,pointmap')
        self.counts: dict[str, int] = {}
        self.total: dict[str, int] = {}
        self.latency: dict[str, list] = {}
        self.diagnostics: dict[str, str] = {}
        self._image = None
        self._keypoints = None
        out = self.get_parameter('output_dir').value
        self.output_dir = Path(out) if out else None
        if self.output_dir:
            self.output_dir.mkdir(parents=True, exist_ok=True)
        tasks = [t.strip() for t in self.get_parameter('tasks').value.split(',')]
        for task in tasks:
            for suffix in TASK_OUTPUTS.get(task, ()):
                self.create_subscription(TOPIC_TYPES[suffix], suffix,
                                         lambda m, s=suffix: self._on_output(s, m), 2)
        self.create_subscription(Image, 'image', self._on_image, qos_profile_sensor_data)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 5)
        self.create_timer(float(self.get_parameter('period').value), self.report)

    def _on_image(self, msg: Image) -> None:
        self._image = msg

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if 'sapiens perception' in status.name:
                self.diagnostics = {kv.key: kv.value for kv in status.values}

    def _on_output(self, suffix: str, msg) -> None:
        self.counts[suffix] = self.counts.get(suffix, 0) + 1
        self.total[suffix] = self.total.get(suffix, 0) + 1
        header = msg.markers[0].header if suffix == 'pose/markers' and msg.markers else \
            getattr(msg, 'header', None)
        if header is not None and header.stamp.sec:
            stamp = header.stamp.sec + header.stamp.nanosec * 1e-9
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
            drawn = draw_skeleton(rgb, np.stack([kp['u'], kp['v']], -1), kp['score'])
            cv2.imwrite(str(self.output_dir / 'pose_skeleton.png'), drawn[..., ::-1])

    def report(self) -> None:
        """Print one line per topic: rate over the period and latency p50."""
        period = float(self.get_parameter('period').value)
        lines = []
        for suffix in sorted(self.total):
            lat = self.latency.get(suffix) or [float('nan')]
            lines.append(f'  {suffix:18s} {self.counts.get(suffix, 0) / period:6.2f} Hz  '
                         f'latency p50 {float(np.median(lat)):7.1f} ms')
        self.counts.clear()
        self.latency.clear()
        diag = self.diagnostics
        head = (f"[{time.strftime('%H:%M:%S')}] node: in {diag.get('input_rate_hz', '?')} Hz, "
                f"processed {diag.get('processed_rate_hz', '?')} Hz, dropped "
                f"{diag.get('frames_dropped', '?')}, p95 {diag.get('latency_p95_ms', '?')} ms")
        print('\n'.join([head] + (lines or ['  (no output yet)'])), flush=True)


def main(args: list[str] | None = None) -> None:
    """Entry point of ``ros2 run sapiens_ros monitor``."""
    run_node(Monitor, args)


if __name__ == '__main__':
    main()
