"""Build script for the sapiens_ros ament_python package (also pip-installable)."""

from glob import glob
import os

from setuptools import find_packages, setup

PACKAGE = 'sapiens_ros'


def _share(folder: str, pattern: str = '*') -> tuple[str, list[str]]:
    """Install every file matching ``folder/pattern`` under ``share/sapiens_ros/folder``."""
    files = [f for f in glob(os.path.join(folder, pattern)) if os.path.isfile(f)]
    return os.path.join('share', PACKAGE, folder), files


setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*', 'benchmarks']),
    package_data={PACKAGE: ['data/*.json']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        ('share/' + PACKAGE, ['package.xml']),
        _share('launch', '*.launch.py'),
        _share('config'),
    ],
    python_requires='>=3.10',
    install_requires=[
        'setuptools',
        'numpy',
        'opencv-python-headless',
        'pillow',
        'torch',
        'transformers>=5.10.1',  # the first with Sapiens2 (5.10.0 is yanked)
        'safetensors',
        'xxhash>=3.4.1',  # the cache's content hash; without it SHA-256, about 4x slower
        'huggingface_hub',
        'rosbags',
        'scipy',
    ],
    extras_require={
        'onnx': ['onnx', 'onnxruntime', 'onnxscript'],
        'gpu': ['onnx', 'onnxruntime-gpu', 'onnxscript'],
        'tensorrt': ['tensorrt'],
        'fleet': ['ray>=2.9'],  # sapiens-ros replay --workers N (many bags on Ray)
        'test': ['pytest', 'pyyaml', 'onnx', 'onnxruntime', 'onnxscript', 'mcap',
                 'mcap-ros2-support'],
    },
    zip_safe=True,
    maintainer='sapiens_ros maintainers',
    maintainer_email='maintainers@sapiens-ros.dev',
    description='Real-time Sapiens2 human perception (pose, segmentation, normals, pointmap) '
                'for ROS 2.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'sapiens-ros = sapiens_ros.cli:main',
            'perception_node = sapiens_ros.ros.perception_node:main',
            'sample_camera = sapiens_ros.ros.sample_camera:main',
            'monitor = sapiens_ros.ros.monitor:main',
        ],
    },
)
