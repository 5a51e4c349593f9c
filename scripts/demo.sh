#!/usr/bin/env bash
# Create/refresh .venv and deduplicate the corpus shipped in the repo
# (examples/data/debian_copyright.jsonl.gz: Debian packages' copyright files, many near-identical).
# Installs the extras the README's examples use: serve (neardup serve) and zh (--convert, OpenCC).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" "[serve,zh]"
cd "$ROOT"
OUT="${1:-out/demo}"
neardup dedup examples/data/debian_copyright.jsonl.gz --id-field id -o "$OUT"
echo
echo "kept documents:   $OUT/kept/debian_copyright.jsonl.gz"
echo "every row's fate: $OUT/clusters.jsonl"
echo "open the report:  $OUT/report.html  (numbers in $OUT/report.json)"
