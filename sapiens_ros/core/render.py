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
Render outputs in torch on any device: overlays, normal encodings and the point-cloud record.

The pipeline runs these on its device right after post-processing (``Pipeline(...,
render=RenderRequest(...))``) so that each rendered output reaches the host as one contiguous,
message-ready buffer; the message builders run the same functions on host tensors when a result
was not rendered. Record layouts are numpy dtypes: the core knows no ROS type.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
import functools

import cv2
import numpy as np
import torch

from .encode import encode, FORMATS
from .hostbuf import host_empty, to_host
from .metadata import seg_class_info

#: What the pipeline can render, by name (``RenderRequest.outputs``).
RENDERABLE = ('seg_overlay', 'normal_overlay', 'normal16', 'cloud', 'depth')
#: What can be encoded as JPEG/PNG (``RenderRequest.encode``), with its channel order.
ENCODABLE = {'seg_overlay': 'bgr', 'normal_overlay': 'rgb', 'seg_labels': 'mono'}
#: Channel order of each overlay as rendered (what its message encoding says).
OVERLAY_ORDER = {'seg_overlay': 'bgr', 'normal_overlay': 'rgb'}
#: Scale of the 16-bit normal encoding (``16SC3``): component = value / 32767.
NORMAL16_SCALE = 32767.0

