#!/usr/bin/env bash
# Create/refresh .venv and run neardup on the corpus shipped in the repo
# (examples/data/debian_copyright.jsonl.gz: Debian packages' copyright files).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" ""
cd "$ROOT"
OUT="${1:-out/demo}"
mkdir -p "$OUT"
CORPUS=examples/data/debian_copyright.jsonl.gz
neardup sign "$CORPUS" --id-field id --method minhash --summary -o "$OUT/minhash.jsonl"
neardup sign "$CORPUS" --id-field id --method simhash --summary -o "$OUT/simhash.jsonl"
neardup sign "$CORPUS" --id-field id --method sentences --summary -o "$OUT/sentences.jsonl"
echo "signatures written to $OUT/{minhash,simhash,sentences}.jsonl"
