#!/usr/bin/env bash
# The venv for benchmarks/bench_spark_peers.py: text-dedup 0.4.0 (the last release with its Spark job,
# text_dedup/minhash_spark.py; the last for Python 3.11) with the PySpark release neardup's own venv has.
#
#   bash benchmarks/peers/setup_spark_peers.sh
#
# $TEXTDEDUP_SPARK_VENV (default /work/textdedup-spark-venv). The peer lives only there, never in neardup's
# dependencies. GraphFrames' JVM package is not on PyPI (the Spark Packages repository cannot be reached
# here), so bench_spark_peers.py puts a connected-components shim in its place (see that file). Safe to re-run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${TEXTDEDUP_SPARK_VENV:-/work/textdedup-spark-venv}"
PYSPARK="$("$ROOT/.venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"

find_py311() {
    for c in "${PYTHON311:-}" python3.11 "$HOME/.pyenv/versions/3.11.7/bin/python3.11"; do
        [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { echo "$c"; return; }
    done
    ls -d "$HOME"/.pyenv/versions/3.11.*/bin/python3.11 2>/dev/null | tail -1 || true
}

if [ ! -x "$VENV/bin/python" ]; then
    PY311="$(find_py311)"
    [ -n "$PY311" ] || { echo "no python3.11 found (set PYTHON311)"; exit 1; }
    "$PY311" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
"$VENV/bin/python" -m pip install --quiet "text-dedup==0.4.0" "pyspark==$PYSPARK" "pandas>=2.2,<3" "pyarrow>=14"
"$VENV/bin/python" -c "from importlib.metadata import version as v; print('text-dedup', v('text-dedup'), ' pyspark', v('pyspark'))"
