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
Choose a backend by name: build one runner per task, or a whole pipeline.

``backend`` is ``torch`` (eager, optional ``torch.compile`` and CUDA graphs), ``onnxruntime``
(CPU/CUDA/TensorRT execution providers, whichever are installed) or ``tensorrt`` (native
engines). A task's source is a checkpoint (hub id or directory), an exported ``.onnx`` file, or
(tensorrt) a built ``.engine``. From a checkpoint, the ONNX graph and the TensorRT engine are
created on first use in the user cache dir (:func:`~.artifact_cache.default_cache_dir`) and
reused; for TensorRT, :func:`~.precision.plan_precision` decides which graph and which build.
A model passed in memory is never cast or moved: exports work on converted copies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import dataclasses
import logging
from pathlib import Path
import time

import torch

from . import BACKENDS
from .artifact_cache import ArtifactCache, EngineKey, export_command, get_engine, get_onnx
from .errors import EngineNotBuiltError
from .export import dtype_name, graph_input_size, parse_batch, proto_metadata
from .fingerprint import checkpoint_fingerprint, file_hash, weights_hash
from ..core.errors import SapiensError, UnknownTaskError
from ..core.models.input_size import Size, task_input_sizes
from ..core.models.loading import load_config, load_model, parse_device, resolve_sources
from ..core.models.registry import DEFAULT_SIZE, parse_tasks
from ..core.pipeline.host_memory import keep_freed_memory
from ..core.pipeline.pipeline import Pipeline, PipelineConfig

LOG = logging.getLogger(__name__)

ONNX_SUFFIXES = ('.onnx',)
ENGINE_SUFFIXES = ('.engine', '.plan', '.trt')


def check_backend(backend: str) -> str:
    """Normalise a backend name (``ort``/``trt`` accepted) or raise naming the valid ones."""
    name = {'ort': 'onnxruntime', 'trt': 'tensorrt', 'pytorch': 'torch'}.get(
        backend.strip().lower(), backend.strip().lower())
    if name not in BACKENDS:
        raise UnknownTaskError(f'unknown backend {backend!r}; use one of {", ".join(BACKENDS)}')
    return name


def _onnx_hash(onnx_path: Path, meta: dict[str, str]) -> str:
    """Identify a user's graph by the weights hash it records, else by its file's bytes."""
    return meta.get('source_hash') or meta.get('weights_hash') or file_hash(onnx_path)[:16]


