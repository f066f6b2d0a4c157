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
Get or build what the accelerated backends run: ONNX graphs and TensorRT engines, cached.

One cache dir (:func:`default_cache_dir`) holds ``onnx/`` (exported graphs), ``engines/``
(TensorRT engines) and ``timing/`` (TensorRT timing caches), each entry with a sidecar JSON
recording its whole key (:mod:`.artifacts`). A graph is valid only for the weights, task, input
size, dtype and opset it was exported with; an engine also for the batch profile, precision, the
way it was typed (see :mod:`.precision`) and the TensorRT version and GPU (name and compute
capability) that built it. The engine's file name names the GPU and TensorRT version, so
machines sharing a cache keep their own engines. A stale or corrupt entry is logged and rebuilt,
never loaded; an inter-process lock makes N processes starting together build once. Pure
Python except the export and the build, which are injected or imported when needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
import json
import logging
from pathlib import Path
import tempfile

from .artifacts import (atomic_write, default_cache_dir, entry_lock, invalidate, key_hash,
                        RECIPE_VERSION, sidecar_of, staging, verify, write_sidecar)
from .errors import EngineNotBuiltError
from .precision import BASE_OPSET, graph_opset, PrecisionPlan, PRECISIONS
from ..core.models.input_size import Size

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineKey:
    """Everything a TensorRT engine depends on."""

    weights_hash: str
    task: str
    input_size: Size  # a (height, width) or its WIDTHxHEIGHT text (the sidecar's)
    batch: tuple[int, int, int]  # min, opt, max of the optimisation profile
    precision: str
    trt_version: str
    gpu_name: str
    compute_capability: tuple[int, int]
    graph_dtype: str = 'fp32'  # dtype of the ONNX graph the engine was built from
    opset: int = BASE_OPSET  # opset of that graph
    typing: str = 'weak'  # strong or weak (see PrecisionPlan)
    recipe: int = RECIPE_VERSION  # how engines are built (flags, precision rules)

    def __post_init__(self) -> None:
        """Normalise tuples (JSON gives lists) and validate the precision."""
        object.__setattr__(self, 'input_size', Size.of(self.input_size))
        object.__setattr__(self, 'batch', tuple(int(v) for v in self.batch))
        object.__setattr__(self, 'compute_capability',
                           tuple(int(v) for v in self.compute_capability))
        if self.precision not in PRECISIONS:
            raise ValueError(f'precision must be one of {PRECISIONS}, got {self.precision!r}')

    @classmethod
    def for_plan(cls, plan: PrecisionPlan, *, weights_hash: str, task: str,
                 input_size: tuple[int, int], batch: tuple[int, int, int],
                 gpu_name: str) -> EngineKey:
        """Return the key of the engine ``plan`` builds for these weights and this GPU."""
        return cls(weights_hash=weights_hash, task=task, input_size=input_size, batch=batch,
                   gpu_name=gpu_name, **plan.key_fields())

    def matches(self, plan: PrecisionPlan) -> bool:
        """Tell whether this key is the one ``plan`` decides (the fields it owns agree)."""
        return all(getattr(self, k) == v for k, v in plan.key_fields().items())

    def slot(self) -> str:
        """
        File stem naming the model, the GPU and the TensorRT version.

        Machines sharing a cache directory (an NFS home, a fleet image) each get their own
        slot, instead of overwriting each other's engines.
        """
        digest = key_hash(self.to_json())
        gpu = ''.join(c if c.isalnum() else '_' for c in self.gpu_name).strip('_') or 'gpu'
        cc = ''.join(map(str, self.compute_capability))
        batch = '-'.join(map(str, self.batch))
        return (f'{self.task}-{self.input_size}-b{batch}-{self.precision}-{gpu}-sm{cc}-'
                f'trt{self.trt_version}-{digest}')

    def to_json(self) -> dict:
        """Return the key as JSON-friendly data."""
        data = asdict(self)
        data['input_size'] = str(self.input_size)
        for k in ('batch', 'compute_capability'):
            data[k] = list(data[k])
        return data

    @classmethod
    def from_json(cls, data: dict) -> EngineKey:
        """Rebuild a key from :meth:`to_json` data; raise ``KeyError``/``ValueError`` if bad."""
        return cls(**{f.name: data[f.name] for f in fields(cls)})

    def differences(self, other: EngineKey) -> list[str]:
        """Human-readable ``field: cached -> wanted`` for every field that differs."""
        return [f'{f.name}: {getattr(other, f.name)} -> {getattr(self, f.name)}'
                for f in fields(self) if getattr(self, f.name) != getattr(other, f.name)]


