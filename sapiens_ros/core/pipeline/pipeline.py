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

"""The Sapiens2 pipeline: frames in, typed per-frame results out, all heads sharing one upload."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
import logging
import math
import numbers

import numpy as np
import torch

from .device_results import DevicePointmap, DevicePose, DeviceResults
from .plan import load_tasks, PIPELINE_BOX_SOURCES, plan_tasks, RUN_ORDER, TaskPlan
from .timing import StageTimer
from ..errors import SapiensError
from ..models.input_size import Size
from ..models.loading import parse_device
from ..models.metadata import keypoint_info
from ..models.runners import Runner
from ..processing import render as R
from ..processing.boxes import (check_boxes, crop_windows, foreground_boxes_batch,
                                full_frame_box)
from ..processing.device_frame import DeviceFrame
from ..processing.encode import encode, on_device_encoder
from ..processing.frames import FrameBatch
from ..processing.heads.normals import NormalResult, unit_normals
from ..processing.heads.pointmap import calibrated_scale, metric_xyz, PointmapResult
from ..processing.heads.pose import decode_heatmaps, flip_back, heatmap_to_image, PoseResult
from ..processing.heads.segmentation import seg_labels, SegResult
from ..processing.hostbuf import host_copy, staging, to_host
from ..processing.letterbox import sample_map

LOG = logging.getLogger(__name__)


@dataclass
class PipelineConfig:
    """Runtime options of the pipeline (all of them safe to change between calls)."""

    input_size: tuple[int, int] = (1024, 768)  # (height, width) of every head without its own
    input_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)  # per head (h, w)
    box_source: str = 'seg'  # 'seg' or 'full' when the caller gives no boxes
    flip_test: bool = False
    max_persons: int = 8
    min_person_area: float = 0.002  # fraction of the frame a seg component must cover
    pointmap_stride: int = 1
    foreground_only: bool = True  # keep only seg-foreground points when seg runs
    render: R.RenderRequest | None = None  # what calls without ``render=`` render on the device
    #: Leave host work to the thread that builds the messages, so that the node's inference
    #: thread only infers and its publish thread (replay: its writer) works beside it: the host
    #: (OpenCV) JPEG/PNG encodes, in ``FrameResult.to_encode`` (``finish_encoding``;
    #: ``build_messages`` calls it), and on a CPU device the rendering as well (``build_messages``
    #: renders what the pipeline did not, with the same code). Device work and GPU encodes stay.
    host_work_later: bool = False

    def size_of(self, task: str) -> Size:
        """Return the ``(height, width)`` input of ``task`` (pose: its crop size)."""
        return Size.of(self.input_sizes.get(task, self.input_size))

    def required_tasks(self, tasks: Sequence[str]) -> tuple[str, ...]:
        """Return ``tasks`` plus seg when pose takes its person boxes from the seg foreground."""
        return load_tasks(tasks, self.box_source)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first invalid option."""
        if self.box_source not in PIPELINE_BOX_SOURCES:
            raise SapiensError(f'box_source must be seg or full, got {self.box_source!r}')
        if self.max_persons < 1:
            raise SapiensError('max_persons must be >= 1')
        if not 0 <= self.min_person_area < 1:
            raise SapiensError('min_person_area must be in [0, 1)')
        if self.pointmap_stride < 1:
            raise SapiensError('pointmap_stride must be >= 1')