def make_runner(task: str, backend: str = 'torch', source: str | None = None, *,
                model: torch.nn.Module | None = None, size: str = DEFAULT_SIZE,
                dtype: str | None = None, device: str | torch.device = 'cpu',
                input_size: tuple[int, int] = (1024, 768),
                batch: tuple[int, int, int] | str = (1, 1, 8),
                compile: bool | str = False,  # noqa: A002 - torch.compile on/off or mode
                cuda_graphs: bool = False, providers: Sequence[str] | None = None,
                cache_dir: str | Path | None = None, allow_build: bool = True,
                progress: bool = True, graph_batches: tuple[int, ...] | None = None):
    """
    Build the runner of ``task`` on ``backend``.

    ``source``: hub id, checkpoint dir, ``.onnx`` file or (tensorrt) engine file; ``model``: an
    already loaded model instead. ``dtype``: torch weights dtype (default fp32), or the TensorRT
    engine precision (default bf16 on compute capability >= 8.0, else fp16). ``batch``: the engine
    profile ``min:opt:max``. ``allow_build=False`` makes a missing engine an error that prints
    the export command instead of a minutes-long build. ``graph_batches``: the batch sizes
    torch captures CUDA graphs for, at once (default :func:`graph_batches_of` the default
    pipeline config).
    """
    backend = check_backend(backend)
    dev = parse_device(device)
    batch = parse_batch(batch)
    path = Path(source).expanduser() if source else None
    if backend == 'torch':
        from .torch_runner import AcceleratedTorchRunner

        if model is None:
            model = load_model(task, source, size=size, dtype=dtype or 'fp32', device=dev)
        else:
            model = model.to(dev)
        return AcceleratedTorchRunner(
            task, model, source or '', compile=compile, cuda_graphs=cuda_graphs,
            graph_batches=graph_batches or graph_batches_of(task, PipelineConfig()),
            input_size=tuple(input_size), device=dev)
    if backend == 'onnxruntime':
        from .onnxruntime_runner import OnnxRuntimeRunner

        if path is None or path.suffix not in ONNX_SUFFIXES:
            path = get_onnx(task, _loader(task, source, size, model), input_size=input_size,
                            batch=batch, device='cpu', cache_dir=cache_dir,
                            model_id=source or '',
                            w_hash=checkpoint_fingerprint(source) if model is None else None)
        options = {'device': dev, 'model_id': source or str(path), 'cache_dir': cache_dir,
                   'batch': batch, 'precision': dtype_name(_dtype(dtype)) if dtype else 'fp32'}
        started = time.time()  # ORT writes its engine at session creation or first run
        runner = OnnxRuntimeRunner(task, path, providers=providers, **options)
        if runner.providers[0] != 'TensorrtExecutionProvider':
            return runner
        given_graph = source is not None and Path(source).suffix in ONNX_SUFFIXES
        from .accuracy import EngineAccuracyError, gate_ort_tensorrt

        try:
            gate_ort_tensorrt(runner, None if given_graph else _loader(task, source, size, model),
                              cache_dir, started)
        except EngineAccuracyError as exc:
            rest = [p for p in runner.providers if p != 'TensorrtExecutionProvider']
            LOG.warning('%s. %s runs on the next provider: %s', exc, task, rest[0])
            return OnnxRuntimeRunner(task, path, providers=rest, **options)
        return runner
    from .accuracy import EngineAccuracyError

    loader = _loader(task, source, size, model)
    try:
        return _tensorrt_runner(task, source, path, loader, size=size, dtype=dtype, device=dev,
                                input_size=input_size, batch=batch, cuda_graphs=cuda_graphs,
                                cache_dir=cache_dir, allow_build=allow_build, progress=progress,
                                given_model=model is not None)
    except EngineAccuracyError as exc:
        if path is not None and path.suffix in ONNX_SUFFIXES + ENGINE_SUFFIXES:
            raise  # the user's own graph: no model to fall back to
        precision = exc.report.precision
        LOG.warning('%s. %s runs on the next backend: torch %s', exc, task, precision)
        from .numerics import converted

        model = converted(loader(), dev, _dtype(precision))
        return make_runner(task, 'torch', source, model=model, size=size, dtype=precision,
                           device=device, cuda_graphs=cuda_graphs, compile=compile,
                           input_size=input_size, batch=batch, graph_batches=graph_batches)


