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
Cache of TensorRT engines in a user cache dir, with a sidecar JSON recording each key.

An engine is only valid for the weights, task, input size, batch profile, precision and graph
dtype it was built from, the build recipe, and the TensorRT version and GPU (name and compute
capability) that built it. The slot (file name) names the GPU and TensorRT version, so machines
sharing a cache keep their own engines; the sidecar (:mod:`.artifacts`) holds the whole key and
the file's size, mtime and SHA-256, so a stale or corrupt engine is detected, logged and rebuilt,
never loaded. Pure Python: testable without TensorRT.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
import logging
import os
from pathlib import Path

from .artifacts import (atomic_write, invalidate, key_hash, RECIPE_VERSION, sidecar_of, verify,
                        write_sidecar)

LOG = logging.getLogger(__name__)

PRECISIONS = ('fp32', 'bf16', 'fp16')


def default_cache_dir() -> Path:
    """Return ``$SAPIENS_ROS_CACHE``, else ``$XDG_CACHE_HOME/sapiens_ros`` (~/.cache)."""
    env = os.environ.get('SAPIENS_ROS_CACHE')
    if env:
        return Path(env).expanduser()
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join('~', '.cache')
    return Path(base).expanduser() / 'sapiens_ros'


@dataclass(frozen=True)
class EngineKey:
    """Everything a TensorRT engine depends on."""

    weights_hash: str
    task: str
    input_size: tuple[int, int]
    batch: tuple[int, int, int]  # min, opt, max of the optimisation profile
    precision: str
    trt_version: str
    gpu_name: str
    compute_capability: tuple[int, int]
    graph_dtype: str = 'fp32'  # dtype of the ONNX graph the engine was built from
    recipe: int = RECIPE_VERSION  # how engines are built (flags, precision rules)

    def __post_init__(self) -> None:
        """Normalise tuples (JSON gives lists) and validate the precision."""
        object.__setattr__(self, 'input_size', tuple(int(v) for v in self.input_size))
        object.__setattr__(self, 'batch', tuple(int(v) for v in self.batch))
        object.__setattr__(self, 'compute_capability',
                           tuple(int(v) for v in self.compute_capability))
        if self.precision not in PRECISIONS:
            raise ValueError(f'precision must be one of {PRECISIONS}, got {self.precision!r}')

    def slot(self) -> str:
        """
        File stem naming the model, the GPU and the TensorRT version.

        Machines sharing a cache directory (an NFS home, a fleet image) each get their own
        slot, instead of overwriting each other's engines.
        """
        digest = key_hash(self.to_json())
        h, w = self.input_size
        gpu = ''.join(c if c.isalnum() else '_' for c in self.gpu_name).strip('_') or 'gpu'
        cc = ''.join(map(str, self.compute_capability))
        return (f'{self.task}-{h}x{w}-b{"-".join(map(str, self.batch))}-{self.precision}-'
                f'{gpu}-sm{cc}-trt{self.trt_version}-{digest}')

    def to_json(self) -> dict:
        """Return the key as JSON-friendly data."""
        data = asdict(self)
        for k in ('input_size', 'batch', 'compute_capability'):
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


@dataclass
class Lookup:
    """Result of :meth:`EngineCache.lookup`: a usable engine path, or why there is none."""

    path: Path
    hit: bool
    reason: str


class EngineCache:
    """Engines and their sidecars under ``root/engines``; the timing cache under ``root``."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_cache_dir()
        self.engines = self.root / 'engines'

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

    @staticmethod
    def invalidate(path: str | Path) -> None:
        """Remove an engine and its sidecar (a stale or corrupt entry)."""
        invalidate(Path(path))


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
            f'--input-size {input_size[0]}x{input_size[1]} --batch {":".join(map(str, batch))} '
            f'--dtype {precision} --out {out} --engine')
