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
Build the topic contract's standard ROS messages from a core ``FrameResult``.

:func:`build_messages` is a pure function of ``(header, FrameResult, options)`` and returns a dict
of topic suffix (``'pose/keypoints'``...) to message, so the live node and the bag replay publish
exactly the same thing. The topic names are in :mod:`.topics`, what to render for them in
:mod:`.render_plan`, and the bulk data goes in without a copy (:mod:`.array_msgs`): a result that
was not rendered on the pipeline's device is rendered here by the same torch code
(``core.processing.render``) on the CPU. The pose overlay, which shows the track ids, is drawn
here on the frame the pipeline kept on its device for it (``FrameResult.device_frame``).
"""

from __future__ import annotations

from collections.abc import Collection
import json

from geometry_msgs.msg import Point, Pose, PoseArray
import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, PointCloud2
from std_msgs.msg import ColorRGBA, Header, String
from visualization_msgs.msg import Marker, MarkerArray

from .array_msgs import (byte_array, has_check_flag, image_msg, pointcloud2, set_data,
                         unchecked)
from .render_plan import compressed_source, MessageOptions, render_request, wanted_outputs
from .topic_types import optional_outputs
from .topics import (COMPRESSED_OUTPUTS, INFO_TOPICS, KEYPOINT_DTYPE, NORMAL_ENCODINGS,
                     PEOPLE_OUTPUTS, PERSON_DTYPE)
from .vision_messages import detections_msg
from ..core.media.visualize import id_color
from ..core.models.keypoint_formats import keypoint_format, KEYPOINT_FORMATS, KeypointFormat
from ..core.models.metadata import seg_class_info
from ..core.people.body_frames import body_id
from ..core.people.state import People, with_pointmap_scale
from ..core.people.world_skeleton import FusedSkeleton
from ..core.pipeline.pipeline import FrameResult
from ..core.processing import render as R
from ..core.processing.intrinsics import Intrinsics
from ..core.processing.pointmap_camera import pointmap_intrinsics, PointmapCamera
from ..core.processing.pose_overlay import PoseDrawing

# Jazzy+ messages can skip per-element field checks; Humble's cannot (slower markers there).
_NOCHECK = unchecked(Marker)


def _track_ids(result: FrameResult, people: People | None) -> np.ndarray:
    """Track id per pose row; -1 without people (or rows that do not match)."""
    rows = len(result.pose.boxes)
    if people is None or len(people) != rows:
        return np.full(rows, -1, np.int32)
    return people.ids.astype(np.int32)


def track_labels(result: FrameResult, people: People | None) -> list[str]:
    """Return the label drawn on each pose row of ``pose/overlay``: its body id, '' untracked."""
    return [body_id(i) if i >= 0 else '' for i in _track_ids(result, people).tolist()]


def pose_drawing(result: FrameResult, options: MessageOptions,
                 people: People | None = None) -> PoseDrawing:
    """
    Return what ``pose/overlay`` draws: ``pose/markers``' keypoints (format, threshold, smoothing).

    Boxes, links and keypoints take each person's track id colour (grey untracked), as the
    markers do; the labels are :func:`track_labels`.
    """
    fmt = keypoint_format(options.keypoint_format)
    uv, _ = _keypoint_rows(result, people, options.smooth_markers)
    points = fmt.points(uv)
    visible = np.isfinite(points).all(-1) & (fmt.scores(result.pose.scores) >
                                             options.score_threshold)
    ids = _track_ids(result, people)
    colors = np.array([[round(c * 255) for c in id_color(int(i))] for i in ids],
                      np.uint8).reshape(-1, 3)
    return PoseDrawing(points, visible, fmt.skeleton, colors, track_labels(result, people),
                       result.pose.boxes)


def _keypoint_rows(result: FrameResult, people: People | None,
                   smoothed: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Image keypoints ``(P, K, 2)`` and XYZ ``(P, K, 3)`` or None: raw or One-Euro filtered."""
    pose = result.pose
    if people is None or len(people) != len(pose.boxes):
        return pose.keypoints, result.keypoints_xyz
    if smoothed:
        return people.smoothed, people.xyz
    return people.keypoints, people.xyz_raw


