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

"""All heads end to end on real photos with tiny random checkpoints loaded for real."""

import numpy as np
import pytest
from sapiens_ros.backends.factory import load_pipeline
from sapiens_ros.core import PipelineConfig
from sapiens_ros.core.errors import FrameError, SapiensError
from sapiens_ros.core.processing.frames import FrameBatch
from sapiens_ros.core.processing.heads.pointmap import CANONICAL_FOCAL
from sapiens_ros.core.processing.heads.segmentation import seg_labels
import torch
import torch.nn.functional as F

INPUT = (256, 192)


@pytest.mark.parametrize('frame_name', ['astronaut', 'wide_frame'])
def test_all_heads_end_to_end(pipeline, frame_name, request):
    frame = request.getfixturevalue(frame_name)
    h, w = frame.shape[:2]
    result = pipeline(frame)[0]
    assert result.image_size == (h, w)
    pose = result.pose
    assert pose.keypoints.shape[1:] == (308, 2) and pose.scores.shape[1:] == (308,)
    assert pose.boxes.shape == (len(pose), 4) and pose.box_scores.shape == (len(pose),)
    assert result.seg.labels.shape == (h, w) and result.seg.labels.dtype == np.uint8
    assert result.seg.labels.max() < 29
    normals = result.normal.normals
    assert normals.shape == (h, w, 3) and normals.dtype == np.float32
    assert np.allclose(np.linalg.norm(normals, axis=-1), 1.0, atol=1e-4)
    pm = result.pointmap
    assert pm.xyz.shape == (h, w, 3) and pm.scale_source == 'predicted'
    assert len(pm.points) == len(pm.colors) == len(pm.labels) == len(pm.pixels)
    assert (pm.labels != 0).all()  # foreground only
    assert result.keypoints_xyz.shape == (len(pose), 308, 3)
    for stage in ('preprocess', 'seg.forward', 'pose.forward', 'pose.decode', 'to_host'):
        assert result.timings[stage] >= 0
    assert result.timings['total'] == pytest.approx(
        sum(v for k, v in result.timings.items() if k != 'total'))


def test_batch_equals_single_frames(pipeline, astronaut, wide_frame):
    both = pipeline([astronaut, wide_frame], boxes=[np.array([[100, 50, 400, 500]]), None])
    one = pipeline(wide_frame)[0]
    assert np.array_equal(both[1].seg.labels, one.seg.labels)
    assert np.allclose(both[1].normal.normals, one.normal.normals, atol=1e-3)
    assert np.allclose(both[1].pose.keypoints, one.pose.keypoints, atol=1e-3)
    assert np.allclose(both[0].pose.boxes, [[100, 50, 400, 500]])


def test_given_and_full_frame_boxes(model_dir, astronaut):
    pipe = load_pipeline('pose', model_dir=str(model_dir),
                         config=PipelineConfig(input_size=INPUT, box_source='full'))
    full = pipe(astronaut)[0].pose
    assert np.allclose(full.boxes, [[-0.5, -0.5, 511.5, 511.5]])
    given = pipe(astronaut, boxes=np.array([[10, 20, 200, 300], [300, 100, 500, 500]]))[0].pose
    assert given.keypoints.shape == (2, 308, 2)
    # keypoints land inside the 1.25x context window of their box
    for box, kps in zip(given.boxes, given.keypoints, strict=True):
        cx, cy = (box[:2] + box[2:]) / 2
        half = np.maximum(box[2:] - box[:2], 1) * 1.25 * np.array([1, 4 / 3])
        assert (np.abs(kps - [cx, cy]) <= half.max()).all()
    none = pipe(astronaut, boxes=np.zeros((0, 4)))[0].pose
    assert none.keypoints.shape == (0, 308, 2)
    with pytest.raises(FrameError, match='invalid boxes'):
        pipe(astronaut, boxes=np.array([[10, 10, 5, 50]]))
    # pose with box_source=seg loads the seg head for its person boxes
    seg_boxes = load_pipeline('pose', model_dir=str(model_dir),
                              config=PipelineConfig(input_size=INPUT))
    assert seg_boxes.tasks == ('seg', 'pose')


def test_flip_test_is_mirror_equivariant(model_dir, astronaut):
    """With the flip test, a mirrored frame gives exactly the mirrored, side-swapped keypoints."""
    from sapiens_ros.core.models.metadata import keypoint_info

    pipe = load_pipeline('pose', model_dir=str(model_dir), config=PipelineConfig(
        input_size=INPUT, box_source='full', flip_test=True))
    mirrored = np.ascontiguousarray(astronaut[:, ::-1])
    a = pipe(astronaut)[0].pose
    b = pipe(mirrored)[0].pose
    perm = keypoint_info().flip_permutation
    expect = a.keypoints[:, perm].copy()
    expect[..., 0] = astronaut.shape[1] - 1 - expect[..., 0]
    assert np.allclose(b.scores, a.scores[:, perm], atol=1e-4)
    err = np.abs(b.keypoints - expect).max(-1)
    # The scores (heatmap maxima) match exactly. Random weights give flat maps whose maxima are
    # often tied at several places, where float noise of the mirrored crop picks another one,
    # and whose DARK step (up to 3 heatmap px) amplifies that noise; so the positions must match
    # within 0.05 heatmap px (0.7 image px here) for most keypoints, not all.
    assert np.median(err) < 0.7 and (err < 0.7).mean() > 0.5
    plain = load_pipeline('pose', model_dir=str(model_dir), config=PipelineConfig(
        input_size=INPUT, box_source='full'))(astronaut)[0].pose
    assert not np.allclose(plain.scores, a.scores)  # the flip test changes the result


