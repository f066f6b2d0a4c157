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

"""``sapiens-ros replay``: rosbag2 bags through the heads into new bags, no frame lost."""

from __future__ import annotations

import argparse
import functools
import logging
from pathlib import Path
import sys

from .cli_infer import add_model_args, input_size, pipeline_from_args
from .core.pipeline.plan import PIPELINE_BOX_SOURCES

log = logging.getLogger(__name__)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``replay`` subcommand."""
    p = sub.add_parser(
        'replay', help='run the heads on every frame of rosbag2 bags, into new bags',
        description='Deterministic offline replay: every Image/CompressedImage frame of '
                    "INPUT_BAG goes through the pipeline; the node's topics go to OUTPUT_BAG "
                    '(failed frames get a /sapiens/errors record). With several inputs, a '
                    'directory of bags, --workers N or --split-seconds, --out is a directory: '
                    'one output bag per input under the same relative name, and a manifest.')
    p.add_argument('input', nargs='+', metavar='INPUT',
                   help='rosbag2 bag (sqlite3 or mcap), or a directory of bags')
    p.add_argument('--out', required=True, metavar='OUTPUT_BAG|OUT_DIR',
                   help='output bag (one input bag) or output directory (many bags)')
    p.add_argument('--topics', default='',
                   help='comma-separated image topics (default: every Image/CompressedImage)')
    add_model_args(p)
    p.add_argument('--batch', type=int, default=0,
                   help='frames per inference step (default 0: one per camera topic)')
    p.add_argument('--start', type=float, default=None, help='seconds from the bag start')
    p.add_argument('--end', type=float, default=None, help='seconds from the bag start')
    p.add_argument('--every', type=int, default=1, help='keep every K-th frame of each topic')
    p.add_argument('--storage', default='mcap', choices=['mcap', 'sqlite3'])
    p.add_argument('--copy-inputs', action='store_true', help='copy the input topics too')
    p.add_argument('--resume', action='store_true',
                   help='continue partial outputs (closed, killed or cut short by a full disk)')
    p.add_argument('--video', default=None, metavar='OUT.mp4',
                   help='side-by-side overlays of the first topic (one input bag)')
    p.add_argument('--namespace', default='/sapiens', help='namespace of the output topics')
    p.add_argument('--boxes', default='seg', choices=PIPELINE_BOX_SOURCES,
                   help='pose person boxes')
    p.add_argument('--flip', action='store_true', help='pose flip test')
    p.add_argument('--stride', type=int, default=2,
                   help='pointmap pixel stride (default 2, as the node)')
    p.add_argument('--outputs', default='default', metavar='SUFFIX,...|default|all',
                   help='output topic suffixes to write, e.g. pose/keypoints,seg/labels, '
                        '/compressed variants included; default: the default set of the node '
                        '(3.65 MB per 1024x768 frame, docs/topics.md) and pose/detections; '
                        'all: every raw output (pose/overlay too)')
    p.add_argument('--rates', default='',
                   help='most runs per second per task and camera, e.g. seg=5,normal=2 (as the '
                        "node's rates.<task>: pose between seg frames runs on tracked boxes)")
    p.add_argument('--no-tracking', action='store_true',
                   help='no person tracking (ids -1, nothing smoothed), as tracking:=false')
    p.add_argument('--smooth-keypoints', action='store_true',
                   help='pose/keypoints One-Euro filtered (default raw), as the node parameter')
    p.add_argument('--world-frame', default='', metavar='FRAME',
                   help='persons in this tf2 frame (odom, map...) from every camera, with the '
                        'TF of the bag (/tf, /tf_static) and the camera_info of each camera, as '
                        "the node's world_frame (needs tf2_ros; 3D from the pointmap)")
    p.add_argument('--hri', action='store_true',
                   help='REP-155 bodies (joint_states, URDF...) and faces and their /tf frames, '
                        "as the node's hri:=true (the camera_info of each camera makes the "
                        'pointmap metric)')
    p.add_argument('--no-progress', action='store_true', help='no progress output')
    p.add_argument('--checkpoint-seconds', type=float, default=1.0, metavar='S',
                   help='make the output durable at most every S seconds: the work a kill -9 '
                        'or a full disk can cost (0: after every batch)')
    f = p.add_argument_group('many bags (pip install sapiens_ros[fleet] for --workers > 1)')
    f.add_argument('--workers', type=int, default=1,
                   help='Ray workers, each loading the pipeline once (default 1: no Ray)')
    f.add_argument('--ray-address', default=None,
                   help='an existing Ray cluster (default: start a local Ray)')
    f.add_argument('--gpus-per-worker', type=float, default=0.0,
                   help='GPUs each worker asks Ray for; fractions share a GPU (0.5)')
    f.add_argument('--cpus-per-worker', type=float, default=1.0,
                   help='CPUs each worker asks Ray for (also its torch threads)')
    f.add_argument('--split-seconds', type=float, default=None,
                   help='split bags longer than this into time ranges run in parallel and '
                        'merged into one bag (tracking restarts per range)')
    f.add_argument('--retries', type=int, default=2,
                   help='times a bag whose worker died is run again (it resumes)')
    f.add_argument('--ray-dashboard', action='store_true',
                   help='start the Ray dashboard with a local Ray (default: off)')
    p.set_defaults(run=run, check=check)


def check(args: argparse.Namespace) -> None:
    """Check ``--out``, the device and the providers before any model loads."""
    from .cli_infer import check_model_args
    from .core.errors import SapiensError
    from .core.pipeline.budget import parse_rates

    out = Path(args.out).expanduser()
    if out.exists() and not out.is_dir():
        raise SapiensError(f'--out {args.out} is a file, not a bag: a rosbag2 bag (and an '
                           f'OUT_DIR of many) is a directory, so --resume cannot continue it; '
                           f'choose another --out or delete the file')
    check_model_args(args)
    try:
        parse_rates(args.rates)
    except ValueError as exc:
        raise SapiensError(str(exc)) from None


def parse_outputs(text: str, tasks) -> frozenset[str] | None:
    """Parse ``--outputs``: output suffixes the tasks produce (None: every raw one)."""
    from .core.errors import SapiensError
    from .ros.topics import DEFAULT_OUTPUTS, OPTIONAL_OUTPUTS, OUTPUT_TASK

    names = [n.strip().strip('/') for n in text.split(',') if n.strip()]
    if names in ([], ['all']):
        return None
    known = {**OUTPUT_TASK, **OPTIONAL_OUTPUTS}
    if names == ['default']:  # and the optional outputs (pose/detections): a few bytes
        return frozenset(n for n in (*DEFAULT_OUTPUTS, *OPTIONAL_OUTPUTS) if known[n] in tasks)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SapiensError(f'unknown --outputs {", ".join(unknown)}; valid: '
                           f'{", ".join(known)}')
    missing = [n for n in names if known[n] not in tasks]
    if missing:
        raise SapiensError(f'--outputs {", ".join(missing)} need the task(s) '
                           f'{", ".join(sorted({known[n] for n in missing}))} in --tasks')
    return frozenset(names)


def build_pipeline(settings: dict):
    """Load the pipeline the model flags describe (picklable: Ray workers call it)."""
    from .core.pipeline.pipeline import PipelineConfig

    args = argparse.Namespace(**settings)
    config = PipelineConfig(input_size=input_size(args), box_source=args.boxes,
                            flip_test=args.flip, pointmap_stride=args.stride)
    return pipeline_from_args(args, config)


def replay_options(args: argparse.Namespace, input_bag: str):
    """Return the :class:`~sapiens_ros.replay.loop.ReplayOptions` of the flags."""
    from .core.models.registry import parse_tasks
    from .core.people.state import PeopleConfig
    from .core.pipeline.budget import parse_rates
    from .replay.loop import ReplayOptions
    from .ros.render_plan import MessageOptions

    topics = [t.strip() for t in args.topics.split(',') if t.strip()]
    return ReplayOptions(
        input_bag=input_bag, output_bag=args.out, topics=topics or None, batch=args.batch,
        start=args.start, end=args.end, every=args.every, storage=args.storage,
        copy_inputs=args.copy_inputs, resume=args.resume, video=args.video,
        namespace=args.namespace, progress=not args.no_progress, world_frame=args.world_frame,
        hri=args.hri,
        checkpoint_seconds=args.checkpoint_seconds,
        people=PeopleConfig(tracking=not args.no_tracking), rates=parse_rates(args.rates),
        messages=MessageOptions(outputs=parse_outputs(args.outputs, parse_tasks(args.tasks)),
                                smooth_keypoints=args.smooth_keypoints))


def run(args: argparse.Namespace) -> int:
    """
    Run ``replay``; every output bag is valid whatever the exit status.

    0: every frame has outputs; 1: an input broke mid-way (its readable frames are kept);
    2: an input cannot be opened or the arguments are wrong; 3: some frames became error
    records (``/sapiens/errors``); 4: an output could not be written (disk full) or, with
    many bags, work is left undone; 130: interrupted (SIGINT or SIGTERM). Continue 1, 4 and
    130 with --resume.
    """
    from .replay.bags import is_bag

    first = Path(args.input[0])
    if len(args.input) == 1 and args.workers == 1 and not args.split_seconds and \
            (is_bag(first) or first.is_file() or not first.exists()):
        return run_one(args)
    return run_many(args)


def run_one(args: argparse.Namespace) -> int:
    """One bag into the output bag ``--out``."""
    from .replay.loop import replay
    from .replay.source import InputBag

    options = replay_options(args, args.input[0])
    with InputBag(options.input_bag, salvage=True) as bag:  # fails here, before models load
        chosen = bag.select(options.topics)
        log.info('replaying %s (%s)', ', '.join(c.topic for c in chosen), options.input_bag)
    summary = replay(build_pipeline(_settings(args)), options)
    status = summary.exit_status
    print(summary.text(), file=sys.stdout if status in (0, 3) else sys.stderr, flush=True)
    return status


def run_many(args: argparse.Namespace) -> int:
    """Many bags into ``OUT_DIR``, here or on Ray workers, with a manifest."""
    from .core.errors import SapiensError
    from .replay.fleet import Fleet, FleetOptions, LocalExecutor

    if args.video:
        raise SapiensError('--video is for one input bag')
    if args.split_seconds and (args.start is not None or args.end is not None):
        raise SapiensError('--split-seconds replays whole bags: drop --start/--end')
    if args.workers < 1:
        raise SapiensError('--workers must be >= 1')
    opt = FleetOptions(
        inputs=args.input, out_dir=args.out, replay=replay_options(args, ''),
        workers=args.workers, ray_address=args.ray_address,
        gpus_per_worker=args.gpus_per_worker, cpus_per_worker=args.cpus_per_worker,
        split_seconds=args.split_seconds, retries=args.retries, progress=not args.no_progress,
        ray_dashboard=args.ray_dashboard)
    if args.workers > 1:
        from .replay.ray_workers import import_ray

        import_ray()  # names the install before anything loads
    fleet = Fleet(opt)  # finds the bags: a bad input fails here, before models load
    log.info('replaying %d bags into %s', len(fleet.bags), args.out)
    make_pipeline = functools.partial(build_pipeline, _settings(args))
    if args.workers > 1:
        from .replay.ray_workers import RayExecutor

        executor = RayExecutor(make_pipeline, opt)
    else:
        executor = LocalExecutor(make_pipeline)
    result = fleet.run(executor)
    status = result.exit_status
    print(result.text(), file=sys.stdout if status in (0, 3) else sys.stderr, flush=True)
    return status


def _settings(args: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(args).items() if k != 'run'}
