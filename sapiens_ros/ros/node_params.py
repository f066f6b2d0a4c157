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
The perception node's parameters: one table, and everything derived from it.

Each row (:class:`Param`) says a parameter's name, type (its default's), default, description,
range or choices, when a change applies, whether ``perception.launch.py`` has an argument for
it (``launch``) and which option field it sets (``to``: ``message`` is
:class:`~sapiens_ros.ros.render_plan.MessageOptions`, ``pipeline``
:class:`~sapiens_ros.core.pipeline.pipeline.PipelineConfig`, ``world``
:class:`~sapiens_ros.ros.people_world.WorldOptions`, ``people``
:class:`~sapiens_ros.core.people.state.PeopleConfig`). The node declares the rows, checks and
parses a value once (:func:`checked`) and builds its option objects from ``to`` (:func:`routed`);
``launch_support`` turns the launch arguments into them. Adding a parameter is adding a row.
Light on purpose: ``ros2 launch`` reads this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
import re
from typing import Any

from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                ParameterType)

from .optional_msgs import available
from .topics import NORMAL_ENCODINGS, tasks_for
from ..core.errors import SapiensError
from ..core.models.input_size import parse_size, parse_task_sizes
from ..core.models.keypoint_formats import KEYPOINT_FORMATS
from ..core.models.registry import DEFAULT_TASKS, PERCEPTION_TASKS
from ..core.pipeline.budget import check_rate, MAX_RATE_HZ
from ..core.pipeline.plan import BOX_SOURCES

_TYPES = {bool: ParameterType.PARAMETER_BOOL, int: ParameterType.PARAMETER_INTEGER,
          float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING,
          list: ParameterType.PARAMETER_INTEGER_ARRAY}

#: The option objects a row's ``to`` names (``message.score_threshold``), see the module doc.
OPTION_OBJECTS = ('message', 'pipeline', 'world', 'people')


@dataclass(frozen=True)
class Param:
    """One declared parameter: a row of :data:`PARAMS`."""

    name: str
    default: Any  # its type is the parameter's type
    description: str
    read_only: bool = False
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    #: When a change takes effect: 'runtime' (next frame), 'activate' (changeable while not
    #: active) or 'configure' (changeable while unconfigured; configure re-reads it).
    applies: str = 'runtime'
    #: True: ``perception.launch.py`` has an argument of the same name whose text (when given)
    #: becomes this parameter; a string: that argument's name, when it differs; False: node-only.
    launch: bool | str = False
    #: Option fields it sets, ``'<object>.<field>[.<field>]'`` (objects: OPTION_OBJECTS).
    to: str | tuple[str, ...] = ()
    #: Checks the value's form and returns what the node uses (``input_size``: (height, width));
    #: called as ``parse(value, name)``, raises ValueError. None: the value as it is.
    parse: Callable[[Any, str], Any] | None = None

    @property
    def kind(self) -> type:
        """Return the parameter's Python type (its default's)."""
        return type(self.default)

    @property
    def launch_name(self) -> str | None:
        """Name of its ``perception.launch.py`` argument, or None (node-only)."""
        if isinstance(self.launch, str):
            return self.launch
        return self.name if self.launch else None

    @property
    def targets(self) -> tuple[str, ...]:
        """Return the option fields it sets (``to`` as a tuple)."""
        return (self.to,) if isinstance(self.to, str) else self.to

    @property
    def help_text(self) -> str:
        """Return the description with its choices (the descriptor and launch args show it)."""
        if self.choices:
            return f"{self.description} (one of: {', '.join(self.choices)})"
        return self.description

    @property
    def flexible(self) -> bool:
        """
        Accept more than one ROS type: an int for a double, a list for ``tasks``.

        YAML files and ``-p rate:=10`` give an INTEGER where a DOUBLE is declared, and
        ``tasks:=[pose,seg]`` a STRING_ARRAY: rclpy would reject them at start-up.
        """
        return isinstance(self.default, float) or self.name in _LISTS or \
            self.name == 'input_size'

    def coerce(self, value: Any) -> Any:
        """Return ``value`` as this parameter's Python type (see :attr:`flexible`)."""
        if isinstance(self.default, float) and isinstance(value, int) and \
                not isinstance(value, bool):
            return float(value)
        if self.name in _LISTS and isinstance(value, (list, tuple)):
            return ','.join(str(v) for v in value)
        return value

    def value_of(self, value: Any) -> Any:
        """Return ``value`` as the node uses it: coerced, then parsed (no range/choice check)."""
        value = self.coerce(value)
        return self.parse(value, self.name) if self.parse else value

    def check_type(self, value: Any) -> str | None:
        """Say why ``value`` has the wrong type for this parameter, or None."""
        if self.name == 'input_size' and isinstance(value, (list, tuple)):
            return None  # the old [height, width]: parse_size explains both readings
        value = self.coerce(value)
        if type(value) is not self.kind:
            return f'{self.name} must be a {self.kind.__name__}, got {value!r}'
        return None

    def descriptor(self) -> ParameterDescriptor:
        """ROS descriptor with the description, range and read-only flag."""
        desc = self.help_text
        if self.applies != 'runtime':
            when = 'unconfigured' if self.applies == 'configure' else 'inactive'
            desc += f' [applies at {self.applies}: change it while {when}]'
        d = ParameterDescriptor(name=self.name, description=desc, read_only=self.read_only,
                                dynamic_typing=self.flexible)
        if not self.flexible:
            d.type = _TYPES[self.kind]
        if self.low is not None and isinstance(self.default, float):
            d.floating_point_range = [FloatingPointRange(from_value=float(self.low),
                                                         to_value=float(self.high), step=0.0)]
        elif self.low is not None and isinstance(self.default, int) and \
                not isinstance(self.default, bool):
            d.integer_range = [IntegerRange(from_value=int(self.low), to_value=int(self.high),
                                            step=1)]
        return d