def keypoints_cloud(header: Header, result: FrameResult, people: People | None = None,
                    smoothed: bool = False, fmt: KeypointFormat | None = None) -> PointCloud2:
    """
    ``pose/keypoints``: height = persons, width = keypoints; u, v, score, x, y, z, id.

    With ``people``: ids per row; x, y, z from the depth image when one was paired (else the
    pointmap); ``smoothed`` takes the One-Euro filtered u, v and x, y, z instead of the raw ones.
    ``fmt`` picks the keypoints (default the 308; see ``core.models.keypoint_formats``).
    """
    fmt = fmt or keypoint_format()
    pose = result.pose
    persons = pose.scores.shape[0] if pose.scores.ndim == 2 else 0
    count = len(fmt)
    uv, xyz = _keypoint_rows(result, people, smoothed)
    cloud = np.empty((persons, count), KEYPOINT_DTYPE)
    if persons:
        uv = fmt.points(uv)
        cloud['u'] = uv[..., 0]
        cloud['v'] = uv[..., 1]
        cloud['score'] = fmt.scores(pose.scores)
    if persons and xyz is not None and xyz.shape[:2] == pose.scores.shape:
        xyz = fmt.points(xyz)
        cloud['x'], cloud['y'], cloud['z'] = xyz[..., 0], xyz[..., 1], xyz[..., 2]
    else:
        cloud['x'] = cloud['y'] = cloud['z'] = np.nan
    cloud['id'] = _track_ids(result, people)[:, None]
    dense = persons == 0 or bool(np.isfinite(cloud['z']).all())
    return pointcloud2(header, cloud, height=persons, width=count, dense=dense)


def persons_cloud(header: Header, result: FrameResult,
                  people: People | None = None) -> PointCloud2:
    """``pose/persons``: one point per person with its xyxy box, score and track id."""
    pose = result.pose
    cloud = np.empty(len(pose.boxes), PERSON_DTYPE)
    for i, name in enumerate(PERSON_DTYPE.names[:4]):
        cloud[name] = pose.boxes[:, i]
    cloud['score'] = pose.box_scores
    cloud['id'] = _track_ids(result, people)
    return pointcloud2(header, cloud, height=1, width=len(cloud), dense=True)


_POINT_FLAG = has_check_flag(Point)  # Jazzy's per-message switch


def _slot_points(xyz: np.ndarray) -> list:
    """Points made as the generated constructor makes them, less its checks and defaults."""
    new, out = Point.__new__, []
    for x, y, z in xyz.tolist():
        point = new(Point)
        point._x, point._y, point._z = x, y, z
        if _POINT_FLAG:
            point._check_fields = False
        out.append(point)
    return out


def _slots_fit() -> bool:
    """Return whether ``Point`` has the slots :func:`_slot_points` fills, and equal points."""
    slots = set(getattr(Point, '__slots__', ())) - {'_check_fields'}
    return slots == {'_x', '_y', '_z'} and \
        _slot_points(np.array([[1.0, 2.0, 3.0]])) == [Point(x=1.0, y=2.0, z=3.0)]


_FAST_POINTS = _slots_fit()


def _points(xyz: np.ndarray) -> list:
    """
    ``geometry_msgs/Point`` list of ``(N, 3)`` float64 rows: ~0.15 us a point.

    The points are made as their class's ``__new__`` and slots (:func:`_slot_points`), what the
    generated constructor does after its argument checks and default values (~0.8 us a point on
    Jazzy unchecked, 5x more with checks); at import :func:`_slots_fit` checks that the layout
    is the expected one, else the constructor makes them.
    """
    if _FAST_POINTS:
        return _slot_points(xyz)
    return [Point(x=x, y=y, z=z, **_NOCHECK) for x, y, z in xyz.tolist()]


def _marker(header: Header, ns: str, kind: int, points: list, size: float,
            rgba: tuple[float, float, float, float], marker_id: int = 0) -> Marker:
    marker = Marker(header=header, ns=ns, id=marker_id, type=kind, action=Marker.ADD,
                    **_NOCHECK)
    marker.pose.orientation.w = 1.0
    marker.scale.x = marker.scale.y = size
    marker.color = ColorRGBA(r=rgba[0], g=rgba[1], b=rgba[2], a=rgba[3])
    marker.frame_locked = False
    marker.points = points
    return marker


def _id_marker(header: Header, ns: str, row: int, track: int, top: np.ndarray, height: float,
               rgba: tuple[float, float, float, float]) -> Marker:
    """TEXT_VIEW_FACING marker showing ``track`` ``height`` above the point ``top``."""
    marker = _marker(header, ns, Marker.TEXT_VIEW_FACING, [], height, rgba, row)
    marker.scale.z = height
    marker.text = str(track)
    marker.pose.position = Point(x=float(top[0]), y=float(top[1] - height), z=float(top[2]))
    return marker


