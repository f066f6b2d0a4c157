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

"""Keypoint and class metadata shipped as package data (facts from the Sapiens repos)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
import json

import numpy as np


@dataclass(frozen=True)
class KeypointInfo:
    """Names, flip pairs and skeleton of the 308-keypoint Sapiens2 format."""

    format: str  # noqa: A003
    names: tuple[str, ...]
    flip_pairs: np.ndarray  # (P, 2) int64
    skeleton: np.ndarray  # (L, 2) int64 keypoint indices
    coco17: np.ndarray  # (17,) int64 indices into the 308 keypoints

    @property
    def flip_permutation(self) -> np.ndarray:
        """Index array ``perm`` so that ``flipped[:, perm]`` swaps left and right keypoints."""
        perm = np.arange(len(self.names))
        perm[self.flip_pairs[:, 0]] = self.flip_pairs[:, 1]
        perm[self.flip_pairs[:, 1]] = self.flip_pairs[:, 0]
        return perm

    def to_json(self) -> str:
        """JSON document published for consumers (names, links, flip pairs, format)."""
        return json.dumps({
            'format': self.format,
            'names': list(self.names),
            'skeleton': self.skeleton.tolist(),
            'flip_pairs': self.flip_pairs.tolist(),
            'coco17_to_308': self.coco17.tolist(),
        })


@dataclass(frozen=True)
class SegClassInfo:
    """Names and fixed palette of the 29 Sapiens2 body-part classes."""

    format: str  # noqa: A003
    names: tuple[str, ...]
    palette: np.ndarray  # (C, 3) uint8 RGB

    def to_json(self) -> str:
        """JSON document published for consumers (names and RGB colours)."""
        return json.dumps({'format': self.format, 'names': list(self.names),
                           'colors_rgb': self.palette.tolist()})


def _load(name: str) -> dict:
    return json.loads(resources.files('sapiens_ros').joinpath('data', name).read_text())


@cache
def keypoint_info() -> KeypointInfo:
    """Load the 308-keypoint metadata (``data/keypoints308.json``)."""
    raw = _load('keypoints308.json')
    names = tuple(raw['names'])
    index = {n: i for i, n in enumerate(names)}
    return KeypointInfo(
        format=raw['format'],
        names=names,
        flip_pairs=np.asarray(raw['flip_pairs'], dtype=np.int64).reshape(-1, 2),
        skeleton=np.asarray([[index[a], index[b]] for a, b in raw['skeleton']],
                            dtype=np.int64).reshape(-1, 2),
        coco17=np.asarray(raw['coco17_to_308'], dtype=np.int64),
    )


def _palette(n: int) -> np.ndarray:
    """Build a fixed, well separated palette; class 0 (background) is black."""
    golden = 0.618033988749895
    hsv = np.zeros((n, 1, 3), np.uint8)
    hue = (np.arange(n) * golden) % 1.0
    hsv[:, 0, 0] = (hue * 180).astype(np.uint8)
    hsv[:, 0, 1] = 200
    hsv[:, 0, 2] = np.where(np.arange(n) % 2, 255, 190)
    import cv2

    rgb = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[:, 0]
    rgb[0] = 0
    return rgb


@cache
def seg_class_info() -> SegClassInfo:
    """Load the 29 body-part classes (``data/seg29_classes.json``) and their palette."""
    raw = _load('seg29_classes.json')
    names = tuple(raw['classes'])
    return SegClassInfo(format=raw['format'], names=names, palette=_palette(len(names)))
