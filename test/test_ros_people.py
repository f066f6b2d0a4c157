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
People in the live node: track ids, RGB-D fusion, bad depth, time jumps (real rclpy + Fast DDS).

Tiny random checkpoints on a real photo: keypoints and the predicted pointmap are noise, so the
tests judge geometry against the depth image given (never against expected model outputs).
"""

import json
import time

import cv2
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from ros_graph import cloud_array, qos  # noqa: E402, I100
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo, camera_info_for  # noqa: E402
from sapiens_ros.ros.topic_types import TOPIC_TYPES  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

SIZE = 160
PHOTO = cv2.resize(bundled_photo(), (SIZE, SIZE), interpolation=cv2.INTER_AREA)  # BGR
FX = 150.0  # camera_info focal length (pixels of the 160x160 colour image)


def plane_z(u, v):
    """Return the scene's depth: a plane 2 m away at the image centre, tilted 2 mm a row."""
    return 2.0 + 0.002 * (np.asarray(v, np.float64) - (SIZE - 1) / 2.0)


def depth_image(header, scale: int = 2, encoding: str = '16UC1') -> Image:
    """Return the plane as a depth image at 1/``scale`` of the colour resolution."""
    n = SIZE // scale
    centres = (np.arange(n) + 0.5) * scale - 0.5  # colour pixel of each depth pixel centre
    z = np.broadcast_to(plane_z(0, centres)[:, None], (n, n))
    if encoding == '16UC1':
        return image_msg(header, np.round(z * 1000).astype(np.uint16), '16UC1')
    return image_msg(header, z.astype(np.float32), encoding)


def _header(stamp) -> Header:
    header = Header(frame_id='camera_optical_frame')
    header.stamp = stamp
    return header


def _diag(node) -> dict:
    return {kv.key: kv.value for kv in node.publish_diagnostics().status[0].values}


