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
    """Run ``stats``."""
    from .replay.stats import bag_stats, format_stats

    print(format_stats(bag_stats(args.bag), csv=args.csv), end='')
    return 0
