#!/usr/bin/env bash
# Create the benchmark venv with the peer libraries neardup is compared to.
#
#   bash benchmarks/setup_peers.sh
#
# The venv lives at <repo>/.bench-venv (gitignored).  The peers are installed
# only here: they are never dependencies of neardup itself.  neardup is
# installed editable, so the benchmark always measures the working tree.
# Safe to re-run: an existing venv is reused and satisfied pins are skipped.
# Set PYTHON to choose the interpreter (default: python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.bench-venv"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "creating $VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
fi
PIP=("$VENV/bin/python" -m pip install --quiet)

# Required peers, pinned.
"${PIP[@]}" "datasketch==2.0.0" "rensa==0.5.0" "simhash==2.1.2"

# Optional peer: simhash-py is an old C++ extension that often fails to
# build on current toolchains.  Try once; carry on without it.
if "$VENV/bin/python" -c "import simhash_py" >/dev/null 2>&1 \
   || "$VENV/bin/python" -m pip show simhash-py >/dev/null 2>&1; then
    echo "simhash-py already installed"
elif "${PIP[@]}" simhash-py >/dev/null 2>&1; then
    echo "simhash-py installed"
else
    echo "simhash-py did not build; skipping it (optional)"
fi

# neardup itself, editable, with its own runtime dependencies.
"${PIP[@]}" -e "$ROOT"

"$VENV/bin/python" - <<'EOF'
from importlib.metadata import version, PackageNotFoundError
for name in ("datasketch", "rensa", "simhash", "simhash-py", "numpy", "numba", "neardup"):
    try:
        print(f"  {name:12s} {version(name)}")
    except PackageNotFoundError:
        print(f"  {name:12s} (not installed)")
EOF
echo "ok: $VENV"
