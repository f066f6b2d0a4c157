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

"""Write pipeline results to files: overlays, keypoint JSON, label PNG, normals, PLY clouds."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from .visualize import depth_colors, draw_skeleton, normal_colors, normal_overlay, seg_overlay
from ..pipeline.pipeline import FrameResult


def write_ply(path: str | Path, points: np.ndarray, colors: np.ndarray,
              labels: np.ndarray | None = None) -> None:
    """Binary little-endian PLY with xyz float32, rgb uchar and an optional uchar label."""
    fields = [('x', '<f4'), ('y', '<f4'), ('z', '<f4'),
              ('red', 'u1'), ('green', 'u1'), ('blue', 'u1')]
    if labels is not None:
        fields.append(('label', 'u1'))
    rows = np.empty(len(points), dtype=fields)
    rows['x'], rows['y'], rows['z'] = points[:, 0], points[:, 1], points[:, 2]
    rows['red'], rows['green'], rows['blue'] = colors[:, 0], colors[:, 1], colors[:, 2]
    if labels is not None:
        rows['label'] = labels
    types = {'<f4': 'float', 'u1': 'uchar'}
    header = ['ply', 'format binary_little_endian 1.0', f'element vertex {len(rows)}']
    header += [f'property {types[t]} {n}' for n, t in fields] + ['end_header']
    with open(path, 'wb') as f:
        f.write(('\n'.join(header) + '\n').encode('ascii'))
        f.write(rows.tobytes())


def read_ply(path: str | Path) -> np.ndarray:
    """Read a PLY written by :func:`write_ply` back into a structured array."""
    data = Path(path).read_bytes()
    end = data.index(b'end_header\n') + len(b'end_header\n')
    types = {'float': '<f4', 'uchar': 'u1'}
    fields = []
    for line in data[:end].decode('ascii').splitlines():
        parts = line.split()
        if parts[:1] == ['property']:
            fields.append((parts[2], types[parts[1]]))
    return np.frombuffer(data[end:], dtype=fields)


def _png(path: Path, rgb: np.ndarray) -> None:
    cv2.imwrite(str(path), np.ascontiguousarray(rgb[..., ::-1]))


#: What :func:`write_frame_outputs` writes per task: ``<stem>.<task>.png`` is always the overlay
#: to look at; ``<stem>.<task>_<what>.<ext>`` are the data files.
OUTPUT_FILES = {
    'pose': ('pose.png', 'keypoints.json'),
    'seg': ('seg.png', 'seg_labels.png'),
    'normal': ('normal.png', 'normal_colors.png', 'normal.npy'),
    'pointmap': ('pointmap.png', 'pointmap_depth.png', 'pointmap.ply'),
    'matting': ('matting.png', 'matting_alpha.png'),
}


def write_frame_outputs(out_dir: str | Path, stem: str, image_rgb: np.ndarray,
                        result: FrameResult, score_threshold: float = 0.3) -> list[Path]:
    """Write every output of one frame (:data:`OUTPUT_FILES`); return the written paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def path(suffix: str) -> Path:
        p = out / f'{stem}.{suffix}'
        written.append(p)
        return p

    if result.pose is not None:
        pose = result.pose
        _png(path('pose.png'), draw_skeleton(image_rgb, pose.keypoints, pose.scores,
                                             pose.boxes, score_threshold))
        doc = {'boxes': pose.boxes.tolist(), 'box_scores': pose.box_scores.tolist(),
               'keypoints': pose.keypoints.tolist(), 'scores': pose.scores.tolist()}
        if result.keypoints_xyz is not None:
            doc['keypoints_xyz'] = np.where(np.isfinite(result.keypoints_xyz),
                                            result.keypoints_xyz, None).tolist()
        path('keypoints.json').write_text(json.dumps(doc))
    if result.seg is not None:
        _png(path('seg.png'), seg_overlay(image_rgb, result.seg.labels))
        cv2.imwrite(str(path('seg_labels.png')), result.seg.labels)
    if result.normal is not None:
        _png(path('normal.png'), normal_overlay(image_rgb, result.normal.normals))
        _png(path('normal_colors.png'), normal_colors(result.normal.normals))
        np.save(path('normal.npy'), result.normal.normals.astype(np.float32))
    if result.pointmap is not None:
        pm = result.pointmap
        colours = depth_colors(pm.depth)
        _png(path('pointmap.png'), _blend(image_rgb, colours, np.isfinite(pm.depth)))
        _png(path('pointmap_depth.png'), colours)
        write_ply(path('pointmap.ply'), pm.points, pm.colors, pm.labels)
    if result.matting is not None:
        alpha = np.clip(result.matting * 255, 0, 255).astype(np.uint8)
        _png(path('matting.png'), _blend(image_rgb, np.zeros_like(image_rgb), alpha < 128))
        cv2.imwrite(str(path('matting_alpha.png')), alpha)
    return written


def _blend(image_rgb: np.ndarray, colours: np.ndarray, mask: np.ndarray,
           alpha: float = 0.6) -> np.ndarray:
    """``colours`` blended over the image where ``mask`` holds; the image elsewhere."""
    out = image_rgb.copy()
    out[mask] = (alpha * colours[mask] + (1 - alpha) * image_rgb[mask]).astype(np.uint8)
    return out
