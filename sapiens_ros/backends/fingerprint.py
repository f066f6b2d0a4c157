"""Content hashes that identify a model's weights (engine cache keys, ONNX metadata)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

_CHUNK = 1 << 24


def weights_hash(model: torch.nn.Module) -> str:
    """
    SHA-256 (hex, 16 chars) of every parameter and buffer, by name, dtype-independent layout.

    The hash covers names, shapes, dtypes and bytes, so the same checkpoint loaded in another
    dtype hashes differently (an engine built from bf16 weights is not the fp32 one).
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().contiguous().cpu()
        digest.update(f'{name}|{tuple(t.shape)}|{t.dtype}|'.encode())
        if t.numel():
            digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def file_hash(path: str | Path) -> str:
    """SHA-256 (hex, full) of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(_CHUNK), b''):
            digest.update(block)
    return digest.hexdigest()
