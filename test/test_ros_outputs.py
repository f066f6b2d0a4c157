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

"""The node's output encodings (issue 12) over real rclpy + Fast DDS, tiny random checkpoints."""

import cv2
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from rclpy.parameter import Parameter  # noqa: E402, I100
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo  # noqa: E402
from sensor_msgs.msg import CompressedImage, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

PHOTO = cv2.resize(bundled_photo(), (160, 120), interpolation=cv2.INTER_AREA)  # BGR


def _image(node) -> Image:
    header = Header(frame_id='camera')
    header.stamp = node.get_clock().now().to_msg()
    return image_msg(header, PHOTO, 'bgr8')


def _stamp(msg) -> tuple[int, int]:
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def _spy_publish(node) -> list:
    """Record the suffixes and rendered buffers of every frame the node publishes (real calls)."""
    seen = []
    real = node.worker.publish

    def publish(frame_out):
        msgs = real(frame_out)
        seen.append((set(msgs), set(frame_out.outcome.result.rendered)))
        return msgs

    node.worker.publish = publish
    return seen


def _pump(graph, pub, done, timeout=30.0) -> bool:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pub.publish(_image(graph.tester))
        if graph.wait(done, 0.2):
            return True
    return False


def test_compressed_only_when_subscribed(graph):
    """``<topic>/compressed`` is encoded only while someone subscribes to it."""
    node = graph.perception()
    seen = _spy_publish(node)
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: len(labels) >= 2)
    assert seen and all(suffixes == {'seg/labels'} and not rendered
                        for suffixes, rendered in seen)

    packed = graph.collect(CompressedImage, 'seg/labels/compressed')
    overlay = graph.collect(CompressedImage, 'seg/overlay/compressed')
    assert _pump(graph, pub, lambda: packed and overlay and any(
        _stamp(p) == _stamp(raw) for p in packed for raw in labels))
    # Built by the publish thread: on the CPU the pipeline renders and encodes nothing.
    assert any('seg/labels/compressed' in suffixes for suffixes, _ in seen)
    assert all(not rendered for _, rendered in seen)
    assert packed[0].format == 'mono8; png compressed '  # what image_transport writes
    assert overlay[0].format == 'bgr8; jpeg compressed bgr8'
    raw = {_stamp(m): m for m in labels}
    pair = next(p for p in packed if _stamp(p) in raw)
    decoded = cv2.imdecode(np.frombuffer(pair.data, np.uint8), cv2.IMREAD_UNCHANGED)
    original = np.frombuffer(raw[_stamp(pair)].data, np.uint8).reshape(120, 160)
    assert np.array_equal(decoded, original)  # png labels: lossless
    picture = cv2.imdecode(np.frombuffer(overlay[0].data, np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (120, 160, 3)


def test_png_overlays_and_16bit_normals(graph):
    node = graph.perception(overlay_compression='png', normal_encoding='16SC3')
    normals = graph.collect(Image, 'normal/image')
    overlay = graph.collect(Image, 'normal/overlay')
    packed = graph.collect(CompressedImage, 'normal/overlay/compressed')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)

    def paired():
        stamps = {_stamp(o) for o in overlay}
        return any(_stamp(p) in stamps for p in packed)

    assert _pump(graph, pub, lambda: normals and paired())
    raw = {_stamp(o): o for o in overlay}
    msg = normals[0]
    assert (msg.encoding, msg.step) == ('16SC3', 160 * 6)
    values = np.frombuffer(msg.data, np.int16).reshape(120, 160, 3).astype(np.float64)
    norm = np.linalg.norm(values / 32767.0, axis=-1)
    assert np.abs(norm - 1).max() < 1e-3  # unit vectors, scaled by 32767
    pair = next(p for p in packed if _stamp(p) in raw)
    assert pair.format == 'rgb8; png compressed bgr8'
    decoded = cv2.imdecode(np.frombuffer(pair.data, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
    expected = np.frombuffer(raw[_stamp(pair)].data, np.uint8).reshape(120, 160, 3)
    assert np.array_equal(decoded, expected)  # png overlay: lossless, RGB restored
    node.set_parameters([Parameter('normal_encoding', value='32FC3')])
    count = len(normals)
    assert _pump(graph, pub, lambda: len(normals) > count and normals[-1].encoding == '32FC3')
    rejected = node.set_parameters([Parameter('normal_encoding', value='8UC3')])[0]
    assert not rejected.successful and '32FC3' in rejected.reason


def test_pose_overlay_and_matting_alpha_over_dds(graph):
    """``pose/overlay`` draws the published keypoints; ``matting/alpha`` is mono8, input header."""
    from sapiens_ros.core.media.visualize import id_color
    from sapiens_ros.ros.topics import KEYPOINT_DTYPE

    graph.perception(tasks='pose,seg,matting', box_source='full', score_threshold=0.0,
                     smoothing=False)
    overlay = graph.collect(Image, 'pose/overlay')
    alpha = graph.collect(Image, 'matting/alpha')
    keypoints = graph.collect(PointCloud2, 'pose/keypoints')
    sent = []
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)

    def send():
        msg = _image(graph.tester)
        sent.append(_stamp(msg))
        return msg

    def paired():
        stamps = {_stamp(k) for k in keypoints}
        return alpha and any(_stamp(o) in stamps for o in overlay)

    import time
    end = time.monotonic() + 60.0
    while time.monotonic() < end and not paired():
        pub.publish(send())
        graph.wait(paired, 0.2)
    assert paired()
    matte = alpha[0]
    assert (matte.encoding, matte.height, matte.width, matte.step) == ('mono8', 120, 160, 160)
    assert matte.header.frame_id == 'camera' and _stamp(matte) in sent  # the input's header
    by_stamp = {_stamp(k): k for k in keypoints}
    picture = next(o for o in overlay if _stamp(o) in by_stamp)
    assert picture.encoding == 'rgb8' and picture.header.frame_id == 'camera'
    drawn = np.frombuffer(picture.data, np.uint8).reshape(120, 160, 3)
    cloud = np.frombuffer(bytes(by_stamp[_stamp(picture)].data), KEYPOINT_DTYPE).reshape(
        -1, 308)
    assert len(cloud) == 1 and cloud['id'][0, 0] >= 0  # the whole frame, tracked
    tint = (np.round(np.array(id_color(int(cloud['id'][0, 0]))) * 255).astype(int) + 255) // 2
    x, y = np.round(cloud['u'][0]).astype(int), np.round(cloud['v'][0]).astype(int)
    on = (x >= 0) & (x < 160) & (y >= 0) & (y < 120) & ~((x < 48) & (y < 12))  # not the label
    assert on.sum() >= 10
    assert (drawn[y[on], x[on]] == tint).all()  # a disc at every keypoint
    photo = PHOTO[..., ::-1]  # RGB
    assert (drawn != photo).any(-1).mean() < 0.9  # the frame under the drawing