def skeleton_markers(header: Header, result: FrameResult, options: MessageOptions,
                     people: People | None = None) -> MarkerArray:
    """
    ``pose/markers``: per person, its keypoints (POINTS), links (LINE_LIST) and track id (TEXT).

    3D (metres, camera frame) when keypoint XYZ exist, else 2D image space with ``pixel_scale``
    metres per pixel at z = 0. With ``people`` the markers take the person's colour from its
    track id and, when ``options.smooth_markers``, the One-Euro filtered keypoints; untracked
    people are grey and get no text. A DELETEALL marker first clears old frames.
    """
    pose = result.pose
    thr = options.score_threshold
    fmt = keypoint_format(options.keypoint_format)
    links = fmt.skeleton
    uv, xyz3 = _keypoint_rows(result, people, options.smooth_markers)
    scores = fmt.scores(pose.scores)
    if xyz3 is not None and xyz3.shape[:2] == pose.scores.shape and np.isfinite(xyz3).any():
        xyz3 = fmt.points(xyz3)
        coords, ok = xyz3.astype(np.float64), np.isfinite(xyz3).all(-1) & (scores > thr)
        size, ns, text = options.marker_size, 'skeleton3d', 0.1
    else:
        coords = np.zeros(scores.shape + (3,), np.float64)
        coords[..., :2] = fmt.points(uv) * options.pixel_scale
        ok = np.isfinite(coords).all(-1) & (scores > thr)
        size, ns = max(options.pixel_scale * 4.0, 1e-4), 'skeleton2d'
        text = options.pixel_scale * 24.0
    both = ok[:, links[:, 0]] & ok[:, links[:, 1]]  # (P, L)
    segs = np.stack([coords[:, links[:, 0]], coords[:, links[:, 1]]], axis=2)  # (P, L, 2, 3)
    ids = _track_ids(result, people)
    out = MarkerArray(markers=[Marker(header=header, action=Marker.DELETEALL, **_NOCHECK)])
    for row in range(len(coords)):  # one colour per person: a few markers each, no per-point
        pts = coords[row][ok[row]]
        if not len(pts):
            continue
        rgba = (*id_color(int(ids[row])), 1.0)
        out.markers.append(_marker(header, ns + '/keypoints', Marker.POINTS, _points(pts),
                                   size, rgba, row))
        if both[row].any():
            out.markers.append(_marker(header, ns + '/links', Marker.LINE_LIST,
                                       _points(segs[row][both[row]].reshape(-1, 3)),
                                       size * 0.5, rgba, row))
        if ids[row] >= 0:
            top = pts[np.argmin(pts[:, 1])]  # y points down in both frames
            out.markers.append(_id_marker(header, ns + '/ids', row, int(ids[row]), top, text,
                                          rgba))
    return out


def person_markers(header: Header, skeletons: list[FusedSkeleton], limbs: np.ndarray,
                   size: float = 0.03) -> MarkerArray:
    """
    ``persons/markers``: each person's fused skeleton in the world frame (``header.frame_id``).

    Per person: its joints (SPHERE_LIST), limbs (LINE_LIST) and id (TEXT, 0.3 m above its
    highest joint: REP-103 worlds have z up); a DELETEALL marker first clears persons gone.
    Triangulated joints are drawn larger than single-view ones.
    """
    out = MarkerArray(markers=[Marker(header=header, action=Marker.DELETEALL, **_NOCHECK)])
    for row, skel in enumerate(skeletons):
        ok = np.isfinite(skel.xyz).all(1)
        if not ok.any():
            continue
        rgba = (*id_color(int.from_bytes(skel.person_id.encode(), 'little')), 1.0)
        pts = skel.xyz[ok]
        out.markers.append(_marker(header, 'persons/joints', Marker.SPHERE_LIST, _points(pts),
                                   size, rgba, row))
        out.markers[-1].scale.z = size
        both = ok[limbs[:, 0]] & ok[limbs[:, 1]]
        if both.any():
            segs = np.stack([skel.xyz[limbs[both, 0]], skel.xyz[limbs[both, 1]]], axis=1)
            out.markers.append(_marker(header, 'persons/limbs', Marker.LINE_LIST,
                                       _points(segs.reshape(-1, 3)), size * 0.5, rgba, row))
        label = _marker(header, 'persons/ids', Marker.TEXT_VIEW_FACING, [], 0.15, rgba, row)
        label.scale.z = 0.15
        label.text = skel.person_id
        top = pts[np.argmax(pts[:, 2])]
        label.pose.position = Point(x=float(top[0]), y=float(top[1]), z=float(top[2]) + 0.3)
        out.markers.append(label)
    return out


