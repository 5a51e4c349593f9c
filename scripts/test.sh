#!/usr/bin/env bash
# Create/refresh .venv with the test and Spark extras and run the whole test suite
# (Spark runs in local mode: Java 17 must be on the machine).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "[test,spark]"
cd "$ROOT"
exec python -m pytest -q "$@"