def parse_outputs(text: str, name: str = 'force_outputs') -> set[str]:
    """Parse ``force_outputs``; raise ValueError naming an unknown suffix."""
    items = {s.strip().strip('/') for s in text.split(',') if s.strip()}
    tasks_for(items)  # raises ValueError naming an unknown suffix
    return items


_CAMERA = re.compile(r'^[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*$')
_RESERVED = {'rates', 'models', 'image', 'depth', 'camera_info', 'pose', 'seg', 'normal',
             'pointmap', 'matting', 'people'}


def parse_frame_id(value: str, name: str) -> str:
    """Check a tf2 frame id: empty (off) or a name without a leading ``/`` or spaces."""
    if value.startswith('/') or any(c.isspace() for c in value):
        raise ValueError(f'{name} must be a tf2 frame id (no leading / and no spaces), got '
                         f'{value!r}')
    return value


def parse_cameras(text: str | list, name: str = 'cameras') -> tuple[str, ...]:
    """Parse ``cameras`` (``'front,rear'``); raise ValueError naming a bad or repeated name."""
    items = text if isinstance(text, (list, tuple)) else str(text).split(',')
    names = tuple(c.strip().strip('/') for c in items if str(c).strip().strip('/'))
    for camera in names:
        if not _CAMERA.match(camera) or camera.split('/')[0] in _RESERVED:
            raise ValueError(f'camera name {camera!r} must be a relative ROS name (letters, '
                             f'digits, _ and /, starting with a letter) other than '
                             f'{", ".join(sorted(_RESERVED))}')
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f'{name} lists {", ".join(repeated)} more than once')
    return names


def _task_sizes(text: str, name: str) -> dict:
    """Parse ``input_sizes`` to ``{task: (height, width)}`` (configure checks each is loaded)."""
    return parse_task_sizes(text, PERCEPTION_TASKS, name)


def node_rate_param(task: str) -> str:
    """Name of the node's rate parameter for ``task`` (``rates.seg``)."""
    return f'rates.{task}'


def camera_rate_param(camera: str, task: str) -> str:
    """Name of one camera's rate parameter for ``task`` (``front.rates.seg``)."""
    return f"{camera.replace('/', '.')}.{node_rate_param(task)}"


#: Parameters that take a comma-separated list or a string array.
_LISTS = ('tasks', 'cameras')

