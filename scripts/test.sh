#!/usr/bin/env bash
# The README's test command body: run the whole suite in the project venv.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest test -q -p no:cacheprovider "$@"
