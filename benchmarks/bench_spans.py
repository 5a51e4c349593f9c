#!/usr/bin/env python3
"""Duplicates inside documents: throughput, scale and the order of the two steps.

Run from the repository root::

    .venv/bin/python benchmarks/bench_spans.py                 # kernels + end to end on the 92 MB corpus, orders
    .venv/bin/python benchmarks/bench_spans.py --substrings-mb 1000   # also substrings on ~1 GB of synthetic text

Sections (all written to benchmarks/out/bench_spans.json):

* ``kernels``: one core, warm, the corpus packed once: units (lines, paragraphs) per second of
  text through :func:`neardup.kernels.spans.unit_hashes_batch`, the first-occurrence decision, and
  the suffix array + window marking of ``--method substrings`` (libdivsufsort, then the capped PLCP).
* ``end_to_end``: ``neardup dedup --method lines|substrings`` through the CLI (all cores): wall
  time, peak memory, bytes removed.
* ``substrings_scale``: ``--method substrings`` on the first N MB of text of the synthetic corpus
  (build_synthetic.py), wall time and peak memory against the text size.
* ``order``: ``--method minhash --spans lines`` with ``--spans-order after`` and ``before`` on the
  corpus, judged on the output: near duplicates left, repeated lines left, unique lines lost, and
  *fragments* (documents kept with at least half of their bytes removed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from common import DATA, corpus, neardup_cli, synthetic, timed, write_result


def _texts(path: str, limit_mb: float | None = None) -> list[str]:
    out, total = [], 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            t = json.loads(line)["text"]
            out.append(t)
            total += len(t)
            if limit_mb and total >= limit_mb * 1e6:
                break
    return out


def kernels(texts: list[str]) -> dict:
    from neardup.features.units import UnitHasher, pack_raw, repeated_units
    from neardup.index.suffix import join, suffix_array
    from neardup.kernels.spans import mark_and_keep, window_ranges

    buf, off = pack_raw(texts)
    mb = off[-1] / 1e6
    res = {"text_MB": round(mb, 1), "documents": len(texts)}
    for unit in ("line", "paragraph"):
        h = UnitHasher(unit)
        h.from_buffer(buf[:off[100]].copy(), off[:101])            # compile / load
        best = 1e9
        for _ in range(3):
            t = time.perf_counter()
            u = h.from_buffer(buf, off)
            best = min(best, time.perf_counter() - t)
        t = time.perf_counter()
        repeated_units(u, 1)
        dec = time.perf_counter() - t
        res[unit] = {"units": len(u), "hash_s": round(best, 3), "MB_per_s_one_core": round(mb / best, 1),
                     "decide_s": round(dec, 3)}
    text, starts = join([t.encode("utf-8", "surrogatepass") for t in texts])
    t = time.perf_counter()
    sa = suffix_array(text)
    t_sa = time.perf_counter() - t
    t = time.perf_counter()
    from numba import get_num_threads
    marks = np.empty(text.shape[0], dtype=np.int8)
    mark_and_keep(text, sa, 100, get_num_threads(), marks)
    t_mark = time.perf_counter() - t
    del sa
    t = time.perf_counter()
    window_ranges(text, marks, starts, 100)
    t_ranges = time.perf_counter() - t
    res["substrings"] = {"suffix_array_s": round(t_sa, 2), "mark_s": round(t_mark, 2), "ranges_s": round(t_ranges, 2),
                         "MB_per_s_one_core": round(mb / (t_sa + t_mark + t_ranges), 1)}
    from neardup.index.suffix import repeated_in_buffer
    for parts in (1, get_num_threads()):       # one suffix array, or one per thread cross-checked
        t = time.perf_counter()
        repeated_in_buffer(text, starts, 100, parts=parts)
        res["substrings"][f"find_s_{parts}_suffix_arrays"] = round(time.perf_counter() - t, 2)
    return res


def _run(args: list[str], out: str) -> dict:
    m = timed([neardup_cli(), "dedup", *args, "-o", out, "-q", "--no-html"])
    with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
        r = json.load(fh)
    c = r["counts"]
    m.update({k: c[k] for k in ("documents", "kept", "removed", "dropped", "edited_documents", "emptied_documents",
                                "input_bytes", "kept_bytes", "removed_bytes", "duplicate_bytes") if k in c})
    m["timings"] = r["timings"]
    return m


def end_to_end(path: str, tmp: str) -> dict:
    res = {}
    for name, args in (("lines", ["--method", "lines"]), ("paragraphs", ["--method", "lines", "--unit", "paragraph"]),
                       ("substrings_L100", ["--method", "substrings", "--min-length", "100"])):
        res[name] = _run([path, *args], os.path.join(tmp, name))
        res[name]["MB_per_s"] = round(os.path.getsize(path) / 1e6 / res[name]["wall_s"], 1)
    return res


def substrings_scale(mb: float, tmp: str) -> dict:
    src = synthetic(1_000_000)
    part = os.path.join(DATA, f"synthetic_first_{int(mb)}MB.jsonl")
    if not os.path.exists(part):
        total = 0
        with open(src, encoding="utf-8") as fh, open(part, "w", encoding="utf-8") as out:
            for line in fh:
                out.write(line)
                total += len(json.loads(line)["text"].encode("utf-8"))
                if total >= mb * 1e6:
                    break
    m = _run([part, "--method", "substrings", "--min-length", "100"], os.path.join(tmp, "scale"))
    m["text_MB"] = round(m["input_bytes"] / 1e6, 1)
    m["peak_over_text"] = round(m["peak_rss_MB"] * 1.048576 / m["text_MB"], 2)
    return m


def order(path: str, tmp: str) -> dict:
    """Both orders of ``--spans lines`` with MinHash, judged on what a training set wants of the output:
    no near duplicates left (``residual_duplicates``: what a second default MinHash run over the output
    still removes), no repeated lines left, and no unique content lost (``unique_bytes_lost``: bytes of
    the lines that occur once in the whole input and are missing from the output)."""
    from neardup.features.units import UnitHasher

    texts = _texts(path)
    hasher = UnitHasher("line")
    u = hasher.units(texts)
    h, counts = np.unique(u.hashes, return_counts=True)
    once = set(h[counts == 1].tolist())
    sizes = dict(zip(u.hashes.tolist(), (u.ends - u.starts).tolist()))
    res = {}
    for o in ("after", "before"):
        out = os.path.join(tmp, f"order_{o}")
        m = _run([path, "--spans", "lines", "--spans-order", o], out)
        kept_path = os.path.join(out, "kept", os.path.basename(path))
        kept = _texts(kept_path)
        ku = hasher.units(kept)
        left = set(ku.hashes.tolist())
        lost = [x for x in once if x not in left]
        again = _run([kept_path], os.path.join(tmp, f"again_{o}"))
        kh, kc = np.unique(ku.hashes, return_counts=True)
        recs = [json.loads(x) for x in open(os.path.join(out, "edits.jsonl"), encoding="utf-8")]
        m.update({"unique_lines_lost": len(lost), "unique_bytes_lost": int(sum(sizes[x] for x in lost)),
                  "residual_duplicates": again["removed"], "repeated_lines_left": int((kc > 1).sum()),
                  "fragments": sum(1 for e in recs if e.get("status") == "edited" and e["kept_bytes"] * 2 <= e["bytes"]),
                  "nonblank_documents_left": sum(1 for t in kept if t.strip())})
        res[o] = m
    res["input"] = {"lines": len(u), "unique_lines": len(once),
                    "unique_bytes": int(sum(sizes[x] for x in once))}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--substrings-mb", type=float, default=0, help="also run substrings on this many MB of text")
    ap.add_argument("--skip", nargs="*", default=[], choices=["kernels", "end_to_end", "order"])
    a = ap.parse_args()
    path = corpus()
    res = {}
    previous = os.path.join(HERE, "out", "bench_spans.json")
    if os.path.exists(previous):          # sections not run this time keep their last figures
        with open(previous, encoding="utf-8") as fh:
            res = json.load(fh)
    res.update({"corpus": path, "corpus_MB": round(os.path.getsize(path) / 1e6, 1), "cpus": os.cpu_count()})
    with tempfile.TemporaryDirectory(prefix="bench-spans-") as tmp:
        if "kernels" not in a.skip:
            res["kernels"] = kernels(_texts(path))
            print(json.dumps(res["kernels"], indent=1), flush=True)
        if "end_to_end" not in a.skip:
            res["end_to_end"] = end_to_end(path, tmp)
            print(json.dumps(res["end_to_end"], indent=1), flush=True)
        if "order" not in a.skip:
            res["order"] = order(path, tmp)
            print(json.dumps(res["order"], indent=1), flush=True)
        if a.substrings_mb:
            res["substrings_scale"] = substrings_scale(a.substrings_mb, tmp)
            print(json.dumps(res["substrings_scale"], indent=1), flush=True)
    print("wrote", write_result("bench_spans.json", res))


if __name__ == "__main__":
    main()
