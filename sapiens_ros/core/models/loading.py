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

"""Load Sapiens2 checkpoints from the hub or a local directory, with errors that name the fix."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
import contextlib
import functools
import logging
import os
from pathlib import Path
import socket
import sys

import torch

from .registry import DEFAULT_SIZE, hub_id, model_class, task_spec, TASKS
from ..errors import (CheckpointMismatchError, CorruptCheckpointError, UnknownTaskError,
                      WeightsNotFoundError)

LOG = logging.getLogger(__name__)

DTYPES: dict[str, torch.dtype] = {
    'fp32': torch.float32, 'float32': torch.float32,
    'bf16': torch.bfloat16, 'bfloat16': torch.bfloat16,
    'fp16': torch.float16, 'float16': torch.float16,
}


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """Map ``fp32``/``bf16``/``fp16`` (or a torch dtype) to a torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return DTYPES[dtype.strip().lower()]
    except KeyError:
        raise UnknownTaskError(f'unknown dtype {dtype!r}; use fp32, bf16 or fp16') from None


def parse_device(device: str | torch.device) -> torch.device:
    """Validate a device string such as ``cpu``, ``cuda`` or ``cuda:1``."""
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise UnknownTaskError(f'invalid device {device!r}: {exc}') from None
    if dev.type == 'cuda':
        if not torch.cuda.is_available():
            raise UnknownTaskError(
                f'device {device!r} requested but CUDA is not available in this torch build '
                f'({torch.__version__}); use device=cpu or install a CUDA build of torch')
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise UnknownTaskError(
                f'device {device!r} does not exist; this machine has '
                f'{torch.cuda.device_count()} CUDA device(s)')
    elif dev.type != 'cpu':
        raise UnknownTaskError(f'unsupported device {device!r}; use cpu or cuda[:N]')
    return dev


def is_local_source(source: str) -> bool:
    """Return True when ``source`` names a local path rather than a hub id."""
    return (os.path.exists(source) or source.startswith(('/', './', '../', '~'))
            or source.count('/') > 1 or os.sep != '/' and os.sep in source)


