#!/usr/bin/env bash
# The README's test command body. Builds the package with colcon into a scratch workspace and runs
# the whole suite under `colcon test`, as a ROS user would: pytest, the ament linters (flake8,
# pep257, copyright, xmllint) and the launch tests, which start `ros2 launch sapiens_ros ...` from
# that install. Without colcon it runs plain pytest (the launch tests then skip, saying why).
# Extra arguments go to pytest. With pytest-xdist the files are spread over
# SAPIENS_TEST_WORKERS processes (default 2: most tests wait on processes and DDS, not the CPU;
# each worker has its own ROS_DOMAIN_ID); SAPIENS_TEST_WORKERS=0 runs them in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
py=$root/.venv/bin/python
workers=${SAPIENS_TEST_WORKERS:-2}
parallel=()
if [ "$workers" != 0 ] && "$py" -c 'import xdist' 2>/dev/null; then
  parallel=(-n "$workers" --dist loadfile)
fi
# Fast DDS keeps shared-memory segments in /dev/shm (64 MiB each with the shipped profile); the
# stop tests kill processes on purpose, and a killed process leaves its segments behind. Clean
# the segments whose owners are gone, before and after the run (never those in use), so that
# repeated runs do not fill the machine's memory.
shm_clean() {
  local tool
  tool=$(PATH=$root/.venv/bin:$PATH command -v fastdds) && "$tool" shm clean > /dev/null 2>&1 || true
}
shm_clean
trap shm_clean EXIT
if ! "$py" -c 'import colcon_core' 2>/dev/null; then
  echo "test: colcon not found: plain pytest (launch tests skip)" >&2
  "$py" -m pytest test -q -p no:cacheprovider ${parallel[@]+"${parallel[@]}"} "$@"
  exit
fi
ws=$root/build/colcon_ws
rm -rf "$ws"
mkdir -p "$ws"
touch "$ws/AMENT_IGNORE"  # the ament linters (copyright: colcon's generated files) skip it
colcon() { "$py" -c 'import sys; from colcon_core.command import main; sys.exit(main())' "$@"; }
export PATH=$root/.venv/bin:$PATH  # ros2, and the venv's python for the installed entry points
paths=(--paths "$root" --build-base "$ws/build" --install-base "$ws/install")
echo "== colcon build ($ws)"
colcon --log-base "$ws/log" build "${paths[@]}" --symlink-install --event-handlers console_cohesion+
echo "== colcon test"
pytest_args=(-q ${parallel[@]+"${parallel[@]}"} "$@")
colcon --log-base "$ws/log" test "${paths[@]}" --event-handlers console_direct+ \
  --pytest-args "${pytest_args[@]}" || true
colcon test-result --test-result-base "$ws/build"
