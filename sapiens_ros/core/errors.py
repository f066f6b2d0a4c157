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