def _reference_labels(logits, lb):
    """Argmax of float32 logits resampled to full resolution (the definition of right)."""
    (top, left), (rh, rw) = lb.pad, lb.resized_size
    full = F.interpolate(logits[None, :, top:top + rh, left:left + rw].float(),
                         size=lb.image_size, mode='bilinear', align_corners=False)[0]
    return full.argmax(0).to(torch.uint8)


def test_seg_agrees_with_full_resolution_argmax(pipeline, wide_frame):
    batch = FrameBatch([wide_frame], INPUT, torch.device('cpu'))
    logits = pipeline.runners['seg'](batch.pixel_values)['logits'][0].float()
    lb = batch.frames[0].letterbox
    got = seg_labels(logits, lb, dtype=torch.float32)
    assert (got == _reference_labels(logits, lb)).float().mean().item() >= 0.995


def test_argmax_first_seg_labels_match_the_reference_on_the_photo(pipeline, monkeypatch):
    """
    Argmax first (CPU) against the reference's upsample-then-argmax, on the real photo.

    The photo is upscaled by the letterbox's inverse (512x512 frame, 192x192 of logits), so
    every frame pixel is a blend; the two may differ only where float rounding decides a near
    tie, which this bounds (none were seen). Two sets of logits: the tiny random model's
    (speckle, on which the path is forced: nearly every pixel is a class border) and smooth
    ones made from the photo's own regions (a trained head's kind, which takes the path).
    """
    import cv2

    from sapiens_ros.core.media.sample_image import sample_image_path
    from sapiens_ros.core.processing.heads import segmentation as S

    frame = cv2.imread(str(sample_image_path()))[..., ::-1].copy()
    batch = FrameBatch([frame], INPUT, torch.device('cpu'))
    lb = batch.frames[0].letterbox
    assert lb.resized_size[0] < lb.image_size[0]  # an upsampling: the argmax-first path
    model = pipeline.runners['seg'](batch.pixel_values)['logits'][0].float()
    # Smooth logits from the photo: classes of blurred intensity, a soft one-hot plus noise.
    grey = batch.pixel_values[0].mean(0)
    bins = (F.avg_pool2d(grey[None, None], 9, 1, 4)[0, 0] + 14).round().clamp(0, 28)
    gen = torch.Generator().manual_seed(0)
    smooth = 6.0 * F.avg_pool2d(F.one_hot(bins.long(), 29).permute(2, 0, 1).float()[None],
                                5, 1, 2)[0] + 0.05 * torch.randn(29, *bins.shape, generator=gen)
    for name, logits, forced in (('model', model, True), ('smooth', smooth, False)):
        with monkeypatch.context() as patch:
            if forced:
                patch.setattr(S, 'MIN_UNIFORM', 0.0)
            fast = S.argmax_first_labels(logits, lb)
            assert fast is not None, name
            assert torch.equal(S.seg_labels(logits, lb), fast), name
        reference = _reference_labels(logits, lb)
        borders = (reference != F.max_pool2d(reference[None, None].float(), 3, 1, 1)[0, 0]).sum()
        assert borders > 1000, name  # many class borders to resample: the test means something
        disagree = (fast != reference).sum().item()
        assert disagree <= 1e-5 * reference.numel(), (name, disagree)


def test_seg_reduced_precision_upsampling_agrees():
    """The float16 path (used on CUDA) on logits shaped like a trained head's output."""
    from sapiens_ros.core.processing.letterbox import Letterbox

    gen = torch.Generator().manual_seed(0)
    lb = Letterbox.fit((480, 640), (256, 192))
    blobs = torch.randint(0, 29, (1, 1, 16, 12), generator=gen).float()
    labels = F.interpolate(blobs, size=(256, 192), mode='nearest')[0, 0].long()
    onehot = F.one_hot(labels, 29).permute(2, 0, 1).float()
    noise = torch.randn(29, 256, 192, generator=gen)
    logits = 8.0 * F.avg_pool2d(onehot[None], 5, 1, 2)[0] + noise
    got = seg_labels(logits, lb, dtype=torch.float16)
    agreement = (got == _reference_labels(logits, lb)).float().mean().item()
    assert agreement >= 0.995, agreement


