#!/usr/bin/env bash
# Create/refresh .venv with the test extras and run the whole test suite.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "[test]"
cd "$ROOT"
exec python -m pytest -q "$@"