def onnx_key(task: str, input_size: tuple[int, int], dtype: str, w_hash: str) -> dict:
    """Everything a cached ONNX graph depends on (the graph's batch dimension is dynamic)."""
    return {'kind': 'onnx', 'task': task, 'input_size': str(Size.of(input_size)), 'dtype': dtype,
            'opset': graph_opset(dtype), 'weights': w_hash, 'recipe': RECIPE_VERSION}


@dataclass
class Lookup:
    """Result of :meth:`ArtifactCache.lookup`: a usable engine path, or why there is none."""

    path: Path
    hit: bool
    reason: str


class ArtifactCache:
    """ONNX graphs under ``root/onnx``, engines under ``root/engines``, timing caches."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_cache_dir()
        self.engines = self.root / 'engines'
        self.graphs = self.root / 'onnx'

    def onnx_path(self, task: str, input_size: tuple[int, int], dtype: str, w_hash: str) -> Path:
        """Where the graph of these weights, size and dtype (at its dtype's opset) lives."""
        size = Size.of(input_size)
        return self.graphs / f'{task}-{size}-{dtype}-op{graph_opset(dtype)}-{w_hash}.onnx'

    def engine_path(self, key: EngineKey) -> Path:
        """Where the engine of ``key`` lives (whether or not it exists)."""
        return self.engines / f'{key.slot()}.engine'

    @staticmethod
    def sidecar_path(engine: Path) -> Path:
        """Return the sidecar JSON path of an engine file."""
        return sidecar_of(engine)

    def timing_cache_path(self, trt_version: str, gpu_name: str,
                          compute_capability: tuple[int, int]) -> Path:
        """Return the timing cache file of a TensorRT version and GPU (shared by all models)."""
        gpu = ''.join(c if c.isalnum() else '_' for c in gpu_name).strip('_') or 'gpu'
        cc = '.'.join(map(str, compute_capability))
        return self.root / 'timing' / f'trt{trt_version}-{gpu}-sm{cc}.cache'

    def lookup(self, key: EngineKey, path: str | Path | None = None) -> Lookup:
        """Check the cached engine (or the given ``path``) against ``key`` and its sidecar."""
        engine = Path(path).expanduser() if path else self.engine_path(key)
        reason = verify(engine, key.to_json())
        return Lookup(engine, reason is None, reason or f'cached engine {engine} matches')

    def store(self, key: EngineKey, engine_bytes: bytes, path: str | Path | None = None,
              extra: dict | None = None) -> Path:
        """Write an engine, then its sidecar, each atomically; return the engine path."""
        engine = Path(path).expanduser() if path else self.engine_path(key)
        invalidate(engine)
        atomic_write(engine, bytes(engine_bytes))
        write_sidecar(engine, key.to_json(), extra)
        return engine


def export_command(key_or_task, *, source: str = '<model dir or --size>',
                   input_size: tuple[int, int] = (1024, 768),
                   batch: tuple[int, int, int] = (1, 1, 8), precision: str = 'bf16',
                   out: str = '<file>.onnx') -> str:
    """Return the ``sapiens-ros export`` command that builds a key's engine (for messages)."""
    if isinstance(key_or_task, EngineKey):
        key = key_or_task
        task, input_size, batch, precision = key.task, key.input_size, key.batch, key.precision
    else:
        task = key_or_task
    return (f'sapiens-ros export --task {task} --model {source} '
            f'--input-size {Size.of(input_size)} --batch {":".join(map(str, batch))} '
            f'--dtype {precision} --out {out} --engine')


def get_onnx(task: str, model, *, input_size: tuple[int, int], batch: tuple[int, int, int],
             dtype: str = 'fp32', device=None, cache_dir: str | Path | None = None,
             model_id: str = '', w_hash: str | None = None) -> Path:
    """
    Return ``model``'s graph in ``dtype`` from the cache, exporting (and checking) it if needed.

    ``model`` may be a function that loads it: a cache hit then loads nothing (``w_hash``, e.g.
    a checkpoint fingerprint, identifies the weights). ``device`` is where the export and its
    parity check run (default: the model's); the caller's model is never cast or moved. A
    missing, corrupt or stale entry is rebuilt with one log line; a graph that fails its parity
    check is never cached.
    """
    import torch

    from .export import export_onnx
    from .fingerprint import weights_hash

    def loaded():
        return model() if callable(model) and not isinstance(model, torch.nn.Module) else model

    if w_hash is None:
        model = loaded()
        w_hash = weights_hash(model)
    cache = ArtifactCache(cache_dir)
    key = onnx_key(task, input_size, dtype, w_hash)
    path = cache.onnx_path(task, input_size, dtype, w_hash)
    with entry_lock(path):
        reason = verify(path, key)
        if reason is None:
            LOG.info('using cached ONNX graph %s', path)
            return path
        if path.exists() or sidecar_of(path).exists():
            LOG.warning('cached ONNX graph unusable (%s): exporting it again', reason)
        with staging(path) as staged:
            export_onnx(loaded(), task, staged, input_size=input_size, batch=batch, dtype=dtype,
                        device=device, model_id=model_id, extra_metadata={'source_hash': w_hash})
        write_sidecar(path, key, {'model_id': model_id})
    return path


def get_engine(onnx_path: str | Path, key: EngineKey, plan: PrecisionPlan, *,
               cache: ArtifactCache | None = None, engine_path: str | Path | None = None,
               allow_build: bool = True, source: str = '<model>', progress: bool = True,
               build: Callable | None = None, device_index: int = 0,
               gate: Callable[[Path], object] | None = None) -> Path:
    """
    Return a valid engine for ``key``: the cached one, or a fresh build following ``plan``.

    A cached engine that does not match the key (another GPU or TensorRT, other weights, another
    graph, a corrupt file) is logged and rebuilt. With ``allow_build=False`` a missing or stale
    engine raises :class:`EngineNotBuiltError` naming the export command. ``build`` (default
    :func:`.tensorrt_build.build_engine`) is injectable so the cache logic is testable without
    TensorRT. ``gate(path)`` measures an engine file against the fp32 model
    (:func:`~.accuracy.gate`): a new engine is stored only if it passes, with the report in its
    sidecar (``accuracy``); one that fails is deleted and the
    :class:`~.accuracy.EngineAccuracyError` raised. A cached engine whose sidecar has no report
    (built before the gate) is measured once and its sidecar completed, or removed.
    """
    if not key.matches(plan):
        raise ValueError(f'engine key {key.slot()} was not made by the plan "{plan.describe()}"')
    if build is None:
        from .tensorrt_build import build_engine as build
    cache = cache or ArtifactCache()
    target = Path(engine_path).expanduser() if engine_path else cache.engine_path(key)
    with entry_lock(target):  # N processes starting together build once
        found = cache.lookup(key, engine_path)
        if found.hit and (gate is None or accuracy_record(found.path) is not None):
            LOG.info('using %s', found.reason)
            return found.path
        if found.hit:  # cached before the gate existed: measure it once
            LOG.info('measuring the cached engine %s against the fp32 model', found.path.name)
            report = _gated(gate, found.path, found.path)
            write_sidecar(found.path, key.to_json(), {**_sidecar_extra(found.path),
                                                      'accuracy': report.to_json()})
            return found.path
        command = export_command(key, source=source, out=str(onnx_path))
        if not allow_build:
            raise EngineNotBuiltError(
                f'no usable TensorRT engine for {key.task} ({found.reason}) and building on '
                f'start is disabled. Build it with:\n  {command}')
        if found.path.exists():
            LOG.warning('rebuilding the TensorRT engine: %s', found.reason)
        else:
            LOG.info('%s: building it', found.reason)
        if not Path(onnx_path).is_file():
            raise EngineNotBuiltError(f'the ONNX graph {onnx_path} to build from is missing; '
                                      f'create it with:\n  {command}')
        timing = cache.timing_cache_path(key.trt_version, key.gpu_name, key.compute_capability)
        data = build(onnx_path, plan=plan, batch=key.batch, timing_cache=timing,
                     progress=progress, device_index=device_index)
        extra = {'onnx': str(onnx_path)}
        if gate is not None:
            found.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=found.path.parent, prefix='.gate.') as tmp:
                staged = Path(tmp) / found.path.name  # measured before it enters the cache
                staged.write_bytes(bytes(data))
                extra['accuracy'] = _gated(gate, staged, None).to_json()
        path = cache.store(key, data, engine_path, extra=extra)
    LOG.info('cached the TensorRT engine at %s', path)
    return path


def accuracy_record(engine: Path) -> dict | None:
    """Return the accuracy report an engine's sidecar holds, or None (none, or unreadable)."""
    try:
        return json.loads(sidecar_of(engine).read_text()).get('accuracy')
    except (OSError, ValueError, AttributeError):
        return None


def _sidecar_extra(engine: Path) -> dict:
    data = json.loads(sidecar_of(engine).read_text())
    return {k: v for k, v in data.items()
            if k not in ('sidecar_version', 'key', 'files', 'created')}


def _gated(gate: Callable[[Path], object], path: Path, cached: Path | None):
    """Run ``gate`` on ``path``; on a refusal remove the cached entry (if any) and re-raise."""
    from .accuracy import EngineAccuracyError

    try:
        return gate(path)
    except EngineAccuracyError:
        if cached is not None:
            invalidate(cached)
        raise
