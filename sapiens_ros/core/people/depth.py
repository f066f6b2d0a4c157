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
RGB-D fusion, ROS-free: metric keypoints from an aligned depth image and a depth-fitted pointmap.

Depth images are ``16UC1`` millimetres or ``32FC1`` metres, aligned to the colour camera, at any
resolution (colour pixels are scaled onto them). Zeros, NaN and inf are holes.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation
import torch

from .geometry import all_of, any_of, columns, cross, dot
from ..errors import FrameError
from ..media.image_codec import raw_rows

#: Depth encodings and their factor to metres.
DEPTH_ENCODINGS = {'16UC1': 1e-3, 'mono16': 1e-3, '32FC1': 1.0}
#: Torso keypoints of the 308-keypoint format (left/right shoulder, left/right hip).
TORSO = (5, 6, 9, 10)
_TORSO = np.array(TORSO)


def depth_to_metres(depth: np.ndarray | torch.Tensor, encoding: str,
                    device: torch.device | str = 'cpu') -> torch.Tensor:
    """``(H, W)`` float32 metres on ``device``; holes (0, NaN, inf, negative) become NaN."""
    if encoding not in DEPTH_ENCODINGS:
        raise FrameError(f'depth encoding must be one of {sorted(DEPTH_ENCODINGS)}, '
                         f'got {encoding!r}')
    if isinstance(depth, np.ndarray):  # float32 on the host: one upload, no uint16 kernels
        depth = torch.from_numpy(np.ascontiguousarray(depth, dtype=np.float32))
    if depth.ndim == 3 and depth.shape[2] == 1:
        depth = depth[..., 0]
    if depth.ndim != 2 or depth.shape[0] == 0 or depth.shape[1] == 0:
        raise FrameError(f'depth must be a non-empty HxW image, got shape {tuple(depth.shape)}')
    metres = depth.to(device).float().mul_(DEPTH_ENCODINGS[encoding])
    return metres.masked_fill_(~(metres > 0) | metres.isinf(), math.nan)  # NaN > 0 is False


def valid_fraction(depth: np.ndarray) -> float:
    """Fraction of the pixels of a decoded depth image that hold a depth (finite, > 0)."""
    valid = depth > 0  # NaN > 0 is False
    if depth.dtype.kind == 'f':
        valid &= depth < np.inf
    return float(np.count_nonzero(valid)) / max(depth.size, 1)


def decode_depth(encoding: str, height: int, width: int, step: int, data,
                 is_bigendian: bool = False) -> np.ndarray:
    """
    Return the ``(H, W)`` array (uint16 mm or float32 m, native order) of a raw depth image.

    Takes the fields of a ``sensor_msgs/Image``; :class:`FrameError` names a wrong encoding, size,
    step or buffer length.
    """
    if encoding not in DEPTH_ENCODINGS:
        raise FrameError(f'depth encoding must be one of {sorted(DEPTH_ENCODINGS)} (aligned '
                         f'depth, mm or m), got {encoding!r}')
    if height <= 0 or width <= 0:
        raise FrameError(f'depth image has zero size {width}x{height}')
    kind = 'f4' if encoding == '32FC1' else 'u2'
    rows = raw_rows(height, width, step, data, 4 if kind == 'f4' else 2, encoding)
    dtype = np.dtype(('>' if is_bigendian else '<') + kind)
    return np.ascontiguousarray(rows).view(dtype).reshape(height, width).astype(
        dtype.newbyteorder('='))


def _depth_pixels(points: torch.Tensor, depth_size: tuple[int, int],
                  image_size: tuple[int, int]) -> torch.Tensor:
    """Colour pixels ``(..., 2)`` x/y to the nearest depth pixel (long), pixel centres aligned."""
    (dh, dw), (ih, iw) = depth_size, image_size
    factor = torch.tensor([dw / iw, dh / ih], device=points.device, dtype=torch.float32)
    return torch.floor((points.float() + 0.5) * factor).long()


