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

"""``sapiens-ros`` command line: ``infer`` here; other subcommands register from their modules."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

#: Modules that add a subcommand with ``add_parser(subparsers)`` and ``run(args) -> int``; a
#: ``check(args)`` default, if set, runs first, before the slow imports (a SapiensError: exit 2).
SUBCOMMAND_MODULES = ('sapiens_ros.cli_infer', 'sapiens_ros.cli_demo', 'sapiens_ros.cli_replay',
                      'sapiens_ros.cli_stats', 'sapiens_ros.cli_export')

NOISE_BANNER = """\
************************************************************************
*  --random-weights: TINY RANDOMLY INITIALISED MODELS.                 *
*  Every output below is NOISE. Use it to check the graph, not results. *
************************************************************************"""


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog='sapiens-ros', description='Sapiens2 human perception: CLI for the ROS 2 package.')
    parser.add_argument('-v', '--verbose', action='store_true', help='debug logging')
    sub = parser.add_subparsers(dest='command', required=True)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # an optional subcommand whose deps are missing
            logging.getLogger(__name__).debug('subcommand %s unavailable: %s', name, exc)
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``sapiens-ros`` console script."""
    os.environ.setdefault('HF_HUB_DISABLE_PROGRESS_BARS', '1')
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format='[%(levelname)s] %(name)s: %(message)s')
    from .core.errors import SapiensError

    try:  # the subcommand's arguments (device, outputs, ...) before the slow imports
        getattr(args, 'check', lambda args: None)(args)
    except SapiensError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    import huggingface_hub  # noqa: F401 - its logger gets its own handler on import

    for name in ('huggingface_hub', 'transformers'):  # one handler each: no line printed twice
        if logging.getLogger(name).handlers:
            logging.getLogger(name).propagate = False
    try:
        rc = int(args.run(args) or 0)
    except SapiensError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    if getattr(args, 'abandoned_threads', False):  # an uninterruptible inference is running
        from .ros.spin import exit_now

        exit_now(rc)
    return rc


if __name__ == '__main__':
    sys.exit(main())