PARAMS: tuple[Param, ...] = (
    # Models and backend: read by configure (change them while unconfigured).
    Param('tasks', ','.join(DEFAULT_TASKS), 'comma-separated heads to load: '
          'pose, seg, normal, pointmap, matting (matting/alpha, for XR passthrough)',
          applies='configure', launch=True),
    Param('cameras', '', 'comma-separated camera names served by this one node: camera NAME '
          'reads NAME/image and publishes NAME/pose/keypoints, ...; empty: one camera in the '
          "node's own namespace", applies='configure', launch=True, parse=parse_cameras),
    Param('model_size', '0.4b', 'hub checkpoint size (facebook/sapiens2-<task>-<size>)',
          applies='configure', choices=('0.4b', '0.8b', '1b', '5b'), launch=True),
    Param('model_dir', '', 'directory holding one checkpoint per task in <model_dir>/<task>/',
          applies='configure', launch=True),
    *(Param(f'models.{t}', '', f'checkpoint (hub id or directory) for {t}; overrides '
            f'model_dir and model_size', applies='configure') for t in PERCEPTION_TASKS),
    Param('backend', 'torch', 'inference backend (onnxruntime exports the checkpoint to a cached '
          'ONNX file on first use; tensorrt builds an engine)', applies='configure',
          choices=('torch', 'onnxruntime', 'tensorrt'), launch=True),
    Param('device', 'cpu', 'torch device: cpu, cuda or cuda:N', applies='configure',
          launch=True),
    Param('dtype', 'auto', 'weights dtype (torch) or engine precision (tensorrt); auto: fp32 '
          'for torch/onnxruntime, bf16 or fp16 for tensorrt', applies='configure',
          choices=('auto', 'fp32', 'bf16', 'fp16'), launch=True),
    Param('cache_dir', '', 'ONNX/TensorRT cache folder (empty: the user cache dir)',
          applies='configure', launch=True),
    Param('cpu_threads', 1, 'torch intra-op CPU threads for this process (0: torch default, '
          'one per core); 1 holds its rate on a shared CPU, where more threads spin-wait on '
          'busy cores (benchmarks/bench_threads.py)', applies='configure', low=0, high=256,
          launch=True),
    Param('cuda_graphs', False, 'capture CUDA graphs (torch/tensorrt on cuda)',
          applies='configure'),
    Param('allow_build', True, 'build a missing ONNX graph / TensorRT engine at configure; '
          'false: fail with the `sapiens-ros export` command to build it beforehand',
          applies='configure', launch=True),
    Param('engine_batch', '1:1:8', 'TensorRT/ONNX batch profile min:opt:max (pose crops, and '
          'frames of all cameras per step)', applies='configure', launch=True),
    Param('input_size', '768x1024', 'model input WIDTHxHEIGHT of every head without its own '
          'in input_sizes, multiples of 16, portrait or square (a head that cannot take it, '
          'like the pointmap below 656x912, runs at its nearest legal size)',
          applies='configure', launch=True, to='pipeline.input_size', parse=parse_size),
    Param('input_sizes', '', 'per-head input sizes TASK=WIDTHxHEIGHT, comma-separated, e.g. '
          '"seg=384x512,pointmap=656x912" (pose: its crop size)', applies='configure',
          launch=True, to='pipeline.input_sizes', parse=_task_sizes),
    Param('random_weights', False, 'build tiny random models instead of loading weights '
          '(graph checks and demos without a download)', applies='configure', launch=True),
    Param('autostart', True, 'configure and activate on start (a plain ros2 run works)',
          read_only=True, launch=True),
    # Input: read by activate (change them while inactive).
    Param('compressed', False, 'subscribe image/compressed (CompressedImage) instead of image',
          applies='activate', launch=True),
    Param('compressed_format', 'any', 'accepted CompressedImage codec',
          choices=('any', 'jpeg', 'png')),
    Param('input_reliability', 'best_effort', 'input QoS reliability (best_effort accepts '
          'both kinds of publishers)', applies='activate', choices=('best_effort', 'reliable')),
    Param('input_depth', 1, 'input QoS history depth', applies='activate', low=1, high=100),
    Param('output_depth', 2, 'output QoS history depth (reliable)', applies='configure',
          low=1, high=5),
    Param('calibrated', False, 'use camera_info K for a metric pointmap scale; without a '
          'fresh, valid camera_info a frame falls back to the predicted scale (counted)'),
    Param('camera_info_timeout', 5.0, 'a camera_info older than this (s) is stale; 0: never',
          low=0.0, high=3600.0),
    Param('max_pixels', 4096 * 4096, 'largest accepted input image (pixels), the decompression-'
          'bomb guard: it can be lowered at run time, never raised above its start value',
          low=1, high=1 << 30),
    # Runtime-changeable.
    *(Param(node_rate_param(t), 0.0, f'most {t} runs per second per camera (0: every frame); '
            f'<camera>.rates.{t} overrides it for one camera (launch: rates:={t}=HZ,...)',
            low=0.0, high=MAX_RATE_HZ, parse=check_rate) for t in PERCEPTION_TASKS),
    Param('max_cameras_per_step', 0, 'most cameras batched in one inference step, served '
          'round-robin (0: every camera with a new frame)', low=0, high=64, launch=True),
    Param('box_source', 'seg', "pose person boxes: seg (the seg foreground, the tracker's "
          "boxes between seg frames), full (the whole frame) or detections (a detector's "
          'Detection2DArray on <camera>/detections, paired by stamp; seg, else full, when none '
          'pairs)', choices=BOX_SOURCES, to='pipeline.box_source'),
    Param('detection_classes', 'person', 'class ids of detector boxes taken as persons, '
          'comma-separated (e.g. "person" or a COCO index "0"; empty: any class)'),
    Param('detection_min_score', 0.5, 'detector boxes scored lower are not used', low=0.0,
          high=1.0),
    Param('detections_slop', 0.05, 'colour and detections stamps pair when closer than this '
          '(s)', applies='activate', low=0.0, high=10.0),
    Param('detections_timeout', 1.0, 'for this long (s) after a frame with detections, pose '
          "on the frames without runs on the tracker's boxes; no detections paired for this "
          'long: frames stop waiting for them and pose runs on the fallback box source '
          '(counted as bad_input.detections_missing); 0: never', applies='activate', low=0.0,
          high=3600.0),
    Param('max_stamp_offset', 1.0, 'a depth or detections message stamped further than this '
          '(s) from the newest colour frame, ahead or behind, is refused and counted '
          '(bad_input.<stream>_stamp): a zero stamp, a skewed clock', applies='activate',
          low=0.001, high=3600.0),
    Param('max_persons', 8, 'most persons per frame', low=1, high=64,
          to='pipeline.max_persons'),
    Param('min_person_area', 0.002, 'smallest seg component kept as a person (frame fraction)',
          low=0.0, high=0.99, to='pipeline.min_person_area'),
    Param('flip_test', False, 'average pose with the mirrored crop (2x pose cost)',
          to='pipeline.flip_test'),
    Param('score_threshold', 0.3, 'keypoints below it are left out of pose/markers',
          low=0.0, high=1.0, to='message.score_threshold'),
    Param('overlay_alpha', 0.5, 'seg/overlay blend weight', low=0.0, high=1.0,
          to='message.overlay_alpha'),
    Param('pointmap_stride', 2, 'keep every n-th pixel of the pointmap (both axes); 2 gives a '
          'quarter of the points and depth pixels (1: full resolution)', low=1, high=64,
          to='pipeline.pointmap_stride'),
    Param('foreground_only', True, 'pointmap/points and depth only on the person (needs seg)',
          to=('pipeline.foreground_only', 'message.foreground_only')),
    Param('publish_all', False, 'build every output and run every task even without '
          'subscribers (e.g. for recording)'),
    Param('force_outputs', '', 'comma-separated output suffixes to build without subscribers '
          '(e.g. "pose/keypoints,seg/labels")', parse=parse_outputs),
    Param('latency_warn_ms', 500.0, 'diagnostics WARN when latency p95 exceeds it',
          low=0.0, high=1e6),
    Param('stale_timeout', 5.0, 'a camera with no frame for this long (s) is STALE in '
          '/diagnostics (it is WARN once its input runs under half its usual rate); 0: never',
          low=0.0, high=3600.0),
    # people (issue 11): tracking, One-Euro smoothing, RGB-D fusion (docs/people.md).
    Param('tracking', True, 'track people across frames: ids in pose/persons, pose/keypoints, '
          'pose/markers and people/ids (false: id -1, nothing smoothed)', to='people.tracking'),
    Param('smoothing', True, 'pose/markers, pose/overlay and people/poses from One-Euro '
          'filtered keypoints',
          to='message.smooth_markers'),
    Param('smooth_keypoints', False, 'pose/keypoints carry the filtered u, v, x, y, z too '
          '(false: raw, as the model gave them)', to='message.smooth_keypoints'),
    Param('one_euro_min_cutoff', 1.0, 'One-Euro cutoff of a still keypoint (Hz): lower is '
          'smoother', low=0.01, high=100.0,
          to=('people.keypoint_filter.min_cutoff', 'people.xyz_filter.min_cutoff')),
    Param('one_euro_beta', 0.02, 'One-Euro speed coefficient for image keypoints (per px/s): '
          'higher lags less when moving', low=0.0, high=10.0, to='people.keypoint_filter.beta'),
    Param('one_euro_beta_xyz', 2.0, 'One-Euro speed coefficient for keypoint XYZ (per m/s)',
          low=0.0, high=1000.0, to='people.xyz_filter.beta'),
    Param('track_id_start', 1, 'first track id of this process (ids are unique across its '
          'cameras; give each process of a robot its own range)', applies='configure', low=1,
          high=2**31 - 1),
    Param('keypoint_format', 'sapiens308', 'keypoints in pose/keypoints and pose/markers '
          '(derived from the 308 by name; neck = mid-shoulders)', choices=KEYPOINT_FORMATS,
          launch=True, to='message.keypoint_format'),
    Param('publish_tf', available('tf2_msgs'), 'body_<id> frames of tracked people on /tf '
          '(tf2_msgs/TFMessage, REP-155 axes, origin mid-hips) from measured depth or the metric '
          'pointmap', launch=True, to='world.publish_tf'),
    Param('tf_joints', False, 'also joint frames (head, shoulders, elbows, wrists, hips, knees, '
          'ankles) named <joint>_<id>, children of body_<id>', to='world.tf_joints'),
    Param('hri', False, 'REP-155 (ROS4HRI) bodies: /humans/bodies/tracked and per body '
          '/humans/bodies/<id>/roi, cropped, skeleton2d (global topics; ids unique across '
          'cameras)', launch=True, to='world.hri'),
    Param('frame_id', '', 'replaces the frame_id of every input image, so of every output and '
          'TF parent ({camera} stands for the camera name, e.g. {camera}_optical_frame); empty: '
          'that of the header (an empty or /-led one is counted as bad_input.frame_id and gets '
          'no TF frames)', parse=parse_frame_id),
    Param('world_frame', '', 'tf2 frame of the world (odom, map, base_link...): the tracked '
          'bodies of every camera become one set of REP-155 persons there (/humans/persons, '
          'person_<id> on /tf, persons/markers), cameras looked up with tf2 at each frame '
          'stamp; needs tf2_ros; empty: off', applies='configure', launch=True,
          to='world.world_frame', parse=parse_frame_id),
    Param('person_joints_tf', False, 'with world_frame, also the fused joints of each person '
          'as TF frames <joint>_<person id> under person_<id>', to='world.person_joints_tf'),
    Param('body_links', 'node', 'the REP-155 humanoid link frames of each body (with hri and '
          'metric 3D): node (computed here from the URDF and joint_states, no '
          'robot_state_publisher needed) or robot_state_publisher (left to one per body, fed '
          'by /humans/bodies/<id>/urdf and joint_states)',
          choices=('node', 'robot_state_publisher'), to='world.body_links'),
    Param('avatar_tf', False, 'with hri, the VRM 1.0 humanoid rig of each body on /tf: '
          'vrm_<id> under body_<id>, then vrm_<bone>_<id> per bone (local rotations)',
          to='world.avatar_tf'),
    Param('xyz_min_score', 0.3, 'keypoints scored lower get no 3D (pose/keypoints x, y, z, '
          'people/poses, body frames): occluded ones, where depth measures the occluder',
          low=0.0, high=10.0, to='people.min_score'),
    Param('track_max_age', 1.0, 'a track unseen this long (s) is dropped', low=0.0,
          high=60.0, to='people.tracker.max_age'),
    Param('use_depth', False, 'subscribe depth (16UC1 mm or 32FC1 m, aligned to the colour '
          'camera): keypoint XYZ from it and a depth-fitted pointmap scale', applies='activate'),
    Param('depth_slop', 0.05, 'colour and depth stamps pair when closer than this (s)',
          applies='activate', low=0.0, high=10.0),
    Param('depth_queue_size', 10, 'messages per input the colour/depth pairing keeps',
          applies='activate', low=1, high=1000),
    Param('depth_timeout', 1.0, 'no depth paired for this long (s): colour frames stop '
          'waiting for depth (counted as bad_input.depth_missing); 0: never', applies='activate',
          low=0.0, high=3600.0),
    # output encoding (issue 12)
    Param('normal_encoding', '32FC3', 'normal/image encoding: 32FC3 float unit vectors, or '
          '16SC3 int16 components = round(n * 32767) (half the bytes)', choices=NORMAL_ENCODINGS,
          to='message.normal_encoding'),
    Param('overlay_compression', 'jpeg', 'codec of pose/overlay/compressed, '
          'seg/overlay/compressed and normal/overlay/compressed (seg/labels/compressed and '
          'matting/alpha/compressed are always png)',
          choices=('jpeg', 'png'), to='message.compressed_format'),
    Param('jpeg_quality', 90, 'JPEG quality of the compressed overlays', low=1, high=100,
          to='message.jpeg_quality'),
)

