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
The node's ``/diagnostics``: the shared models and device, and each camera's input and output.

With one camera (the node's own namespace) everything is one status, as tools expect of a
single-camera node. With several, the first status is the shared one (models, device, steps,
batch sizes) and each camera has its own (rates, drops, latency, bad inputs, people).
"""

from __future__ import annotations

from collections import Counter
import math
import threading

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

from .camera import CameraChannel
from .runtime import Problem


class BatchStats:
    """Frames per head per step (how well cameras batch), fed by the scheduler."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: Counter = Counter()
        self.frames: Counter = Counter()

    def __call__(self, task: str, frames: int) -> None:
        """Record one forward of ``task`` over ``frames`` frames."""
        with self._lock:
            self.calls[task] += 1
            self.frames[task] += frames

    def values(self) -> dict[str, str]:
        """Mean frames per forward, per head."""
        with self._lock:
            return {f'batch.{t}_frames_mean': f'{self.frames[t] / n:.2f}'
                    for t, n in self.calls.items() if n}


def camera_health(snap: dict, warn_ms: float, state: str,
                  problems: list[Problem] = ()) -> tuple[bytes, str]:
    """
    Diagnostics level and message of one camera: its input ``problems`` and its stats.

    The level is the worst of its reasons; the message lists them, worst first. Input problems
    (:meth:`~.camera.CameraChannel.health`) come from the camera: stale (STALE), silent or slow
    input and side streams that do not pair (WARN). From the stats: every frame failed (ERROR),
    some failed, inputs degraded, frames lost before the callback, latency (WARN).
    """
    reasons = [(p.level, p.text) for p in problems]
    if snap['failed_rate_hz'] > 0:
        every = snap['processed_rate_hz'] == 0
        reasons.append((DiagnosticStatus.ERROR if every else DiagnosticStatus.WARN,
                        f"{'every frame failed' if every else 'frames failing'} "
                        f"({snap['failed_rate_hz']:.2f}/s): {snap['last_failed']}"))
    explained = {p.explains for p in problems}  # e.g. a side stream down: said above
    if snap['degraded_rate_hz'] > 0 and snap['last_degraded_kind'] not in explained:
        reasons.append((DiagnosticStatus.WARN, f"inputs degraded ({snap['degraded_rate_hz']:.2f}"
                        f"/s): {snap['last_degraded']}"))
    if snap['lost_rate_hz'] > 0:
        reasons.append((DiagnosticStatus.WARN, 'frames lost before the callback '
                        f"({snap['lost_rate_hz']:.2f}/s): the transport dropped them (network, "
                        'shared memory, input_depth)'))
    if math.isfinite(snap['latency_p95_ms']) and snap['latency_p95_ms'] > warn_ms:
        reasons.append((DiagnosticStatus.WARN,
                        f"latency p95 {snap['latency_p95_ms']:.0f} ms over {warn_ms:.0f} ms"))
    if not reasons:
        return DiagnosticStatus.OK, state
    reasons.sort(key=lambda r: r[0], reverse=True)  # stable: the order found within a level
    return reasons[0][0], '; '.join(text for _, text in reasons)


def camera_values(channel: CameraChannel, snap: dict, warn_ms: float) -> dict:
    """Key/values of one camera: rates, drops, latency, stages, bad inputs, people."""
    values = {
        'input_rate_hz': f"{snap['input_rate_hz']:.2f}",
        'processed_rate_hz': f"{snap['processed_rate_hz']:.2f}",
        'dropped_rate_hz': f"{snap['dropped_rate_hz']:.2f}",
        'frames_received': snap['received'], 'frames_processed': snap['processed'],
        'frames_dropped': snap['dropped'], 'frames_idle_skipped': snap['idle_skipped'],
        'frames_abandoned': snap['abandoned'], 'frames_lost': snap['lost'],
        'latency_p50_ms': f"{snap['latency_p50_ms']:.1f}",
        'latency_p95_ms': f"{snap['latency_p95_ms']:.1f}",
        'latency_warn_ms': warn_ms,
        'tasks_run': ','.join(snap['tasks_run']),
        'rates_hz': ','.join(f'{t}={r:g}' for t, r in channel.camera.budget.rates.items()),
        'bad_inputs_total': sum(snap['bad_inputs'].values()),
        'failed_rate_hz': f"{snap['failed_rate_hz']:.2f}",
        'degraded_rate_hz': f"{snap['degraded_rate_hz']:.2f}",
        'last_error': snap['last_error'],
    }
    values.update(channel.diagnostics())
    values.update({f'stage.{k}_ms': f'{v:.1f}' for k, v in snap['stage_ms'].items()})
    values.update({f'bad_input.{k}': v for k, v in snap['bad_inputs'].items()})
    values.update({f'pose_boxes.{k}': v for k, v in snap['box_origins'].items()})
    return values


def statuses(node_name: str, hardware_id: str, shared: dict, shared_level: tuple[bytes, str],
             channels: list[CameraChannel], snaps: list[dict],
             problems: list[list[Problem]], warn_ms: float,
             state: str) -> list[DiagnosticStatus]:
    """
    Build the node's statuses: one for a single unnamed camera, else shared + one per camera.

    ``shared_level`` is the level and message of the shared part (configuration errors); a
    camera's own health is judged from its input ``problems`` and its stats.
    """
    def status(name: str, level: tuple[bytes, str], values: dict) -> DiagnosticStatus:
        msg = DiagnosticStatus(name=name, hardware_id=hardware_id)
        msg.level, msg.message = level
        msg.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        return msg

    title = f'{node_name}: sapiens perception'
    if not channels:  # not configured: no camera yet
        return [status(title, shared_level, {'state': state, **shared})]
    if len(channels) == 1 and not channels[0].name:
        values = {'state': state, **camera_values(channels[0], snaps[0], warn_ms), **shared}
        level = shared_level if shared_level[0] != DiagnosticStatus.OK else \
            camera_health(snaps[0], warn_ms, state, problems[0])
        return [status(title, level, values)]
    out = [status(title, shared_level, {'state': state, **shared})]
    for channel, snap, found in zip(channels, snaps, problems, strict=True):
        level = shared_level if shared_level[0] != DiagnosticStatus.OK else \
            camera_health(snap, warn_ms, state, found)
        out.append(status(f'{node_name}: camera {channel.name}', level,
                          {'camera': channel.name, **camera_values(channel, snap, warn_ms)}))
    return out
