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

"""Errors of the accelerated backends, each naming the fix."""

from ..core.errors import InputSizeError, SapiensError


class BackendUnavailableError(SapiensError, RuntimeError):
    """A backend whose library (or CUDA) is not available on this machine."""


class ExportError(SapiensError, RuntimeError):
    """The ONNX export failed."""


class ParityError(ExportError):
    """The exported graph disagrees with PyTorch beyond the tolerance."""


class EngineError(SapiensError, RuntimeError):
    """A TensorRT engine that cannot be built, loaded or used."""


class EngineNotBuiltError(EngineError):
    """No usable cached engine and building was not allowed; the message gives the command."""


def check_static_size(input_size: tuple[int, int], built: tuple[int, int], artifact: str,
                      export_command: str) -> tuple[int, int]:
    """
    Return ``input_size`` as a ``Size`` if it equals the ``built`` size of an exported artifact.

    Otherwise raise :class:`InputSizeError` naming both sizes and the command that rebuilds it.
    """
    from ..core.models.input_size import Size

    size = Size.of(input_size)
    if size != tuple(built):
        have, want = Size.of(built), size
        raise InputSizeError(
            f'{artifact} was built for input {have} (WIDTHxHEIGHT), not {want}: set input_size '
            f'to {have}, or rebuild with `{export_command} --input-size {want}`')
    return size