PARAM_BY_NAME = {p.name: p for p in PARAMS}


def declare_float(node, name: str, default: float, description: str = '') -> float:
    """
    Declare a double parameter that also accepts an integer (``rate:=10``); return its value.

    rclpy rejects an INTEGER override of a DOUBLE parameter at start-up, and YAML files and
    ``ros2 launch`` arguments give integers for round numbers.
    """
    node.declare_parameter(name, default, ParameterDescriptor(
        name=name, description=description, dynamic_typing=True))
    value = node.get_parameter(name).value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f'parameter {name} must be a number, got {value!r}')
    return float(value)


def checked(name: str, value: Any, loaded_tasks: tuple[str, ...] = ()) -> Any:
    """
    Return parameter ``name``'s ``value`` as the node uses it, or raise ValueError saying why not.

    The one check and parse of a value (type, choices, range, else the row's ``parse``, which
    states its own range: the rates ask :func:`~sapiens_ros.core.pipeline.budget.rate_error`):
    ``input_size`` comes back as ``(height, width)``, ``force_outputs`` as a set. A name not
    in the table comes back as it is. ``loaded_tasks`` (once configured) lets ``box_source``
    refuse seg without the seg head.
    """
    spec = PARAM_BY_NAME.get(name)
    if spec is None:
        return value
    wrong = spec.check_type(value)
    if wrong:
        raise ValueError(wrong)
    value = spec.coerce(value)
    if spec.choices and value not in spec.choices:
        raise ValueError(f'{name} must be one of {", ".join(spec.choices)}, got {value!r}')
    if spec.low is not None and spec.parse is None and not (spec.low <= value <= spec.high):
        raise ValueError(f'{name} must be in [{spec.low}, {spec.high}], got {value!r}')
    if name == 'box_source' and value == 'seg' and loaded_tasks and 'seg' not in loaded_tasks:
        raise ValueError('box_source=seg needs the seg head; load seg or use box_source=full')
    if name == 'box_source' and value == 'detections':
        if not available('vision_msgs'):
            raise ValueError('box_source=detections needs vision_msgs (Detection2DArray): '
                             'install ros-$ROS_DISTRO-vision-msgs')
    try:
        return spec.parse(value, name) if spec.parse else value
    except SapiensError as exc:  # an InputSizeError is one; keep the one exception type
        raise ValueError(str(exc)) from None