def _tensorrt_runner(task, source, path, loader, *, size, dtype, device, input_size, batch,
                     cuda_graphs, cache_dir, allow_build, progress, given_model):
    from .accuracy import onnx_reference, tensorrt_gate, torch_reference
    from .artifact_cache import accuracy_record
    from .precision import default_precision, plan_precision
    from .tensorrt_build import (builder_flag_names, graph_info, gpu_identity, import_tensorrt,
                                 require_cuda)
    from .tensorrt_runner import TensorRTRunner

    trt = import_tensorrt()
    require_cuda()
    if device.type != 'cuda':
        device = torch.device('cuda')
    graph_batch = batch[1] if cuda_graphs else None
    if path is not None and path.suffix in ENGINE_SUFFIXES:
        return TensorRTRunner(task, path, device=device, model_id=source,
                              cuda_graph_batch=graph_batch)
    gpu, cc = gpu_identity(device.index or 0)
    precision = dtype_name(_dtype(dtype)) if dtype else default_precision(cc)
    cache = ArtifactCache(cache_dir)
    given = {}
    if path is not None and path.suffix in ONNX_SUFFIXES:  # the user's graph: plan around it
        import onnx

        graph = onnx.load(str(path), load_external_data=False)  # read once, without weights
        onnx_path, meta = path, proto_metadata(graph)
        w_hash = _onnx_hash(path, meta)
        input_size = graph_input_size(graph) or Size.of(input_size)  # static H, W win
        given = dict(zip(('graph_dtype', 'opset'), graph_info(path, graph), strict=True))
    else:
        w_hash = checkpoint_fingerprint(source) if not given_model else None
        if w_hash is None:  # no files to fingerprint: hash the weights themselves
            w_hash = weights_hash(loader())
        onnx_path = None
    plan = plan_precision(precision, trt.__version__, compute_capability=cc,
                          builder_flags=builder_flag_names(trt), **given)
    key = EngineKey.for_plan(plan, weights_hash=w_hash, task=task, input_size=input_size,
                             batch=batch, gpu_name=gpu)
    found = cache.lookup(key)
    if found.hit and accuracy_record(found.path) is not None:  # measured: no export needed
        LOG.info('using %s', found.reason)
        return TensorRTRunner(task, found.path, device=device, model_id=source or '',
                              cuda_graph_batch=graph_batch)
    if onnx_path is None and not found.hit:  # a hit without a report is measured, not rebuilt
        if not allow_build:
            raise EngineNotBuiltError(
                f'no usable TensorRT engine for {task} ({found.reason}) and building on start '
                f'is disabled. Build it with:\n  '
                + export_command(key, source=source or '<model>', out=f'{task}.onnx'))
        # Exported and parity-checked on this GPU (ONNX Runtime's CUDA provider if installed).
        onnx_path = get_onnx(task, loader, input_size=input_size,
                             batch=batch, dtype=plan.graph_dtype, device=device,
                             cache_dir=cache_dir, model_id=source or '', w_hash=w_hash)
    user_graph = path is not None and path.suffix in ONNX_SUFFIXES
    reference = onnx_reference(onnx_path, task) if user_graph else \
        torch_reference(loader(), task, device)
    if reference is None:
        LOG.warning('the TensorRT %s engine for %s is not measured against an fp32 model (the '
                    'given graph %s is not fp32, or ONNX Runtime is missing): its outputs are '
                    'unchecked', trt.__version__, task, Path(onnx_path).name)
    measure = tensorrt_gate(task, reference, precision=plan.precision, input_size=input_size,
                            device=device, trt_version=trt.__version__)
    engine = get_engine(onnx_path or found.path, key, plan, cache=cache, allow_build=allow_build,
                        source=source or '<model>', progress=progress,
                        device_index=device.index or 0,
                        gate=measure if reference is not None else None)
    return TensorRTRunner(task, engine, device=device, model_id=source or str(onnx_path or engine),
                          cuda_graph_batch=graph_batch)


def graph_batches_of(task: str, config: PipelineConfig) -> tuple[int, ...]:
    """
    Return the batch sizes the pipeline's plan runs ``task`` at, to capture CUDA graphs for.

    Dense heads run one frame at a time (1; a multi-camera step replays it per frame). Pose runs
    the step's person crops, doubled with ``flip_test``: the powers of two up to that maximum
    (:func:`~.cuda_graphs.bucket_batches`), whose sums cover every crop count without padding.
    """
    from .cuda_graphs import bucket_batches

    if task != 'pose':
        return (1,)
    return bucket_batches(config.max_persons * (2 if config.flip_test else 1))


def _loader(task: str, source: str | None, size: str,
            model: torch.nn.Module | None) -> Callable[[], torch.nn.Module]:
    """
    Return a loader of the model to export (called only on a cache miss; never cast here).

    It loads at most once (the export, the accuracy gate and a fallback share the model).
    """
    loaded: list[torch.nn.Module] = [] if model is None else [model]

    def load() -> torch.nn.Module:
        if not loaded:
            loaded.append(load_model(task, source, size=size))
        return loaded[0]

    return load


def _dtype(dtype):
    from ..core.models.loading import parse_dtype

    return parse_dtype(dtype)