def resolve_sources(tasks: tuple[str, ...] | list[str], size: str | None = None,
                    model_dir: str | None = None,
                    overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """
    Pick the checkpoint (hub id or local dir) for each task.

    The convention is the same everywhere (CLI, node parameters, replay): ``overrides[task]``
    wins, then ``<model_dir>/<task>/``, then the hub id ``facebook/sapiens2-<task>-<size>``.
    """
    overrides = dict(overrides or {})
    for task in overrides:
        task_spec(task)
    sources = {}
    for task in tasks:
        if overrides.get(task):
            sources[task] = overrides[task]
        elif model_dir:
            sources[task] = str(Path(model_dir).expanduser() / task)
        else:
            sources[task] = hub_id(task, size or DEFAULT_SIZE)
    return sources


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


@functools.lru_cache(maxsize=1)
def _hub_unreachable() -> str | None:
    """
    Say why the Hugging Face hub cannot be reached (one 3 s probe a process), or None.

    Without it, an offline machine spends ~30 s in huggingface_hub's retries before failing.
    """
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return 'HF_HUB_OFFLINE is set'
    url = urlparse(constants.ENDPOINT)
    host, port = url.hostname or '', url.port or (443 if url.scheme == 'https' else 80)
    if os.environ.get('HTTPS_PROXY') or os.environ.get('https_proxy'):
        return None  # the proxy decides: let huggingface_hub try
    try:
        socket.create_connection((host, port), timeout=3.0).close()
    except OSError as exc:
        return f'the hub ({host}) cannot be reached: {exc}'
    return None


def _check_hub(source: str) -> None:
    """Fail at once, with the fix, when ``source`` is not cached and the hub is unreachable."""
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(source, 'config.json')
    if isinstance(cached, str):
        return
    reason = _hub_unreachable()
    if reason:
        raise _weights_error(source, None, reason)


def _weights_error(source: str, exc: BaseException | None,
                   reason: str | None = None) -> WeightsNotFoundError:
    reason = reason or ('HF_HUB_OFFLINE is set' if _offline()
                        else f'it could not be downloaded ({type(exc).__name__})')
    from huggingface_hub import constants

    return WeightsNotFoundError(
        f'the weights of {source!r} are not in the Hugging Face cache ({constants.HF_HUB_CACHE}) '
        f'and {reason}. Fix: on a machine with internet run `hf download {source}` and copy the '
        f'cache (or the folder) here, then pass it with --model-dir/--model (node: model_dir or '
        f'models.<task>); to check the graph without weights use --random-weights.')


def load_config(source: str):
    """Load the Sapiens2 config of ``source`` (hub id or local directory)."""
    from transformers import AutoConfig

    if is_local_source(source):
        path = Path(source).expanduser()
        if not path.is_dir():
            raise WeightsNotFoundError(
                f'model directory {str(path)!r} does not exist; it should hold a save_pretrained '
                f'checkpoint (config.json + model.safetensors). With --model-dir DIR each task '
                f'lives in DIR/<task>/.')
        if not (path / 'config.json').is_file():
            raise WeightsNotFoundError(
                f'{str(path)!r} has no config.json; point to a directory written by '
                f'save_pretrained (config.json + model.safetensors)')
        source = str(path)
    else:
        _check_hub(source)
    try:
        return AutoConfig.from_pretrained(source)
    except (OSError, ValueError) as exc:
        if is_local_source(source):
            raise WeightsNotFoundError(f'cannot read the config in {source!r}: {exc}') from exc
        raise _weights_error(source, exc) from exc


def checkpoint_task(config) -> str | None:
    """Return the task a checkpoint's config serves (from ``architectures``), or None."""
    for arch in getattr(config, 'architectures', None) or ():
        for name, spec in TASKS.items():
            if spec.model_class == arch:
                return name
    return None


def check_checkpoint_task(task: str, config, source: str) -> None:
    """Raise :class:`CheckpointMismatchError` if ``config`` belongs to another task."""
    if getattr(config, 'model_type', 'sapiens2') != 'sapiens2':
        raise CheckpointMismatchError(
            f'{source!r} is a {config.model_type!r} checkpoint, not Sapiens2; for task {task!r} '
            f'use {hub_id(task)} or a directory saved from {task_spec(task).model_class}')
    found = checkpoint_task(config)
    if found is not None and found != task:
        raise CheckpointMismatchError(
            f'{source!r} is a {task_spec(found).model_class} checkpoint (task {found!r}), but it '
            f'was configured for task {task!r} ({task_spec(task).model_class}). Fix: give it to '
            f'{found!r} instead, or point {task!r} at e.g. {hub_id(task)}')


def load_model(task: str, source: str | None = None, *, size: str = DEFAULT_SIZE,
               dtype: str | torch.dtype = 'fp32', device: str | torch.device = 'cpu'):
    """Load the Sapiens2 model for ``task`` from a hub id or local directory, in eval mode."""
    spec = task_spec(task)
    source = source or hub_id(task, size)
    torch_dtype = parse_dtype(dtype)
    dev = parse_device(device)
    config = load_config(source)
    check_checkpoint_task(task, config, source)
    cls = model_class(task)
    path = str(Path(source).expanduser()) if is_local_source(source) else source
    try:
        with progress_bars_only_in_a_terminal():
            model = cls.from_pretrained(path, config=config, dtype=torch_dtype)
    except OSError as exc:
        if is_local_source(source):
            raise WeightsNotFoundError(
                f'{source!r} has a config but no loadable weights ({exc}); expected '
                f'model.safetensors written by save_pretrained') from exc
        raise _weights_error(source, exc) from exc
    except Exception as exc:  # noqa: BLE001 - safetensors/torch errors on a damaged file
        raise CorruptCheckpointError(
            f'the weights of {source!r} ({_weight_files(path)}) cannot be read: '
            f'{type(exc).__name__}: {exc}. The file is truncated or corrupt (an interrupted '
            f'download or copy, or a full disk): delete it and download or save it again') from exc
    LOG.info('loaded %s (%s) from %s as %s on %s', spec.model_class, task, source,
             torch_dtype, dev)
    return model.to(dev).eval()


def in_a_terminal() -> bool:
    """
    Return whether a person watches stderr: a TTY, and not a ROS node's (``--ros-args``).

    ``ros2 launch`` gives nodes a pseudo-terminal (``emulate_tty``) whose output ends in log
    files, where every redraw of a progress bar is one more carriage-return line.
    """
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False
    return tty and '--ros-args' not in sys.argv


@contextlib.contextmanager
def progress_bars_only_in_a_terminal() -> Iterator[None]:
    """Silence transformers' and the hub's progress bars (weights, downloads) outside one."""
    if in_a_terminal():
        yield
        return
    from huggingface_hub.utils import (are_progress_bars_disabled, disable_progress_bars,
                                       enable_progress_bars)
    from transformers.utils import logging as hf_logging

    restore_hf = hf_logging.is_progress_bar_enabled()
    restore_hub = not are_progress_bars_disabled()
    hf_logging.disable_progress_bar()
    disable_progress_bars()
    try:
        yield
    finally:
        if restore_hf:
            hf_logging.enable_progress_bar()
        if restore_hub:
            enable_progress_bars()


def _weight_files(path: str) -> str:
    """Name the weight files of a local checkpoint directory (or the hub id) for messages."""
    folder = Path(path)
    if folder.is_dir():
        files = sorted(str(f) for f in folder.glob('*.safetensors')) or \
            sorted(str(f) for f in folder.glob('*.bin'))
        if files:
            return ', '.join(files)
    return path
