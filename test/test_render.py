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
Rendering in torch (core.processing.render) against the numpy/OpenCV code it replaced.

The reference functions below are the pre-issue-12 implementations (core/media/visualize.py and
ros/messages.py at e9f25cf), kept here verbatim. Inputs are a tiny random pipeline's real outputs
on the astronaut photo; integer arithmetic must match byte for byte, float results within one
unit of the last place. The overlays are table lookups of OpenCV's own blend, so they are
byte-identical too.
"""

import cv2
import numpy as np
import pytest
from ros_fixtures import tiny_pipeline
from sapiens_ros.core.models.metadata import seg_class_info
from sapiens_ros.core.processing import render as R
from sapiens_ros.core.processing.hostbuf import as_buffer, host_copy, owning_buffer, to_host
from skimage import data as skdata
import torch

ALL = frozenset(R.RENDERABLE)


# ----------------------------------------------------------------- references (before issue 12)
def ref_seg_overlay(image_rgb, labels, alpha=0.5):
    palette = seg_class_info().palette
    colors = palette[np.minimum(labels, len(palette) - 1)]
    fg = (labels != 0)[..., None]
    blend = cv2.addWeighted(image_rgb, 1.0 - alpha, colors, alpha, 0.0)
    return np.where(fg, blend, image_rgb)


def ref_normal_colors(normals):
    rgb = np.nan_to_num((normals + 1.0) * 127.5, nan=0.0)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def ref_normal_overlay(image_rgb, normals, alpha=0.6):
    return cv2.addWeighted(image_rgb, 1.0 - alpha, ref_normal_colors(normals), alpha, 0.0)


def ref_pack_rgb(colors):
    c = colors.astype(np.uint32)
    return ((c[:, 0] << 16) | (c[:, 1] << 8) | c[:, 2]).view(np.float32)


def ref_cloud(pm):
    names = [('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('rgb', '<f4')]
    if pm.labels is not None:
        names.append(('label', '<u4'))
    cloud = np.empty(len(pm.points), np.dtype(names))
    cloud['x'], cloud['y'], cloud['z'] = pm.points[:, 0], pm.points[:, 1], pm.points[:, 2]
    cloud['rgb'] = ref_pack_rgb(pm.colors)
    if pm.labels is not None:
        cloud['label'] = pm.labels
    return cloud


def ref_depth(result, foreground_only=True):
    pm = result.pointmap
    depth = np.array(pm.xyz[..., 2], dtype=np.float32)
    if foreground_only and result.seg is not None:
        s = pm.stride
        bg = result.seg.labels[::s, ::s][:depth.shape[0], :depth.shape[1]] == 0
        depth[bg] = np.nan
    return depth


# ----------------------------------------------------------------- fixtures
@pytest.fixture(scope='module')
def image():
    return skdata.astronaut()[::2, ::2].copy()  # 256x256 RGB


@pytest.fixture(scope='module', params=[1, 2], ids=['stride1', 'stride2'])
def rendered(request, image):
    """Run the same frame through the pipeline twice: rendered on its device, and not."""
    pipe = tiny_pipeline(box_source='full', foreground_only=True,
                         pointmap_stride=request.param)
    req = R.RenderRequest(ALL, frozenset({('seg_overlay', 'jpeg'), ('normal_overlay', 'png'),
                                          ('seg_labels', 'png')}), overlay_alpha=0.5)
    return pipe(image, render=req)[0], pipe(image)[0], req


def test_seg_overlay_matches_opencv(image, rendered):
    result, _, _ = rendered
    ref = ref_seg_overlay(image, result.seg.labels, 0.5)
    got = result.rendered['seg_overlay']
    assert got.shape == image.shape and got.flags.c_contiguous
    assert np.array_equal(got, cv2.cvtColor(ref, cv2.COLOR_RGB2BGR))  # published as bgr8
    assert np.array_equal(got[result.seg.labels == 0], image[result.seg.labels == 0][:, ::-1])


def test_normal_colors_and_overlay_match(image, rendered):
    result, _, _ = rendered
    normals = result.normal.normals
    colors = R.normal_colors(torch.from_numpy(normals)).numpy()
    assert np.array_equal(colors, ref_normal_colors(normals))  # integer result: identical
    broken = normals.copy()
    broken[:3, :3] = np.nan
    broken[3, 3] = np.inf
    assert np.array_equal(R.normal_colors(torch.from_numpy(broken)).numpy(),
                          ref_normal_colors(broken))
    # a table of OpenCV's blend over the integer colours: byte-identical
    assert np.array_equal(result.rendered['normal_overlay'],
                          ref_normal_overlay(image, normals, 0.5))
    for alpha in (0.0, 0.6, 1.0):
        got = R.normal_overlay(torch.from_numpy(image), torch.from_numpy(broken), alpha)
        assert np.array_equal(got.numpy(), ref_normal_overlay(image, broken, alpha))


@pytest.mark.parametrize('alpha', [0.0, 0.3, 0.6, 1.0])
def test_blend_alphas_match_opencv(image, alpha):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 40, image.shape[:2], dtype=np.uint8)  # ids past the palette too
    got = R.seg_overlay(torch.from_numpy(image), torch.from_numpy(labels), alpha).numpy()
    assert np.array_equal(got, ref_seg_overlay(image, labels, alpha))  # a table of OpenCV's


def test_cloud_records_identical(rendered):
    result, plain, _ = rendered
    cloud = result.rendered['cloud']
    ref = ref_cloud(plain.pointmap)
    assert cloud.dtype == ref.dtype == R.CLOUD_LABEL_DTYPE
    assert cloud.tobytes() == ref.tobytes()  # integer packing and float bits: byte-identical
    assert owning_buffer(cloud) is not None  # one buffer, ready to be the message's data
    # points is a view of the cloud: scaling it in place scales the published records
    assert np.shares_memory(result.pointmap.points, cloud)
    np.testing.assert_array_equal(result.pointmap.points, plain.pointmap.points)


def test_depth_identical(rendered):
    result, plain, _ = rendered
    np.testing.assert_array_equal(result.rendered['depth'], ref_depth(plain))  # NaN == NaN here
    assert result.rendered['depth'].shape == plain.pointmap.xyz.shape[:2]


def test_normals16_round_trip(rendered):
    result, _, _ = rendered
    packed = result.rendered['normal16']
    assert packed.dtype == np.int16 and packed.shape == result.normal.normals.shape
    back = packed.astype(np.float32) / R.NORMAL16_SCALE
    assert np.abs(back - result.normal.normals).max() <= 0.5 / R.NORMAL16_SCALE + 1e-7


def test_encoded_images_decode(image, rendered):
    result, _, _ = rendered
    labels = cv2.imdecode(result.rendered['seg_labels.png'], cv2.IMREAD_UNCHANGED)
    assert np.array_equal(labels, result.seg.labels)  # png: lossless
    normal = cv2.imdecode(result.rendered['normal_overlay.png'], cv2.IMREAD_COLOR)
    assert np.array_equal(normal[..., ::-1], result.rendered['normal_overlay'])
    seg = cv2.imdecode(result.rendered['seg_overlay.jpeg'], cv2.IMREAD_COLOR)  # BGR like bgr8
    # lossy (and the random model's labels are speckle): the same pixels through OpenCV
    ref = cv2.imencode('.jpg', result.rendered['seg_overlay'], [cv2.IMWRITE_JPEG_QUALITY, 90])[1]
    assert np.array_equal(seg, cv2.imdecode(ref, cv2.IMREAD_COLOR))
    err = np.abs(seg.astype(np.int16) - result.rendered['seg_overlay']).mean(axis=(0, 1))
    swapped = np.abs(seg.astype(np.int16) - result.rendered['seg_overlay'][..., ::-1])
    assert err.mean() < swapped.mean(axis=(0, 1)).mean()  # channels not swapped


def test_host_render_equals_device_render(image, rendered):
    """A result the pipeline did not render is rendered by the same code: same bytes."""
    result, plain, req = rendered
    host = R.render_result(plain, image, req)
    assert set(host) == set(result.rendered)
    for key, values in result.rendered.items():
        assert host[key].tobytes() == values.tobytes(), key


def test_host_buffers():
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4).permute(1, 2, 0)
    view = to_host(t)  # a CPU tensor: no copy
    assert np.shares_memory(view, t.numpy()) and np.array_equal(view, t.numpy())
    out = host_copy(view)
    assert out.flags.c_contiguous and np.array_equal(out, view)
    assert owning_buffer(out) is not None and owning_buffer(out[1:]) is None
    assert owning_buffer(np.zeros(4)) is None
    assert as_buffer(out) is owning_buffer(out)  # adopted, not copied
    assert bytes(as_buffer(view)) == out.tobytes()  # strided: one copy
    assert len(as_buffer(np.zeros((0, 3)))) == 0


def test_request_validation():
    with pytest.raises(ValueError, match='cannot render'):
        R.RenderRequest(frozenset({'nope'}))
    with pytest.raises(ValueError, match='seg_labels.webp'):
        R.RenderRequest(encode=frozenset({('seg_labels', 'webp')}))
    assert not R.RenderRequest()


class _NanFirstFrame:
    """A real runner whose first frame's output is made NaN (a broken model, on demand)."""

    def __init__(self, runner, name):
        self.runner, self.name_ = runner, name

    def __getattr__(self, attr):
        return getattr(self.runner, attr)

    def __call__(self, pixels):
        out = dict(self.runner(pixels))
        out[self.name_] = out[self.name_].clone()
        out[self.name_][0] = float('nan')
        return out


