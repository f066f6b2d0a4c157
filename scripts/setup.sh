#!/usr/bin/env bash
# Create ./.venv with everything sapiens_ros needs (idempotent).
#
# With a sourced ROS 2 (ROS_DISTRO set and rclpy importable) the venv sees the system packages
# and NO ros-* wheel is installed over them. Without one, the ROS 2 Jazzy core comes from pip.
# torch: an importable torch is kept (Jetson/NVIDIA wheels); otherwise torch==2.13.0 is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}

system_ros=0
if [ -n "${ROS_DISTRO:-}" ] && "$PY" -c 'import rclpy' 2>/dev/null; then
  system_ros=1
  echo "setup: found a sourced ROS 2 ${ROS_DISTRO}: using its rclpy, installing no ros-* wheels"
fi

if [ ! -x "$VENV/bin/python" ]; then
  if [ "$system_ros" = 1 ]; then
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
fi
pip() { "$VENV/bin/python" -m pip "$@"; }
export PIP_DISABLE_PIP_VERSION_CHECK=1

if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  pip install -q torch==2.13.0
fi
pip install -q -r requirements.txt -r requirements-dev.txt
if [ "$system_ros" = 0 ]; then
  pip install -q -r requirements-ros.txt
fi
pip install -q --no-deps -e .

# launch, launch_ros, the ros2 CLI, ament_copyright/xmllint and colcon: every ROS install has them,
# PyPI does not. A sourced ROS provides its own; otherwise the kit beside this repository does.
# SAPIENS_ROS_TOOLS points elsewhere when the kit is not beside this checkout.
tools=${SAPIENS_ROS_TOOLS:-../shared/ros-tools}/install.sh
if ! "$VENV/bin/python" -c 'import launch_ros, ros2cli, ament_copyright' 2>/dev/null; then
  if [ "$system_ros" = 1 ]; then
    echo "setup: your ROS lacks launch_ros/ros2cli/ament_copyright: apt install ros-$ROS_DISTRO-ros-base ros-$ROS_DISTRO-ament-copyright" >&2
  elif [ -f "$tools" ]; then
    bash "$tools" "$VENV" | grep -v "is ignored: it is neither" || true
    "$VENV/bin/python" -c 'import launch_ros, ros2cli, ament_copyright'
  else
    echo "setup: no launch/ros2 CLI/colcon here (no sourced ROS, no $tools): their tests will skip" >&2
  fi
fi
echo "setup: ready ($("$VENV/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'))"