def depth_at(depth_m: torch.Tensor, points: torch.Tensor, image_size: tuple[int, int],
             window: int = 5) -> torch.Tensor:
    """
    Robust depth ``(...)`` at colour pixels ``points (..., 2)``: median of the valid depth.

    The median runs over a ``window`` x ``window`` neighbourhood in depth pixels; holes and
    pixels outside the image are ignored; NaN where the window holds no valid depth.
    """
    h, w = depth_m.shape
    shape = points.shape[:-1]
    px = _depth_pixels(points.reshape(-1, 2).to(depth_m.device), (h, w), image_size)
    r = window // 2
    offs = torch.arange(-r, r + 1, device=depth_m.device)
    xs = px[:, 0, None, None] + offs[None, None, :]  # (N, 1, win)
    ys = px[:, 1, None, None] + offs[None, :, None]  # (N, win, 1)
    inside = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    vals = depth_m[ys.clamp(0, h - 1), xs.clamp(0, w - 1)]
    vals = torch.where(inside, vals, torch.full_like(vals, math.nan)).reshape(len(px), -1)
    if vals.numel() == 0:
        return torch.full(shape, math.nan, device=depth_m.device)
    return vals.nanmedian(dim=1).values.reshape(shape)


def back_project(points: torch.Tensor, z: torch.Tensor,
                 K: np.ndarray | torch.Tensor) -> torch.Tensor:
    """Camera-frame XYZ ``(..., 3)`` metres of pixels ``points (..., 2)`` at depth ``z (...)``."""
    K = torch.as_tensor(np.asarray(K, np.float64).reshape(3, 3), dtype=torch.float32,
                        device=points.device)
    x = (points[..., 0] - K[0, 2] - K[0, 1] * (points[..., 1] - K[1, 2]) / K[1, 1]) / K[0, 0]
    y = (points[..., 1] - K[1, 2]) / K[1, 1]
    return torch.stack([x * z, y * z, z], dim=-1)


def keypoints_xyz(depth_m: torch.Tensor, keypoints: np.ndarray | torch.Tensor,
                  image_size: tuple[int, int], K: np.ndarray | torch.Tensor,
                  window: int = 5) -> np.ndarray:
    """``(P, K, 3)`` float32 metres of keypoints from measured depth; NaN where no depth."""
    points = torch.as_tensor(np.asarray(keypoints, np.float32), device=depth_m.device)
    z = depth_at(depth_m, points, image_size, window)
    return back_project(points, z, K).cpu().numpy().astype(np.float32)


def fit_depth_scale(pred_z: np.ndarray | torch.Tensor, pixels: np.ndarray | torch.Tensor,
                    depth_m: torch.Tensor, image_size: tuple[int, int],
                    min_points: int = 50) -> float | None:
    """
    Robust factor ``s`` with ``s * pred_z`` matching measured depth at image ``pixels (N, 2)``.

    The median of the per-point ratios depth / predicted depth over points with both valid (the
    pointmap's kept foreground points); None when fewer than ``min_points`` such points exist.
    """
    pred = torch.as_tensor(np.asarray(pred_z, np.float32), device=depth_m.device).reshape(-1)
    px = torch.as_tensor(np.asarray(pixels, np.float32), device=depth_m.device).reshape(-1, 2)
    h, w = depth_m.shape
    dpx = _depth_pixels(px, (h, w), image_size)
    inside = (dpx[:, 0] >= 0) & (dpx[:, 0] < w) & (dpx[:, 1] >= 0) & (dpx[:, 1] < h)
    measured = depth_m[dpx[:, 1].clamp(0, h - 1), dpx[:, 0].clamp(0, w - 1)]
    ok = inside & torch.isfinite(measured) & torch.isfinite(pred) & (pred > 0)
    if int(ok.sum()) < min_points:
        return None
    return float((measured[ok] / pred[ok]).median())


