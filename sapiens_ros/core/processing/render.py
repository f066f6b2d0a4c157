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
Render outputs in torch on any device: overlays, normal encodings, alpha and cloud records.

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

from .device_frame import DeviceFrame
from .encode import encode, FORMATS
from .hostbuf import host_copy, host_empty, to_host
from .pose_overlay import pose_overlay, PoseDrawing
from ..models.metadata import seg_class_info

#: What can be rendered, by name (``RenderRequest.outputs``). ``pose_overlay`` needs a
#: :class:`PoseDrawing` (track ids and colours: drawn after tracking, see ``render_tensors``).
RENDERABLE = ('seg_overlay', 'normal_overlay', 'normal16', 'cloud', 'depth', 'matting_alpha',
              'pose_overlay')
#: Drawn after the step, once tracking ran (:func:`render_after_tracking`), on the frame the
#: pipeline keeps on its device for them (``RenderRequest.keeps_frame``).
AFTER_TRACKING = frozenset({'pose_overlay'})
#: What can be encoded as JPEG/PNG (``RenderRequest.encode``), with its channel order.
ENCODABLE = {'seg_overlay': 'bgr', 'normal_overlay': 'rgb', 'pose_overlay': 'rgb',
             'seg_labels': 'mono', 'matting_alpha': 'mono'}
#: Channel order of each overlay as rendered (what its message encoding says).
OVERLAY_ORDER = {name: order for name, order in ENCODABLE.items() if name.endswith('_overlay')}
#: Scale of the 16-bit normal encoding (``16SC3``): component = value / 32767.
NORMAL16_SCALE = 32767.0

