# Shared by demo.sh and test.sh: create or refresh the project's virtual environment.
# Usage: source scripts/_venv.sh EXTRAS   (EXTRAS like "" or "[test]")
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${NEARDUP_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.neardup-installed$1"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
  "$VENV/bin/python" -m pip install --quiet -e "$ROOT$1"
  # compile the default method's kernels now (numba caches them), so a first run starts at full speed;
  # --force: the stamp may have outlived the cache (a new checkout); a valid cache just loads
  echo "neardup: compiling the kernels once (neardup warmup, about a minute)..." >&2
  "$VENV/bin/neardup" warmup --force >/dev/null 2>&1 || echo "neardup warmup failed: kernels compile on first use" >&2
  touch "$STAMP"
fi
# the package's bytecode, written even where PYTHONDONTWRITEBYTECODE is set (an editable install is
# otherwise compiled from source at every start: 0.15 s of each command, measured); a stale file is
# never used (Python checks it against the source), and this rewrites only those
"$VENV/bin/python" -m compileall -q "$ROOT/src/neardup" >/dev/null 2>&1 || true
export PATH="$VENV/bin:$PATH"
