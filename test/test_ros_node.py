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

"""The perception node over real rclpy + Fast DDS, on tiny random checkpoints and a real photo."""

import json
import threading
import time

import cv2
import numpy as np
import pytest

rclpy = pytest.importorskip('rclpy')

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402, I100
from ros_graph import cloud_array, qos  # noqa: E402
from sapiens_ros.core.models.registry import DEFAULT_TASKS  # noqa: E402
from sapiens_ros.ros.array_msgs import image_msg  # noqa: E402
from sapiens_ros.ros.sample_camera import bundled_photo, camera_info_for  # noqa: E402
from sapiens_ros.ros.topic_types import TOPIC_TYPES  # noqa: E402
from sapiens_ros.ros.topics import OUTPUT_TASK  # noqa: E402
from sensor_msgs.msg import CameraInfo, CompressedImage, Image  # noqa: E402
from std_msgs.msg import Header, String  # noqa: E402

PHOTO = cv2.resize(bundled_photo(), (160, 160), interpolation=cv2.INTER_AREA)  # BGR


def _header(node, frame_id='camera_optical_frame') -> Header:
    header = Header(frame_id=frame_id)
    header.stamp = node.get_clock().now().to_msg()
    return header


def _image(node, pixels=PHOTO, encoding='bgr8') -> Image:
    return image_msg(_header(node), pixels, encoding)


