#!/usr/bin/env python3

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
The dependency sets sapiens_ros declares, and whether they resolve for another Python.

    check_deps.py floors                  # requirements.txt with setup.py's floors pinned
    check_deps.py resolve --python 3.10 --machine aarch64 [--sets setup,requirements,floors]
    check_deps.py transformers-for-torch  # a transformers that accepts this venv's torch

``floors`` prints ``requirements.txt`` with every package that ``setup.py`` gives a floor
(``transformers>=5.10.1``) pinned to that floor, and NumPy 1.x (a Jetson's): CI installs it
into a second venv and runs the core tests there. ``resolve`` asks pip (``install --dry-run
--python-version ... --only-binary=:all:``) whether setup.py's ``install_requires``,
``requirements.txt`` and the floors resolve for that Python and machine, torch left to the
platform (NVIDIA's Jetson wheel, a CUDA or CPU build). pip evaluates environment markers for
the running interpreter, not for ``--python-version``, so they are evaluated here for the target.
``transformers-for-torch`` prints a transformers requirement when the installed one would refuse
the installed torch (an older build kept by setup.sh, e.g. NVIDIA's JetPack wheel), else nothing.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path
import subprocess
import sys
import tempfile

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
#: Left to the platform: NVIDIA's JetPack wheel, a CUDA build, or the CPU wheel.
PLATFORM_PACKAGES = {'torch'}
#: Added to the floors: the NumPy 1.x line of JetPack 6's system Python, which NVIDIA's torch
#: wheels for it were built against (scripts/setup.sh keeps numpy 1.x on such a Jetson).
FLOOR_EXTRA = ['numpy<2']
#: manylinux tags a machine with glibc 2.35 (Ubuntu 22.04: Humble, JetPack 6) accepts.
GLIBC = (2, 35)


def install_requires(setup_py: Path = ROOT / 'setup.py') -> list[str]:
    """Return the literal ``install_requires`` list of ``setup.py`` (without running it)."""
    for node in ast.walk(ast.parse(setup_py.read_text())):
        if isinstance(node, ast.keyword) and node.arg == 'install_requires':
            return list(ast.literal_eval(node.value))
    raise SystemExit(f'{setup_py}: no install_requires')


def floors(setup_py: Path = ROOT / 'setup.py') -> dict[str, str]:
    """Map each package that ``setup.py`` gives a ``>=`` floor to that floor's version."""
    out = {}
    for text in install_requires(setup_py):
        req = Requirement(text)
        for spec in req.specifier:
            if spec.operator == '>=':
                out[canonicalize_name(req.name)] = spec.version
    return out


def requirement_lines(path: Path) -> list[str]:
    """Return the requirement lines of a requirements file (comments and blanks dropped)."""
    lines = []
    for raw in path.read_text().splitlines():
        text = raw.split(' #', 1)[0].strip()
        if text and not text.startswith('#'):
            lines.append(text)
    return lines


def marker_env(python: str, machine: str) -> dict[str, str]:
    """Environment that PEP 508 markers see on a Linux target of ``python`` and ``machine``."""
    return {'python_version': '.'.join(python.split('.')[:2]), 'python_full_version': python
            if python.count('.') == 2 else f'{python}.0', 'platform_machine': machine,
            'sys_platform': 'linux', 'platform_system': 'Linux', 'os_name': 'posix',
            'implementation_name': 'cpython', 'platform_python_implementation': 'CPython'}


def for_target(lines: list[str], env: dict[str, str]) -> list[str]:
    """Keep the requirements whose marker holds in ``env``, markers and platform packages gone."""
    out = []
    for text in lines:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        if name in PLATFORM_PACKAGES or (
                req.marker is not None and not Marker(str(req.marker)).evaluate(env)):
            continue
        extras = f'[{",".join(sorted(req.extras))}]' if req.extras else ''
        out.append(f'{req.name}{extras}{req.specifier}')
    return out


def floor_requirements() -> list[str]:
    """Return ``requirements.txt`` with setup.py's floors pinned, and :data:`FLOOR_EXTRA`."""
    pins = floors()
    out, seen = list(FLOOR_EXTRA), set()
    for text in requirement_lines(ROOT / 'requirements.txt'):
        req = Requirement(text)
        name = canonicalize_name(req.name)
        if name in pins:
            if name not in seen:
                out.append(f'{req.name}=={pins[name]}')
                seen.add(name)
        else:
            out.append(text)
    return out


def platform_tags(machine: str) -> list[str]:
    """Return the manylinux tags of a glibc-2.35 Linux on ``machine`` (newest first)."""
    major, newest = GLIBC
    tags = [f'manylinux_{major}_{minor}_{machine}' for minor in range(newest, 16, -1)]
    return tags + [f'manylinux2014_{machine}', 'linux_' + machine]


def resolve(requirements: list[str], python: str, machine: str) -> dict[str, str]:
    """
    Resolve ``requirements`` for ``python`` on ``machine`` with pip's dry run.

    Return ``{name: version}`` of what pip would install; raise SystemExit with pip's error.
    """
    with tempfile.TemporaryDirectory(prefix='sapiens_deps_') as tmp:
        req_file, report = Path(tmp) / 'requirements.txt', Path(tmp) / 'report.json'
        req_file.write_text('\n'.join(requirements) + '\n')
        cmd = [sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet',
               '--disable-pip-version-check', '--ignore-installed', '--only-binary=:all:',
               '--python-version', python, '--implementation', 'cp', '--target', tmp + '/t',
               '--report', str(report), '-r', str(req_file)]
        for tag in platform_tags(machine):
            cmd += ['--platform', tag]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            errors = [line for line in run.stderr.splitlines() if line.startswith('ERROR')]
            raise SystemExit(f'does not resolve for Python {python} on {machine}:\n'
                             + '\n'.join(errors or run.stderr.splitlines()[-5:]))
        items = json.loads(report.read_text())['install']
    return {i['metadata']['name']: i['metadata']['version'] for i in items}


#: The oldest torch each transformers release accepts (``is_torch_available``; a pre-release
#: such as NVIDIA's ``2.5.0a0+...nv24.08`` counts as older than 2.5.0, and transformers then
#: runs without torch), newest release first. Read from the wheels of 5.10.1 to 5.24.0.
TORCH_FLOORS = (('5.20.0', '2.6.0'), ('5.15.0', '2.5.0'), ('5.10.1', '2.4.0'))


def torch_floor(transformers_version: str) -> str:
    """Return the oldest torch that ``transformers_version`` accepts."""
    from packaging.version import Version

    for first, floor in TORCH_FLOORS:
        if Version(transformers_version) >= Version(first):
            return floor
    return TORCH_FLOORS[-1][1]


def transformers_for_torch(torch_version: str, transformers_version: str) -> str | None:
    """
    Return a transformers requirement that accepts ``torch_version``, or None when it does.

    Raise SystemExit naming the problem when no transformers with Sapiens2 accepts it.
    """
    from packaging.version import Version

    torch = Version(torch_version)
    if torch >= Version(torch_floor(transformers_version)):
        return None
    newer = None  # the first release that asks for more than this torch
    for first, floor in TORCH_FLOORS:
        if torch >= Version(floor):
            return f'transformers>={floors()["transformers"]},<{newer}'
        newer = first
    raise SystemExit(f'torch {torch_version} is older than every transformers with Sapiens2 '
                     f'accepts (torch {TORCH_FLOORS[-1][1]}): install a newer torch')


#: What ``resolve`` can check: label and requirement lines.
SETS = {
    'setup': ('setup.py install_requires', install_requires),
    'requirements': ('requirements.txt', lambda: requirement_lines(ROOT / 'requirements.txt')),
    'floors': ("requirements.txt at setup.py's floors", floor_requirements),
}


def main(argv: list[str] | None = None) -> int:
    """Print the floor requirements, or check that the sets resolve for a target."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = parser.add_subparsers(dest='command', required=True)
    sub.add_parser('floors', help="requirements.txt with setup.py's floors pinned")
    sub.add_parser('transformers-for-torch',
                   help='a transformers requirement that accepts the installed torch, if needed')
    res = sub.add_parser('resolve', help='check that the dependencies resolve for a target')
    res.add_argument('--python', default='3.10')
    res.add_argument('--machine', default='x86_64', choices=('x86_64', 'aarch64'))
    res.add_argument('--sets', default=','.join(SETS),
                     help=f'comma-separated, of: {", ".join(SETS)}')
    args = parser.parse_args(argv)
    if args.command == 'floors':
        print('\n'.join(floor_requirements()))
        return 0
    if args.command == 'transformers-for-torch':
        from importlib.metadata import version

        need = transformers_for_torch(version('torch'), version('transformers'))
        if need:
            print(need)
        return 0
    names = [s.strip() for s in args.sets.split(',') if s.strip()]
    for name in names:
        if name not in SETS:
            parser.error(f'unknown set {name!r}: choose from {", ".join(SETS)}')
    env = marker_env(args.python, args.machine)
    for name in names:
        label, lines = SETS[name]
        got = resolve(for_target(lines(), env), args.python, args.machine)
        shown = ', '.join(f'{n} {got[n]}' for n in sorted(got, key=str.lower)
                          if canonicalize_name(n) in {'transformers', 'numpy', 'onnxruntime',
                                                      'huggingface-hub', 'opencv-python-headless'})
        print(f'{label}: resolves for Python {args.python} on {args.machine} '
              f'({len(got)} packages, torch left to the platform): {shown}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