@dataclass
class FrameResult:
    """Everything the pipeline computed for one frame, as host numpy arrays."""

    image_size: tuple[int, int]
    pose: PoseResult | None = None
    seg: SegResult | None = None
    normal: NormalResult | None = None
    pointmap: PointmapResult | None = None
    matting: np.ndarray | None = None  # (H, W) float32 alpha
    embedding: np.ndarray | None = None  # (D,) float32 backbone CLS token
    keypoints_xyz: np.ndarray | None = None  # (P, K, 3) metres, NaN off the body / no pointmap
    timings: dict[str, float] = field(default_factory=dict)  # ms per stage for the batch
    #: Outputs rendered on the device (``render.RENDERABLE`` names), each one contiguous host
    #: buffer ready to be a message's data: uint8 overlays (seg BGR, normal RGB), int16
    #: ``normal16``, float32 ``depth``, ``cloud`` records of ``render.cloud_dtype``.
    rendered: dict[str, np.ndarray] = field(default_factory=dict)
    #: Per-output finiteness checked on the device (None: check the host arrays).
    finite: dict[str, bool] | None = None
    #: Images to encode into ``rendered`` (``'<name>.<format>'``: host pixels, format, channel
    #: order, quality), left by the pipeline to the caller's (publish) thread: JPEG/PNG on the
    #: host is CPU work the inference thread does not do. :meth:`finish_encoding` does them.
    to_encode: dict[str, tuple] = field(default_factory=dict)
    #: The frame kept on the pipeline's device for what is drawn after tracking (the pose
    #: overlay, ``render.render_after_tracking``); None unless the render request asked for it
    #: (``RenderRequest.keeps_frame``) and pose ran: it holds a frame of device memory.
    device_frame: DeviceFrame | None = None

    def finish_encoding(self) -> None:
        """Encode the images the pipeline left to this thread into ``rendered`` (once)."""
        while self.to_encode:
            key, (pixels, fmt, order, quality) = self.to_encode.popitem()
            self.rendered[key] = host_copy(encode(pixels, fmt, order, quality))

    def non_finite(self) -> str | None:
        """Name the first output holding NaN/inf (a broken model or dtype), or return None."""
        if self.finite is not None:
            return next((name for name, ok in self.finite.items() if not ok), None)
        if self.pose is not None and len(self.pose) and not (
                np.isfinite(self.pose.keypoints).all() and np.isfinite(self.pose.scores).all()):
            return 'pose keypoints'
        if self.normal is not None and not np.isfinite(self.normal.normals).all():
            return 'normals'
        if self.pointmap is not None and not np.isfinite(self.pointmap.xyz).all():
            return 'pointmap'
        return None