def _pump(graph, pub, make, done, timeout=20.0, period=0.15) -> bool:
    """Publish ``make()`` every ``period`` s until ``done()``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pub.publish(make())
        if graph.wait(done, period):
            return True
    return False


def _diag(node) -> dict:
    status = node.publish_diagnostics().status[0]
    return {kv.key: kv.value for kv in status.values} | {'_level': status.level}


def test_every_topic_content_and_header(graph):
    node = graph.perception()
    outputs = {s: graph.collect(t, s) for s, t in TOPIC_TYPES.items()  # of the default heads
               if s not in ('diagnostics', 'pose/keypoint_info', 'seg/label_info_json') and
               OUTPUT_TASK[s] in DEFAULT_TASKS}
    infos = {s: graph.collect(String, s, qos(latched=True))
             for s in ('pose/keypoint_info', 'seg/label_info_json')}
    diags = graph.collect(DiagnosticArray, '/diagnostics')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    sent = []

    def make():
        sent.append(_image(graph.tester))
        return sent[-1]

    assert _pump(graph, pub, make, lambda: all(outputs.values()) and diags)
    stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in sent}
    for suffix, box in outputs.items():
        msg = box[0]
        if suffix == 'people/ids':  # std_msgs/String: the JSON carries the header
            data = json.loads(msg.data)
            header = Header(frame_id=data['frame_id'])
            header.stamp.sec, header.stamp.nanosec = data['stamp']['sec'], \
                data['stamp']['nanosec']
        else:
            header = msg.markers[0].header if suffix == 'pose/markers' else msg.header
        assert header.frame_id == 'camera_optical_frame', suffix
        assert (header.stamp.sec, header.stamp.nanosec) in stamps, suffix
    kp = outputs['pose/keypoints'][0]
    assert kp.width == 308 and kp.height >= 1
    assert [f.name for f in kp.fields] == ['u', 'v', 'score', 'x', 'y', 'z', 'id']
    assert outputs['seg/labels'][0].encoding == 'mono8'
    assert (outputs['seg/labels'][0].height, outputs['seg/labels'][0].width) == (160, 160)
    assert outputs['seg/overlay'][0].encoding == 'bgr8'
    assert outputs['normal/image'][0].encoding == '32FC3'
    assert outputs['normal/overlay'][0].encoding == 'rgb8'
    assert outputs['pose/overlay'][0].encoding == 'rgb8'
    assert outputs['pointmap/depth'][0].encoding == '32FC1'
    names = [f.name for f in outputs['pointmap/points'][0].fields]
    assert names == ['x', 'y', 'z', 'rgb', 'label']
    assert len(json.loads(infos['pose/keypoint_info'][0].data)['names']) == 308
    assert len(json.loads(infos['seg/label_info_json'][0].data)['names']) == 29
    assert diags[-1].status[0].name.endswith('sapiens perception')
    keys = set(_diag(node))
    assert {'input_rate_hz', 'processed_rate_hz', 'frames_dropped', 'latency_p50_ms',
            'latency_p95_ms', 'backend', 'device', 'model.pose', 'stage.total_ms'} <= keys


@pytest.mark.parametrize('reliable', [True, False])
def test_qos_and_unused_work_skipped(graph, reliable):
    node = graph.perception()
    labels = graph.collect(Image, 'seg/labels', qos(reliable=True, depth=2))
    pub = graph.publisher(Image, 'image', qos(reliable=reliable, depth=2))
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: labels)
    assert node.stats.tasks_run == ('seg',)  # nobody listens to pose/normal/pointmap
    node.set_parameters([rclpy.parameter.Parameter('publish_all', value=True)])
    processed = node.stats.processed
    assert _pump(graph, pub, lambda: _image(graph.tester),
                 lambda: node.stats.processed > processed + 1)
    assert set(node.stats.tasks_run) == {'pose', 'seg', 'normal', 'pointmap'}


def test_lifecycle_from_another_node(graph):
    from lifecycle_msgs.msg import State, Transition
    from lifecycle_msgs.srv import ChangeState, GetState

    node = graph.perception(autostart=False)
    change = graph.tester.create_client(ChangeState, '/perception_node/change_state')
    get = graph.tester.create_client(GetState, '/perception_node/get_state')
    assert change.wait_for_service(5.0) and get.wait_for_service(5.0)

    def call(client, request):
        future = client.call_async(request)
        assert graph.wait(future.done, 30.0)
        return future.result()

    def state():
        return call(get, GetState.Request()).current_state.id

    def transition(tid):
        assert call(change, ChangeState.Request(transition=Transition(id=tid))).success

    assert state() == State.PRIMARY_STATE_UNCONFIGURED and node.pipeline is None
    transition(Transition.TRANSITION_CONFIGURE)
    assert state() == State.PRIMARY_STATE_INACTIVE and node.pipeline is not None
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(Image, 'image')
    transition(Transition.TRANSITION_ACTIVATE)
    assert state() == State.PRIMARY_STATE_ACTIVE
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: labels)
    transition(Transition.TRANSITION_DEACTIVATE)
    assert state() == State.PRIMARY_STATE_INACTIVE
    assert pub.get_subscription_count() == 0 and node.worker is None
    transition(Transition.TRANSITION_CLEANUP)
    assert state() == State.PRIMARY_STATE_UNCONFIGURED and node.pipeline is None
    transition(Transition.TRANSITION_CONFIGURE)
    transition(Transition.TRANSITION_ACTIVATE)
    count = len(labels)
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: len(labels) > count)


def test_parameter_updates_valid_and_rejected(graph):
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    node = graph.perception(tasks='seg,pointmap')
    client = graph.tester.create_client(SetParameters, '/perception_node/set_parameters')
    assert client.wait_for_service(5.0)

    def set_param(name, value):
        msg = Parameter(name, value=value).to_parameter_msg()
        request = SetParameters.Request(parameters=[msg])
        future = client.call_async(request)
        assert graph.wait(future.done, 10.0)
        return future.result().results[0]

    assert set_param('pointmap_stride', 4).successful
    assert node.pipeline_settings()['pointmap_stride'] == 4
    assert set_param('score_threshold', 0.6).successful
    assert node.step_settings().options.score_threshold == 0.6
    assert set_param('force_outputs', 'seg/labels').successful
    assert node.step_settings().forced == {'seg/labels'}
    assert set_param('box_source', 'full').successful
    assert node.pipeline_settings()['box_source'] == 'full'
    for name, value, why in [('score_threshold', 1.5, ''), ('pointmap_stride', 0, ''),
                             ('box_source', 'boxes', 'one of'),
                             ('force_outputs', 'pose/nothing', 'unknown outputs'),
                             ('model_size', '1b', 'applies at configure'),
                             ('device', 'cuda', 'cleanup'),
                             ('max_pixels', 1 << 28, 'not raised above its start value'),
                             ('compressed', True, 'applies at activate'),
                             ('input_size', '256x192', 'ambiguous')]:
        result = set_param(name, value)
        assert not result.successful, name
        assert why.lower() in result.reason.lower(), (name, result.reason)
    assert node.pipeline_settings()['pointmap_stride'] == 4
    # The forced output is built without any subscriber.
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: node.stats.processed > 0)
    assert node.stats.tasks_run == ('seg',)
    assert node.pipeline.config.pointmap_stride == 4  # applied between frames
    # A parameter change never waits for an inference: hold one in flight and set a value.
    release, entered = threading.Event(), threading.Event()
    real = node.pipeline.__class__.__call__

    def held(pipe, *args, **kwargs):
        entered.set()
        assert release.wait(30)
        return real(pipe, *args, **kwargs)

    node.pipeline.__class__ = type('HeldPipeline', (node.pipeline.__class__,), {'__call__': held})
    try:
        pub.publish(_image(graph.tester))
        assert entered.wait(10), 'no inference started'
        assert set_param('pointmap_stride', 2).successful  # while the frame is held
        assert node.pipeline_settings()['pointmap_stride'] == 2
    finally:
        release.set()


class SlowRunner:
    """The real tiny seg runner plus a fixed delay: stands in for a large model on a slow GPU."""

    def __init__(self, runner, delay: float) -> None:
        self.runner, self.delay = runner, delay
        self.task, self.name, self.model_id = runner.task, runner.name, runner.model_id

    def check_input_size(self, size):
        return self.runner.check_input_size(size)

    def __call__(self, pixel_values):
        time.sleep(self.delay)
        return self.runner(pixel_values)


def test_fast_camera_slow_model_no_backlog(graph):
    node = graph.perception(tasks='seg', latency_warn_ms=100.0)
    node.pipeline.runners['seg'] = SlowRunner(node.pipeline.runners['seg'], 0.25)
    latencies = []

    def on_labels(msg):
        now = graph.tester.get_clock().now().nanoseconds
        latencies.append((now - (msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)) / 1e6)

    graph.tester.create_subscription(Image, 'seg/labels', on_labels, qos())
    diags = graph.collect(DiagnosticArray, '/diagnostics')
    pub = graph.publisher(Image, 'image', qos(reliable=False, depth=1))
    graph.wait_for_subscribers(pub)
    node.publish_diagnostics()  # reset the rate window
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < 3.0:  # 30 Hz for 3 s
        pub.publish(_image(graph.tester))
        sent += 1
        time.sleep(max(0.0, start + sent / 30.0 - time.monotonic()))
    graph.wait(lambda: not node.slots._items, 2.0)
    time.sleep(0.5)
    diag = _diag(node)
    processed, dropped = node.stats.processed, node.slots.dropped['']
    assert 2 <= processed <= 3.5 / 0.25 + 2, (processed, node.stats.stage_ms)  # load-proof
    # Every received frame was processed or replaced by a newer one (none queued up).
    assert dropped >= node.stats.received - processed - 2 and dropped > node.stats.received // 2
    assert int(diag['frames_dropped']) == dropped
    rates = [float(kv.value) for m in diags for kv in m.status[0].values
             if kv.key == 'dropped_rate_hz' and 'sapiens' in m.status[0].name]
    assert max(rates) > 5.0  # /diagnostics reported the drops during the burst
    # Latency stays about one inference period (at most ~2 periods plus transport), whatever
    # the machine's load makes that period; a backlog would grow it frame after frame towards
    # the whole burst (90 frames queued).
    # A FIFO backlog makes the k-th latency about k periods: the median grows with the burst.
    # One stall of the loaded machine (seen on main before this change too) may hit any frame.
    period_ms = 1e3 * (time.monotonic() - start) / max(processed, 1)
    assert latencies and float(np.median(latencies)) < 2.5 * period_ms + 500.0, \
        (latencies, period_ms)
    assert max(latencies) < 4.5 * period_ms + 2000.0, (latencies, period_ms)
    assert diag['_level'] == DiagnosticStatus.WARN  # p95 over the 100 ms threshold


def test_publish_thread_leaves_the_cpu_threads_to_inference(graph):
    """With ``cpu_threads`` 2, inference runs on 2 torch threads and publishing on one."""
    import torch

    before = torch.get_num_threads()
    node = graph.perception(tasks='seg', cpu_threads=2)
    try:
        worker, seen = node.worker, {}
        run, publish = worker.scheduler.run, worker.publish

        def run_spy(requests):
            seen.setdefault('infer', torch.get_num_threads())
            return run(requests)

        def publish_spy(frame_out):
            seen.setdefault('publish', torch.get_num_threads())
            return publish(frame_out)

        worker.scheduler.run, worker.publish = run_spy, publish_spy
        labels = graph.collect(Image, 'seg/labels')
        pub = graph.publisher(Image, 'image')
        graph.wait_for_subscribers(pub)
        assert _pump(graph, pub, lambda: _image(graph.tester), lambda: labels)
        assert seen == {'infer': 2, 'publish': 1}
    finally:
        torch.set_num_threads(before)


def _settle(graph, node, outputs, quiet=0.2):
    """Wait until frames still in flight from an earlier burst have been processed."""
    while True:
        n = len(outputs)
        time.sleep(quiet)
        if len(outputs) == n and not node.busy and not node.slots._items:
            return


def _bad_case(graph, node, pub, msg, kind, outputs, before_info=None):
    """Publish ``msg``: it is counted under ``kind`` and nothing is published for it."""
    _settle(graph, node, outputs)
    published = len(outputs)
    count = node.stats.bad_inputs[kind]
    pub.publish(msg)
    assert graph.wait(lambda: node.stats.bad_inputs[kind] > count, 5.0), kind
    time.sleep(0.1)
    assert len(outputs) == published, (kind, msg.encoding, msg.height, msg.step, len(msg.data))


def test_every_bad_raw_input_then_recovery(graph):
    node = graph.perception(tasks='seg', max_pixels=200 * 200)
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    good = _image(graph.tester)
    assert _pump(graph, pub, lambda: good, lambda: labels)
    unknown = _image(graph.tester)
    unknown.encoding = 'bgr10_weird'
    short = _image(graph.tester)
    short.data = short.data[:-10]
    step = _image(graph.tester)
    step.step = 100
    zero = Image(header=_header(graph.tester), height=0, width=160, encoding='bgr8', step=480)
    huge = _image(graph.tester, np.zeros((300, 300, 3), np.uint8))
    for msg in (unknown, short, step, zero, huge):
        _bad_case(graph, node, pub, msg, 'image', labels)
        count = len(labels)
        pub.publish(_image(graph.tester))  # the next good frame works
        assert graph.wait(lambda n=count: len(labels) > n, 5.0)
    assert node.stats.bad_inputs['image'] == 5
    diag = _diag(node)
    assert diag['bad_input.image'] == '5'


def test_nan_model_is_rejected(graph):
    node = graph.perception(tasks='normal')
    normals = graph.collect(Image, 'normal/image')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    real = node.pipeline.runners['normal']

    class NaNRunner(SlowRunner):
        """The real runner with its output poisoned: a model that diverged (fault injection)."""

        def __call__(self, pixel_values):
            out = self.runner(pixel_values)
            return {k: v * float('nan') for k, v in out.items()}

    node.pipeline.runners['normal'] = NaNRunner(real, 0.0)
    _bad_case(graph, node, pub, _image(graph.tester), 'model_nan', normals)
    node.pipeline.runners['normal'] = real
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: normals)


def test_compressed_input_and_bad_jpeg(graph):
    node = graph.perception(tasks='seg', compressed=True)
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(CompressedImage, 'image/compressed')
    graph.wait_for_subscribers(pub)
    jpeg = cv2.imencode('.jpg', PHOTO)[1].tobytes()
    png = cv2.imencode('.png', PHOTO)[1].tobytes()

    def compressed(data, fmt='jpeg'):
        msg = CompressedImage(header=_header(graph.tester), format=fmt)
        msg.data = data
        return msg

    assert _pump(graph, pub, lambda: compressed(jpeg), lambda: labels)
    assert (labels[0].height, labels[0].width) == (160, 160)
    count = len(labels)
    assert _pump(graph, pub, lambda: compressed(png, 'png'), lambda: len(labels) > count)
    for bad in (jpeg[:len(jpeg) // 2], b'\xff\xd8\xff' + bytes(200) + b'\xff\xd9', b'nope'):
        _bad_case(graph, node, pub, compressed(bad), 'compressed', labels)
    assert node.stats.bad_inputs['compressed'] == 3


def test_keypoints_3d_sample_the_pointmap(graph):
    node = graph.perception(tasks='pose,pointmap', box_source='full', foreground_only=False,
                            pointmap_stride=1)  # depth at the image's pixels
    kps = graph.collect(TOPIC_TYPES['pose/keypoints'], 'pose/keypoints')
    depth = graph.collect(Image, 'pointmap/depth')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: kps and depth)
    stamp = kps[0].header.stamp
    match = [d for d in depth if d.header.stamp == stamp]
    assert match, 'keypoints and depth come from the same frame'
    cloud = cloud_array(kps[0])[0]
    z = np.frombuffer(match[0].data, np.float32).reshape(match[0].height, match[0].width)
    inside = (cloud['u'] >= 1) & (cloud['u'] < 158) & (cloud['v'] >= 1) & (cloud['v'] < 158)
    assert inside.sum() > 10 and np.isfinite(cloud['z'][inside]).all()
    # Bilinear sample of the depth map at (u, v) equals the keypoint z.
    want = cv2.remap(z, cloud['u'][inside].reshape(1, -1), cloud['v'][inside].reshape(1, -1),
                     cv2.INTER_LINEAR)[0]
    np.testing.assert_allclose(cloud['z'][inside], want, rtol=1e-3, atol=1e-4)
    assert node.stats.tasks_run == ('pointmap', 'pose')  # run order


def _fallback_case(graph, node, pub, outputs, kind='camera_info'):
    """Publish one frame: it is counted under ``kind`` and still published (predicted scale)."""
    _settle(graph, node, outputs)
    count, published = node.stats.bad_inputs[kind], len(outputs)
    assert _pump(graph, pub, lambda: _image(graph.tester),
                 lambda: node.stats.bad_inputs[kind] > count and len(outputs) > published)


def test_calibrated_pointmap_scale_from_camera_info(graph):
    node = graph.perception(tasks='seg,pointmap', calibrated=True, camera_info_timeout=30.0)
    depth = graph.collect(Image, 'pointmap/depth')
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(Image, 'image')
    info_pub = graph.publisher(CameraInfo, 'camera_info')
    graph.wait_for_subscribers(pub)
    graph.wait_for_subscribers(info_pub)
    # No camera_info yet, then each kind of broken K: the frame still runs every head (seg and
    # the pointmap with its predicted scale), and the problem is counted.
    _fallback_case(graph, node, pub, depth)
    assert labels
    broken = {0: 0.0, 4: float('nan'), 2: 1e9}  # fx zero, fy NaN, cx far outside the image
    for index, value in [*broken.items(), (0, 1e300)]:
        bad = camera_info_for(_header(graph.tester), 160, 160, 60.0)
        bad.k[index] = value
        received = node.camera.inputs.camera_info_time
        info_pub.publish(bad)
        assert graph.wait(lambda t=received: node.camera.inputs.camera_info_time > t)
        seg_before = len(labels)
        _fallback_case(graph, node, pub, depth)
        assert graph.wait(lambda n=seg_before: len(labels) > n)
    assert node.stats.bad_inputs['camera_info'] >= 5

    def median_depth(fx):
        info = camera_info_for(_header(graph.tester), 160, 160, 60.0)
        info.k[0] = fx
        info_pub.publish(info)
        assert graph.wait(lambda: node.camera.inputs.camera_info.k[0] == fx)
        _settle(graph, node, depth)  # frames published before the new K are done
        count = len(depth)
        assert _pump(graph, pub, lambda: _image(graph.tester), lambda: len(depth) > count)
        z = np.frombuffer(depth[-1].data, np.float32)
        return float(np.nanmedian(z))

    bad_before = node.stats.bad_inputs['camera_info']
    near, far = median_depth(200.0), median_depth(400.0)
    assert far == pytest.approx(2.0 * near, rel=1e-3)  # metric scale follows K
    assert node.stats.bad_inputs['camera_info'] == bad_before
    # A camera_info older than camera_info_timeout is stale: counted, predicted scale.
    node.set_parameters([rclpy.parameter.Parameter('camera_info_timeout', value=0.2)])
    time.sleep(0.3)
    _fallback_case(graph, node, pub, depth)
    diag = _diag(node)
    assert 'camera_info' in diag['last_error'] and 'old' in diag['last_error']


def test_onnxruntime_backend(graph, tmp_path):
    pytest.importorskip('onnxruntime')
    node = graph.perception(tasks='seg', backend='onnxruntime', cache_dir=str(tmp_path))
    assert node.pipeline is not None, 'configure failed'
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: labels)
    diag = _diag(node)
    assert diag['runner.seg'] == 'onnxruntime' and diag['backend'] == 'onnxruntime'
    assert (labels[0].height, labels[0].width) == (160, 160)


def test_truncated_checkpoint_fails_configure_loudly(graph, tmp_path, capfd):
    """A half-copied model.safetensors: configure fails, one log line names the file and fix."""
    import shutil

    from ros_fixtures import tiny_model_dir

    shutil.copytree(tiny_model_dir() / 'seg', tmp_path / 'seg')
    weights = tmp_path / 'seg' / 'model.safetensors'
    with open(weights, 'r+b') as f:
        f.truncate(weights.stat().st_size // 2)
    node = graph.perception(tasks='seg', model_dir=str(tmp_path))
    assert node.pipeline is None
    state = node._state_machine.current_state[1]
    assert state == 'unconfigured', state
    diag = _diag(node)
    assert diag['_level'] == DiagnosticStatus.ERROR, diag
    status = node.publish_diagnostics().status[0]
    assert status.message.startswith('not configured: ') and str(weights) in status.message
    lines = [line for line in capfd.readouterr().err.splitlines() if 'configure failed' in line]
    assert len(lines) == 1, lines  # logged once
    assert str(weights) in lines[0] and 'truncated' in lines[0]
    assert 'delete it and download or save it again' in lines[0]  # the fix


def test_every_frame_failing_is_a_diagnostics_error(graph):
    """Only undecodable frames arrive: diagnostics go ERROR with the reason, then recover."""
    node = graph.perception(tasks='seg')
    labels = graph.collect(Image, 'seg/labels')
    pub = graph.publisher(Image, 'image')
    graph.wait_for_subscribers(pub)
    bad = _image(graph.tester)
    bad.encoding = 'bgr10_weird'
    levels = []

    def failing() -> bool:
        pub.publish(bad)
        status = node.publish_diagnostics().status[0]
        levels.append((status.level, status.message))
        return status.level == DiagnosticStatus.ERROR

    assert graph.wait(failing, 15.0, period=0.3), levels[-3:]
    assert 'every frame failed' in levels[-1][1] and 'bgr10_weird' in levels[-1][1], levels[-1]
    assert _pump(graph, pub, lambda: _image(graph.tester), lambda: labels)
    node.publish_diagnostics()  # a new period: only good frames now
    assert _pump(graph, pub, lambda: _image(graph.tester),
                 lambda: node.publish_diagnostics().status[0].level == DiagnosticStatus.OK,
                 timeout=15.0, period=0.5)
