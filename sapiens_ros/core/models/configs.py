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
Sapiens2 configs built in code: the real layouts (for random-weight benchmarks) and tiny ones.

The tiny configs keep each head's real structure (transposed-conv pose/seg decoders, pixel-shuffle
normal/pointmap decoders, the pointmap scale MLP) with small widths, so tests and
``--random-weights`` smoke runs exercise the same code paths as the released checkpoints.
Layouts follow facebookresearch/sapiens2 (see docs/models.md).
"""

from __future__ import annotations

from pathlib import Path

from .metadata import keypoint_info, seg_class_info
from .registry import check_size, model_class, task_spec

#: Backbone per size: hidden, layers, heads, intermediate, kv heads of the middle layers.
BACKBONES = {
    '0.1b': (768, 12, 12, 3072, 6),
    '0.4b': (1024, 24, 16, 4096, 8),
    '0.8b': (1280, 32, 16, 5120, 8),
    '1b': (1536, 40, 24, 6144, 12),
    '5b': (2432, 56, 32, 9728, 16),
}

#: Output channels of each task.
NUM_LABELS = {'pose': 308, 'seg': 29, 'normal': 3, 'pointmap': 3, 'matting': 4}

_TRANSPOSED = {'pose', 'seg'}


def _head(task: str, size: str, tiny: bool) -> dict:
    if tiny:
        heads = {
            'pose': {'upsample_out_channels': [32, 24], 'conv_out_channels': [16, 16, 8]},
            'seg': {'upsample_out_channels': [16, 16, 8, 8], 'conv_out_channels': [8, 8]},
            'normal': {'upsample_out_channels': [16, 16, 8, 8], 'conv_out_channels': [8, 8, 8]},
            'pointmap': {'upsample_out_channels': [16, 16, 8, 8],
                         'conv_out_channels': [8, 8, 8],
                         'scale_conv_out_channels': [16, 8, 4],
                         'scale_final_hidden_sizes': [16, 8]},
            'matting': {'upsample_out_channels': [16, 16, 8, 8], 'conv_out_channels': [8, 8, 8]},
        }
    else:
        hidden = BACKBONES[size][0]
        pose = ([1536, 1024], [768, 512, 256]) if size == '1b' else ([1024, 768], [512, 512, 256])
        normal_up = [1536, 768, 512, 256] if size == '5b' else [768, 512, 256, 128]
        normal_conv = [128, 64, 32] if size == '5b' else [64, 32, 16]
        heads = {
            'pose': {'upsample_out_channels': pose[0], 'conv_out_channels': pose[1]},
            'seg': {'upsample_out_channels': [512, 256, 128, 64], 'conv_out_channels': [64, 64]},
            'normal': {'upsample_out_channels': normal_up, 'conv_out_channels': normal_conv},
            'pointmap': {'upsample_out_channels': [1536, 768, 512, 256],
                         'conv_out_channels': [64, 32, 16],
                         'scale_conv_out_channels': [hidden, 512, 128],
                         'scale_final_hidden_sizes': [512, 128]},
            'matting': {'upsample_out_channels': [768, 512, 256, 128],
                        'conv_out_channels': [64, 32, 16]},
        }
    head = dict(heads[task])
    if task in _TRANSPOSED:
        head.update(use_pixel_shuffle=False, upsample_kernel_size=4, conv_kernel_size=1)
    else:
        head.update(use_pixel_shuffle=True, upsample_kernel_size=3, conv_kernel_size=3)
    return head


def sapiens2_config(task: str, size: str = '0.4b', *, tiny: bool = False,
                    input_size: tuple[int, int] = (1024, 768)):
    """Build a ``Sapiens2Config`` for ``task``: the real layout of ``size``, or a tiny one."""
    from transformers import Sapiens2Config, Sapiens2HeadConfig

    spec = task_spec(task)
    if tiny:
        backbone = {'hidden_size': 32, 'num_hidden_layers': 2, 'num_attention_heads': 2,
                    'intermediate_size': 64, 'num_key_value_attention_heads': 1,
                    'num_first_full_attention_layers': 1, 'num_last_full_attention_layers': 0}
    else:
        size = check_size(task, size)
        hidden, layers, heads, inter, kv = BACKBONES[size]
        backbone = {'hidden_size': hidden, 'num_hidden_layers': layers,
                    'num_attention_heads': heads, 'intermediate_size': inter,
                    'num_key_value_attention_heads': kv,
                    'num_first_full_attention_layers': 8, 'num_last_full_attention_layers': 8}
    kwargs = {**backbone, 'image_size': list(input_size), 'patch_size': 16,
              'num_register_tokens': 8, 'architectures': [spec.model_class]}
    if task in NUM_LABELS:
        kwargs['head_config'] = Sapiens2HeadConfig(**_head(task, size, tiny))
        kwargs['num_labels'] = NUM_LABELS[task]
    if task == 'pose':
        kwargs['flip_pairs'] = keypoint_info().flip_pairs.tolist()
    if task == 'seg':
        kwargs['id2label'] = dict(enumerate(seg_class_info().names))
    return Sapiens2Config(**kwargs)


def random_model(task: str, size: str = '0.4b', *, tiny: bool = True, seed: int = 0,
                 input_size: tuple[int, int] = (1024, 768)):
    """Build a randomly initialised Sapiens2 model (eval mode) for ``task``."""
    import torch

    torch.manual_seed(seed)
    config = sapiens2_config(task, size, tiny=tiny, input_size=input_size)
    return model_class(task)(config).eval()


def save_random_checkpoints(root: str | Path, tasks: tuple[str, ...] | list[str], *,
                            tiny: bool = True, size: str = '0.4b', seed: int = 0,
                            input_size: tuple[int, int] = (1024, 768)) -> Path:
    """Write one random ``save_pretrained`` checkpoint per task into ``root/<task>/``."""
    root = Path(root)
    for i, task in enumerate(tasks):
        model = random_model(task, size, tiny=tiny, seed=seed + i, input_size=input_size)
        model.save_pretrained(root / task)
    return root
