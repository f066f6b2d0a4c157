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
``pose/overlay`` drawn after tracking on the frame the pipeline kept on its device.

The GPU is the fake CUDA in its device-tensor mode (no GPU here): tensors placed on ``cuda:1``
report that device, so the pipeline keeps a "device" frame and the drawing takes its GPU
branches, in a second thread as the node's publish thread does. What the fake does not model
(kernels running asynchronously) is said in ``fake_cuda``.
"""

import threading

from fake_cuda import FakeCuda
import numpy as np
import pytest

pytest.importorskip('sensor_msgs.msg')

from sapiens_ros.backends.factory import load_pipeline  # noqa: E402
from sapiens_ros.core import PipelineConfig  # noqa: E402
from sapiens_ros.core.media.visualize import id_color  # noqa: E402
from sapiens_ros.core.models.keypoint_formats import keypoint_format  # noqa: E402
from sapiens_ros.core.people.state import PeopleState  # noqa: E402
from sapiens_ros.core.pipeline.pipeline import Pipeline  # noqa: E402
from sapiens_ros.core.processing import draw, encode  # noqa: E402
from sapiens_ros.core.processing.pose_overlay import text_scale  # noqa: E402
from sapiens_ros.ros import messages as M  # noqa: E402
from sapiens_ros.ros.render_plan import (  # noqa: E402
    MessageOptions, needs_host_image, render_request)
from std_msgs.msg import Header  # noqa: E402
import torch  # noqa: E402

OUTPUTS = {'pose/overlay', 'pose/overlay/compressed', 'pose/keypoints'}
OPTIONS = MessageOptions(score_threshold=0.0, keypoint_format='coco17', smooth_markers=False,
                         outputs=OUTPUTS)


@pytest.fixture(scope='module')
def pose_pipeline(model_dir):
    """Load a tiny pose pipeline on the CPU, on full-frame boxes (one person)."""
    return load_pipeline('pose', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=(256, 192), box_source='full'))


@pytest.fixture
def photo(astronaut):
    return np.ascontiguousarray(astronaut[::2, ::2])


@pytest.fixture
def cuda(monkeypatch):
    encode.gpu_jpeg_backend.cache_clear()  # asked under the fake: no GPU encoder installed
    fake = FakeCuda(gpu_tensors=True).install(monkeypatch)
    yield fake
    fake.uninstall()
    encode.gpu_jpeg_backend.cache_clear()


def _messages(pipe, photo, outputs=OUTPUTS, image=None):
    """One step (render request of ``outputs``), tracking, then the messages; and the result."""
    result = pipe(photo, render=render_request(outputs, OPTIONS))[0]
    people = PeopleState().update(result, 1.0)
    return result, people, M.build_messages(Header(), result, OPTIONS, image, people)


def _overlay(msgs, shape):
    return np.frombuffer(msgs['pose/overlay'].data, np.uint8).reshape(shape)


def test_the_device_frame_is_kept_only_for_the_pose_overlay(cuda, pose_pipeline, photo):
    pipe = Pipeline(pose_pipeline.runners, pose_pipeline.config, device='cuda:1')
    result = pipe(photo, render=render_request(OUTPUTS, OPTIONS))[0]
    kept = result.device_frame.rgb
    assert kept.is_cuda and kept.device == torch.device('cuda', 1)
    assert np.array_equal(kept.cpu().numpy(), photo)
    assert cuda.events('event_record')  # when the step's work on the frame ends
    # The publish thread then needs no host frame for it (the worker skips the conversion).
    assert not needs_host_image(render_request(OUTPUTS, OPTIONS), result)
    result.device_frame = None
    assert needs_host_image(render_request(OUTPUTS, OPTIONS), result)
    for outputs in ({'pose/keypoints', 'pose/markers'}, None):
        without = pipe(photo, render=None if outputs is None else
                       render_request(outputs, OPTIONS))[0]
        assert without.device_frame is None and without.pose is not None


def test_pose_overlay_is_drawn_from_the_device_frame_in_another_thread(
        cuda, pose_pipeline, photo):
    """
    The publish thread draws on cuda:1 under its device guard, after the step's event.

    No host image is given: the overlay can only come from the kept device frame, and it is
    byte for byte the CPU pipeline's (the same drawing code), with the keypoints' tint where
    the keypoints are.
    """
    pipe = Pipeline(pose_pipeline.runners, pose_pipeline.config, device='cuda:1')
    result = pipe(photo, render=render_request(OUTPUTS, OPTIONS))[0]
    people = PeopleState().update(result, 1.0)
    got = {}

    def publish():
        try:
            with cuda.on_this_thread():  # torch's function modes are per thread
                cuda.device_ops.clear()
                got['msgs'] = M.build_messages(Header(), result, OPTIONS, None, people)
                got['device_ops'] = list(cuda.device_ops)
        except Exception as exc:  # noqa: B902 - recorded for the assertion
            got['error'] = exc

    thread = threading.Thread(target=publish)
    thread.start()
    thread.join(timeout=600)
    assert 'error' not in got, got.get('error')
    msgs = got['msgs']
    assert {'pose/overlay', 'pose/overlay/compressed'} <= set(msgs)
    assert got['device_ops']  # drawn with ops on the (fake) device
    assert ('guard', 1) in cuda.log and cuda.events('wait_event')
    assert cuda.current_device_index == 0  # the guard was the publish thread's own
    on_cpu, _, cpu_msgs = _messages(pose_pipeline, photo)
    assert on_cpu.device_frame is not None and not on_cpu.device_frame.rgb.is_cuda
    out = _overlay(msgs, photo.shape)
    assert np.array_equal(out, _overlay(cpu_msgs, photo.shape))
    assert msgs['pose/overlay/compressed'].data == cpu_msgs['pose/overlay/compressed'].data
    _assert_drawn_at_keypoints(out, result, people)


def test_on_the_cpu_the_overlay_is_the_host_images(pose_pipeline, photo):
    """On the CPU the kept frame is the host frame: the same bytes as drawing on the image."""
    result, people, msgs = _messages(pose_pipeline, photo)
    assert result.device_frame is not None
    host = pose_pipeline(photo)[0]  # nothing rendered or kept: drawn on the given image
    assert host.device_frame is None
    again = M.build_messages(Header(), host, OPTIONS, photo, PeopleState().update(host, 1.0))
    assert np.array_equal(_overlay(msgs, photo.shape), _overlay(again, photo.shape))
    black = np.zeros_like(photo)  # a host image given anyway is not what is drawn on
    kept = M.build_messages(Header(), result, OPTIONS, black, people)
    assert np.array_equal(_overlay(kept, photo.shape), _overlay(msgs, photo.shape))
    _assert_drawn_at_keypoints(_overlay(msgs, photo.shape), result, people)


def _assert_drawn_at_keypoints(out, result, people):
    """Every keypoint's centre holds its track colour's tint, but under the id label."""
    points = np.round(keypoint_format('coco17').points(result.pose.keypoints)[0]).astype(int)
    track = int(people.ids[0])
    assert track >= 0
    tint = (np.round(np.array(id_color(track)) * 255).astype(int) + 255) // 2
    scale = text_scale(*out.shape[:2])
    width, height = draw.text_size(len(M.track_labels(result, people)[0]), scale)
    label = np.zeros(out.shape[:2], bool)
    label[:height + 2 * scale + 4, :width + 2 * scale + 4] = True  # at the box's corner
    inside = (points[:, 0] >= 0) & (points[:, 0] < out.shape[1]) & (points[:, 1] >= 0) & \
        (points[:, 1] < out.shape[0])
    hits = [(x, y) for x, y in points[inside] if not label[y, x]]
    assert len(hits) >= 10
    for x, y in hits:
        assert (out[y, x] == tint).all(), (x, y)
