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
Where fp16 needs fp32 inside Sapiens2, measured on the CPU in fp16 (torch runs fp16 ops there).

A tiny random Sapiens2 gets high-norm tokens (an outlier channel of 3000 in every token, as
ViTs' register and CLS tokens carry): fp16 with transformers' RMSNorm (variance in fp32) stays
within the export's fp16 tolerance of fp32, a plain fp16 RMSNorm overflows, and softmax in fp16
holds (q/k norms bound its logits). No mock: real models, real fp16 arithmetic.
"""

import pytest
from sapiens_ros.backends.errors import ExportError
from sapiens_ros.backends.export import export_onnx, TOLERANCES
from sapiens_ros.backends.numerics import converted
from sapiens_ros.backends.numerics import fp16_unsafe_norms
from sapiens_ros.core.models.configs import random_model
import torch
import transformers.models.sapiens2.modeling_sapiens2 as sapiens2

SIZE = (128, 96)
ATOL, RTOL = TOLERANCES[torch.float16]


def plain_rms_norm(self, hidden_states):
    """Compute an RMSNorm in its input's dtype (as ``nn.RMSNorm`` in fp16): x**2 in fp16."""
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden_states * torch.rsqrt(variance + self.variance_epsilon))


@pytest.fixture(scope='module')
def high_norm_model():
    model = random_model('pose', input_size=SIZE)
    with torch.no_grad():
        model.model.embeddings.patch_embeddings.bias[0] += 3000.0
        model.model.embeddings.register_tokens[..., 0] += 3000.0
        model.model.embeddings.cls_token[..., 0] += 3000.0
    return model


def fp16_error(model, x, ref) -> float:
    half = converted(model, torch.device('cpu'), torch.float16)
    with torch.no_grad():
        got = half(pixel_values=x.half()).heatmaps.float()
    assert torch.isfinite(got).all()
    return ((got - ref).abs().max() / ref.abs().max()).item()


def reference(model, x):
    with torch.no_grad():
        return model(pixel_values=x).heatmaps


def test_converted_keeps_fp32_buffers(high_norm_model):
    """The RoPE frequencies stay fp32 in an fp16/bf16 copy; parameters take the dtype."""
    for dtype in (torch.float16, torch.bfloat16):
        copy = converted(high_norm_model, torch.device('cpu'), dtype)
        assert dict(copy.named_buffers())['model.rope_embeddings.inv_freq'].dtype == \
            torch.float32
        assert all(p.dtype == dtype for p in copy.parameters())
    assert all(p.dtype == torch.float32 for p in high_norm_model.parameters())  # untouched


def test_rms_norm_must_compute_in_fp32(high_norm_model, monkeypatch):
    """The RMSNorm of transformers holds fp16 on high-norm tokens; a plain fp16 one overflows."""
    x = torch.randn(1, 3, *SIZE, generator=torch.Generator().manual_seed(1))
    ref = reference(high_norm_model, x)
    assert fp16_error(high_norm_model, x, ref) <= RTOL
    assert fp16_unsafe_norms(high_norm_model) == []
    monkeypatch.setattr(sapiens2.Sapiens2RMSNorm, 'forward', plain_rms_norm)
    assert reference(high_norm_model, x).sub(ref).abs().max() < 1e-3  # same in fp32
    assert fp16_error(high_norm_model, x, ref) > 0.5  # every token's variance overflowed
    unsafe = fp16_unsafe_norms(high_norm_model)
    assert 'model.model.layer.0.norm1' in unsafe and len(unsafe) >= 4


def test_fp16_export_refuses_norms_that_overflow(high_norm_model, monkeypatch, tmp_path):
    monkeypatch.setattr(sapiens2.Sapiens2RMSNorm, 'forward', plain_rms_norm)
    with pytest.raises(ExportError, match='variance in fp16'):
        export_onnx(high_norm_model, 'pose', tmp_path / 'pose.onnx', input_size=SIZE,
                    dtype='fp16')
    assert not (tmp_path / 'pose.onnx').exists()


def test_softmax_may_run_in_fp16(high_norm_model, monkeypatch):
    """Eager attention with its softmax in fp16: still within fp16 tolerance (q/k norms)."""
    x = torch.randn(1, 3, *SIZE, generator=torch.Generator().manual_seed(2))
    ref = reference(high_norm_model, x)
    seen = []
    softmax = torch.nn.functional.softmax

    def fp16_softmax(t, dim=None, dtype=None, **kwargs):
        seen.append(t.dtype)
        return softmax(t, dim=dim)  # in its input dtype, ignoring the fp32 upcast

    monkeypatch.setattr(sapiens2.nn.functional, 'softmax', fp16_softmax)
    monkeypatch.setattr(high_norm_model.config, '_attn_implementation', 'eager')
    assert fp16_error(high_norm_model, x, ref) <= RTOL
    assert seen and set(seen) == {torch.float16}