def test_device_finite_flags(image):
    """Non-finite model outputs are found on the device, per frame."""
    pipe = tiny_pipeline(box_source='full')
    ok = pipe([image, image])
    assert all(r.finite is not None and r.non_finite() is None for r in ok)
    pipe.runners['normal'] = _NanFirstFrame(pipe.runners['normal'], 'normals')
    first, second = pipe([image, image])
    assert first.non_finite() == 'normals' and second.non_finite() is None


def test_depth_fitted_scale_reaches_the_rendered_cloud(rendered):
    """``with_pointmap_scale`` (issue 11) scales the device-rendered cloud and depth too."""
    from sapiens_ros.core.people.state import with_pointmap_scale

    result, _, _ = rendered
    before = result.rendered['cloud'].copy()
    scaled = with_pointmap_scale(result, 2.0)
    cloud = scaled.rendered['cloud']
    for axis in 'xyz':
        np.testing.assert_array_equal(cloud[axis], before[axis] * np.float32(2.0))
    assert cloud['rgb'].tobytes() == before['rgb'].tobytes()
    assert owning_buffer(cloud) is not None and np.shares_memory(scaled.pointmap.points, cloud)
    np.testing.assert_array_equal(scaled.rendered['depth'], result.rendered['depth'] * 2)
    assert result.rendered['cloud'].tobytes() == before.tobytes()  # the original is untouched
