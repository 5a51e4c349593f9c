"""Generate reference MinHash vectors with datasketch 2.0.0 for tests/test_compat_datasketch.py.

Run it in a throwaway environment that has datasketch installed (never a neardup dependency):

    python3 -m venv /work/peer-venv && /work/peer-venv/bin/pip install datasketch==2.0.0
    /work/peer-venv/bin/python benchmarks/peers/gen_datasketch_vectors.py

Documents are seeded random byte tokens drawn from a shared vocabulary (so documents overlap
and Jaccard estimates are non-trivial), plus edge cases: an empty document, the empty token,
repeated tokens, and UTF-8 text. Byte tokens are stored as hex, text tokens as str (the
test feeds the str and neardup encodes it as UTF-8, as done here before calling datasketch).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import datasketch
import numpy as np
from datasketch import MinHash

SEEDS = (1, 7, 42)
NUM_PERMS = (4, 128)
SCHEMES = ("legacy", "affine32", "affine64")
OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "datasketch_vectors.json"


def make_docs() -> list[list]:
    rng = np.random.default_rng(20240601)
    vocab = [rng.bytes(int(n)) for n in rng.integers(1, 13, size=60)]
    docs: list[list] = []
    for _ in range(16):
        n = int(rng.integers(1, 41))
        docs.append([vocab[i] for i in rng.integers(0, len(vocab), size=n)])
    docs.append([])                                   # empty document
    docs.append([b"", b"", b"x"])                     # empty token, repeated
    docs.append(["minhash", "naïve", "日本語", "Hello"])  # text, UTF-8 encoded
    docs.append(list(docs[0]) + [b"Hello"])           # near copy of doc 0
    return docs


def encode(tok) -> bytes:
    return tok.encode("utf-8") if isinstance(tok, str) else tok


def main() -> None:
    if datasketch.__version__ != "2.0.0":
        sys.exit(f"need datasketch 2.0.0, found {datasketch.__version__}")
    docs = make_docs()
    out = {
        "generator": "benchmarks/peers/gen_datasketch_vectors.py",
        "datasketch": datasketch.__version__,
        "numpy": np.__version__,
        "docs": [[t if isinstance(t, str) else {"hex": t.hex()} for t in d] for d in docs],
        "cases": [],
    }
    for scheme in SCHEMES:
        for seed in SEEDS:
            for num_perm in NUM_PERMS:
                if scheme == "affine64" and num_perm > 4 and seed != 1:
                    continue  # 20-digit values: keep the file small
                sketches = []
                for d in docs:
                    m = MinHash(num_perm=num_perm, seed=seed, scheme=scheme)
                    m.update_batch([encode(t) for t in d])
                    sketches.append(m)
                case = {
                    "scheme": scheme,
                    "seed": seed,
                    "num_perm": num_perm,
                    "dtype": str(sketches[0].hashvalues.dtype),
                    "hashvalues": [[int(v) for v in m.hashvalues] for m in sketches],
                    "jaccard_0_last": sketches[0].jaccard(sketches[-1]),
                    "jaccard_1_2": sketches[1].jaccard(sketches[2]),
                }
                if num_perm == 4:
                    a, b = sketches[0].permutations
                    case["permutations"] = [[int(v) for v in a], [int(v) for v in b]]
                out["cases"].append(case)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(out, separators=(",", ":"), ensure_ascii=False)
    # one case per line keeps diffs readable without inflating the file
    text = text.replace(',{"scheme"', ',\n{"scheme"')
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(out['cases'])} cases)")


if __name__ == "__main__":
    main()
