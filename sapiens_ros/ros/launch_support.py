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
Pieces the launch files share: the DDS profile and turning launch arguments into parameters.

The arguments that set a node parameter come from the parameter table (``launch`` rows of
:data:`~sapiens_ros.ros.node_params.PARAMS`): their names, types and descriptions are the
table's. The launch converts a given text to the parameter's type and checks its form (a row's
``parse``) so a malformed value fails the launch at once; the node parses it once more to use it.
"""

from __future__ import annotations

import os
from typing import Any

from .node_params import node_rate_param, Param, PARAMS

PACKAGE = 'sapiens_ros'
#: Exit status of a node that could not start (a bad parameter, an unreadable parameters file).
START_FAILED = 2
PROFILE_VAR = 'FASTRTPS_DEFAULT_PROFILES_FILE'  # read by Humble, Jazzy and Kilted

#: The parameters ``perception.launch.py`` has an argument for (empty: the params_file value).
LAUNCH_PARAMS: tuple[Param, ...] = tuple(p for p in PARAMS if p.launch_name)
_LAUNCH_BY_NAME = {spec.name: spec for spec in LAUNCH_PARAMS}


def profile_path(share: str) -> str | None:
    """
    Return the shipped Fast DDS profile to export, or None.

    None when the RMW is not Fast DDS or the user already set a profile of their own.
    """
    if not os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp').startswith('rmw_fastrtps'):
        return None
    if os.environ.get(PROFILE_VAR) or os.environ.get('FASTDDS_DEFAULT_PROFILES_FILE'):
        return None
    return os.path.join(share, 'config', 'fastdds_shm.xml')


def shipped_profile() -> str | None:
    """
    Return the shipped Fast DDS profile to export (installed share, else this source tree).

    None under the conditions of :func:`profile_path` (another RMW, a profile already set).
    """
    from pathlib import Path

    try:
        from ament_index_python.packages import get_package_share_directory

        share = get_package_share_directory(PACKAGE)
    except Exception:  # noqa: BLE001 - not installed by colcon: the source tree's config/
        share = str(Path(__file__).resolve().parents[2])
    path = profile_path(share)
    return path if path and Path(path).is_file() else None


def parse_bool(name: str, text: str) -> bool:
    """Parse a launch argument's true/false; raise ValueError naming it otherwise."""
    value = text.strip().lower()
    if value not in ('true', 'false', '1', '0'):
        raise ValueError(f'launch argument {name}:={text!r} must be true or false')
    return value in ('true', '1')


def launch_text(value: Any) -> str:
    """Write a parameter value as a launch argument gives it (``true``, ``4``, ``768x1024``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def argument_description(spec: Param) -> str:
    """Describe a parameter's launch argument: the table's text, and what leaving it out does."""
    default = launch_text(spec.default) or 'empty'
    return f'{spec.help_text} (default: the params_file value, else {default})'


def parameter_arguments() -> list[tuple[str, str, str]]:
    """``(name, default, description)`` of the launch arguments that set a node parameter."""
    return [(spec.launch_name, '', argument_description(spec)) for spec in LAUNCH_PARAMS]


def parameter_value(spec: Param, text: str) -> Any:
    """
    Turn launch argument text into ``spec``'s parameter value; raise ValueError naming it.

    Booleans take true/false (1/0), numbers their literal; a row with a ``parse`` has its form
    checked here (the node parses it again to use it: the launch runs in another process).
    """
    name, text = spec.launch_name, text.strip()
    if spec.kind is bool:
        return parse_bool(name, text)
    if spec.kind in (int, float):
        try:
            return spec.kind(text)
        except ValueError:
            kind = 'an integer' if spec.kind is int else 'a number'
            raise ValueError(f'launch argument {name}:={text!r} must be {kind}') from None
    if spec.parse is not None:
        try:
            spec.parse(text, spec.name)
        except ValueError as exc:  # InputSizeError is one
            raise ValueError(f'launch argument {name}:={text!r}: {exc}') from None
    return text


def parse_input_size(text: str) -> str:
    """Check a launch argument ``input_size:=WIDTHxHEIGHT``; return it (the parameter's form)."""
    return parameter_value(_LAUNCH_BY_NAME['input_size'], text)


def parse_rates(text: str) -> dict[str, float]:
    """Parse ``rates:=seg=5,normal=2`` into ``{'rates.seg': 5.0, 'rates.normal': 2.0}``."""
    from ..core.pipeline.budget import parse_rates as rates_of

    rates = rates_of(text, 'launch argument rates')
    return {node_rate_param(task): rate for task, rate in rates.items()}


def check_params_file(path: str) -> None:
    """
    Check a parameters file's form before any node reads it; raise ValueError naming the problem.

    A missing file, YAML that does not parse and values outside a ``<node or /**>:
    ros__parameters:`` block would otherwise stop the node with an rcl traceback. The values
    themselves are the node's to judge: it refuses a bad one with one line (exit status 2) and
    names the parameters it does not declare. Imports nothing heavy: ``ros2 launch`` stays quick.
    """
    from pathlib import Path

    import yaml

    if not Path(path).is_file():
        raise ValueError(f'params_file {path}: no such file')
    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f'params_file {path} is not valid YAML: {exc}') from None
    if not isinstance(data, dict):
        raise ValueError(f'params_file {path} must map node names (or /**) to '
                         f'"ros__parameters:" blocks, not hold a {type(data).__name__}')
    for _ in _parameter_blocks(data, path):
        pass


def _parameter_blocks(data: dict, path: str, keys: tuple[str, ...] = ()):
    """Yield ``(node name parts, parameters)`` of every ``ros__parameters`` block."""
    for key, value in data.items():
        if key == 'ros__parameters':
            if not isinstance(value, dict):
                raise ValueError(f'params_file {path}: ros__parameters of '
                                 f'{"/".join(keys) or "/"} must be a mapping')
            yield keys, value
        elif isinstance(value, dict):
            yield from _parameter_blocks(value, path, keys + tuple(
                part for part in str(key).split('/') if part))
        else:
            raise ValueError(f'params_file {path}: {"/".join((*keys, str(key)))}: {value!r} '
                             f'is outside a ros__parameters block (indentation?)')


def parameter_overrides(args: dict[str, str]) -> dict:
    """Node parameters from the launch arguments given on the command line (non-empty)."""
    out: dict = {spec.name: parameter_value(spec, args[spec.launch_name])
                 for spec in LAUNCH_PARAMS if args.get(spec.launch_name)}
    if args.get('rates'):
        out.update(parse_rates(args['rates']))
    if args.get('depth'):  # depth:=<topic> turns the RGB-D input on (the launch file remaps)
        out['use_depth'] = True
    if args.get('detections'):  # a detector's boxes (the launch file remaps)
        out['box_source'] = 'detections'
    return out