def test_pointmap_scale_and_calibrated_mode(model_dir, wide_frame):
    cfg = PipelineConfig(input_size=INPUT)
    pipe = load_pipeline('pointmap', model_dir=str(model_dir), config=cfg)
    batch = FrameBatch([wide_frame], INPUT, torch.device('cpu'))
    predicted = pipe.runners['pointmap'](batch.pixel_values)['scales'][0, 0].item()
    auto = pipe(wide_frame)[0].pointmap
    assert auto.scale == pytest.approx(predicted, rel=1e-5)
    assert auto.scale_source == 'predicted' and auto.labels is None  # no seg: all points kept
    assert len(auto.points) == wide_frame.shape[0] * wide_frame.shape[1]
    fx = 600.0
    cal = pipe(wide_frame, fx=fx)[0].pointmap
    ratio = batch.frames[0].letterbox.ratio
    assert cal.scale_source == 'calibrated'
    assert cal.scale == pytest.approx(CANONICAL_FOCAL / (fx * ratio))
    assert np.allclose(cal.xyz * cal.scale, auto.xyz * auto.scale, rtol=1e-5, atol=1e-6)
    # the calibrated scale does not depend on the frame content (no jitter)
    other = pipe(wide_frame[::-1].copy(), fx=fx)[0].pointmap
    assert other.scale == cal.scale
    strided = pipe(wide_frame, fx=fx)
    pipe.config.pointmap_stride = 4
    strided = pipe(wide_frame, fx=fx)[0].pointmap
    assert strided.xyz.shape == (72, 128, 3) and strided.stride == 4
    assert np.allclose(strided.xyz, cal.xyz[::4, ::4], atol=1e-5)
    for bad in (0.0, -3.0, float('nan')):
        with pytest.raises(SapiensError, match='positive focal length'):
            pipe(wide_frame, fx=bad)


def test_keypoints_3d_sample_the_pointmap(pipeline, astronaut):
    result = pipeline(astronaut, boxes=np.array([[150, 50, 400, 500]]))[0]
    kps, xyz3 = result.pose.keypoints[0], result.keypoints_xyz[0]
    labels = result.seg.labels
    px = np.round(kps).astype(int)
    inside = ((px >= 0) & (px < 512)).all(-1)
    on_body = inside.copy()
    on_body[inside] = labels[px[inside, 1], px[inside, 0]] != 0
    assert np.isnan(xyz3[~on_body]).all()
    assert np.isfinite(xyz3[on_body]).all()
    if on_body.any():  # bilinear sample at integer-ish pixels is close to the map value
        i = np.nonzero(on_body)[0][0]
        near = result.pointmap.xyz[px[i, 1], px[i, 0]]
        assert np.linalg.norm(xyz3[i] - near) < np.abs(result.pointmap.xyz).max()


def test_bad_inputs_and_config(pipeline):
    with pytest.raises(FrameError):
        pipeline(np.zeros((10, 0, 3), np.uint8))
    with pytest.raises(SapiensError, match='entries for 2 frames'):
        pipeline([np.zeros((8, 8, 3), np.uint8)] * 2, fx=[1.0])
    with pytest.raises(SapiensError, match='box_source'):
        PipelineConfig(box_source='yolo').validate()
    with pytest.raises(SapiensError, match='pointmap_stride'):
        PipelineConfig(pointmap_stride=0).validate()


def test_task_subset_per_call(pipeline, astronaut):
    result = pipeline(astronaut, tasks=['normal'])[0]
    assert result.normal is not None and result.seg is None and result.pose is None


def test_channel_argmax_matches_argmax_with_ties():
    from sapiens_ros.core.processing.heads.segmentation import channel_argmax

    scores = torch.randn(29, 40, 30)
    scores[5, :4] = scores[7, :4] = 100.0  # ties: the lowest index wins, as in argmax
    assert torch.equal(channel_argmax(scores).long(), scores.argmax(0))
    assert channel_argmax(scores).dtype == torch.uint8


def test_host_work_left_to_the_caller_gives_the_same_bytes(model_dir, astronaut):
    """
    ``host_work_later`` on a CPU: the pipeline renders and encodes nothing; the caller's thread.

    ``render_result`` (what ``build_messages`` calls for what the pipeline did not render) then
    makes the same overlays, depth, cloud and encoded images, byte for byte. On a GPU the
    rendering stays on the device and only host encodes are left (``to_encode``).
    """
    from sapiens_ros.core.processing import render as R

    request = R.RenderRequest(
        frozenset({'seg_overlay', 'normal_overlay', 'depth', 'cloud'}),
        frozenset({('seg_overlay', 'jpeg'), ('seg_labels', 'png'), ('normal_overlay', 'jpeg')}))
    tasks = 'seg,normal,pointmap'
    now = load_pipeline(tasks, model_dir=str(model_dir),
                        config=PipelineConfig(input_size=INPUT, box_source='full'))
    later = load_pipeline(tasks, model_dir=str(model_dir), config=PipelineConfig(
        input_size=INPUT, box_source='full', host_work_later=True))
    want = now(astronaut, render=request)[0]
    got = later(astronaut, render=request)[0]
    assert not got.rendered and not got.to_encode  # the inference thread only inferred
    want.finish_encoding()
    made = R.render_result(got, astronaut, request)
    assert set(made) == set(want.rendered)
    for key, data in want.rendered.items():
        assert np.array_equal(made[key], data, equal_nan=key == 'depth'), key
