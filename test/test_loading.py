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

"""Model loading through the real save_pretrained/from_pretrained path, and every error."""

import os
import subprocess
import sys

import pytest
from sapiens_ros.core.errors import (CheckpointMismatchError, InputSizeError, UnknownTaskError,
                                     WeightsNotFoundError)
from sapiens_ros.core.models import loading
from sapiens_ros.core.models.configs import sapiens2_config
from sapiens_ros.core.models.geometry import scale_head_sizes
from sapiens_ros.core.models.input_size import check_input_size, parse_size, Size
from sapiens_ros.core.models.registry import hub_id, parse_tasks, TASKS
import torch


def test_registry_hub_ids_and_classes():
    assert hub_id('pose', '0.4b') == 'facebook/sapiens2-pose-0.4b'
    assert hub_id('seg', '5B') == 'facebook/sapiens2-seg-5b'
    assert hub_id('backbone', '0.1b') == 'facebook/sapiens2-pretrain-0.1b'
    assert {'pose', 'seg', 'normal', 'pointmap', 'matting', 'backbone'} <= set(TASKS)
    assert parse_tasks('pose, seg,pose') == ('pose', 'seg')


@pytest.mark.parametrize('call, match', [
    (lambda: hub_id('depth'), 'unknown task'),
    (lambda: hub_id('pose', '2b'), 'valid sizes are'),
    (lambda: hub_id('pose', '0.1b'), 'valid sizes are'),
    (lambda: parse_tasks(''), 'no task'),
    (lambda: loading.parse_dtype('int8'), 'fp32, bf16 or fp16'),
    (lambda: loading.parse_device('tpu'), 'device'),
])
def test_unknown_names_list_the_valid_ones(call, match):
    with pytest.raises(UnknownTaskError, match=match):
        call()


@pytest.mark.skipif(torch.cuda.is_available(), reason='checks the no-CUDA message')
def test_cuda_device_without_cuda_names_the_fix():
    with pytest.raises(UnknownTaskError, match='CUDA is not available'):
        loading.parse_device('cuda:0')


def test_round_trip_through_save_pretrained(model_dir):
    from sapiens_ros.core.models.configs import random_model

    model = loading.load_model('normal', str(model_dir / 'normal'), dtype='fp32')
    fresh = random_model('normal', seed=2, input_size=(256, 192))  # seed of 'normal' in fixture
    x = torch.randn(1, 3, 256, 192)
    with torch.inference_mode():
        assert torch.allclose(model(x).normals, fresh(x).normals, atol=1e-5)
    bf16 = loading.load_model('normal', str(model_dir / 'normal'), dtype='bf16')
    assert next(bf16.parameters()).dtype == torch.bfloat16


def test_resolve_sources_convention(tmp_path):
    got = loading.resolve_sources(('pose', 'seg', 'normal'), size='1b', model_dir=None,
                                  overrides={'seg': '/x/seg'})
    assert got == {'pose': 'facebook/sapiens2-pose-1b', 'seg': '/x/seg',
                   'normal': 'facebook/sapiens2-normal-1b'}
    got = loading.resolve_sources(('pose',), model_dir=str(tmp_path))
    assert got == {'pose': str(tmp_path / 'pose')}


def test_missing_local_dir_and_missing_config(tmp_path):
    with pytest.raises(WeightsNotFoundError, match='does not exist'):
        loading.load_model('pose', str(tmp_path / 'nope'))
    (tmp_path / 'empty').mkdir()
    with pytest.raises(WeightsNotFoundError, match='no config.json'):
        loading.load_model('pose', str(tmp_path / 'empty'))


def test_config_without_weights(tmp_path, model_dir):
    target = tmp_path / 'pose'
    target.mkdir()
    (target / 'config.json').write_text((model_dir / 'pose' / 'config.json').read_text())
    with pytest.raises(WeightsNotFoundError, match='no loadable weights'):
        loading.load_model('pose', str(target))


def test_checkpoint_of_another_task_is_refused(model_dir):
    with pytest.raises(CheckpointMismatchError, match="task 'seg'.*configured for task 'pose'"):
        loading.load_model('pose', str(model_dir / 'seg'))


def test_offline_uncached_hub_id_names_the_fix(tmp_path):
    """A real offline lookup in an empty HF cache (subprocess: the env is read at import)."""
    code = ('from sapiens_ros.core.models.loading import load_model\n'
            'try:\n    load_model("pose", size="0.4b")\n'
            'except Exception as e:\n    print(type(e).__name__, e)\n')
    env = dict(os.environ, HF_HUB_OFFLINE='1', HF_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True,
                         timeout=120).stdout
    assert out.startswith('WeightsNotFoundError')
    assert 'facebook/sapiens2-pose-0.4b' in out and 'HF_HUB_OFFLINE' in out
    assert '--random-weights' in out and '--model-dir' in out


def test_input_size_checks():
    pose = sapiens2_config('pose', tiny=True)
    assert check_input_size('pose', pose, (512, 384)) == (512, 384)
    with pytest.raises(InputSizeError, match='multiple of the patch size'):
        check_input_size('pose', pose, (500, 384))
    real_pointmap = sapiens2_config('pointmap', '0.4b')
    assert check_input_size('pointmap', real_pointmap, (1024, 768))
    with pytest.raises(InputSizeError,
                       match='scale head cannot take 384x512 .WIDTHxHEIGHT.*656x912'):
        check_input_size('pointmap', real_pointmap, (512, 384))
    heights, widths = scale_head_sizes(real_pointmap)
    assert (heights[0], heights[-1]) == (912, 1024)  # the 'about 912-1024 x 656-768'
    assert (widths[0], widths[-1]) == (656, 768)


def test_size_is_an_hw_tuple_written_width_x_height():
    size = parse_size('768x1024')
    assert size == (1024, 768) and (size.height, size.width) == (1024, 768)
    assert str(size) == f'{size}' == '768x1024'
    assert Size.parse(str(size)) == size
    assert Size.parse('1024x768') == Size(height=768, width=1024)  # files may hold landscape
    assert Size.of([1024, 768]) == Size.of('768x1024') == size
    with pytest.raises(InputSizeError, match='ambiguous'):
        parse_size('1024x768')  # a person's landscape value: both readings are shown
