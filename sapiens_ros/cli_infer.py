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

"""``sapiens-ros infer``: run the heads on image files and write every output."""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
import time

import cv2
import numpy as np


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``infer`` subcommand."""
    p = sub.add_parser('infer', help='run Sapiens2 heads on images and write the outputs',
                       description='Run Sapiens2 heads on images. Without IMAGE, uses the '
                                   'bundled sample photo.')
    p.add_argument('images', nargs='*', metavar='IMAGE', help='image files (default: sample)')
    add_model_args(p)
    p.add_argument('--boxes', default='seg',
                   help="person boxes for pose: 'seg', 'full', or 'X1,Y1,X2,Y2[;...]'")
    p.add_argument('--flip', action='store_true', help='pose flip test')
    p.add_argument('--fx', type=float, default=None,
                   help='calibrated focal length in pixels for a metric pointmap')
    p.add_argument('--stride', type=int, default=1, help='pointmap pixel stride')
    p.add_argument('--video', default=None, metavar='CLIP',
                   help='a video file instead of images: people tracked over its frames, drawn '
                        'with their ids into OUT/<stem>.people.mp4 (+ .people.jsonl)')
    p.add_argument('--out', required=True, help='output directory')
    p.set_defaults(run=run, check=check)


def check(args: argparse.Namespace) -> None:
    """Check the output directory, device and providers before any model loads."""
    check_out_dir(args.out)
    check_model_args(args)


def check_out_dir(path: str) -> None:
    """Raise SapiensError unless ``path`` is a directory or can be created as one."""
    from .core.errors import SapiensError

    out = Path(path).expanduser()
    if out.exists() and not out.is_dir():
        raise SapiensError(f'--out {path} is a file; the outputs go into a directory: give a '
                           f'new or existing directory')
    parent = next(p for p in out.parents if p.exists())
    if not out.exists() and not parent.is_dir():
        raise SapiensError(f'--out {path} cannot be created: {parent} is a file')


def input_size(args: argparse.Namespace) -> tuple[int, int]:
    """Return ``--input-size`` (WIDTHxHEIGHT) as ``(height, width)``; InputSizeError if bad."""
    from .core.models.input_size import parse_size

    return parse_size(args.input_size, '--input-size')


def check_model_args(args: argparse.Namespace) -> None:
    """Check ``--device``, ``--input-size`` and ``--providers`` (SapiensError naming the fix)."""
    from .core.models.loading import parse_device

    input_size(args)
    device = parse_device(args.device)  # CUDA asked for without CUDA: said before any import
    if getattr(args, 'providers', None):
        check_providers(args.providers, args.backend, device)


def check_providers(text: str, backend: str, device) -> None:
    """Refuse ``--providers`` that would silently run on the CPU; warn about dropped ones."""
    from .backends.factory import check_backend
    from .core.errors import SapiensError

    if check_backend(backend) != 'onnxruntime':
        raise SapiensError(f'--providers picks ONNX Runtime execution providers: use it with '
                           f'--backend onnxruntime, not {backend}')
    try:
        from .backends.onnxruntime_runner import choose_providers
        import onnxruntime
    except ImportError:
        return  # the backend names the package to install when it loads
    asked = [p.strip() for p in text.split(',') if p.strip()]
    gpu = [p for p in asked if p.lower() not in ('cpu', 'cpuexecutionprovider')]
    available = onnxruntime.get_available_providers()
    chosen = choose_providers(available, device, asked)
    on_gpu = [p for p in chosen if p != 'CPUExecutionProvider']
    if gpu and not on_gpu:
        fix = ('add --device cuda' if device.type == 'cpu' else
               'pip install onnxruntime-gpu (and uninstall onnxruntime)')
        raise SapiensError(f'--providers {text} would run on the CPU only (device {device}, '
                           f'this onnxruntime has {", ".join(available)}): {fix}, or drop '
                           f'--providers')
    if len(on_gpu) < len(gpu):
        import logging

        logging.getLogger(__name__).warning(
            '--providers %s: only %s of them are available (this onnxruntime has %s)', text,
            ', '.join(on_gpu), ', '.join(available))


def add_model_args(p: argparse.ArgumentParser) -> None:
    """Model-selection flags shared by every subcommand that loads models."""
    from .core.models.registry import DEFAULT_SIZE, DEFAULT_TASKS

    p.add_argument('--tasks', default=','.join(DEFAULT_TASKS),
                   help='comma-separated tasks (pose,seg,normal,pointmap,matting,backbone)')
    src = p.add_mutually_exclusive_group()
    src.add_argument('--size', default=None, help=f'hub model size (default {DEFAULT_SIZE})')
    src.add_argument('--model-dir', default=None,
                     help='directory with one save_pretrained checkpoint per task: DIR/<task>/')
    src.add_argument('--random-weights', action='store_true',
                     help='tiny random models (offline smoke test: outputs are noise)')
    p.add_argument('--model', action='append', default=[], metavar='TASK=ID_OR_PATH',
                   help='override one task (repeatable)')
    p.add_argument('--input-size', default='768x1024',
                   help='model input WIDTHxHEIGHT, portrait or square (e.g. 384x512)')
    p.add_argument('--device', default='cpu', help='cpu, cuda or cuda:N')
    p.add_argument('--dtype', default=None, choices=['fp32', 'bf16', 'fp16'],
                   help='torch weights dtype (default fp32), or the TensorRT engine precision '
                        '(default bf16 on compute capability >= 8.0, else fp16)')
    b = p.add_argument_group('backend')
    b.add_argument('--backend', default='torch',
                   help='torch, onnxruntime (ort) or tensorrt (trt); see docs/backends.md')
    b.add_argument('--engine-batch', default='1:1:8', metavar='MIN:OPT:MAX',
                   help='TensorRT optimisation profile / ONNX export batch range')
    b.add_argument('--compile', action='store_true', help='torch: torch.compile the models')
    b.add_argument('--cuda-graphs', action='store_true',
                   help='torch/tensorrt on CUDA: replay CUDA graphs for a fixed batch')
    b.add_argument('--providers', default=None,
                   help='onnxruntime execution providers in order, e.g. tensorrt,cuda,cpu')
    b.add_argument('--cache-dir', default=None,
                   help='ONNX/engine cache (default ~/.cache/sapiens_ros or SAPIENS_ROS_CACHE)')
    b.add_argument('--no-build', action='store_true',
                   help='tensorrt: fail (printing the export command) instead of building')


def parse_overrides(items: list[str]) -> dict[str, str]:
    """Parse repeated ``TASK=ID_OR_PATH`` flags."""
    from .core.errors import UnknownTaskError

    out = {}
    for item in items:
        task, sep, source = item.partition('=')
        if not sep or not source:
            raise UnknownTaskError(f'--model expects TASK=ID_OR_PATH, got {item!r}')
        out[task.strip()] = source.strip()
    return out


def pipeline_from_args(args: argparse.Namespace, config):
    """Build the Pipeline the model and backend flags describe."""
    from .backends.factory import load_pipeline
    from .core.models.registry import parse_tasks

    tasks = parse_tasks(args.tasks)
    if args.random_weights:
        from .cli import NOISE_BANNER

        print(NOISE_BANNER, flush=True)
    return load_pipeline(
        tasks, backend=args.backend, size=args.size, model_dir=args.model_dir,
        models=parse_overrides(args.model), dtype=args.dtype, device=args.device,
        config=config, random_weights=args.random_weights, batch=args.engine_batch,
        compile=args.compile, cuda_graphs=args.cuda_graphs, cache_dir=args.cache_dir,
        allow_build=not args.no_build,
        providers=args.providers.split(',') if args.providers else None)


def read_image(path: Path) -> np.ndarray:
    """Read an image file as BGR uint8; FrameError naming what is wrong with ``path``."""
    from .core.errors import FrameError

    if not path.exists():
        raise FrameError(f'{str(path)!r} does not exist')
    if path.is_dir():
        raise FrameError(f'{str(path)!r} is a directory, not an image file')
    image = cv2.imdecode(np.fromfile(str(path), np.uint8), cv2.IMREAD_COLOR)  # no OpenCV WARN
    if image is None:
        raise FrameError(f'{str(path)!r} is not an image OpenCV can read (jpg, png, bmp, tiff...)')
    return image


def run(args: argparse.Namespace) -> int:
    """Run ``infer``: every readable image is processed; 1 if any could not be."""
    from .cli import NOISE_BANNER
    from .core.errors import FrameError
    from .core.media.outputs import write_frame_outputs
    from .core.media.sample_image import sample_image_path
    from .core.pipeline.pipeline import PipelineConfig
    from .core.pipeline.plan import PIPELINE_BOX_SOURCES
    from .core.processing.boxes import clip_to_image, parse_boxes

    boxes = None
    box_source = args.boxes if args.boxes in PIPELINE_BOX_SOURCES else 'full'
    if args.boxes not in PIPELINE_BOX_SOURCES:
        boxes = parse_boxes(args.boxes)
    if args.video:
        return _run_video(args, box_source, boxes)
    paths = [Path(p) for p in args.images] or [sample_image_path()]
    failed = {}
    for path in paths:  # bad paths are named before any model loads
        if not path.is_file():
            try:
                read_image(path)
            except FrameError as exc:
                failed[path] = str(exc)
    if len(failed) == len(paths):
        for reason in failed.values():
            print(f'error: {reason}')
        return 2
    config = PipelineConfig(input_size=input_size(args), box_source=box_source,
                            flip_test=args.flip, pointmap_stride=args.stride)
    pipe = pipeline_from_args(args, config)
    for path in paths:
        if path in failed:
            print(f'{path}: skipped: {failed[path]}')
            continue
        try:
            image = read_image(path)
            frame_boxes = None
            if boxes is not None:
                frame_boxes = clip_to_image(boxes, image.shape[:2], warn=print)
            start = time.perf_counter()
            result = pipe(image, color_order='bgr', fx=args.fx,
                          boxes=[frame_boxes] if frame_boxes is not None else None)[0]
        except FrameError as exc:
            failed[path] = str(exc)
            print(f'{path}: skipped: {exc}')
            continue
        ms = (time.perf_counter() - start) * 1e3
        written = write_frame_outputs(args.out, path.stem, np.ascontiguousarray(image[..., ::-1]),
                                      result)
        found = f', {len(result.pose)} person(s)' if result.pose is not None else ''
        stages = ', '.join(f'{k} {v:.0f}' for k, v in result.timings.items() if k != 'total')
        print(f'{path.name}: {image.shape[1]}x{image.shape[0]}{found}, {ms:.0f} ms ({stages}) '
              f'-> {len(written)} files in {args.out}')
    if args.random_weights:
        print(NOISE_BANNER)
    if failed:
        print(f'error: {len(failed)} of {len(paths)} image(s) failed: '
              f'{", ".join(str(p) for p in failed)}')
        return 1
    return 0


def _run_video(args: argparse.Namespace, box_source: str, boxes) -> int:
    """``infer --video``: the clip is checked before any model loads, then tracked."""
    from .cli_video import run_video
    from .core.errors import FrameError
    from .core.media.video import open_video, SourceError
    from .core.processing.boxes import clip_to_image
    from .core.pipeline.pipeline import PipelineConfig

    if args.images:
        print('error: give image files or --video, not both')
        return 2
    if not Path(args.video).is_file():
        print(f'error: {args.video!r} is not a file')
        return 2
    try:
        fps, frames = open_video(args.video)
    except SourceError as exc:
        print(f'error: {exc}')
        return 2
    if boxes is not None:  # clipped to the clip's frames as an image's boxes are
        first = next(frames)
        try:
            boxes = clip_to_image(boxes, first.shape[:2], warn=print)
        except FrameError as exc:
            print(f'error: {exc}')
            return 2
        frames = itertools.chain([first], frames)
    config = PipelineConfig(input_size=input_size(args), box_source=box_source,
                            flip_test=args.flip, pointmap_stride=args.stride)
    pipe = pipeline_from_args(args, config)
    status = run_video(args, pipe, fps, frames, None if boxes is None else [boxes])
    if args.random_weights:
        from .cli import NOISE_BANNER

        print(NOISE_BANNER)
    return status