class DepthScale:
    """
    Per-camera pointmap scale fitted to depth, smoothed over time (log-space exponential filter).

    ``update(raw, stamp)`` takes the frame's fit (or None) and returns the smoothed scale.
    ``variation`` is the last frame-to-frame relative change of the raw fit, ``|s_t/s_t-1 - 1|``,
    for diagnostics; ``smoothed_variation`` the same for the smoothed scale.
    """

    def __init__(self, time_constant: float = 0.5) -> None:
        self.time_constant = time_constant
        self.scale: float | None = None
        self.raw: float | None = None
        self.variation = 0.0
        self.smoothed_variation = 0.0
        self.fits = 0
        self._stamp: float | None = None

    def reset(self) -> None:
        """Forget the scale (e.g. on a backwards time jump)."""
        self.__init__(self.time_constant)

    def update(self, raw: float | None, stamp: float) -> float | None:
        """Fold in this frame's fit ``raw`` (None: no fit this frame) taken at ``stamp``."""
        if self._stamp is not None and stamp < self._stamp:
            self.reset()
        if raw is None or not math.isfinite(raw) or raw <= 0:
            return self.scale
        self.variation = abs(raw / self.raw - 1.0) if self.raw else 0.0
        self.raw = raw
        self.fits += 1
        if self.scale is None or self._stamp is None:
            self.scale, self._stamp = raw, stamp
            return self.scale
        dt = max(stamp - self._stamp, 0.0)
        a = 1.0 - math.exp(-dt / self.time_constant) if self.time_constant > 0 else 1.0
        new = math.exp(math.log(self.scale) + a * (math.log(raw) - math.log(self.scale)))
        self.smoothed_variation = abs(new / self.scale - 1.0)
        self.scale, self._stamp = new, stamp
        return self.scale


def torso_axes(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    REP 103 / REP-155 body axes per person from camera-frame keypoints ``xyz (P, K, 3)``.

    z up the spine (hip centre to shoulder centre), y to the person's left (right-to-left
    shoulders and hips, made orthogonal to z), x = y cross z, forward out of the chest. Returns
    rotations ``(P, 3, 3)`` whose columns are the body axes in the camera frame (identity where
    unknown) and a mask ``(P,)`` of the people with all four torso keypoints finite and not
    degenerate.
    """
    torso = np.asarray(xyz).take(_TORSO, 1).astype(np.float64, copy=False)  # (P, 4, 3)
    full = np.isfinite(torso.reshape(-1, 12) @ _ONES12)  # l_sh, r_sh, l_hip, r_hip all finite
    if all_of(full):
        t = torso
    elif any_of(full):
        t = torso[full]
    else:
        return np.tile(_EYE3, (len(torso), 1, 1)), full
    up_left = _UP_LEFT @ t  # (P, 2, 3): mid-shoulders - mid-hips; right-to-left, both pairs
    up, left = up_left[:, 0], up_left[:, 1]
    nu = np.sqrt(dot(up, up))
    z = up / np.maximum(nu, 1e-9)
    y = left - dot(left, z) * z
    ny = np.sqrt(dot(y, y))
    good = np.minimum(ny, nu)[:, 0] > 1e-6  # both long enough (NaN: not)
    y = y / np.maximum(ny, 1e-9)
    axes = columns(cross(y, z), y, z)
    if all_of(good) and len(t) == len(torso):
        return axes, full
    rot = np.tile(_EYE3, (len(torso), 1, 1))
    ok = np.zeros(len(torso), bool)
    rows = np.flatnonzero(full)[good]
    rot[rows], ok[rows] = axes[good], True
    return rot, ok


_ONES12, _EYE3 = np.ones(12), np.eye(3)
_UP_LEFT = np.array([[0.5, 0.5, -0.5, -0.5], [1.0, -1, 1, -1]])


def torso_poses(xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Torso centre and orientation per person from camera-frame keypoints ``xyz (P, K, 3)``.

    Position: mean of the finite shoulders and hips (at least two). Orientation, when all four
    are finite: the :func:`torso_axes` body frame (z up the spine, y to the person's left, x
    forward); identity otherwise. Returns positions ``(P, 3)``, quaternions ``(P, 4)`` x/y/z/w
    and a validity mask ``(P,)`` (position known).
    """
    xyz = np.asarray(xyz, np.float64)
    torso = xyz[:, list(TORSO)]
    finite = np.isfinite(torso).all(-1)
    count = finite.sum(1)
    valid = count >= 2
    pos = np.where(finite[..., None], torso, 0.0).sum(1) / np.maximum(count, 1)[:, None]
    pos[~valid] = np.nan
    rot, ok = torso_axes(xyz)
    quat = np.tile([0.0, 0.0, 0.0, 1.0], (len(xyz), 1))
    if ok.any():
        quat[ok] = Rotation.from_matrix(rot[ok]).as_quat()
    return pos.astype(np.float32), quat.astype(np.float32), valid


__all__ = ['DEPTH_ENCODINGS', 'TORSO', 'DepthScale', 'back_project', 'decode_depth', 'depth_at',
           'depth_to_metres', 'fit_depth_scale', 'keypoints_xyz', 'torso_axes', 'torso_poses']
