#!/usr/bin/env bash
# Create the venvs for benchmarks/bench_dedup_peers.py (end-to-end dedup vs peers).
#
#   bash benchmarks/peers/setup_dedup_peers.sh
#
# * <repo>/.bench-venv      datasketch 2.0.0 + neardup editable (benchmarks/setup_peers.sh)
# * $TEXTDEDUP_VENV         text-dedup 0.4.0 on Python 3.11 (default /work/textdedup-venv;
#                           0.4.1 requires Python >= 3.12, 0.4.0 is the last for 3.11)
# * $DATATROVE_VENV         datatrove (fallback peer; default /work/datatrove-venv), only with
#                           WITH_DATATROVE=1
# Peers live only in these venvs, never in neardup's dependencies.  Safe to re-run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TEXTDEDUP_VENV="${TEXTDEDUP_VENV:-/work/textdedup-venv}"
DATATROVE_VENV="${DATATROVE_VENV:-/work/datatrove-venv}"

find_py311() {
    for c in "${PYTHON311:-}" python3.11 "$HOME/.pyenv/versions/3.11.7/bin/python3.11"; do
        [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && { echo "$c"; return; }
    done
    ls -d "$HOME"/.pyenv/versions/3.11.*/bin/python3.11 2>/dev/null | tail -1
}

bash "$ROOT/benchmarks/setup_peers.sh"

if [ ! -x "$TEXTDEDUP_VENV/bin/python" ]; then
    PY311="$(find_py311)"
    [ -n "$PY311" ] || { echo "no python3.11 found (set PYTHON311)"; exit 1; }
    echo "creating $TEXTDEDUP_VENV with $PY311"
    "$PY311" -m venv "$TEXTDEDUP_VENV"
    "$TEXTDEDUP_VENV/bin/python" -m pip install --quiet --upgrade pip
fi
"$TEXTDEDUP_VENV/bin/python" -m pip install --quiet "text-dedup==0.4.0"
"$TEXTDEDUP_VENV/bin/python" -c "from importlib.metadata import version as v; print('  text-dedup', v('text-dedup'), ' datasets', v('datasets'))"

if [ "${WITH_DATATROVE:-0}" = 1 ]; then
    [ -x "$DATATROVE_VENV/bin/python" ] || python3 -m venv "$DATATROVE_VENV"
    "$DATATROVE_VENV/bin/python" -m pip install --quiet "datatrove==0.10.1"
fi
echo "ok"
