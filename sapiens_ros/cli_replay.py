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

"""``sapiens-ros replay``: run a rosbag2 bag through the heads into a new bag, no frame lost."""

from __future__ import annotations

import argparse
import logging
import sys

from .cli_infer import add_model_args, parse_hw, pipeline_from_args


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``replay`` subcommand."""
    p = sub.add_parser(
        'replay', help='run the heads on every frame of a rosbag2 bag, into a new bag',
        description='Deterministic offline replay: every Image/CompressedImage frame of '
                    "INPUT_BAG goes through the pipeline; the node's topics go to OUTPUT_BAG "
                    '(failed frames get a /sapiens/errors record).')
    p.add_argument('input', metavar='INPUT_BAG', help='rosbag2 directory (sqlite3 or mcap)')
    p.add_argument('--out', required=True, metavar='OUTPUT_BAG', help='output bag directory')
    p.add_argument('--topics', default='',
                   help='comma-separated image topics (default: every Image/CompressedImage)')
    add_model_args(p)
    p.add_argument('--batch', type=int, default=1, help='frames per inference batch')
    p.add_argument('--start', type=float, default=None, help='seconds from the bag start')
    p.add_argument('--end', type=float, default=None, help='seconds from the bag start')
    p.add_argument('--every', type=int, default=1, help='keep every K-th frame of each topic')
    p.add_argument('--storage', default='mcap', choices=['mcap', 'sqlite3'])
    p.add_argument('--copy-inputs', action='store_true', help='copy the input topics too')
    p.add_argument('--resume', action='store_true', help='continue a partial OUTPUT_BAG')
    p.add_argument('--video', default=None, metavar='OUT.mp4',
                   help='side-by-side overlays of the first topic')
    p.add_argument('--namespace', default='/sapiens', help='namespace of the output topics')
    p.add_argument('--boxes', default='seg', choices=['seg', 'full'], help='pose person boxes')
    p.add_argument('--flip', action='store_true', help='pose flip test')
    p.add_argument('--stride', type=int, default=1, help='pointmap pixel stride')
    p.add_argument('--outputs', default='', metavar='SUFFIX,...',
                   help='output topic suffixes to write, e.g. pose/keypoints,seg/labels '
                        '(default: every output of the tasks)')
    p.add_argument('--no-progress', action='store_true', help='no progress output')
    p.set_defaults(run=run)


def parse_outputs(text: str, tasks) -> frozenset[str] | None:
    """``--outputs``: suffixes of ``TASK_OUTPUTS`` that the tasks produce (None: all)."""
    from .core.errors import SapiensError
    from .ros.messages import TASK_OUTPUTS

    names = [n.strip().strip('/') for n in text.split(',') if n.strip()]
    if not names:
        return None
    known = {s: t for t, suffixes in TASK_OUTPUTS.items() for s in suffixes}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SapiensError(f'unknown --outputs {", ".join(unknown)}; valid: '
                           f'{", ".join(known)}')
    missing = [n for n in names if known[n] not in tasks]
    if missing:
        raise SapiensError(f'--outputs {", ".join(missing)} need the task(s) '
                           f'{", ".join(sorted({known[n] for n in missing}))} in --tasks')
    return frozenset(names)


def run(args: argparse.Namespace) -> int:
    """
    Run ``replay``; the bag is valid whatever the exit status.

    0: every frame has outputs; 1: the input broke mid-way (its readable frames are kept);
    2: an input cannot be opened or the arguments are wrong; 3: some frames became error
    records (``/sapiens/errors``); 4: the output could not be written (disk full); 130:
    interrupted (SIGINT or SIGTERM). Continue 1, 4 and 130 with --resume.
    """
    from .core.pipeline import PipelineConfig
    from .core.registry import parse_tasks
    from .replay.loop import replay, ReplayOptions
    from .replay.source import InputBag
    from .ros.messages import MessageOptions

    topics = [t.strip() for t in args.topics.split(',') if t.strip()]
    outputs = parse_outputs(args.outputs, parse_tasks(args.tasks))
    with InputBag(args.input, salvage=True) as bag:  # bad input fails here, before models load
        chosen = bag.select(topics)
        logging.getLogger(__name__).info(
            'replaying %s (%s)', ', '.join(c.topic for c in chosen), args.input)
    config = PipelineConfig(input_size=parse_hw(args.input_size), box_source=args.boxes,
                            flip_test=args.flip, pointmap_stride=args.stride)
    pipe = pipeline_from_args(args, config)
    options = ReplayOptions(
        input_bag=args.input, output_bag=args.out, topics=topics or None, batch=args.batch,
        start=args.start, end=args.end, every=args.every, storage=args.storage,
        copy_inputs=args.copy_inputs, resume=args.resume, video=args.video,
        namespace=args.namespace, progress=not args.no_progress,
        messages=MessageOptions(outputs=outputs))
    summary = replay(pipe, options)
    status = summary.exit_status
    print(summary.text(), file=sys.stdout if status in (0, 3) else sys.stderr, flush=True)
    return status
