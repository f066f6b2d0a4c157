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

"""Pieces the launch files share: the DDS profile and turning launch arguments into parameters."""

from __future__ import annotations

import os

PACKAGE = 'sapiens_ros'
#: Exit status of a node that could not start (a bad parameter, an unreadable parameters file).
START_FAILED = 2
PROFILE_VAR = 'FASTRTPS_DEFAULT_PROFILES_FILE'  # read by Humble, Jazzy and Kilted

#: Launch arguments that become node parameters of that type when given (empty: the
#: params_file value stays).
STRING_ARGS = ('tasks', 'model_size', 'model_dir', 'backend', 'dtype', 'device',
               'engine_batch', 'cache_dir', 'input_sizes', 'keypoint_format')
BOOL_ARGS = ('compressed', 'random_weights', 'autostart', 'allow_build', 'hri', 'publish_tf')
INT_ARGS = ('cpu_threads', 'max_cameras_per_step')


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


def parse_input_size(text: str) -> str:
    """Check a launch argument ``input_size:=WIDTHxHEIGHT``; return it (the parameter's form)."""
    from ..core.errors import InputSizeError
    from ..core.models.input_size import parse_size

    try:
        parse_size(text.strip(), 'launch argument input_size')
    except InputSizeError as exc:
        raise ValueError(str(exc)) from None
    return text.strip()


def parse_rates(text: str) -> dict[str, float]:
    """Parse ``rates:=seg=5,normal=2`` into ``{'rates.seg': 5.0, 'rates.normal': 2.0}``."""
    from ..core.pipeline.budget import parse_rates as rates_of

    rates = rates_of(text, 'launch argument rates')
    return {f'rates.{task}': rate for task, rate in rates.items()}


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
    out: dict = {k: args[k] for k in STRING_ARGS if args.get(k)}
    out.update({k: parse_bool(k, args[k]) for k in BOOL_ARGS if args.get(k)})
    for name in INT_ARGS:
        if args.get(name):
            try:
                out[name] = int(args[name])
            except ValueError:
                raise ValueError(f'launch argument {name}:={args[name]!r} must be an integer') \
                    from None
    if args.get('input_size'):
        out['input_size'] = parse_input_size(args['input_size'])
    if args.get('rates'):
        out.update(parse_rates(args['rates']))
    if args.get('depth'):  # depth:=<topic> turns the RGB-D input on (the launch file remaps)
        out['use_depth'] = True
    if args.get('detections'):  # a detector's boxes (the launch file remaps)
        out['box_source'] = 'detections'
    return out
