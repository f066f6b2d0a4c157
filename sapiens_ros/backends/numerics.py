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
Where a reduced-precision Sapiens2 must keep fp32 for its outputs to hold: checked, not assumed.

fp16 tops out at 65504, so ``x**2`` overflows for ``|x| > 256``. ViT backbones carry high-norm
tokens (register and CLS tokens, outlier channels) far above that, so an RMSNorm whose variance is
computed in fp16 turns those tokens' variance into ``inf`` and the tokens into zeros. transformers'
``Sapiens2RMSNorm`` (5.10.1 to 5.23 at least) casts to fp32 before the variance, so its fp16
graph keeps that island in fp32 (explicit Casts that a strongly typed TensorRT build obeys); a
plain ``nn.RMSNorm`` run in fp16 does not. :func:`fp16_unsafe_norms` finds the norms of a model
that overflow, by running each on a high-norm probe in fp16 against fp32.

Softmax need not be pinned: Sapiens2 normalises q and k (``use_qk_norm``), which bounds the
attention logits to ``head_dim ** 0.5 * |w_q| * |w_k|`` whatever the tokens' norms, and every
softmax kernel (torch, ONNX Runtime, TensorRT) subtracts the row maximum and accumulates in fp32
(test/test_fp16_numerics.py measures both on a tiny model with high-norm tokens).
"""

from __future__ import annotations

import copy

import torch

#: The probe's magnitude: well above the 256 at which ``x**2`` overflows fp16.
FP16_PROBE = 1024.0
#: A norm is unsafe in fp16 when its output is not finite or this far (relative) from fp32.
FP16_NORM_RTOL = 1e-2


def converted(model: torch.nn.Module, device: torch.device,
              dtype: torch.dtype) -> torch.nn.Module:
    """
    Return ``model`` on ``device`` in ``dtype``: itself if it is already, else a converted copy.

    The copy is made tensor by tensor in the target dtype and device, so the caller's model is
    never changed and no intermediate full-size copy is made. Floating-point parameters get
    ``dtype``; buffers keep theirs (unlike ``Module.to``): the model keeps in fp32 what it
    computes in fp32, such as the RoPE frequencies its tables are made from (rounding them to
    fp16 shifts every rotation angle by up to 5e-4 of itself).
    """
    first = next(model.parameters())
    if first.device == device and first.dtype == dtype and all(
            p.device == device and p.dtype == dtype for p in model.parameters()) and all(
            b.device == device for b in model.buffers()):
        return model
    memo: dict[int, object] = {}
    params = {id(p) for p in model.parameters()}
    for tensor in list(model.parameters()) + list(model.buffers()):
        target = dtype if tensor.is_floating_point() and id(tensor) in params else tensor.dtype
        moved = tensor.detach().to(device=device, dtype=target, copy=True)
        if isinstance(tensor, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=False)
        memo[id(tensor)] = moved
    return copy.deepcopy(model, memo).eval()


def is_rms_norm(module: torch.nn.Module) -> bool:
    """Tell whether ``module`` is an RMS norm (torch's, transformers' or a kernel's)."""
    return isinstance(module, torch.nn.RMSNorm) or 'RMSNorm' in type(module).__name__


def fp16_unsafe_norms(model: torch.nn.Module) -> list[str]:
    """Return the names of the RMS norms of ``model`` that overflow or drift when run in fp16."""
    unsafe = []
    for name, module in model.named_modules():
        weight = getattr(module, 'weight', None)
        if not is_rms_norm(module) or weight is None:
            continue
        dim = weight.shape[-1]
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(2, 3, dim, generator=gen)
        x[0, :, 0] = FP16_PROBE  # an outlier channel, as ViTs' high-norm tokens have
        with torch.no_grad():
            ref = converted(module, torch.device('cpu'), torch.float32)(x)
            got = converted(module, torch.device('cpu'), torch.float16)(x.half()).float()
        err = (got - ref).abs().max()
        if not torch.isfinite(got).all() or err > FP16_NORM_RTOL * ref.abs().max():
            unsafe.append(name)
    return unsafe
