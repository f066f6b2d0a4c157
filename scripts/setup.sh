#!/usr/bin/env bash
# Create ./.venv with everything sapiens_ros needs (idempotent).
#
# With a sourced ROS 2 (ROS_DISTRO set and rclpy importable) the venv sees the system packages
# and NO ros-* wheel is installed over them. Without one, the ROS 2 Jazzy core comes from pip, and
# the message packages without wheels (tf2_msgs, vision_msgs, hri_msgs, message_filters) are built
# by ../shared/ros-tools/install-msgs.sh, then tf2 (tf2_ros, tf2_geometry_msgs) by install-tf2.sh
# (SAPIENS_ROS_TOOLS=DIR points elsewhere).
# torch: an importable torch is kept (Jetson/NVIDIA wheels); otherwise torch==2.13.0 is installed.
# On a Jetson (L4T) the venv always sees the system Python, where NVIDIA's torch wheel and JetPack's
# TensorRT live, and setup never installs a torch from PyPI there (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}

system_ros=0
if [ -n "${ROS_DISTRO:-}" ] && "$PY" -c 'import rclpy' 2>/dev/null; then
  system_ros=1
  echo "setup: found a sourced ROS 2 ${ROS_DISTRO}: using its rclpy, installing no ros-* wheels"
fi

jetson=0
if [ -f /etc/nv_tegra_release ]; then
  jetson=1
  echo "setup: Jetson (L4T $(head -c 40 /etc/nv_tegra_release | tr -d '#\n')): using the system Python's torch and TensorRT"
fi

if [ ! -x "$VENV/bin/python" ]; then
  if [ "$system_ros" = 1 ] || [ "$jetson" = 1 ]; then
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
fi
pip() { "$VENV/bin/python" -m pip "$@"; }
export PIP_DISABLE_PIP_VERSION_CHECK=1

if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
  if [ "$jetson" = 1 ]; then
    echo "setup: no torch in $PY: install NVIDIA's torch wheel for your JetPack first (PyPI's has no Jetson GPU support): see docs/install.md" >&2
    exit 1
  fi
  pip install -q torch==2.13.0
fi
# NVIDIA's torch wheels for JetPack 6 were built against the system's NumPy 1.x: keep that line.
constraints=()
if [ "$jetson" = 1 ] && "$VENV/bin/python" -c 'import numpy, sys; sys.exit(numpy.__version__ >= "2")' 2>/dev/null; then
  echo "setup: keeping NumPy 1.x (the system's, which NVIDIA's torch wheel was built against)"
  echo 'numpy<2' > "$VENV/numpy1-constraint.txt"
  constraints=(-c "$VENV/numpy1-constraint.txt")
fi
pip install -q -r requirements.txt -r requirements-dev.txt ${constraints[@]+"${constraints[@]}"}
# A torch kept from the system (NVIDIA's JetPack wheel) may be older than the pinned transformers
# accepts: transformers would then run without torch. Take the newest release that accepts it.
older=$("$VENV/bin/python" scripts/check_deps.py transformers-for-torch)
if [ -n "$older" ]; then
  echo "setup: torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') is older than the pinned transformers accepts: installing $older"
  pip install -q "$older" ${constraints[@]+"${constraints[@]}"}
fi
if [ "$system_ros" = 0 ]; then
  pip install -q -r requirements-ros.txt
fi
pip install -q --no-deps -e .

# launch, launch_ros, the ros2 CLI, ament_copyright/xmllint and colcon: every ROS install has them,
# PyPI does not. A sourced ROS provides its own; otherwise the kit beside this repository does.
# SAPIENS_ROS_TOOLS points elsewhere when the kit is not beside this checkout.
kit=${SAPIENS_ROS_TOOLS:-../shared/ros-tools}
tools=$kit/install.sh
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
# tf2_msgs, vision_msgs, hri_msgs, message_filters: the TF, vision_msgs and REP-155 outputs and
# their tests need them. A system ROS gets them from apt; otherwise the kit builds them (about 2
# CPU-minutes once; it does nothing when they are importable). Without them the node still serves
# every standard output.
msgs=$kit/install-msgs.sh
msg_import='import tf2_msgs.msg, vision_msgs.msg, hri_msgs.msg, message_filters'
if [ "$system_ros" = 1 ]; then
  if ! "$VENV/bin/python" -c "$msg_import" 2>/dev/null; then
    echo "setup: your ROS lacks tf2_msgs/vision_msgs/hri_msgs/message_filters (TF, vision_msgs and REP-155 outputs stay off): apt install ros-$ROS_DISTRO-tf2-msgs ros-$ROS_DISTRO-vision-msgs ros-$ROS_DISTRO-hri-msgs ros-$ROS_DISTRO-message-filters" >&2
  fi
elif [ -f "$msgs" ]; then
  bash "$msgs" "$VENV" || echo "setup: $msgs failed (above): TF, vision_msgs and REP-155 outputs stay off and their tests skip" >&2
else
  echo "setup: no tf2_msgs/vision_msgs/hri_msgs (no sourced ROS, no $msgs): their outputs stay off and their tests skip" >&2
fi
# tf2 (tf2, tf2_py, tf2_ros, tf2_geometry_msgs): the world frame looks cameras up in a tf2 Buffer
# and publishes frames with its broadcasters. A system ROS gets them from apt; otherwise the kit
# builds them after the messages (about 15 CPU-seconds once; nothing when they import).
tf2=$kit/install-tf2.sh
tf2_import='import tf2_ros, tf2_geometry_msgs'
if [ "$system_ros" = 1 ]; then
  if ! "$VENV/bin/python" -c "$tf2_import" 2>/dev/null; then
    echo "setup: your ROS lacks tf2_ros (the world frame stays off): apt install ros-$ROS_DISTRO-tf2-ros-py ros-$ROS_DISTRO-tf2-geometry-msgs" >&2
  fi
elif [ -f "$tf2" ] && "$VENV/bin/python" -c 'import tf2_msgs.msg' 2>/dev/null; then
  bash "$tf2" "$VENV" || echo "setup: $tf2 failed (above): the world frame stays off and its tests skip" >&2
else
  echo "setup: no tf2_ros (no sourced ROS, no $tf2 or no tf2_msgs): the world frame stays off and its tests skip" >&2
fi
echo "setup: ready ($("$VENV/bin/python" -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'))"
