#!/usr/bin/env python3
"""Signing throughput on Chinese text, one core: neardup's tokenizers against the usual peer
pipeline (jieba segmentation in Python, then datasketch MinHash of word 5-grams).

    .bench-venv/bin/python benchmarks/bench_signing_zh.py [--shared ../shared] [--copies 20]

Corpus: the 50 simplified (zh_CN) and 50 traditional (zh_TW) Chinese man pages in
``../shared/corpora/manpages_zh_sample``, repeated ``--copies`` times (about 0.78 MB per copy;
repetition changes nothing for throughput, every document is signed independently). Timed per
method: the whole path from a list of ``str`` documents to one signature per document, best
of 3 after a warm-up on the first 20 documents. Not a test; the numbers go to stdout and
``benchmarks/out/signing_zh.json``.
"""
from __future__ import annotations

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "RAYON_NUM_THREADS"):
    os.environ[_var] = "1"
try:
    os.sched_setaffinity(0, {0})
except (AttributeError, OSError):
    pass

import argparse
import gc
import json
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(shared: str, copies: int) -> list[str]:
    from common import zh_pages

    return zh_pages(shared) * copies


def methods():
    import neardup

    out = [
        ("neardup minhash oph, word (each ideograph a token)",
         neardup.MinHasher(num_perm=128, tokenizer="word", ngram=5).sign_batch),
        ("neardup minhash oph, word, from UTF-8 buffers (as dedup and sign read files)",
         _FromBuffers(neardup.MinHasher(num_perm=128, tokenizer="word", ngram=5).sign_batch)),
        ("neardup minhash oph, jieba (compiled jieba-rs cut)",
         neardup.MinHasher(num_perm=128, tokenizer="jieba", ngram=5).sign_batch),
        ("neardup simhash, word 3-grams", neardup.SimHasher().sign_batch),
        ("neardup simhash --compat yanyiwu --top-n 5 (compiled cppjieba)", _yanyiwu_compiled),
        ("neardup simhash --compat jieba-analyse (compiled jieba.analyse top-20 + 1e0ng simhash)", _jieba_analyse),
        ("neardup simhash --idf jieba --top-n 20 (jieba words, tf-idf)",
         neardup.SimHasher(tokenizer="jieba", ngram=1, weighting="tfidf", idf="jieba", top_n=20).sign_batch),
        ("neardup yanyiwu Python port (the reference)", _Slow(_yanyiwu_port)),
    ]
    try:
        import jieba
        from datasketch import MinHash

        jieba.setLogLevel(60)
        jieba.initialize()
        base = MinHash(num_perm=128, seed=1)

        def datasketch_jieba(texts):
            sigs = []
            for text in texts:
                words = [w for w in jieba.cut(text.lower()) if w.strip()]
                shingles = {" ".join(words[i:i + 5]) for i in range(max(1, len(words) - 4))}
                m = base.copy()
                m.update_batch([s.encode("utf-8") for s in shingles])
                sigs.append(m.hashvalues)
            return sigs

        out.append(("datasketch 2.0 + jieba.cut word 5-grams", datasketch_jieba))
    except ImportError:
        print("jieba or datasketch missing: peer row skipped")
    try:
        import jieba.analyse
        from simhash import Simhash

        def analyse_simhash(texts):
            return [Simhash(dict(jieba.analyse.extract_tags(t, topK=5, withWeight=True))).value for t in texts]

        out.append(("jieba.analyse top-5 tf-idf + simhash (1e0ng)", _Slow(analyse_simhash)))

        def crawler_recipe(texts):
            return [Simhash(jieba.analyse.extract_tags(t, topK=20, withWeight=True)).value for t in texts]

        out.append(("jieba.analyse top-20 + simhash (1e0ng), the recipe --compat jieba-analyse reproduces",
                    _Slow(crawler_recipe)))
    except ImportError:
        print("jieba or simhash (1e0ng) missing: peer row skipped")
    return out


def _yanyiwu_compiled(texts):
    from neardup.sketches.compat import yanyiwu

    return yanyiwu.simhash_batch(texts, 5)


def _jieba_analyse(texts):
    from neardup.sketches.compat import jieba_analyse

    return jieba_analyse.simhash_batch(texts)


def _yanyiwu_port(texts):
    from neardup.sketches.compat import yanyiwu

    return [yanyiwu.simhash_reference(t, 5) for t in texts]


class _FromBuffers:
    """A method timed on the documents already packed as UTF-8 (one buffer + offsets, what the file
    readers hand the signers), so that Python's ``str.encode`` is not part of the time."""

    def __init__(self, fn):
        self.fn = fn

    @staticmethod
    def prepare(texts):
        import numpy as np

        from neardup.text.packed import PackedTexts

        data = [t.encode("utf-8") for t in texts]
        offsets = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        return PackedTexts(np.frombuffer(b"".join(data), dtype=np.uint8).copy(), offsets)

    def __call__(self, texts):
        return self.fn(texts)


class _Slow:
    """A method too slow for the whole corpus: timed on one copy (100 documents), once."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, texts):
        return self.fn(texts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "out", "signing_zh.json"))
    args = ap.parse_args(argv)
    texts = load(args.shared, args.copies)
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"corpus: {len(texts)} Chinese documents, {mb:.1f} MB")
    rows = {}
    one = texts[:len(texts) // args.copies]
    one_mb = sum(len(t.encode("utf-8")) for t in one) / 1e6
    for name, fn in methods():
        slow = isinstance(fn, _Slow)
        use, size = (one, one_mb) if slow else (texts, mb)
        if hasattr(fn, "prepare"):
            use = fn.prepare(use)
        fn(use[:20])
        best = float("inf")
        for _ in range(1 if slow else 3):
            gc.collect()
            t0 = time.perf_counter()
            fn(use)
            best = min(best, time.perf_counter() - t0)
        rows[name] = size / best
        print(f"  {name:66s} {best:7.2f} s {size / best:8.2f} MB/s" + (" (one copy)" if slow else ""))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump({"documents": len(texts), "mb": mb, "mb_per_s": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