_XYZ = [('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('rgb', '<f4')]
#: Point record of ``pointmap/points``: xyz (metres), packed 0x00RRGGBB in a float32, [label].
CLOUD_DTYPE = np.dtype(_XYZ)
CLOUD_LABEL_DTYPE = np.dtype(_XYZ + [('label', '<u4')])


@dataclass(frozen=True)
class RenderRequest:
    """
    Which outputs to render on the device, and how.

    ``outputs`` reach the host raw (one buffer each, under their name); ``encode`` pairs
    ``(name, 'jpeg'|'png')`` reach it as the file's bytes, under ``'<name>.<format>'``.
    """

    outputs: frozenset[str] = frozenset()  # names from RENDERABLE
    encode: frozenset[tuple[str, str]] = frozenset()  # (name from ENCODABLE, format)
    overlay_alpha: float = 0.5
    foreground_only: bool = True  # depth: NaN where seg says background
    jpeg_quality: int = 90

    def __post_init__(self) -> None:
        unknown = sorted(set(self.outputs) - set(RENDERABLE)) + sorted(
            f'{n}.{f}' for n, f in self.encode if n not in ENCODABLE or f not in FORMATS)
        if unknown:
            raise ValueError(f'cannot render {unknown}; known: {", ".join(RENDERABLE)}, and '
                             f'{", ".join(ENCODABLE)} as {" or ".join(FORMATS)}')

    def __bool__(self) -> bool:
        return bool(self.outputs or self.encode)

    @property
    def names(self) -> set[str]:
        """Every tensor to compute: the raw outputs and the images to encode."""
        return set(self.outputs) | {n for n, _ in self.encode}

    def only(self, names: Collection[str]) -> RenderRequest:
        """The same request restricted to ``names`` (raw outputs and ``name.format`` keys)."""
        return replace(self, outputs=frozenset(set(self.outputs) & set(names)),
                       encode=frozenset(p for p in self.encode if f'{p[0]}.{p[1]}' in names))

    def keys(self) -> set[str]:
        """Return the ``FrameResult.rendered`` keys this request fills."""
        return set(self.outputs) | {f'{n}.{f}' for n, f in self.encode}


@functools.lru_cache(maxsize=16)
def _seg_lut(alpha: float, order: str, device: torch.device) -> torch.Tensor:
    """
    ``(classes * 3 * 256,)`` uint8: the blended value of every (class, channel, pixel value).

    Computed once per alpha by ``cv2.addWeighted`` itself, so the overlay is byte-identical to
    OpenCV's per-pixel blend; class 0 (background) keeps the pixel.
    """
    palette = np.ascontiguousarray(seg_class_info().palette, np.uint8)
    palette = palette[:, ::-1] if order == 'bgr' else palette
    shape = (len(palette), 3, 256)
    base = np.ascontiguousarray(np.broadcast_to(np.arange(256, dtype=np.uint8), shape))
    top = np.ascontiguousarray(np.broadcast_to(palette[:, :, None], shape))
    lut = cv2.addWeighted(base.reshape(-1, 256), 1.0 - alpha, top.reshape(-1, 256), alpha, 0.0)
    lut = lut.reshape(shape)
    lut[0] = base[0]
    return torch.from_numpy(lut.reshape(-1)).to(device)


def blend(base: torch.Tensor, top: torch.Tensor, alpha: float) -> torch.Tensor:
    """``base * (1 - alpha) + top * alpha`` in float32 (``cv2.addWeighted``'s arithmetic)."""
    return torch.add(base.float().mul_(1.0 - alpha), top.float().mul_(alpha))


def to_uint8(values: torch.Tensor) -> torch.Tensor:
    """Round half to even and saturate to uint8, as OpenCV's ``saturate_cast`` does."""
    return values.round_().clamp_(0, 255).to(torch.uint8)


def seg_overlay(rgb: torch.Tensor, labels: torch.Tensor, alpha: float = 0.5,
                order: str = 'rgb') -> torch.Tensor:
    """
    Class palette blended over ``rgb`` (HxWx3 uint8) on the person; uint8 in ``order``.

    One table lookup per value (integer only): the same bytes as ``cv2.addWeighted``.
    """
    lut = _seg_lut(float(alpha), order, rgb.device)
    classes = lut.numel() // 768
    base = rgb.flip(-1) if order == 'bgr' else rgb
    row = labels.to(torch.int32).clamp_(max=classes - 1).mul_(768)[..., None]
    return lut[row + _CHANNEL_OFFSETS.to(rgb.device) + base.to(torch.int32)]


_CHANNEL_OFFSETS = torch.tensor([0, 256, 512], dtype=torch.int32)


def normal_colors(normals: torch.Tensor) -> torch.Tensor:
    """Unit normals (HxWx3) to RGB uint8 ``(n + 1) * 127.5``, truncated; non-finite are black."""
    rgb = torch.nan_to_num((normals.float() + 1.0) * 127.5, nan=0.0, posinf=255.0, neginf=0.0)
    return rgb.clamp_(0, 255).to(torch.uint8)


def normal_overlay(rgb: torch.Tensor, normals: torch.Tensor, alpha: float = 0.6) -> torch.Tensor:
    """Normal colours blended over ``rgb`` with weight ``alpha``; RGB uint8."""
    return to_uint8(blend(rgb, normal_colors(normals), alpha))


def normals16(normals: torch.Tensor) -> torch.Tensor:
    """``16SC3`` encoding of unit normals: ``round(n * 32767)`` as int16 (NaN to 0)."""
    scaled = torch.nan_to_num(normals.float(), nan=0.0).clamp_(-1, 1) * NORMAL16_SCALE
    return scaled.round_().to(torch.int16)


def pack_rgb(colors: torch.Tensor) -> torch.Tensor:
    """``(N, 3)`` uint8 RGB to int32 ``0x00RRGGBB`` (the PCL/RViz packed-float bit pattern)."""
    c = colors.to(torch.int32)
    return (c[:, 0] << 16) | (c[:, 1] << 8) | c[:, 2]


def cloud_records(points: torch.Tensor, colors: torch.Tensor,
                  labels: torch.Tensor | None) -> torch.Tensor:
    """
    ``(N, 4|5)`` int32 rows holding the bytes of :data:`CLOUD_DTYPE` / ``CLOUD_LABEL_DTYPE``.

    x, y, z keep their float32 bits, rgb is packed, label widened to uint32: view the host copy
    with :func:`cloud_dtype` to get the structured array.
    """
    columns = [points.float().contiguous().view(torch.int32), pack_rgb(colors)[:, None]]
    if labels is not None:
        columns.append(labels.to(torch.int32)[:, None])
    return torch.cat(columns, 1)


def cloud_dtype(with_labels: bool) -> np.dtype:
    """Record dtype of a cloud with or without the label field."""
    return CLOUD_LABEL_DTYPE if with_labels else CLOUD_DTYPE


def masked_depth(xyz: torch.Tensor, labels: torch.Tensor | None, stride: int) -> torch.Tensor:
    """``(Hs, Ws)`` z in metres from a strided XYZ map, NaN where ``labels`` is background."""
    depth = xyz[..., 2]
    if labels is None:
        return depth
    bg = labels[::stride, ::stride][:depth.shape[0], :depth.shape[1]] == 0
    return depth.masked_fill(bg, float('nan'))


def render_tensors(request: RenderRequest, rgb: torch.Tensor | None, labels: torch.Tensor | None = None,
                   normals: torch.Tensor | None = None,
                   pointmap: dict | None = None) -> dict[str, torch.Tensor]:
    """
    Compute the requested outputs of one frame from what ran, on the inputs' device.

    ``rgb`` is the frame (HxWx3 uint8 RGB), ``labels`` the seg map, ``normals`` HxWx3,
    ``pointmap`` the pipeline's per-frame dict (``xyz``, ``points``, ``colors``, ``labels``,
    ``stride``). Outputs whose inputs are missing (overlays without ``rgb``) are left out.
    """
    names, alpha = request.names, request.overlay_alpha
    out = {}
    if labels is not None:
        if 'seg_overlay' in names and rgb is not None:
            out['seg_overlay'] = seg_overlay(rgb, labels, alpha, OVERLAY_ORDER['seg_overlay'])
        if 'seg_labels' in names:
            out['seg_labels'] = labels
    if normals is not None:
        if 'normal_overlay' in names and rgb is not None:
            out['normal_overlay'] = normal_overlay(rgb, normals, alpha)
        if 'normal16' in names:
            out['normal16'] = normals16(normals)
    if pointmap is not None:
        if 'depth' in names:
            mask = labels if request.foreground_only else None
            out['depth'] = masked_depth(pointmap['xyz'], mask, pointmap['stride'])
        if 'cloud' in names:
            out['cloud'] = cloud_records(pointmap['points'], pointmap['colors'],
                                         pointmap['labels'])
    return out


def to_buffers(tensors: dict[str, torch.Tensor], request: RenderRequest) -> dict[str, np.ndarray]:
    """
    Host copies of rendered tensors (one message-ready buffer each) and the encoded images.

    The cloud comes back as a structured array of :func:`cloud_dtype` records.
    """
    out = {}
    for name in request.outputs:
        if name in tensors:
            out[name] = to_host(tensors[name])
    if 'cloud' in out:
        cloud = out['cloud']
        out['cloud'] = cloud.view(cloud_dtype(cloud.shape[1] == 5)).reshape(-1)
    for name, fmt in request.encode:
        if name in tensors:
            data = encode(tensors[name], fmt, ENCODABLE[name], request.jpeg_quality)
            out[f'{name}.{fmt}'] = host_copy(data)
    return out


def host_copy(values: np.ndarray) -> np.ndarray:
    """Copy ``values`` into a message-ready host buffer (for the small encoded images)."""
    out = host_empty(values.shape, values.dtype)
    out[...] = values
    return out


def render_result(result, image_rgb: np.ndarray | None,
                  request: RenderRequest) -> dict[str, np.ndarray]:
    """
    Render a host ``FrameResult`` (not rendered by the pipeline) with the same torch code, on CPU.

    ``image_rgb`` (HxWx3 uint8) is needed for the overlays only.
    """
    def tensor(values):
        return None if values is None else torch.from_numpy(np.ascontiguousarray(values))

    pm = result.pointmap
    pointmap = None if pm is None else {
        'xyz': tensor(pm.xyz), 'points': tensor(pm.points), 'colors': tensor(pm.colors),
        'labels': tensor(pm.labels), 'stride': pm.stride}
    tensors = render_tensors(request, tensor(image_rgb), tensor(result.seg.labels) if result.seg else None,
                             tensor(result.normal.normals) if result.normal else None, pointmap)
    return to_buffers(tensors, request)
