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

"""``sapiens-ros stats``: per-topic counts and rates, keypoint scores and person fraction."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``stats`` subcommand."""
    p = sub.add_parser('stats', help='summarise a replay output bag',
                       description='Per-topic counts and rates, frames with a person and '
                                   'per-keypoint mean scores of a replay output bag.')
    p.add_argument('bag', metavar='OUTPUT_BAG', help='rosbag2 directory written by replay')
    p.add_argument('--csv', action='store_true', help='CSV blocks instead of tables')
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``stats``; 2 (with the topics table) for a bag that holds no replay outputs."""
    import sys

    from .replay.stats import bag_stats, format_stats, not_an_output

    stats = bag_stats(args.bag)
    problem = not_an_output(stats, args.bag)
    if problem:
        print(format_stats(stats, csv=args.csv, only_topics=True), end='')
        print(f'error: {problem}', file=sys.stderr)
        return 2
    print(format_stats(stats, csv=args.csv), end='')
    return 0