def validate(name: str, value: Any, loaded_tasks: tuple[str, ...] = ()) -> str | None:
    """Return why ``value`` is not acceptable for parameter ``name`` (:func:`checked`), or None."""
    try:
        checked(name, value, loaded_tasks)
    except ValueError as exc:
        return str(exc)
    return None


def routed(target: str, values: Mapping[str, Any], applies: str | None = None) -> dict:
    """
    Return the fields of option object ``target`` that ``values`` (parameter: value) set.

    Returns ``{field path: value}`` from the rows' ``to`` (``tracker.max_age`` for
    ``people.tracker.max_age``); ``applies`` keeps only rows that take effect then.
    """
    fields = {}
    for name, value in values.items():
        spec = PARAM_BY_NAME.get(name)
        if spec is None or applies is not None and spec.applies != applies:
            continue
        for to in spec.targets:
            obj, _, field = to.partition('.')
            if obj == target:
                fields[field] = value
    return fields


def assign(options: Any, fields: Mapping[str, Any]) -> None:
    """Set ``fields`` (dotted paths from :func:`routed`) on the option object ``options``."""
    for path, value in fields.items():
        *parents, field = path.split('.')
        owner = options
        for parent in parents:
            owner = getattr(owner, parent)
        setattr(owner, field, value)
