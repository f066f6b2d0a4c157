"""Errors of the accelerated backends, each naming the fix."""

from ..core.errors import SapiensError


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