class Pipeline:
    """
    Runs a set of Sapiens2 heads on camera frames.

    Each frame is uploaded and normalised once (:class:`FrameBatch`) and shared by every head;
    each head runs once per call on the frames that need it, batched, at its own input size.
    Pre- and post-processing stay on the runners' device; only the final arrays reach the host.
    """

    def __init__(self, runners: Mapping[str, Runner], config: PipelineConfig | None = None,
                 device: str | torch.device | None = None) -> None:
        if not runners:
            raise SapiensError('a pipeline needs at least one task')
        self.runners = dict(runners)
        self.config = config or PipelineConfig()
        self.config.validate()
        first = next(iter(self.runners.values()))
        self.device = parse_device(device or getattr(first, 'device', 'cpu'))
        for task, runner in self.runners.items():
            runner.check_input_size(self.config.size_of(task))
        info = keypoint_info()
        self._flip_perm = torch.as_tensor(self._flip_permutation(info), device=self.device)
        self.num_keypoints = len(info.names)

    @property
    def tasks(self) -> tuple[str, ...]:
        """Return the tasks this pipeline runs, in run order."""
        return tuple(t for t in RUN_ORDER if t in self.runners)

    def _flip_permutation(self, info) -> np.ndarray:
        runner = self.runners.get('pose')
        pairs = getattr(getattr(runner, 'config', None), 'flip_pairs', None)
        if not pairs:
            return info.flip_permutation
        perm = np.arange(len(info.names))
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        perm[pairs[:, 0]], perm[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
        return perm

    def plan(self, tasks: Sequence[str] | None = None, given_boxes: bool = False) -> TaskPlan:
        """Plan one frame running ``tasks`` (default: every head) with this config."""
        return plan_tasks(self.tasks if tasks is None else tasks, self.tasks,
                          box_source=self.config.box_source, given_boxes=given_boxes,
                          foreground_only=False)

    def __call__(self, frames: Sequence[np.ndarray] | np.ndarray, *,
                 color_order: str | Sequence[str] = 'rgb',
                 boxes: Sequence[np.ndarray | None] | None = None,
                 fx: Sequence[float | None] | float | None = None,
                 tasks: Sequence[str] | None = None,
                 plans: Sequence[TaskPlan] | None = None,
                 render: R.RenderRequest | Sequence[R.RenderRequest | None] | None = None,
                 ) -> list[FrameResult]:
        """
        Run the heads on ``frames`` (uint8 HxWx3 in ``color_order``, or HxW mono8).

        ``color_order`` is one order or one per frame; ``boxes`` gives per-frame xyxy person
        boxes for pose (None: ``config.box_source``); ``fx`` gives per-frame calibrated focal
        lengths for a metric pointmap (None: the predicted scale); ``tasks`` restricts this call
        to a subset of the loaded heads, or ``plans`` (:func:`~.plan.plan_tasks`) gives each
        frame its own; ``render`` names outputs to render on the device into
        ``FrameResult.rendered`` (default ``config.render``), one request or one per frame; a
        request for the pose overlay keeps the frame on the device instead, to be drawn after
        tracking (``FrameResult.device_frame``).
        """
        if isinstance(frames, np.ndarray) and frames.ndim in (2, 3) and frames.dtype == np.uint8:
            frames = [frames]
        n = len(frames)
        boxes = _per_frame(boxes, n, 'boxes')
        fx = [_check_fx(v) for v in _per_frame(fx, n, 'fx')]
        if plans is None:
            plans = [self.plan(tasks, given_boxes=b is not None) for b in boxes]
        elif len(plans) != n:
            raise SapiensError(f'{len(plans)} plans for {n} frames')
        render = render if render is not None else self.config.render
        renders = list(render) if isinstance(render, (list, tuple)) else [render] * n
        if len(renders) != n:
            raise SapiensError(f'{len(renders)} render requests for {n} frames')
        if self.config.host_work_later and self.device.type == 'cpu':
            renders = [None] * n  # rendering is host work here: the caller's thread does it
        cfg = self.config
        timer = StageTimer(self.device)
        batch = FrameBatch(frames, cfg.input_size, self.device, color_order)
        timer.mark('preprocess')
        results = [FrameResult(image_size=f.size) for f in batch.frames]
        dev = DeviceResults()

        def frames_of(task: str) -> list[int]:
            return [i for i, plan in enumerate(plans) if task in plan.run and task in self.runners]

        def forward(task: str, idx: list[int]) -> tuple[dict, list]:
            size = cfg.size_of(task)
            out = self.runners[task](batch.letterboxed(size, idx))
            timer.mark(f'{task}.forward')
            return out, batch.letterboxes_at(size)

        if idx := frames_of('seg'):
            out, lbs = forward('seg', idx)
            logits = out['logits']
            dev.labels = {i: seg_labels(logits[j], lbs[i]) for j, i in enumerate(idx)}
            boxed = [(j, i) for j, i in enumerate(idx) if plans[i].boxes == 'seg']
            if boxed:  # one batch: one pooling, one copy to the host
                rows = [j for j, _ in boxed]
                found = foreground_boxes_batch(
                    logits if len(rows) == len(logits) else logits[rows],
                    [lbs[i] for _, i in boxed], min_area=cfg.min_person_area,
                    max_persons=cfg.max_persons)
                dev.seg_boxes = {i: b for (_, i), b in zip(boxed, found, strict=True)}
            timer.mark('seg.decode')
        if idx := frames_of('normal'):
            out, lbs = forward('normal', idx)
            dev.normals = {i: unit_normals(out['normals'][j], lbs[i])
                           for j, i in enumerate(idx)}
            timer.mark('normal.decode')
        if idx := frames_of('pointmap'):
            out, lbs = forward('pointmap', idx)
            dev.pointmap = self._pointmaps(batch, idx, lbs, out, fx, dev.labels)
            timer.mark('pointmap.decode')
        if idx := frames_of('matting'):
            out, lbs = forward('matting', idx)
            dev.matting = {i: sample_map(out['alphas'][j].float(), lbs[i])[0]
                           for j, i in enumerate(idx)}
            timer.mark('matting.decode')
        if idx := frames_of('backbone'):
            out, _ = forward('backbone', idx)
            dev.embedding = {i: out['pooler_output'][j] for j, i in enumerate(idx)}
        if idx := frames_of('pose'):
            pose = _pose_boxes(batch, idx, plans, boxes, dev.seg_boxes)
            dev.pose = self._pose(batch, pose, dev.pointmap, dev.labels, timer)
        if any(renders):
            dev.rendered = {i: self._render(frame, i, dev, renders[i])
                            for i, frame in enumerate(batch.frames) if renders[i]}
            timer.mark('render')
        for i in dev.pose.frames if dev.pose is not None else ():
            if renders[i] and renders[i].keeps_frame:
                results[i].device_frame = DeviceFrame.keep(batch.frames[i].rgb)
        finite = dev.finite_flags(n)

        with staging(self.device):  # one staging arena, one synchronisation
            scales = self._to_host(results, dev, finite, renders)
        for pointmap, scale in scales:
            pointmap.scale = float(scale)
        timer.mark('to_host')
        timings = timer.result()
        for r in results:
            r.timings = timings
        return results

    def _pointmaps(self, batch: FrameBatch, idx: list[int], lbs: list, out: dict, fx: list,
                   labels: dict[int, torch.Tensor]) -> dict[int, DevicePointmap]:
        cfg = self.config
        stride = cfg.pointmap_stride
        items = {}
        for j, i in enumerate(idx):
            frame = batch.frames[i]
            if fx[i] is not None:
                scale, source = calibrated_scale(fx[i], lbs[i]), 'calibrated'
            elif out.get('scales') is not None:
                scale, source = out['scales'][j].float().reshape(()), 'predicted'
            else:
                scale, source = 1.0, 'none'
            xyz = metric_xyz(out['pointmaps'][j], lbs[i], scale, stride)
            rgb = frame.rgb[::stride, ::stride]
            lab = labels[i][::stride, ::stride] if i in labels else None
            keep = torch.isfinite(xyz).all(-1)
            if lab is not None and cfg.foreground_only:
                keep &= lab != 0
            ys, xs = keep.nonzero(as_tuple=True)  # the one sync: the kept count
            items[i] = DevicePointmap(
                xyz=xyz, points=xyz[ys, xs], colors=rgb[ys, xs],
                labels=None if lab is None else lab[ys, xs],
                pixels=torch.stack([xs, ys], -1) * stride, scale=scale, scale_source=source,
                stride=stride)
        return items

    def _pose(self, batch: FrameBatch, pose: DevicePose, pointmaps: dict[int, DevicePointmap],
              labels: dict[int, torch.Tensor], timer: StageTimer) -> DevicePose:
        """Run pose on ``pose``'s boxes; fill its keypoints (3D ones where a pointmap ran)."""
        cfg = self.config
        idx, counts = pose.frames, pose.counts
        total = sum(counts)
        if total == 0:
            timer.mark('pose.boxes')
            return pose
        size = cfg.size_of('pose')
        all_boxes = torch.as_tensor(np.concatenate([pose.boxes[i] for i in idx]),
                                    device=self.device)
        frame_index = torch.repeat_interleave(torch.as_tensor(idx, device=self.device),
                                              torch.as_tensor(counts, device=self.device))
        centers, sizes = crop_windows(all_boxes, size)
        crops = batch.crops(frame_index, centers, sizes, size)
        if cfg.flip_test:
            crops = torch.cat([crops, crops.flip(-1)])
        timer.mark('pose.crop')
        heatmaps = self.runners['pose'](crops)['heatmaps'].float()
        timer.mark('pose.forward')
        if cfg.flip_test:
            heatmaps = 0.5 * (heatmaps[:total] + flip_back(heatmaps[total:], self._flip_perm))
        coords, kp_scores = decode_heatmaps(heatmaps)
        xy = heatmap_to_image(coords, centers, sizes, tuple(heatmaps.shape[-2:]))
        pose.keypoints, pose.keypoint_scores = xy, kp_scores
        if pointmaps:
            pose.keypoints_xyz = self._keypoints_3d(batch, xy, idx, counts, pointmaps, labels)
        timer.mark('pose.decode')
        return pose

    def _keypoints_3d(self, batch: FrameBatch, xy: torch.Tensor, idx: list[int],
                      counts: list[int], pointmaps: dict[int, DevicePointmap],
                      labels: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        """Bilinear pointmap samples at the keypoints; NaN where the pixel is background."""
        out = {}
        for i, chunk in zip(idx, xy.split(counts), strict=True):
            pm = pointmaps.get(i)
            if pm is None:
                continue
            flat = chunk.reshape(-1, 2)
            height, width = batch.frames[i].size
            stride = pm.stride
            xyz_map = pm.xyz.permute(2, 0, 1)  # (3, Hs, Ws) on the strided image grid
            # Strided grid pixel j sits at image pixel j*stride: sample in that grid's units.
            gx = (flat[:, 0] / stride + 0.5) / xyz_map.shape[2] * 2 - 1
            gy = (flat[:, 1] / stride + 0.5) / xyz_map.shape[1] * 2 - 1
            grid = torch.stack([gx, gy], -1)[None, None]
            pts = torch.nn.functional.grid_sample(xyz_map[None], grid, align_corners=False,
                                                  padding_mode='border')[0, :, 0].T
            inside = (flat[:, 0] >= -0.5) & (flat[:, 0] <= width - 0.5) & \
                (flat[:, 1] >= -0.5) & (flat[:, 1] <= height - 0.5)
            if i in labels:
                inside &= _nearest(labels[i], flat) != 0
            pts = torch.where(inside[:, None], pts, torch.full_like(pts, float('nan')))
            out[i] = pts.reshape(chunk.shape[0], chunk.shape[1], 3)
        return out

    def _render(self, frame, i: int, dev: DeviceResults, request: R.RenderRequest) -> dict:
        """Device tensors of the requested outputs of frame ``i`` that this call can fill."""
        pm = dev.pointmap.get(i)
        return R.render_tensors(request, frame.rgb, dev.labels.get(i), dev.normals.get(i),
                                None if pm is None else pm.render_inputs(), dev.matting.get(i))

    def _to_host(self, results: list[FrameResult], dev: DeviceResults,
                 finite: tuple[list[str], list[list[bool]]] | None,
                 renders: list[R.RenderRequest | None]) -> list[tuple[PointmapResult, object]]:
        """
        Copy the final device arrays to the host (the only transfer of results).

        From a GPU each array lands in a message-ready buffer (:mod:`.hostbuf`), filled when the
        caller's staging block ends (nothing here reads them); on the CPU the arrays are views
        or the message-ready buffers they were computed in. A rendered point cloud is the one
        copy of the kept points (``PointmapResult.points`` is a view of its x, y, z). Returns
        each pointmap with its scale, to be read once the copies landed.
        """
        def host(t, dtype=None):
            return to_host(t, dtype) if isinstance(t, torch.Tensor) else t

        names, flags = finite or ([], [])
        scales = []
        for i, r in enumerate(results):
            if i in dev.rendered:
                request = renders[i]
                later = {(n, f) for n, f in request.encode if self.config.host_work_later and
                         n in dev.rendered[i] and not on_device_encoder(dev.rendered[i][n], f)}
                r.rendered = R.to_buffers(dev.rendered[i], replace(
                    request, encode=request.encode - later))
                r.to_encode = {f'{n}.{f}': (host(dev.rendered[i][n]), f, R.ENCODABLE[n],
                                            request.jpeg_quality) for n, f in later}
            r.finite = dict(zip(names, flags[i], strict=True)) if names else None
            if i in dev.labels:
                r.seg = SegResult(host(dev.labels[i]))
            if i in dev.normals:
                r.normal = NormalResult(host(dev.normals[i]))
            if i in dev.pointmap:
                pm = dev.pointmap[i]
                cloud = r.rendered.get('cloud')
                points = host(pm.points) if cloud is None else \
                    cloud.view(np.float32).reshape(len(cloud), -1)[:, :3]
                r.pointmap = PointmapResult(
                    xyz=host(pm.xyz), points=points, colors=host(pm.colors),
                    labels=host(pm.labels), pixels=host(pm.pixels, np.int32),
                    scale=0.0, scale_source=pm.scale_source, stride=pm.stride)
                scales.append((r.pointmap, host(pm.scale, np.float64)))
            if i in dev.matting:
                r.matting = host(dev.matting[i])
            if i in dev.embedding:
                r.embedding = host(dev.embedding[i].float())
        if dev.pose is not None:
            self._pose_to_host(results, dev.pose, dev.pointmap, host)
        return scales

    def _pose_to_host(self, results: list[FrameResult], pose: DevicePose,
                      pointmaps: dict[int, DevicePointmap], host) -> None:
        """Split the batched keypoints back into each frame's ``PoseResult`` (host arrays)."""
        if pose.keypoints is not None:
            kps = host(pose.keypoints, np.float32)
            scs = host(pose.keypoint_scores, np.float32)
        else:
            kps = np.zeros((0, self.num_keypoints, 2), np.float32)
            scs = np.zeros((0, self.num_keypoints), np.float32)
        offsets = np.cumsum([0] + pose.counts)
        for k, i in enumerate(pose.frames):
            r, (a, b) = results[i], (offsets[k], offsets[k + 1])
            r.pose = PoseResult(kps[a:b], scs[a:b], np.asarray(pose.boxes[i], np.float32),
                                np.asarray(pose.box_scores[i], np.float32))
            if i in pose.keypoints_xyz:
                r.keypoints_xyz = host(pose.keypoints_xyz[i], np.float32)
            elif i in pointmaps:
                r.keypoints_xyz = np.full((b - a, self.num_keypoints, 3), np.nan, np.float32)


def _pose_boxes(batch: FrameBatch, idx: list[int], plans: Sequence[TaskPlan], boxes: list,
                seg_boxes: dict[int, tuple[np.ndarray, np.ndarray]]) -> DevicePose:
    """Pick the boxes pose runs on in frames ``idx``: the caller's, seg's if planned, else all."""
    per_frame, scores = {}, {}
    for i in idx:
        if boxes[i] is not None:
            b = check_boxes(boxes[i])
            s = np.ones(len(b), np.float32)
        elif plans[i].boxes == 'seg' and i in seg_boxes:
            b, s = seg_boxes[i]
        else:
            b, s = full_frame_box(batch.frames[i].size), np.ones(1, np.float32)
        per_frame[i], scores[i] = b, s
    return DevicePose(frames=idx, counts=[len(per_frame[i]) for i in idx], boxes=per_frame,
                      box_scores=scores)


def _nearest(labels: torch.Tensor, xy: torch.Tensor) -> torch.Tensor:
    """Label at the nearest pixel of each point ``(N, 2)``; points off the image read 0."""
    height, width = labels.shape
    x = torch.round(xy[:, 0]).long()
    y = torch.round(xy[:, 1]).long()
    ok = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    vals = labels[y.clamp(0, height - 1), x.clamp(0, width - 1)]
    return torch.where(ok, vals, torch.zeros_like(vals))


def _check_fx(fx) -> float | None:
    """Validate a calibrated focal length (pixels); checked before any model runs."""
    if fx is None:
        return None
    if not isinstance(fx, numbers.Real) or not math.isfinite(fx) or fx <= 0:
        raise SapiensError(f'fx must be a positive focal length in pixels, got {fx!r}')
    return float(fx)


def _per_frame(value, n: int, name: str) -> list:
    """Broadcast a per-frame option (None, a scalar/array for one frame, or a list) to n items."""
    if value is None:
        return [None] * n
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise SapiensError(f'{name} has {len(value)} entries for {n} frames')
        return list(value)
    if n != 1:
        raise SapiensError(f'give {name} as a list with one entry per frame')
    return [value]
