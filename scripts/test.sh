#!/usr/bin/env bash
# Create/refresh .venv with the test and Spark extras, check the code with ruff and the layers with
# import-linter (both configured in pyproject.toml), and run the whole test suite (Spark runs in local mode: Java 17 must be there) in two
# processes (pytest-xdist, one test file per process at a time, so the Spark tests share one session;
# NEARDUP_TEST_WORKERS=0 runs them in this process, and later arguments such as -n 4 win).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "[test,spark,serve]"
cd "$ROOT"
python -m ruff check src tests benchmarks scripts
lint-imports --no-cache        # the layers of pyproject.toml's [tool.importlinter]: no import climbs a layer
exec python -m pytest -q -n "${NEARDUP_TEST_WORKERS:-2}" --dist loadfile "$@"