def build_runners(tasks: str | Sequence[str], backend: str = 'torch', *,
                  size: str | None = None, model_dir: str | None = None,
                  models: Mapping[str, str] | None = None, random_weights: bool = False,
                  **kwargs) -> dict:
    """
    Build one runner per task (sources: ``models[task]`` > ``model_dir/<task>`` > hub id).

    ``random_weights`` builds tiny random models instead (offline smoke runs: outputs are noise),
    named ``random-tiny-<task>``.
    """
    tasks = parse_tasks(tasks)
    if random_weights:
        from ..core.models.configs import random_model

        runners = {}
        for seed, task in enumerate(tasks):
            options = {**kwargs, 'input_size': _task_size(kwargs, task),
                       'graph_batches': _task_batches(kwargs, task)}
            runner = make_runner(task, backend, model=random_model(
                task, seed=seed, input_size=options['input_size']), **options)
            runner.model_id = f'random-tiny-{task}'
            runners[task] = runner
        return runners
    sources = resolve_sources(tasks, size=size, model_dir=model_dir, overrides=models)
    return {t: make_runner(t, backend, s, size=size or DEFAULT_SIZE,
                           **{**kwargs, 'input_size': _task_size(kwargs, t),
                              'graph_batches': _task_batches(kwargs, t)})
            for t, s in sources.items()}


def _task_batches(options: Mapping, task: str) -> tuple[int, ...] | None:
    """``options['graph_batches']``: one tuple for every task, or a ``{task: tuple}``."""
    batches = options.get('graph_batches')
    return batches.get(task) if isinstance(batches, Mapping) else batches


def _task_size(options: Mapping, task: str) -> tuple[int, int]:
    """``options['input_size']``: one ``(h, w)`` for every task, or a ``{task: (h, w)}``."""
    size = options.get('input_size', (1024, 768))
    return tuple(size[task]) if isinstance(size, Mapping) else tuple(size)


def _size_configs(tasks: Sequence[str], sources: Mapping[str, str]) -> dict:
    """Configs of the heads whose legal input sizes are restricted (the pointmap's scale head)."""
    configs = {}
    for task in tasks:
        source = sources.get(task)  # none for random weights: built for the size they run at
        if task != 'pointmap' or not source or \
                Path(source).suffix in ONNX_SUFFIXES + ENGINE_SUFFIXES:
            continue
        try:
            configs[task] = load_config(source)
        except SapiensError:  # the loader names the problem when it loads the model
            pass
    return configs


def load_pipeline(tasks: str | Sequence[str], *, backend: str = 'torch',
                  size: str | None = None, model_dir: str | None = None,
                  models: Mapping[str, str] | None = None, dtype: str | None = None,
                  device: str = 'cpu', config: PipelineConfig | None = None,
                  random_weights: bool = False, **runner_options) -> Pipeline:
    """
    Load every task's model on ``backend`` (torch, onnxruntime or tensorrt) into a Pipeline.

    Sources: ``models[task]`` > ``model_dir/<task>`` > the hub id of ``size``, or tiny random
    models with ``random_weights`` (offline smoke runs: outputs are noise). ``runner_options``
    go to :func:`make_runner` (batch profile, torch.compile, CUDA graphs, ORT providers, engine
    cache, ...). This is the one place that turns a model description into runners: the core
    only receives them (``Pipeline(runners, config, device)``). The Pipeline gets a copy of
    ``config`` with every head's size decided; the caller's is left as it was. The process
    keeps its freed host memory from then on (:func:`keep_freed_memory`: no page faults per
    frame).
    """
    LOG.info('host memory: %s', keep_freed_memory())
    config = config or PipelineConfig()
    requested = parse_tasks(tasks)
    tasks = config.required_tasks(requested)
    if tasks != requested:
        LOG.info('loading seg too: pose takes its person boxes from it (box_source=seg)')
    sources = {} if random_weights else \
        resolve_sources(tasks, size=size, model_dir=model_dir, overrides=models)
    config = dataclasses.replace(config, input_sizes=task_input_sizes(
        tasks, config.input_size, config.input_sizes, _size_configs(tasks, sources)))
    runner_options['input_size'] = dict(config.input_sizes)
    runner_options.setdefault('graph_batches', {t: graph_batches_of(t, config) for t in tasks})
    runners = build_runners(tasks, backend, size=size, model_dir=model_dir, models=models,
                            dtype=dtype, device=device, random_weights=random_weights,
                            **runner_options)
    return Pipeline(runners, config, device)