class Camera:
    """The tester as an RGB-D camera: colour, aligned depth and camera_info with one stamp."""

    def __init__(self, graph, depth_encoding='16UC1'):
        self.graph = graph
        self.image = graph.publisher(Image, 'image')
        self.depth = graph.publisher(Image, 'depth')
        self.info = graph.publisher(CameraInfo, 'camera_info')
        self.depth_encoding = depth_encoding
        for pub in (self.image, self.depth, self.info):
            graph.wait_for_subscribers(pub)

    def send(self, depth=True, stamp=None, depth_msg=None):
        """Publish one frame (camera_info, depth, then colour); return its header."""
        header = _header(stamp or self.graph.tester.get_clock().now().to_msg())
        info = camera_info_for(header, SIZE, SIZE, 60.0)
        info.k = [FX, 0.0, (SIZE - 1) / 2.0, 0.0, FX, (SIZE - 1) / 2.0, 0.0, 0.0, 1.0]
        self.info.publish(info)
        if depth:
            self.depth.publish(depth_msg or depth_image(header, encoding=self.depth_encoding))
        self.image.publish(image_msg(header, PHOTO, 'bgr8'))
        return header

    def pump(self, done, timeout=30.0, period=0.2, **kwargs) -> bool:
        """Send frames every ``period`` s until ``done()``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.send(**kwargs)
            if self.graph.wait(done, period):
                return True
        return False


def _same_stamp(msgs, stamp):
    return [m for m in msgs if m.header.stamp == stamp]


@pytest.mark.parametrize('encoding', ['16UC1', '32FC1'])
def test_depth_plane_gives_metric_keypoints_and_pointmap(graph, encoding):
    """
    Done-when test of issue 11: colour + a depth plane + camera_info into the live node.

    Every finite keypoint XYZ (pixel inside the image) is the back-projection of the plane at
    its pixel within 1 cm (at 2 m), and the depth-fitted scale brings the published pointmap's
    foreground depth onto the plane within 2 % (median ratio: the tiny random pointmap is noise;
    test_depth.py checks the fit on a clean one).
    """
    node = graph.perception(tasks='pose,seg,pointmap', use_depth=True, box_source='full',
                            depth_timeout=0.0, pointmap_stride=1)  # depth at image pixels
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    depth_out = graph.collect(Image, 'pointmap/depth')
    poses = graph.collect(TOPIC_TYPES['people/poses'], 'people/poses')
    camera = Camera(graph, encoding)
    assert camera.pump(lambda: any(_same_stamp(depth_out, k.header.stamp) for k in kps[1:])
                       and poses)
    kp = next(k for k in kps[1:] if _same_stamp(depth_out, k.header.stamp))
    cloud = cloud_array(kp).reshape(-1)
    u, v = cloud['u'].astype(np.float64), cloud['v'].astype(np.float64)
    xyz = np.stack([cloud['x'], cloud['y'], cloud['z']], -1).astype(np.float64)
    inside = (u >= 0) & (u < SIZE) & (v >= 0) & (v < SIZE)
    finite = np.isfinite(xyz).all(-1) & inside
    assert finite.sum() >= 20, 'most keypoints above min_score get depth'
    z = plane_z(u, v)
    c = (SIZE - 1) / 2.0
    want = np.stack([(u - c) / FX * z, (v - c) / FX * z, z], -1)
    err = np.linalg.norm(xyz[finite] - want[finite], axis=-1)
    assert err.max() < 0.01, f'max keypoint error {err.max() * 100:.2f} cm'
    # The published pointmap, scaled by the depth fit, lies on the plane.
    d_msg = _same_stamp(depth_out, kp.header.stamp)[0]
    d = np.frombuffer(d_msg.data, np.float32).reshape(d_msg.height, d_msg.width)
    rows, cols = np.nonzero(np.isfinite(d) & (d > 0))
    assert len(rows) > 50
    ratio = d[rows, cols] / plane_z(cols, rows)
    assert np.median(ratio) == pytest.approx(1.0, abs=0.02)
    diag = _diag(node)
    assert float(diag['people.depth_scale']) > 0 and int(diag['pairing.depth_paired']) >= 2
    assert diag['people.depth_scale_variation'] != ''
    # people/poses: one torso per tracked person, on the plane.
    pose = poses[-1].poses[0]
    row = pose.position.y * FX / pose.position.z + c
    assert pose.position.z == pytest.approx(plane_z(0, row), abs=0.01)


def test_ids_stable_across_frames(graph):
    """One person seen in every frame keeps its id in pose/persons, pose/keypoints, people/ids."""
    graph.perception(tasks='pose,pointmap', box_source='full')
    persons = graph.collect(TOPIC_TYPES['pose/persons'], 'pose/persons')
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    ids_out = graph.collect(String, 'people/ids')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    end = time.monotonic() + 60
    while len(persons) < 6 and time.monotonic() < end:
        pub.publish(image_msg(_header(graph.tester.get_clock().now().to_msg()), PHOTO, 'bgr8'))
        graph.wait(lambda: False, 0.2)
    assert len(persons) >= 6
    ids = [int(cloud_array(m)['id'][0, 0]) for m in persons]
    assert ids[0] >= 1 and set(ids) == {ids[0]}, ids
    assert all((cloud_array(m)['id'] == ids[0]).all() for m in kps)
    assert graph.wait(lambda: ids_out)
    assert all(json.loads(m.data)['ids'] in ([], [ids[0]]) for m in ids_out)


def test_bad_or_missing_depth_counted_colour_still_processed(graph):
    """A wrong depth encoding or size and a silent depth topic: counted, frames still run."""
    node = graph.perception(tasks='pose', use_depth=True, box_source='full', depth_timeout=0.5)
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    camera = Camera(graph)

    def bad_depth(kind, make):
        count, published = node.stats.bad_inputs[kind], len(kps)

        def send():
            header = _header(graph.tester.get_clock().now().to_msg())
            camera.send(stamp=header.stamp, depth_msg=make(header))
        assert _pump_with(graph, send, lambda: node.stats.bad_inputs[kind] > count and
                          len(kps) > published), kind

    bad_depth('depth_encoding', lambda h: image_msg(h, np.zeros((80, 80, 3), np.uint8), 'rgb8'))
    bad_depth('depth', lambda h: _truncated(depth_image(h)))
    assert 'depth' in _diag(node)['last_error']
    # A depth image with no valid pixel (a sensor fault) is counted, not used.
    for fill, encoding in ((0, '16UC1'), (np.nan, '32FC1'), (np.inf, '32FC1'), (-1.0, '32FC1')):
        dtype = np.uint16 if encoding == '16UC1' else np.float32
        bad_depth('depth_invalid', lambda h, f=fill, e=encoding, t=dtype: image_msg(
            h, np.full((80, 80), f, t), e))
        assert not np.isfinite(cloud_array(kps[-1])['z']).any()  # no depth used: no 3D
    assert 'hold a depth' in _diag(node)['last_error']
    # Depth stops: after depth_timeout the colour frames go on without it, counted.
    count, published = node.stats.bad_inputs['depth_missing'], len(kps)
    assert camera.pump(lambda: node.stats.bad_inputs['depth_missing'] > count and
                       len(kps) > published + 1, depth=False)
    assert not np.isfinite(cloud_array(kps[-1])['z']).any()  # no depth, no pointmap: no 3D
    assert int(_diag(node)['bad_input.depth_missing']) >= 1


def _truncated(msg: Image) -> Image:
    msg.data = msg.data[:len(msg.data) // 2]
    return msg


def _pump_with(graph, send, done, timeout=30.0, period=0.2) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        send()
        if graph.wait(done, period):
            return True
    return False


def test_time_jump_back_resets_tracks_with_a_log_line(graph, capfd):
    """A bag loop (stamps going back): the node logs the reset and new ids follow."""
    node = graph.perception(tasks='pose', box_source='full')
    persons = graph.collect(TOPIC_TYPES['pose/persons'], 'pose/persons')
    pub = graph.publisher(Image, 'image', qos(reliable=True))
    graph.wait_for_subscribers(pub)
    now = graph.tester.get_clock().now().to_msg()

    def send(offset):
        stamp = type(now)(sec=now.sec + offset, nanosec=0)
        count = len(persons)
        for _ in range(100):
            pub.publish(image_msg(_header(stamp), PHOTO, 'bgr8'))
            if graph.wait(lambda: len(persons) > count, 0.3):
                return int(cloud_array(persons[-1])['id'][0, 0])
        raise AssertionError('no output')

    first = send(10)
    assert send(11) == first
    after = send(0)  # ten seconds back
    assert after > first
    assert _diag(node)['people.resets'] == '1'
    assert 'time jumped back' in capfd.readouterr().err


def write_rgbd_bag(path, frames: int = 4, depth_lag_ns: int = 3_000_000) -> None:
    """Write a real rosbag2 (mcap) of an RGB-D camera: colour, the depth plane, camera_info."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import get_typestore, Stores

    store = get_typestore(Stores.ROS2_HUMBLE)
    T = store.types
    rgb = np.ascontiguousarray(PHOTO[..., ::-1])
    depth = depth_image(Header())
    c = (SIZE - 1) / 2.0
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {name: writer.add_connection(topic, f'sensor_msgs/msg/{kind}', typestore=store)
                 for name, topic, kind in (
                     ('info', '/cam/color/camera_info', 'CameraInfo'),
                     ('colour', '/cam/color/image_raw', 'Image'),
                     ('depth', '/cam/aligned_depth_to_color/image_raw', 'Image'))}
        for i in range(frames):
            t = 1_000_000_000 * 100 + i * 100_000_000

            def header(ns):
                return T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](
                    sec=ns // 10**9, nanosec=ns % 10**9), frame_id='cam_color_optical')

            info = T['sensor_msgs/msg/CameraInfo'](
                header=header(t), height=SIZE, width=SIZE, distortion_model='plumb_bob',
                d=np.zeros(5), k=np.array([FX, 0, c, 0, FX, c, 0, 0, 1.0]), r=np.eye(3).ravel(),
                p=np.array([FX, 0, c, 0, 0, FX, c, 0, 0, 0, 1.0, 0]), binning_x=0, binning_y=0,
                roi=T['sensor_msgs/msg/RegionOfInterest'](x_offset=0, y_offset=0, height=0,
                                                          width=0, do_rectify=False))
            colour = T['sensor_msgs/msg/Image'](
                header=header(t), height=SIZE, width=SIZE, encoding='rgb8', is_bigendian=0,
                step=SIZE * 3, data=rgb.reshape(-1))
            d = T['sensor_msgs/msg/Image'](
                header=header(t + depth_lag_ns), height=depth.height, width=depth.width,
                encoding='16UC1', is_bigendian=0, step=depth.step,
                data=np.frombuffer(bytes(depth.data), np.uint8))
            for name, msg, stamp in (('info', info, t), ('colour', colour, t),
                                     ('depth', d, t + depth_lag_ns)):
                writer.write(conns[name], stamp, store.serialize_cdr(msg, msg.__msgtype__))


def test_sample_camera_plays_an_rgbd_bag_into_the_node(graph, tmp_path):
    """The sample camera plays colour + depth + camera_info of a bag; the node pairs them."""
    from rclpy.parameter import Parameter
    from sapiens_ros.ros.sample_camera import check_source, SampleCamera

    bag = tmp_path / 'rgbd'
    write_rgbd_bag(str(bag))
    topics = check_source(str(bag))
    assert (topics.image, topics.depth, topics.camera_info) == (
        '/cam/color/image_raw', '/cam/aligned_depth_to_color/image_raw', '/cam/color/camera_info')
    node = graph.perception(tasks='pose', use_depth=True, box_source='full', depth_timeout=0.0)
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    depths = graph.collect(Image, 'depth', qos(reliable=False))
    infos = graph.collect(CameraInfo, 'camera_info', qos(reliable=False))
    graph.add(SampleCamera(context=graph.context, parameter_overrides=[
        Parameter('source', value=str(bag)), Parameter('rate', value=10.0)]))
    assert graph.wait(lambda: len(kps) >= 2 and
                      int(_diag(node)['pairing.depth_paired']) >= 2, 60.0)
    colour_stamps = {stamp_ns(i.header.stamp) for i in infos}  # camera_info: colour stamps
    paired = [stamp_ns(d.header.stamp) - 3_000_000 in colour_stamps for d in depths]
    assert sum(paired) >= 2  # the recorded spacing is kept, shifted to now
    assert abs(stamp_ns(infos[0].header.stamp) - graph.tester.get_clock().now().nanoseconds) \
        < 60 * 10**9
    assert infos[0].k[0] == FX and depths[0].encoding == '16UC1'
    cloud = cloud_array(kps[-1]).reshape(-1)
    inside = (cloud['u'] >= 0) & (cloud['u'] < SIZE) & (cloud['v'] >= 0) & (cloud['v'] < SIZE)
    z = cloud['z'][inside]
    assert np.isfinite(z).sum() >= 20
    np.testing.assert_allclose(z[np.isfinite(z)], plane_z(0, cloud['v'][inside][np.isfinite(z)]),
                               atol=0.01)


def stamp_ns(stamp) -> int:
    return int(stamp.sec) * 10**9 + int(stamp.nanosec)


def test_replay_gives_the_live_nodes_ids(graph, tmp_path, astronaut):
    """
    Done-when test of issue 11: a bag replayed offline gets the ids the live node gave live.

    The node gets the frames one at a time (each output awaited, so none is dropped); the bag
    holds the same frames with the same stamps. A 2 s gap (over ``track_max_age``) and a jump
    back in time (a bag loop) make both start new tracks at the same frames.
    """
    from builtin_interfaces.msg import Time
    from replay_bags import camera_bag, frames
    from ros_fixtures import tiny_pipeline
    from sapiens_ros.replay.loop import replay, ReplayOptions
    from sapiens_ros.replay.source import InputBag

    rgb = frames(astronaut, 8)
    base = 1_700_000_000 * 10**9
    gap = base + 2_300_000_000
    stamps = [base + k * 10**8 for k in range(4)] + [gap, gap + 10**8, base, base + 10**8]
    graph.perception(tasks='pose,seg')
    persons = graph.collect(TOPIC_TYPES['pose/persons'], 'pose/persons')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    live = []
    for pixels, t in zip(rgb, stamps, strict=True):
        header = _header(Time(sec=t // 10**9, nanosec=t % 10**9))
        before = len(persons)
        pub.publish(image_msg(header, pixels, 'rgb8'))
        assert graph.wait(lambda: len(persons) > before, 60.0)  # noqa: B023 - used at once
        live.append(cloud_array(persons[-1])['id'].reshape(-1).tolist())
        assert stamp_ns(persons[-1].header.stamp) == t

    bag = tmp_path / 'in'
    camera_bag(bag, rgb)  # the same frames; its stamps are set below
    bag_times = _restamp(bag, tmp_path / 'restamped', stamps)
    summary = replay(tiny_pipeline(('pose', 'seg')), ReplayOptions(
        str(bag_times), str(tmp_path / 'out'), progress=False))
    assert summary.processed == len(rgb)
    offline = []
    with InputBag(tmp_path / 'out') as out:
        for conn, _, raw in out.messages():
            if conn.topic == '/sapiens/pose/persons':
                offline.append(cloud_array(out.deserialize(raw, conn.msgtype))['id']
                               .reshape(-1).tolist())
    assert offline == live
    flat = [i for ids in live for i in ids]
    assert flat and min(flat) >= 1 and len(set(flat)) >= 3, live  # new tracks after gap, loop


def _restamp(src, dst, stamps):
    """Copy a one-camera bag with header stamps (and bag times, in order) set to ``stamps``."""
    from replay_bags import typestore, write_bag
    from sapiens_ros.replay.source import InputBag

    ts = typestore('jazzy')
    msgs = []
    with InputBag(src) as bag:
        for i, (conn, _, raw) in enumerate(bag.messages()):
            msg = ts.deserialize_cdr(raw, conn.msgtype)
            t = stamps[i]
            msg.header.stamp.sec, msg.header.stamp.nanosec = t // 10**9, t % 10**9
            msgs.append((conn.topic, conn.msgtype, msg, base_time(i)))
    return write_bag(dst, msgs)


def base_time(index: int) -> int:
    """Bag (receive) time of the ``index``-th message: increasing, whatever its stamp."""
    return 1_800_000_000 * 10**9 + index * 10**8
