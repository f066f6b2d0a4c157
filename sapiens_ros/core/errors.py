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

"""Exceptions raised by the inference core, each naming the fix."""


class SapiensError(Exception):
    """Base class for every error raised by sapiens_ros."""


class UnknownTaskError(SapiensError, ValueError):
    """A task or model size that the registry does not know."""


class WeightsNotFoundError(SapiensError, OSError):
    """Model weights are neither local nor downloadable (e.g. ``HF_HUB_OFFLINE=1``)."""


class CorruptCheckpointError(SapiensError, OSError):
    """Checkpoint weights that exist but cannot be read (truncated or corrupt file)."""


class CheckpointMismatchError(SapiensError, ValueError):
    """A checkpoint whose model class does not serve the requested task."""


class InputSizeError(SapiensError, ValueError):
    """A model input size the head cannot take."""


class FrameError(SapiensError, ValueError):
    """A camera frame that cannot be processed (wrong shape, dtype or size)."""