def people_poses(header: Header, people: People) -> PoseArray:
    """``people/poses``: each tracked person's torso pose (camera frame, metres) with 3D."""
    keep = _posed(people)
    msg = PoseArray(header=header)
    rows = zip(people.torso_position[keep].tolist(), people.torso_orientation[keep].tolist(),
               strict=True)
    for (x, y, z), (qx, qy, qz, qw) in rows:
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = x, y, z
        o = pose.orientation
        o.x, o.y, o.z, o.w = qx, qy, qz, qw
        msg.poses.append(pose)
    return msg


def people_ids(header: Header, people: People) -> String:
    """
    ``people/ids``: JSON ``{"stamp": {"sec", "nanosec"}, "frame_id", "ids"}``.

    ``ids`` are the track ids in the order of ``people/poses`` of the same stamp.
    """
    stamp = {'sec': int(header.stamp.sec), 'nanosec': int(header.stamp.nanosec)}
    return String(data=json.dumps({'stamp': stamp, 'frame_id': header.frame_id,
                                   'ids': people.ids[_posed(people)].tolist()}))


def _posed(people: People) -> np.ndarray:
    """Rows published in ``people/poses``: tracked, with a torso position."""
    return (people.ids >= 0) & people.torso_valid


def points_cloud(header: Header, result: FrameResult,
                 cloud: np.ndarray | None = None) -> PointCloud2:
    """
    ``pointmap/points``: x, y, z, rgb (packed float32) and label when seg ran.

    ``cloud`` is the rendered record array (``core.processing.render.cloud_dtype``); without it the
    result is packed here by the same code.
    """
    if cloud is None:
        cloud = R.render_result(result, None, R.RenderRequest(frozenset({'cloud'})))['cloud']
    return pointcloud2(header, cloud, dense=True)


def depth_image(header: Header, result: FrameResult, foreground_only: bool = True,
                depth: np.ndarray | None = None) -> Image:
    """``pointmap/depth``: 32FC1 metres on the strided grid, NaN off the person (if seg ran)."""
    if depth is None:
        request = R.RenderRequest(frozenset({'depth'}), foreground_only=foreground_only)
        depth = R.render_result(result, None, request)['depth']
    return image_msg(header, depth, '32FC1')