_XYZ = [('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('rgb', '<f4')]
#: Point record of ``pointmap/points``: xyz (metres), packed 0x00RRGGBB in a float32, [label].
CLOUD_DTYPE = np.dtype(_XYZ)
CLOUD_LABEL_DTYPE = np.dtype(_XYZ + [('label', '<u4')])


def image_encoding(name: str) -> str:
    """Return the image encoding (``bgr8``...) of the 8-bit image ``name`` of :data:`ENCODABLE`."""
    return f'{ENCODABLE[name]}8'


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
        """Return this request restricted to ``names`` (raw outputs and ``name.format`` keys)."""
        return replace(self, outputs=frozenset(set(self.outputs) & set(names)),
                       encode=frozenset(p for p in self.encode if f'{p[0]}.{p[1]}' in names))

    def keys(self) -> set[str]:
        """Return the ``FrameResult.rendered`` keys this request fills."""
        return set(self.outputs) | {f'{n}.{f}' for n, f in self.encode}

    @property
    def keeps_frame(self) -> bool:
        """
        Tell whether the pipeline keeps the frame on its device for :data:`AFTER_TRACKING`.

        The one place that decides it: a kept frame holds a frame of device memory for as long
        as its result lives, so only a request for the pose overlay (raw or encoded) keeps one.
        """
        return not self.names.isdisjoint(AFTER_TRACKING)


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


@functools.lru_cache(maxsize=16)
def _blend_lut(alpha: float, device: torch.device) -> torch.Tensor:
    """
    ``(256 * 256,)`` uint8 blend table, indexed by ``top * 256 + base``.

    Holds ``cv2.addWeighted(base, 1 - alpha, top, alpha, 0)`` for every pair of values.
    """
    values = np.arange(256, dtype=np.uint8)
    base = np.ascontiguousarray(np.broadcast_to(values[None, :], (256, 256)))
    top = np.ascontiguousarray(base.T)
    lut = cv2.addWeighted(base, 1.0 - alpha, top, alpha, 0.0)
    return torch.from_numpy(lut.reshape(-1)).to(device)


def _lookup(lut: torch.Tensor, index: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    """``lut[index]`` (an int32 index), written into ``out`` when given."""
    if out is None:
        return lut.index_select(0, index.view(-1)).view(index.shape)
    torch.index_select(lut, 0, index.view(-1), out=out.view(-1))
    return out


def seg_overlay(rgb: torch.Tensor, labels: torch.Tensor, alpha: float = 0.5,
                order: str = 'rgb', out: torch.Tensor | None = None) -> torch.Tensor:
    """
    Class palette blended over ``rgb`` (HxWx3 uint8) on the person; uint8 in ``order``.

    One table lookup per value (integer only): the same bytes as ``cv2.addWeighted``.
    """
    lut = _seg_lut(float(alpha), order, rgb.device)
    row = labels.to(torch.int32).clamp_(max=lut.numel() // 768 - 1).mul_(768)
    index = torch.empty(rgb.shape, dtype=torch.int32, device=rgb.device)
    for c in range(3):
        source = 2 - c if order == 'bgr' else c
        torch.add(row, rgb[..., source], alpha=1, out=index[..., c]).add_(256 * c)
    return _lookup(lut, index, out)


def normal_colors(normals: torch.Tensor) -> torch.Tensor:
    """Map unit normals (HxWx3) to RGB uint8 ``(n + 1) * 127.5``, truncated; non-finite: black."""
    return _normal_levels(normals).to(torch.uint8)


def _normal_levels(normals: torch.Tensor) -> torch.Tensor:
    """``(n + 1) * 127.5`` saturated to [0, 255] (NaN to 0), float32, before truncation."""
    levels = torch.empty(normals.shape, dtype=torch.float32, device=normals.device)
    torch.add(normals, 1.0, out=levels)  # row-major whatever the normals' strides
    return levels.mul_(127.5).nan_to_num_(0.0, 255.0, 0.0).clamp_(0, 255)


def normal_overlay(rgb: torch.Tensor, normals: torch.Tensor, alpha: float = 0.6,
                   out: torch.Tensor | None = None) -> torch.Tensor:
    """Blend the normal colours over ``rgb`` with weight ``alpha``; RGB uint8 (a table lookup)."""
    index = _normal_levels(normals).to(torch.int32)  # truncation, as the uint8 colours
    index.mul_(256).add_(rgb)
    return _lookup(_blend_lut(float(alpha), rgb.device), index, out)


def normals16(normals: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``16SC3`` encoding of unit normals: ``round(n * 32767)`` as int16 (NaN to 0)."""
    scaled = torch.nan_to_num(normals.float(), nan=0.0).clamp_(-1, 1).mul_(NORMAL16_SCALE)
    scaled.round_()
    return scaled.to(torch.int16) if out is None else out.copy_(scaled)


def alpha8(alpha: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``mono8`` alpha: ``round(clamp(alpha, 0, 1) * 255)`` as uint8 (NaN: 0, transparent)."""
    levels = torch.nan_to_num(alpha.float(), nan=0.0).clamp_(0, 1).mul_(255.0).round_()
    return levels.to(torch.uint8) if out is None else out.copy_(levels)


def pack_rgb(colors: torch.Tensor) -> torch.Tensor:
    """``(N, 3)`` uint8 RGB to int32 ``0x00RRGGBB`` (the PCL/RViz packed-float bit pattern)."""
    c = colors.to(torch.int32)
    return (c[:, 0] << 16) | (c[:, 1] << 8) | c[:, 2]


def cloud_records(points: torch.Tensor, colors: torch.Tensor, labels: torch.Tensor | None,
                  out: torch.Tensor | None = None) -> torch.Tensor:
    """
    ``(N, 4|5)`` int32 rows holding the bytes of :data:`CLOUD_DTYPE` / ``CLOUD_LABEL_DTYPE``.

    x, y, z keep their float32 bits, rgb is packed, label widened to uint32: view the host copy
    with :func:`cloud_dtype` to get the structured array.
    """
    columns = [points.float().contiguous().view(torch.int32), pack_rgb(colors)[:, None]]
    if labels is not None:
        columns.append(labels.to(torch.int32)[:, None])
    return torch.cat(columns, 1) if out is None else torch.cat(columns, 1, out=out)


def cloud_dtype(with_labels: bool) -> np.dtype:
    """Record dtype of a cloud with or without the label field."""
    return CLOUD_LABEL_DTYPE if with_labels else CLOUD_DTYPE


def masked_depth(xyz: torch.Tensor, labels: torch.Tensor | None, stride: int,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    """``(Hs, Ws)`` z in metres from a strided XYZ map, NaN where ``labels`` is background."""
    depth = xyz[..., 2]
    if labels is None:
        return depth.clone() if out is None else out.copy_(depth)
    bg = labels[::stride, ::stride][:depth.shape[0], :depth.shape[1]] == 0
    nan = torch.tensor(float('nan'), device=depth.device)
    return torch.where(bg, nan, depth) if out is None else torch.where(bg, nan, depth, out=out)


def render_tensors(request: RenderRequest, rgb: torch.Tensor | None,
                   labels: torch.Tensor | None = None, normals: torch.Tensor | None = None,
                   pointmap: dict | None = None, matting: torch.Tensor | None = None,
                   pose: PoseDrawing | None = None) -> dict[str, torch.Tensor | np.ndarray]:
    """
    Compute the requested outputs of one frame from what ran, on the inputs' device.

    ``rgb`` is the frame (HxWx3 uint8 RGB), ``labels`` the seg map, ``normals`` HxWx3,
    ``pointmap`` the pipeline's per-frame dict (``xyz``, ``points``, ``colors``, ``labels``,
    ``stride``), ``matting`` the HxW alpha, ``pose`` what the pose overlay draws. Outputs
    whose inputs are missing (overlays without ``rgb``, the pose overlay without ``pose``) are
    left out. On the CPU each raw output is written straight into its message-ready host array
    (returned instead of a tensor): no copy follows.
    """
    names, alpha = request.names, request.overlay_alpha
    inputs = [t for t in (rgb, labels, normals, matting) if t is not None]
    cpu = bool(inputs) and inputs[0].device.type == 'cpu'
    out: dict = {}

    def emit(name: str, shape: tuple, dtype, make) -> None:
        if cpu and name in request.outputs:  # write into the host buffer directly
            host = host_empty(tuple(shape), dtype)
            make(torch.from_numpy(host))
            out[name] = host
        else:
            out[name] = make(None)

    if labels is not None:
        if 'seg_overlay' in names and rgb is not None:
            emit('seg_overlay', rgb.shape, np.uint8, lambda o: seg_overlay(
                rgb, labels, alpha, OVERLAY_ORDER['seg_overlay'], o))
        if 'seg_labels' in names:
            out['seg_labels'] = labels
    if normals is not None:
        if 'normal_overlay' in names and rgb is not None:
            emit('normal_overlay', rgb.shape, np.uint8,
                 lambda o: normal_overlay(rgb, normals, alpha, o))
        if 'normal16' in names:
            emit('normal16', normals.shape, np.int16, lambda o: normals16(normals, o))
    if matting is not None and 'matting_alpha' in names:
        emit('matting_alpha', matting.shape, np.uint8, lambda o: alpha8(matting, o))
    if pose is not None and 'pose_overlay' in names and rgb is not None:
        emit('pose_overlay', rgb.shape, np.uint8, lambda o: pose_overlay(rgb, pose, o))
    if pointmap is not None:
        if 'depth' in names:
            mask = labels if request.foreground_only else None
            emit('depth', pointmap['xyz'].shape[:2], np.float32,
                 lambda o: masked_depth(pointmap['xyz'], mask, pointmap['stride'], o))
        if 'cloud' in names:
            width = 4 if pointmap['labels'] is None else 5
            emit('cloud', (len(pointmap['points']), width), np.int32, lambda o: cloud_records(
                pointmap['points'], pointmap['colors'], pointmap['labels'], o))
    return out


def to_buffers(tensors: dict[str, torch.Tensor | np.ndarray],
               request: RenderRequest) -> dict[str, np.ndarray]:
    """
    Host copies of rendered tensors (one message-ready buffer each) and the encoded images.

    The cloud comes back as a structured array of :func:`cloud_dtype` records.
    """
    out = {}
    for name in request.outputs:
        if name in tensors:
            value = tensors[name]
            out[name] = value if isinstance(value, np.ndarray) else to_host(value)
    if 'cloud' in out:
        cloud = out['cloud']
        out['cloud'] = cloud.view(cloud_dtype(cloud.shape[1] == 5)).reshape(-1)
    for name, fmt in request.encode:
        if name in tensors:
            data = encode(tensors[name], fmt, ENCODABLE[name], request.jpeg_quality)
            out[f'{name}.{fmt}'] = host_copy(data)
    return out


def render_after_tracking(frame: DeviceFrame, request: RenderRequest,
                          pose: PoseDrawing) -> dict[str, np.ndarray]:
    """
    Draw ``pose`` on the frame the pipeline kept on its device: the pose overlay, raw and encoded.

    Runs in the caller's thread (the node's publish thread): on the frame's device, its stream
    ordered after the step (:meth:`DeviceFrame.current`). The drawn image reaches the host as
    one message-ready buffer; its JPEG is encoded on the GPU where an encoder is installed
    (only the bytes come back), else by OpenCV here. On the CPU the frame is the uploaded host
    frame and the overlay is drawn straight into its message buffer, as by :func:`render_result`.
    """
    request = request.only(AFTER_TRACKING | {f'{n}.{f}' for n, f in request.encode
                                             if n in AFTER_TRACKING})
    with frame.current() as rgb:
        return to_buffers(render_tensors(request, rgb, pose=pose), request)


def render_result(result, image_rgb: np.ndarray | None, request: RenderRequest,
                  pose: PoseDrawing | None = None) -> dict[str, np.ndarray]:
    """
    Render a host ``FrameResult`` (not rendered by the pipeline) with the same torch code, on CPU.

    ``image_rgb`` (HxWx3 uint8) is needed for the overlays only; ``pose`` for the pose overlay.
    """
    def tensor(values):
        return None if values is None else torch.from_numpy(np.ascontiguousarray(values))

    pm = result.pointmap
    pointmap = None if pm is None else {
        'xyz': tensor(pm.xyz), 'points': tensor(pm.points), 'colors': tensor(pm.colors),
        'labels': tensor(pm.labels), 'stride': pm.stride}
    labels = tensor(result.seg.labels) if result.seg is not None else None
    normals = tensor(result.normal.normals) if result.normal is not None else None
    tensors = render_tensors(request, tensor(image_rgb), labels, normals, pointmap,
                             tensor(result.matting), pose)
    return to_buffers(tensors, request)
