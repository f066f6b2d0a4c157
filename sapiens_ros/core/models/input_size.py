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
Model input sizes: written ``WIDTHxHEIGHT`` (as ROS writes image_width x image_height).

Sapiens2 runs portrait (or square) inputs: its heads were trained on 768 wide x 1024 high, pose
crops are 3:4 portrait, and the pointmap's scale head takes only portrait sizes. Before 0.2 the
package wrote sizes HEIGHTxWIDTH, so a landscape value is refused, showing both readings, rather
than silently read the other way. Internally a size is a :class:`Size`, a ``(height, width)``
tuple (torch's order) whose text is ``WIDTHxHEIGHT``: the one writer and reader of that text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import logging
import re
from typing import NamedTuple

from .geometry import has_scale_head, patch_size, scale_features, scale_head_sizes
from ..errors import InputSizeError

LOG = logging.getLogger(__name__)
_SIZE = re.compile(r'^\s*(\d+)\s*[xX×]\s*(\d+)\s*$')


class Size(NamedTuple):
    """
    A model input size: a ``(height, width)`` tuple (torch's order), written ``WIDTHxHEIGHT``.

    The one place that writes and reads the text form, for people (CLI, parameters, logs) and
    files (ONNX metadata, cache file names, engine slots) alike, so no two places disagree.
    """

    height: int
    width: int

    def __str__(self) -> str:
        """Write the size ``WIDTHxHEIGHT``, e.g. ``768x1024``."""
        return f'{self.width}x{self.height}'

    @classmethod
    def of(cls, value: Sequence[int] | str) -> Size:
        """Return ``value``, a ``(height, width)`` pair or a ``WIDTHxHEIGHT`` text, as a Size."""
        if isinstance(value, str):
            return cls.parse(value)
        height, width = value
        return cls(int(height), int(width))

    @classmethod
    def parse(cls, text: str, name: str = 'input_size') -> Size:
        """
        Read ``WIDTHxHEIGHT`` exactly as :meth:`__str__` writes it (any orientation).

        For what this package wrote; a person's value goes through :func:`parse_size`, which
        also refuses the ambiguous ones.
        """
        match = _SIZE.match(text) if isinstance(text, str) else None
        if match is None:
            raise InputSizeError(f'{name} must be WIDTHxHEIGHT in pixels, e.g. 768x1024; got '
                                 f'{text!r}')
        return cls(height=int(match.group(2)), width=int(match.group(1)))


def format_size(hw: Sequence[int]) -> str:
    """Write an internal ``(height, width)`` as ``WIDTHxHEIGHT``."""
    return str(Size.of(hw))


def parse_size(value, name: str = 'input_size') -> Size:
    """
    Parse a ``WIDTHxHEIGHT`` size (e.g. ``768x1024``); return ``(height, width)``.

    A landscape value, or a two-number list (the old ``[height, width]`` parameter), is
    ambiguous between this order and the old one: it is refused with both readings.
    """
    if isinstance(value, (list, tuple)) and len(value) == 2 and \
            all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        a, b = (int(v) for v in value)
        raise InputSizeError(
            f'{name} {list(value)} is ambiguous: sizes are now a string WIDTHxHEIGHT. '
            f'As [height, width] (the old order) it means width {b} x height {a}: write '
            f'"{b}x{a}"; as [width, height] it means width {a} x height {b}: write "{a}x{b}"')
    height, width = Size.parse(value, name)
    if width <= 0 or height <= 0:
        raise InputSizeError(f'{name} {value!r} must be positive')
    if width > height:
        raise InputSizeError(
            f'{name} {value!r} is ambiguous: read WIDTHxHEIGHT it is width {width} x height '
            f'{height} (landscape, which Sapiens2 does not run); read HEIGHTxWIDTH (the order '
            f'before 0.2) it is width {height} x height {width}. Write "{height}x{width}" '
            f'(WIDTHxHEIGHT) for that portrait size')
    return Size(height, width)


def parse_task_sizes(text: str | Mapping[str, str], tasks: Sequence[str] = (),
                     name: str = 'input_sizes') -> dict[str, Size]:
    """Parse per-task sizes ``'seg=384x512,pointmap=656x912'`` to ``{task: Size}``."""
    if isinstance(text, Mapping):
        items = list(text.items())
    else:
        items = []
        for part in (p.strip() for p in str(text).split(',') if p.strip()):
            task, sep, size = part.partition('=')
            if not sep:
                raise InputSizeError(f'{name} entry {part!r} must be TASK=WIDTHxHEIGHT, e.g. '
                                     f'seg=384x512')
            items.append((task.strip(), size))
    out = {}
    for task, size in items:
        if tasks and task not in tasks:
            raise InputSizeError(f'{name} names {task!r}, which is not loaded '
                                 f'({", ".join(tasks)})')
        out[task] = parse_size(size, f'{name} {task}')
    return out


def legal_sizes(task: str, config) -> str:
    """Describe the sizes ``task``'s head accepts (WIDTHxHEIGHT), for error messages."""
    ph, pw = patch_size(config)
    if task == 'pointmap' and has_scale_head(config):
        hs, ws = scale_head_sizes(config)
        if hs and ws:
            return (f'widths {ws[0]}-{ws[-1]} x heights {hs[0]}-{hs[-1]}, multiples of {pw}, '
                    f'e.g. {Size(hs[0], ws[0])} (the smallest) or {Size(hs[-1], ws[-1])}')
    return f'any WIDTHxHEIGHT in multiples of {pw}x{ph}, e.g. 768x1024 or 384x512'


def fit_size(task: str, config, wanted: Sequence[int]) -> Size:
    """
    Return the input size closest to ``wanted`` that ``task``'s head accepts.

    Only the pointmap's scale head restricts sizes beyond the patch grid: below its range it
    gets its smallest legal size, above it its largest (each side clamped).
    """
    height, width = (int(v) for v in wanted)
    if task == 'pointmap' and has_scale_head(config):
        hs, ws = scale_head_sizes(config)
        if hs and ws:
            height = min(max(height, hs[0]), hs[-1])
            width = min(max(width, ws[0]), ws[-1])
            return Size(height, width)
    ph, pw = patch_size(config)
    return Size(max(ph, height - height % ph), max(pw, width - width % pw))


def task_input_sizes(tasks: Sequence[str], default: Sequence[int],
                     overrides: Mapping[str, Sequence[int]],
                     configs: Mapping[str, object]) -> dict[str, Size]:
    """
    Each head's input size: its override, else ``default`` fitted to what the head accepts.

    ``configs`` holds the model config of heads whose legal sizes are known (a head without one
    keeps ``default``; its runner still validates it). An override is kept as given, so a head
    that cannot take it fails with its legal sizes.
    """
    default = Size.of(default)
    sizes = {}
    for task in tasks:
        if task in overrides:
            sizes[task] = Size.of(overrides[task])
            continue
        config = configs.get(task)
        size = fit_size(task, config, default) if config is not None else default
        if size != default:
            LOG.info('%s runs at %s: it cannot take input_size %s (it accepts %s)', task, size,
                     default, legal_sizes(task, config))
        sizes[task] = size
    return sizes


def check_input_size(task: str, config, input_size: Sequence[int]) -> Size:
    """Validate a ``(height, width)`` model input size for ``task``; return it as a Size."""
    size = Size.of(input_size)
    ph, pw = patch_size(config)
    if size.height <= 0 or size.width <= 0 or size.height % ph or size.width % pw:
        raise InputSizeError(
            f'{task} input size {size} (WIDTHxHEIGHT) is not a positive multiple of the patch '
            f'size {pw}x{ph}; use e.g. 768x1024, 576x768 or 384x512')
    if task == 'pointmap' and has_scale_head(config):
        want = config.head_config.scale_final_input_size
        if scale_features(config, *size) != want:
            raise InputSizeError(
                f'the pointmap scale head cannot take {size} (WIDTHxHEIGHT): its MLP expects '
                f'{want} features. It accepts {legal_sizes(task, config)}')
    return size
