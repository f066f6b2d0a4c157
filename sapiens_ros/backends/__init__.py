"""
Accelerated backends: ONNX export, ONNX Runtime and TensorRT runners, engine cache.

Every backend implements :class:`sapiens_ros.core.runners.Runner`, so the pipeline's pre- and
post-processing never depend on it. Optional dependencies (onnx, onnxruntime, tensorrt) are
imported lazily, with errors that name the package to install.
"""

BACKENDS = ('torch', 'onnxruntime', 'tensorrt')