def pointmap_camera_info(header: Header, result: FrameResult,
                         intrinsics: Intrinsics | None = None,
                         camera: PointmapCamera | None = None) -> CameraInfo:
    """
    ``pointmap/camera_info``: the pinhole camera of ``pointmap/depth``'s grid.

    Its size is the pointmap's; K and P are ``intrinsics`` (the input camera_info's, image
    pixels) divided by the stride, or without them the pointmap's own fitted ones (all zero
    when the pointmap has no usable rays): fitted once per grid size by the camera's
    ``camera``, else on this frame. No distortion, identity R.
    """
    pm = result.pointmap
    h, w = pm.xyz.shape[:2]
    msg = CameraInfo(header=header, height=int(h), width=int(w), distortion_model='plumb_bob')
    msg.d = [0.0] * 5
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    grid = camera.intrinsics(pm, intrinsics) if camera is not None else \
        pointmap_intrinsics(pm, intrinsics)
    if grid is not None:
        msg.k = [grid.fx, 0.0, grid.cx, 0.0, grid.fy, grid.cy, 0.0, 0.0, 1.0]
        msg.p = [grid.fx, 0.0, grid.cx, 0.0, 0.0, grid.fy, grid.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def compressed_msg(header: Header, data: np.ndarray, encoding: str, fmt: str) -> CompressedImage:
    """``CompressedImage`` with image_transport's ``format`` ("bgr8; jpeg compressed bgr8")."""
    target = '' if encoding.startswith('mono') else 'bgr8'
    msg = CompressedImage(header=header, format=f'{encoding}; {fmt} compressed {target}',
                          **unchecked(CompressedImage))
    set_data(msg, byte_array(data))  # after __init__, which copies what it is given
    return msg


def info_messages(tasks: Collection[str], keypoint_format_name: str = 'sapiens308'
                  ) -> dict[str, String]:
    """Return the latched metadata (JSON) of the given tasks, by topic suffix."""
    out = {}
    if 'pose' in tasks:
        out[INFO_TOPICS['pose']] = String(data=keypoint_format(keypoint_format_name).to_json())
    if 'seg' in tasks:
        out[INFO_TOPICS['seg']] = String(data=seg_class_info().to_json())
    return out


def build_messages(header: Header, result: FrameResult, options: MessageOptions | None = None,
                   image: np.ndarray | None = None, people: People | None = None,
                   intrinsics: Intrinsics | None = None,
                   camera: PointmapCamera | None = None) -> dict:
    """
    All contract messages for one frame, by topic suffix; every one carries ``header``.

    ``image`` is the input frame as HxWx3 RGB uint8, needed only for overlays the pipeline did
    not render (nor keep its device frame for). ``people`` (the camera's
    ``PeopleState.update`` of this frame) adds track ids, smoothed markers, ``people/*`` and
    the depth-fitted pointmap scale. ``intrinsics``: the frame's validated camera_info K
    (``pointmap/camera_info`` scales it; without it the pointmap's own, fitted once per grid
    size by ``camera``, the frame's camera's ``PointmapCamera``, when given). Only the
    suffixes in ``options.outputs`` (when set) are built; compressed variants and
    :data:`OPTIONAL_OUTPUTS` only when named there.
    """
    options = options or MessageOptions()
    result.finish_encoding()  # the JPEG/PNG encodes the pipeline left to this thread
    if options.normal_encoding not in NORMAL_ENCODINGS:
        raise ValueError(f'normal_encoding must be one of {NORMAL_ENCODINGS}, '
                         f'got {options.normal_encoding!r}')
    if options.keypoint_format not in KEYPOINT_FORMATS:
        raise ValueError(f'keypoint_format must be one of {KEYPOINT_FORMATS}, '
                         f'got {options.keypoint_format!r}')
    fmt = keypoint_format(options.keypoint_format)
    wanted = wanted_outputs(result, options, image)
    if people is not None:
        result = with_pointmap_scale(result, people.pointmap_scale)
        if result.pose is not None:
            wanted += [s for s in PEOPLE_OUTPUTS
                       if options.outputs is None or s in options.outputs]
    if result.pose is not None and options.outputs is not None:
        wanted += [s for s in optional_outputs({'pose'}) if s in options.outputs]
    request = render_request(wanted, options)
    missing = request.keys() - set(result.rendered)
    buffers = dict(result.rendered)
    drawn = {k for k in missing if k.split('.')[0] in R.AFTER_TRACKING}
    pose = pose_drawing(result, options, people) if drawn else None
    if drawn and result.device_frame is not None:  # on the pipeline's device, after tracking
        buffers.update(R.render_after_tracking(result.device_frame, request.only(drawn), pose))
        missing -= drawn
    if missing:
        buffers.update(R.render_result(result, image, request.only(missing), pose))

    def compressed(suffix: str) -> CompressedImage:
        name, fmt = compressed_source(suffix, options)
        return compressed_msg(header, buffers[f'{name}.{fmt}'], R.image_encoding(name), fmt)

    def normal_image() -> Image:
        if options.normal_encoding == '16SC3':
            return image_msg(header, buffers['normal16'], '16SC3')
        return image_msg(header, np.asarray(result.normal.normals, np.float32), '32FC3')

    builders = {
        'pose/keypoints': lambda: keypoints_cloud(header, result, people,
                                                  options.smooth_keypoints, fmt),
        'pose/persons': lambda: persons_cloud(header, result, people),
        'pose/markers': lambda: skeleton_markers(header, result, options, people),
        'people/poses': lambda: people_poses(header, people),
        'people/ids': lambda: people_ids(header, people),
        'pose/overlay': lambda: image_msg(header, buffers['pose_overlay'],
                                          R.image_encoding('pose_overlay')),
        'matting/alpha': lambda: image_msg(header, buffers['matting_alpha'],
                                           R.image_encoding('matting_alpha')),
        'seg/labels': lambda: image_msg(header, np.asarray(result.seg.labels, np.uint8),
                                        R.image_encoding('seg_labels')),
        'seg/overlay': lambda: image_msg(header, buffers['seg_overlay'],
                                         R.image_encoding('seg_overlay')),
        'normal/image': normal_image,
        'normal/overlay': lambda: image_msg(header, buffers['normal_overlay'],
                                            R.image_encoding('normal_overlay')),
        'pointmap/points': lambda: points_cloud(header, result, buffers['cloud']),
        'pointmap/depth': lambda: depth_image(header, result, options.foreground_only,
                                              buffers['depth']),
        'pointmap/camera_info': lambda: pointmap_camera_info(header, result, intrinsics,
                                                             camera),
        'pose/detections': lambda: detections_msg(header, result, _track_ids(result, people)),
    }
    builders.update({c: (lambda c=c: compressed(c)) for c in COMPRESSED_OUTPUTS})
    return {suffix: builders[suffix]() for suffix in wanted}
