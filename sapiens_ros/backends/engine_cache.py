"""
Cache of TensorRT engines in a user cache dir, with a sidecar JSON recording each key.

An engine is only valid for the weights, task, input size, batch profile and precision it was
built from, and for the TensorRT version and GPU (name and compute capability) that built it. The
cache slot (file name) is derived from the model part of the key; the sidecar holds the whole key
and the engine's SHA-256, so a cached engine from another GPU or TensorRT version, or a corrupt
file, is detected, logged and rebuilt, never loaded blindly. Pure Python: testable without
TensorRT.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
import hashlib
import json
import logging
import os
from pathlib import Path
import tempfile
import time

from .fingerprint import file_hash

LOG = logging.getLogger(__name__)

SIDECAR_VERSION = 1
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

    def __post_init__(self) -> None:
        """Normalise tuples (JSON gives lists) and validate the precision."""
        object.__setattr__(self, 'input_size', tuple(int(v) for v in self.input_size))
        object.__setattr__(self, 'batch', tuple(int(v) for v in self.batch))
        object.__setattr__(self, 'compute_capability',
                           tuple(int(v) for v in self.compute_capability))
        if self.precision not in PRECISIONS:
            raise ValueError(f'precision must be one of {PRECISIONS}, got {self.precision!r}')

    def slot(self) -> str:
        """File stem from the model part of the key (same model, any GPU: same slot)."""
        model = f'{self.weights_hash}|{self.task}|{self.input_size}|{self.batch}|{self.precision}'
        digest = hashlib.sha256(model.encode()).hexdigest()[:12]
        h, w = self.input_size
        return f'{self.task}-{h}x{w}-b{"-".join(map(str, self.batch))}-{self.precision}-{digest}'

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
        return engine.with_suffix('.json')

    def timing_cache_path(self, trt_version: str, gpu_name: str,
                          compute_capability: tuple[int, int]) -> Path:
        """Return the timing cache file of a TensorRT version and GPU (shared by all models)."""
        gpu = ''.join(c if c.isalnum() else '_' for c in gpu_name).strip('_') or 'gpu'
        cc = '.'.join(map(str, compute_capability))
        return self.root / 'timing' / f'trt{trt_version}-{gpu}-sm{cc}.cache'

    def lookup(self, key: EngineKey, path: str | Path | None = None,
               verify_hash: bool = True) -> Lookup:
        """Check the cached engine (or the given ``path``) against ``key`` and its sidecar."""
        engine = Path(path).expanduser() if path else self.engine_path(key)
        sidecar = self.sidecar_path(engine)
        if not engine.is_file():
            return Lookup(engine, False, f'no cached engine at {engine}')
        if not sidecar.is_file():
            return Lookup(engine, False, f'{engine.name} has no sidecar {sidecar.name}; its '
                                         f'provenance is unknown')
        try:
            data = json.loads(sidecar.read_text())
            cached = EngineKey.from_json(data['key'])
            size, digest = int(data['engine_bytes']), str(data['engine_sha256'])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return Lookup(engine, False, f'sidecar {sidecar.name} is unreadable ({exc})')
        diff = key.differences(cached)
        if diff:
            return Lookup(engine, False, f'{engine.name} was built for another setup ('
                                         + '; '.join(diff) + ')')
        actual = engine.stat().st_size
        if actual != size:
            return Lookup(engine, False, f'{engine.name} is corrupt ({actual} bytes, the '
                                         f'sidecar says {size})')
        if verify_hash and file_hash(engine) != digest:
            return Lookup(engine, False, f'{engine.name} is corrupt (SHA-256 differs from the '
                                         f'sidecar)')
        return Lookup(engine, True, f'cached engine {engine} matches')

    def store(self, key: EngineKey, engine_bytes: bytes, path: str | Path | None = None,
              extra: dict | None = None) -> Path:
        """Write an engine and its sidecar atomically; return the engine path."""
        engine = Path(path).expanduser() if path else self.engine_path(key)
        engine.parent.mkdir(parents=True, exist_ok=True)
        data = dict(sidecar_version=SIDECAR_VERSION, key=key.to_json(),
                    engine_bytes=len(engine_bytes),
                    engine_sha256=hashlib.sha256(engine_bytes).hexdigest(),
                    created=time.strftime('%Y-%m-%dT%H:%M:%S%z'), **(extra or {}))
        _atomic_write(engine, bytes(engine_bytes))
        _atomic_write(self.sidecar_path(engine), (json.dumps(data, indent=2) + '\n').encode())
        return engine

    def invalidate(self, path: str | Path) -> None:
        """Remove an engine and its sidecar (a stale or corrupt entry)."""
        engine = Path(path)
        for p in (engine, self.sidecar_path(engine)):
            p.unlink(missing_ok=True)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file in the same dir, then rename: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix='.tmp')
    try:
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
