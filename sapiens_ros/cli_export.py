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

"""``sapiens-ros export``: ONNX export with a parity check, optionally a TensorRT engine."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``export`` subcommand."""
    p = sub.add_parser(
        'export', help='export a head to ONNX (and optionally a TensorRT engine)',
        description='Export one Sapiens2 head to ONNX with the torch dynamo exporter (opset 18; '
                    'bf16 graphs opset 22; dynamic batch), check it against torch with ONNX '
                    'Runtime, and optionally build a cached TensorRT engine.')
    p.add_argument('--task', required=True, help='pose, seg, normal, pointmap, ...')
    src = p.add_mutually_exclusive_group()
    src.add_argument('--size', default=None, help='hub model size (default 0.4b)')
    src.add_argument('--model-dir', default=None, help='directory with DIR/<task>/ checkpoints')
    src.add_argument('--model', default=None, help='checkpoint directory or hub id of the task')
    src.add_argument('--random-weights', action='store_true',
                     help='tiny random models, as everywhere else (graph check only)')
    p.add_argument('--layout', default='tiny',
                   help="with --random-weights: 'tiny' (default) or a real layout, e.g. 0.4b "
                        '(15 min and ~9 GB RAM on a CPU)')
    p.add_argument('--input-size', default='768x1024',
                   help='model input WIDTHxHEIGHT (static), portrait or square')
    p.add_argument('--batch', default='1:1:8', help='batch profile min:opt:max')
    p.add_argument('--dtype', default=None, choices=['fp32', 'bf16', 'fp16'],
                   help='graph dtype (the same graph on any device; the parity check of '
                        'bf16/fp16 needs --device cuda) and engine precision (default for '
                        '--engine: bf16 on compute capability >= 8.0, else fp16; the TensorRT '
                        'version decides the graph it is built from)')
    p.add_argument('--device', default='cpu', help='export device: cpu or cuda[:N]')
    p.add_argument('--out', required=True, help='output .onnx file, or a directory')
    p.add_argument('--no-check', action='store_true', help='skip the ONNX Runtime parity check')
    p.add_argument('--engine', action='store_true', help='also build the TensorRT engine')
    p.add_argument('--engine-out', default=None,
                   help='engine file (default: the engine cache, where the node looks)')
    p.add_argument('--cache-dir', default=None,
                   help='engine cache dir (default $SAPIENS_ROS_CACHE or ~/.cache/sapiens_ros)')
    p.set_defaults(run=run)


def _model(args):
    from .core.models.configs import random_model
    from .core.models.loading import load_model, resolve_sources

    if args.random_weights:
        tiny = args.layout.lower() == 'tiny'
        model = random_model(args.task, '0.4b' if tiny else args.layout.lower(), tiny=tiny,
                             input_size=args.input_size)
        return model, f'random-{args.layout.lower()}'
    if args.model:
        source = args.model
    else:
        source = resolve_sources((args.task,), size=args.size, model_dir=args.model_dir)[args.task]
    return load_model(args.task, source, dtype='fp32', device='cpu'), source


def run(args: argparse.Namespace) -> int:
    """Export (and check, and optionally build an engine); return the exit code."""
    from .backends.export import export_onnx, parse_batch, write_report
    from .backends.fingerprint import checkpoint_fingerprint, weights_hash
    from .core.models.input_size import parse_size
    from .core.models.loading import parse_device
    from .core.models.registry import task_spec

    task_spec(args.task)
    args.input_size = parse_size(args.input_size, '--input-size')  # a Size: printed WxH
    batch = parse_batch(args.batch)
    device = parse_device(args.device)
    plan = gpu_index = gpu = None
    if args.engine:  # fail before a long export, not after it
        plan, gpu_index, gpu = _engine_plan(args, device)
    model, source = _model(args)
    # The same weights fingerprint the node and `infer` use, so they find this engine.
    w_hash = checkpoint_fingerprint(source) or weights_hash(model)
    out = Path(args.out).expanduser()
    dtype = plan.graph_dtype if plan is not None else args.dtype or 'fp32'
    if out.suffix != '.onnx':
        out = out / f'{args.task}-{args.input_size}-{dtype}.onnx'
    if plan is not None and args.dtype and dtype != args.dtype:
        print(f'note: {plan.describe()}: exporting the {dtype} graph it is built from')
    result = export_onnx(model, args.task, out, input_size=args.input_size, batch=batch,
                         dtype=dtype, device=device, check=not args.no_check, model_id=source,
                         extra_metadata={'source_hash': w_hash})
    write_report(result, out.with_suffix('.json'))
    print(f'wrote {result.path} ({result.exported_dtype}, opset {result.opset}, input '
          f'{args.input_size}, batch {":".join(map(str, batch))}, '
          f'outputs {", ".join(result.output_names)}, {result.seconds:.1f} s)')
    for note in result.notes:
        print(f'note: {note}')
    if result.parity is not None:
        print(f'parity vs torch ({result.parity.provider}, batch {result.parity.batch}): '
              f'{result.parity.summary()}')
    if plan is not None:
        return _engine(args, plan, gpu_index, gpu, result, w_hash, batch, source, model)
    print(f'run it with: {_infer_command(args, "onnxruntime", out)}')
    return 0


def _infer_command(args, backend: str, model: Path) -> str:
    """Return an ``infer`` command line that runs the exported head as it stands (pasteable)."""
    boxes = ' --boxes full' if args.task == 'pose' else ''  # no seg model needed for the boxes
    return (f'sapiens-ros infer --tasks {args.task} --backend {backend} --model '
            f'{args.task}={model} --input-size {args.input_size}{boxes} '
            f'--out {args.task}-out')


def _engine_plan(args, device):
    """
    Return the engine's precision plan, the GPU's index and ``(name, compute capability)``.

    TensorRT and CUDA are checked first.
    """
    from .backends.precision import default_precision, plan_precision
    from .backends.tensorrt_build import (builder_flag_names, gpu_identity, import_tensorrt,
                                          require_cuda)

    trt = import_tensorrt()
    require_cuda()
    gpu_index = device.index or 0 if device.type == 'cuda' else 0
    gpu = gpu_identity(gpu_index)
    cc = gpu[1]
    plan = plan_precision(args.dtype or default_precision(cc), trt.__version__,
                          compute_capability=cc, builder_flags=builder_flag_names(trt))
    return plan, gpu_index, gpu


def _engine(args, plan, gpu_index, gpu, result, w_hash, batch, source, model) -> int:
    import torch

    from .backends.accuracy import tensorrt_gate, torch_reference
    from .backends.artifact_cache import ArtifactCache, EngineKey, get_engine

    gpu_name, cc = gpu
    key = EngineKey.for_plan(plan, weights_hash=w_hash, task=args.task,
                             input_size=args.input_size, batch=batch, gpu_name=gpu_name)
    device = torch.device('cuda', gpu_index)
    gate = tensorrt_gate(args.task, torch_reference(model, args.task, device),
                         precision=plan.precision, input_size=args.input_size, device=device,
                         trt_version=plan.trt_version)  # measured before it is cached
    path = get_engine(result.path, key, plan, cache=ArtifactCache(args.cache_dir),
                      engine_path=args.engine_out, source=source,
                      progress=sys.stderr.isatty(), device_index=gpu_index, gate=gate)
    print(f'TensorRT engine: {path} ({plan.precision}, TensorRT {plan.trt_version}, {gpu_name} sm'
          f'{cc[0]}{cc[1]})')
    print(f'run it with: {_infer_command(args, "tensorrt", path)}')
    return 0
