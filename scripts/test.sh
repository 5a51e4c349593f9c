#!/usr/bin/env bash
# Create/refresh .venv with the test, Spark, serve and docs extras, check the code with ruff and the layers
# with import-linter (both configured in pyproject.toml), build the documentation site into site/ with
# mkdocs in strict mode (mkdocs.yml: a broken link, a missing page or a docstring the API reference cannot
# render fails), and run the whole test suite (Spark runs in local mode: Java 17 must be there) in two
# processes (pytest-xdist, one test file per process at a time, so the Spark tests share one session;
# NEARDUP_TEST_WORKERS=0 runs them in this process, and later arguments such as -n 4 win).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "[test,spark,serve,docs]"
cd "$ROOT"
python -m ruff check src tests benchmarks scripts
lint-imports --no-cache        # the layers of pyproject.toml's [tool.importlinter]: no import climbs a layer
NO_MKDOCS_2_WARNING=1 python -m mkdocs build --strict --quiet   # docs/ and mkdocs.yml into site/
exec python -m pytest -q -n "${NEARDUP_TEST_WORKERS:-2}" --dist loadfile "$@"
