#!/usr/bin/env python3
"""A synthetic corpus of N documents built from the real one, with controlled edits.

Base material: paragraphs (≥ 200 characters) of benchmarks/data/corpus.jsonl. Each new document is

* 60 % fresh: 2–4 random paragraphs joined (distinct documents),
* 30 % near-duplicate of an earlier document: a fraction e ~ U(0.01, 0.10) of its words replaced
  or deleted (``origin`` and ``edit_rate`` recorded, so the truth is known),
* 10 % exact copy of an earlier document.

Deterministic for a seed. Usage:
    python benchmarks/build_synthetic.py --n 1000000 [--out benchmarks/data/synthetic_1000000.jsonl]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def paragraphs(path: str, limit: int = 300_000) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"]
            for p in text.split("\n\n"):
                p = " ".join(p.split())
                if len(p) >= 200:
                    out.append(p[:2000])
                    if len(out) >= limit:
                        return out
    return out


def edit(text: str, rate: float, rng: random.Random, vocab: list[str]) -> str:
    words = text.split(" ")
    out = []
    for w in words:
        x = rng.random()
        if x < rate / 2:
            continue                               # deletion
        out.append(rng.choice(vocab) if x < rate else w)  # substitution
    return " ".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--source", default=os.path.join(HERE, "data", "corpus.jsonl"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    out = args.out or os.path.join(HERE, "data", f"synthetic_{args.n}.jsonl")
    t = time.perf_counter()
    paras = paragraphs(args.source)
    vocab = sorted({w for p in paras[:5000] for w in p.split(" ")})
    rng = random.Random(args.seed)
    docs: list[str] = []
    n_bytes = 0
    with open(out, "w", encoding="utf-8") as fh:
        for i in range(args.n):
            x = rng.random()
            rec = {"id": i}
            if docs and x < 0.30:
                j = rng.randrange(len(docs))
                rate = rng.uniform(0.01, 0.10)
                text = edit(docs[j], rate, rng, vocab)
                rec.update(origin=j, edit_rate=round(rate, 4))
            elif docs and x < 0.40:
                j = rng.randrange(len(docs))
                text = docs[j]
                rec.update(origin=j, edit_rate=0.0)
            else:
                text = "\n\n".join(rng.choice(paras) for _ in range(rng.randint(2, 4)))
            docs.append(text)
            rec["text"] = text
            line = json.dumps(rec, ensure_ascii=False)
            n_bytes += len(line) + 1
            fh.write(line + "\n")
    print(f"{out}: {args.n} documents, {n_bytes / 1e6:.0f} MB, {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
