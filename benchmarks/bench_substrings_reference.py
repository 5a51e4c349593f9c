#!/usr/bin/env python3
"""``--method substrings`` side by side with the reference ExactSubstr tool (Lee et al., ACL 2022:
google-research/deduplicate-text-datasets, the Rust ``dedup_dataset`` that text-dedup's
suffix_array.py drives): the same documents, the same L, wall time and peak memory of every step,
and what each removes, byte for byte.

Run from the repository root (build the reference first: ``bash benchmarks/setup_substrings_reference.sh``)::

    .venv/bin/python benchmarks/bench_substrings_reference.py                      # the 92 MB corpus, L = 100
    .venv/bin/python benchmarks/bench_substrings_reference.py --first-mb 1000      # ~1 GB of synthetic text

Results: benchmarks/out/substrings_reference.json (one entry per input and L; earlier entries kept).

What runs
---------
* neardup: ``neardup dedup INPUT -o OUT --method substrings --min-length L -q --no-html`` (all cores),
  under /usr/bin/time. Its ranges: OUT/edits.jsonl.
* reference, as text-dedup (ChenghaoMou/text-dedup, src/text_dedup/suffix_array.py) runs it:
  1. *write*: every document's UTF-8 bytes written back to back to one file, **no separator**
     (text-dedup's scheme), their offsets kept;
  2. *suffix array* (``--sa``): ``make`` (default; upstream's single-process SA-IS, linear time,
     about 12 bytes of memory per byte of text), or ``parts``: text-dedup's way, upstream's
     scripts/make_suffix_array.py replayed step by step with the same cuts and commands
     (``make-part`` on size//jobs + 100000-byte overlapping pieces, 4 jobs above 10 MB, 96 above
     1 GB; ``merge --num-threads <cpus>``; the merged pieces concatenated into FILE.table.bin), at
     most ``--sa-parallel`` (default: the cpu count) make-part processes at a time where upstream
     starts all 4 (or 96) at once (on 2 cores the same CPU work, less memory); or
     ``parts-then-make``: ``parts`` with ``--merge-timeout``, then ``make`` if the merge is stopped.
     Upstream's merge compares neighbouring suffixes byte by byte (up to 5e7 bytes each), so its
     time grows with the sum of the longest common prefixes of neighbouring suffixes (reported as
     ``lcp_sum``): a corpus holding long exact copies (the 92 MB corpus: a 6 MB stretch repeated,
     mean LCP 210 KB) does not finish in 10 minutes, where ``make`` takes 15 s;
  3. ``self-similar --length-threshold L --num-threads <threads>``;
  4. ``collect --length-threshold L`` (stdout: merged [a, b) ranges of the file);
  5. *restore*: text-dedup's own restore_and_merge (ranges cut at document boundaries, pieces
     shorter than L dropped, merge_strategy "longest") and clean_up (the bytes removed, then
     ``decode("utf-8", errors="ignore")``), copied verbatim below; empty documents dropped, the rest
     written as JSONL (as neardup writes OUT/kept/).
  Every Rust step and both Python steps run as their own process under /usr/bin/time (wall, peak
  RSS); the make-part phase also reports the sampled peak of the sum of its concurrent processes.

How they are compared (analysis, not timed)
--------------------------------------------
Everything is a set of bytes of the concatenated text T (no separators; document d is
T[off[d]:off[d+1]]). From the reference's own suffix array (FILE.table.bin, checked to be a
permutation sorted on the first L bytes), independently of neardup's code, every window T[p:p+L]
that occurs at least twice is classified:
  ref   : repeated in T (the reference's semantics; windows may cross document boundaries);
  inside: lies in one document and is repeated in T (maybe only across a boundary);
  all   : lies in one document and at least one *other* occurrence also lies in one document
          (neardup's semantics, all occurrences);
  later : ``all`` and not the first (smallest position) of its in-document occurrences (what
          neardup removes, before trimming to character boundaries).
Coverage of a class = the union of its windows. Expected neardup removal = ``later`` coverage cut
per document into maximal ranges trimmed inwards to UTF-8 character boundaries (neardup's rule).
Also neardup's own kernel (the documents laid out as neardup.index.suffix.join does, its
suffix_array (libdivsufsort) and neardup.kernels.spans.capped_plcp, one suffix array) gives its
all-occurrence coverage.

Reported: (1) the reference checked against this classification (collect == ``ref`` coverage);
(2) neardup checked (edits == expected removal; kernel all-occurrence == ``all``); (3) *coverage*,
all occurrences: collect vs neardup's all-occurrence, the difference split into windows crossing
a document boundary / in-document windows whose other occurrences cross one / unexplained;
(4) *removal* as each tool removes it: text-dedup (restore + clean_up) vs neardup edits, the
difference split into first occurrences (neardup keeps them) / character-boundary trimming /
document crossing / unexplained. Run counts are maximal runs of differing bytes within one
document. And a random sample of ranges of each tool checked by direct search in the text
(bytes.find): every reported range must really be repeated.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import deque

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from common import DATA, OUT, corpus, neardup_cli, synthetic

DEFAULT_BIN = os.path.join(OUT, "dtd-build", "target", "release", "dedup_dataset")
RESULT = os.path.join(OUT, "substrings_reference.json")
HACK = 100000                      # scripts/make_suffix_array.py and cmd_merge's HACKSIZE

# ---------------------------------------------------------------------------------------------
# text-dedup's post-processing, copied verbatim (Apache-2.0) from ChenghaoMou/text-dedup
# src/text_dedup/config/algorithms/suffix_array.py at commit 7538f3ec6a28e72a86de5978e58655175b46a11e
# (the static methods of SuffixArrayAlgorithmConfig; docstrings, type hints and a noqa comment left
# out, code unchanged).
# ---------------------------------------------------------------------------------------------


def td_merge_intervals(intervals, merge_strategy="longest"):
    if len(intervals) == 0:
        return []

    q = deque(
        sorted(
            (slice(s[0], s[1]) for s in {(s.start, s.stop) for s in intervals}),
            key=lambda x: (x.start, -x.stop),
        )
    )

    merged = []

    while q:
        current = q.popleft()

        if not merged:
            merged.append(current)
            continue

        prev = merged[-1]
        if merge_strategy == "overlapping":
            if prev.stop >= current.start:
                merged[-1] = slice(prev.start, max(prev.stop, current.stop))
            else:
                merged.append(current)
        elif merge_strategy == "longest":
            if current.stop <= prev.stop:  # ignore substrings
                continue
            else:
                merged.append(current)

    return merged


def td_restore(boundaries, segments):
    indices = deque([])

    if isinstance(segments, str):
        with open(segments) as f:
            for line in f:
                try:
                    left, right = line.strip().split(" ", 1)
                    if left.isdigit() and right.isdigit():
                        indices.append(slice(int(left), int(right)))
                except ValueError:
                    continue
    elif isinstance(segments, list):
        indices = deque(segments)

    for i, s in enumerate(boundaries):
        while indices:
            curr_slice = indices.popleft()
            while curr_slice.stop <= s.start and indices:
                curr_slice = indices.popleft()

            x, y = curr_slice.start, curr_slice.stop
            if y <= s.start:
                break

            if x >= s.stop:
                indices.appendleft(slice(x, y))
                break

            if s.start <= x < s.stop <= y:
                yield i, slice(x - s.start, s.stop - s.start)
                if y > s.stop:
                    indices.appendleft(slice(s.stop, y))
                break
            elif s.start <= x < y <= s.stop:
                yield i, slice(x - s.start, y - s.start)
                continue
            elif x < s.start < y <= s.stop:
                yield i, slice(0, y - s.start)
                continue
            elif x < s.start < s.stop <= y:
                yield i, slice(0, s.stop - s.start)
                if y > s.stop:
                    indices.appendleft(slice(s.stop, y))
                break


def td_restore_and_merge(boundaries, segments, k, merge_strategy="longest"):
    duplicate_size = 0
    results = [[] for _ in boundaries]
    for idx, s in td_restore(boundaries, segments):
        if s.stop - s.start >= k:
            results[int(idx)].append(s)
    for i, _ in enumerate(results):
        results[i] = td_merge_intervals(results[i], merge_strategy)
        duplicate_size += sum([s.stop - s.start for s in results[i]])
    return results, duplicate_size


def td_clean_up(text, slices):
    byte_array = bytearray(text, "utf-8")
    result = bytearray()
    start = 0
    for s in slices:
        result.extend(byte_array[start : s.start])
        start = s.stop
    result.extend(byte_array[start:])

    return result.decode("utf-8", errors="ignore")


# ---------------------------------------------------------------------------------------------
# The two Python steps of the text-dedup pipeline, each run as its own timed process.
# ---------------------------------------------------------------------------------------------


def iter_texts(path):
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            yield json.loads(line)["text"]


def step_write(inp: str, work: str) -> None:
    """text-dedup's "Preprocessing": every document's UTF-8 bytes, back to back, no separator."""
    offsets = [0]
    surrogates = 0
    with open(os.path.join(work, "temp_text.txt"), "wb") as f:
        for t in iter_texts(inp):
            try:
                b = t.encode("utf-8")
            except UnicodeEncodeError:        # text-dedup would stop here; neardup passes them through
                b = t.encode("utf-8", "surrogatepass")
                surrogates += 1
            f.write(b)
            offsets.append(offsets[-1] + len(b))
    np.save(os.path.join(work, "offsets.npy"), np.asarray(offsets, dtype=np.int64))
    with open(os.path.join(work, "write.json"), "w") as fh:
        json.dump({"documents": len(offsets) - 1, "bytes": offsets[-1], "lone_surrogate_docs": surrogates}, fh)


def step_restore(inp: str, work: str, L: int) -> None:
    """text-dedup's "Restore" + "Deduplicate" (+ writing the kept rows as JSONL)."""
    off = np.load(os.path.join(work, "offsets.npy")).tolist()
    boundaries = [slice(a, b) for a, b in zip(off[:-1], off[1:])]
    slices, dup_size = td_restore_and_merge(boundaries, os.path.join(work, "collect.txt"), L, "longest")
    out_bytes = emptied = 0
    with open(os.path.join(work, "td_kept.jsonl"), "w", encoding="utf-8") as out:
        for i, t in enumerate(iter_texts(inp)):
            try:
                c = td_clean_up(t, slices[i])
            except UnicodeEncodeError:         # a lone surrogate (text-dedup would stop here)
                c = t
            if len(c) > 0:
                out.write(json.dumps({"id": i, "text": c}, ensure_ascii=False) + "\n")
                out_bytes += len(c.encode("utf-8", "surrogatepass"))
            else:
                emptied += 1
    d = [i for i, ss in enumerate(slices) for _ in ss]
    s = [x.start for ss in slices for x in ss]
    e = [x.stop for ss in slices for x in ss]
    np.savez(os.path.join(work, "td_slices.npz"), doc=np.asarray(d, dtype=np.int64),
             start=np.asarray(s, dtype=np.int64), stop=np.asarray(e, dtype=np.int64))
    with open(os.path.join(work, "restore.json"), "w") as fh:
        json.dump({"duplicate_size": dup_size, "slices": len(d), "output_bytes": out_bytes,
                   "documents_dropped_empty": emptied}, fh)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    for c in fh.read().split():
                        out.append(int(c))
                        todo.append(int(c))
        except OSError:
            pass
    return out


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeRSS:
    """Samples (every 50 ms) the sum of the resident memory of this process's descendants."""

    def __init__(self):
        self.peak_kb = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = os.getpid()
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, sum(_rss_kb(p) for p in _descendants(me)))
            self._stop.wait(0.05)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join()


def _time_cmd(cmd: list[str]) -> list[str]:
    return ["/usr/bin/time", "-f", "TIME %e %M %U %S", *cmd]


def _parse_time(stderr: str, cmd) -> dict:
    lines = [x for x in stderr.splitlines() if x.startswith("TIME ")]
    if not lines:
        raise SystemExit(f"{cmd} gave no timing:\n{stderr[-3000:]}")
    _, wall, rss, user, sys_ = lines[-1].split()
    return {"wall_s": float(wall), "peak_rss_MB": round(int(rss) / 1024, 1), "cpu_s": round(float(user) + float(sys_), 2)}


def timed(cmd: list[str], cwd: str | None = None, stdout_path: str | None = None,
          timeout: float | None = None) -> dict:
    """Wall seconds, peak RSS (MB) and CPU seconds of a command (/usr/bin/time); with ``timeout``,
    a command still running then is stopped (its process group) and reported as timed out."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    t0 = time.perf_counter()
    p = subprocess.Popen(_time_cmd(cmd), cwd=cwd, stdout=out, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        return {"status": "timed_out", "wall_s": round(time.perf_counter() - t0, 1)}
    finally:
        if stdout_path:
            out.close()
    err = err.decode(errors="replace")
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-3000:]}")
    return _parse_time(err, cmd)


def timed_parallel(cmds: list[list[str]], cwd: str, parallel: int) -> dict:
    """The commands, at most ``parallel`` at a time; the phase's wall time, the largest single
    process's peak RSS (time), and the sampled peak of the sum over the processes running together."""
    t0 = time.perf_counter()
    each = []
    with TreeRSS() as tree:
        pending = list(cmds)
        running = []
        while pending or running:
            while pending and len(running) < parallel:
                c = pending.pop(0)
                running.append((c, subprocess.Popen(_time_cmd(c), cwd=cwd, stdout=subprocess.DEVNULL,
                                                    stderr=subprocess.PIPE)))
            c, p = running.pop(0)
            _, err = p.communicate()
            err = err.decode(errors="replace")
            if p.returncode != 0:
                raise SystemExit(f"{' '.join(c)} failed ({p.returncode}):\n{err[-3000:]}")
            each.append(_parse_time(err, c))
    return {"wall_s": round(time.perf_counter() - t0, 2), "peak_rss_MB": max(e["peak_rss_MB"] for e in each),
            "sum_rss_peak_MB": round(tree.peak_kb / 1024, 1), "cpu_s": round(sum(e["cpu_s"] for e in each), 2),
            "processes": len(each), "at_once": parallel}


# ---------------------------------------------------------------------------------------------
# The two runs
# ---------------------------------------------------------------------------------------------


def run_neardup(inp: str, work: str, L: int) -> dict:
    out = os.path.join(work, "neardup")
    shutil.rmtree(out, ignore_errors=True)
    m = timed([neardup_cli(), "dedup", inp, "-o", out, "--method", "substrings", "--min-length", str(L),
               "-q", "--no-html"])
    with open(os.path.join(out, "report.json"), encoding="utf-8") as fh:
        r = json.load(fh)
    m["counts"] = {k: r["counts"][k] for k in ("documents", "edited_documents", "emptied_documents",
                                                "removed_spans", "input_bytes", "removed_bytes") if k in r["counts"]}
    m["timings"] = r.get("timings")
    return m


def suffix_array_parts(ref: str, data: str, size: int, binary: str, threads: int, sa_parallel: int,
                       merge_timeout: float | None) -> dict:
    """scripts/make_suffix_array.py, replayed: the same jobs, cuts and commands (make-part on
    overlapping pieces, merge, the merged pieces concatenated into FILE.table.bin)."""
    os.makedirs(os.path.join(ref, "tmp"), exist_ok=True)
    steps = {}
    if size > 10e9:
        total_jobs, jobs_at_once = 100, 20
    elif size > 1e9:
        total_jobs, jobs_at_once = 96, 96
    elif size > 10e6:
        total_jobs, jobs_at_once = 4, 4
    else:
        total_jobs, jobs_at_once = 1, 1
    S = size // total_jobs
    started = []
    for i in range(total_jobs):
        s, e = i * S, min((i + 1) * S + HACK, size)
        started.append((s, e))
        if e == size:
            break
    cmds = [[binary, "make-part", "--data-file", data, "--start-byte", str(s), "--end-byte", str(e)]
            for s, e in started]
    steps["make_part"] = timed_parallel(cmds, ref, min(jobs_at_once, sa_parallel))
    steps["make_part"]["upstream_at_once"] = jobs_at_once
    files = [f"{data}.part.{s}-{e}" for s, e in started]
    for f in files:                    # the script's own check of every piece
        fact = np.ceil(np.log(os.path.getsize(os.path.join(ref, f))) / np.log(2) / 8)
        assert os.path.getsize(os.path.join(ref, f)) * fact == os.path.getsize(os.path.join(ref, f + ".table.bin")), f
    merge = [binary, "merge", "--output-file", "tmp/out.table.bin"]
    for f in files:
        merge += ["--suffix-path", f]
    steps["merge"] = timed(merge + ["--num-threads", str(threads)], cwd=ref, timeout=merge_timeout)
    if steps["merge"].get("status") != "timed_out":
        t = time.perf_counter()
        pieces = sorted(x for x in os.listdir(os.path.join(ref, "tmp")) if x.startswith("out.table.bin."))
        with open(os.path.join(ref, data + ".table.bin"), "wb") as dst:   # cat tmp/out.table.bin.* > FILE.table.bin
            for x in pieces:
                with open(os.path.join(ref, "tmp", x), "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 24)
        steps["concat"] = {"wall_s": round(time.perf_counter() - t, 2)}
    shutil.rmtree(os.path.join(ref, "tmp"))
    for f in files:
        os.remove(os.path.join(ref, f))
        os.remove(os.path.join(ref, f + ".table.bin"))
    steps["make_part"]["jobs"] = len(started)
    return steps


def run_reference(inp: str, work: str, L: int, binary: str, threads: int, sa_parallel: int,
                  sa: str = "make", merge_timeout: float | None = None) -> dict:
    ref = os.path.join(work, "ref")
    shutil.rmtree(ref, ignore_errors=True)
    os.makedirs(ref)
    steps = {}
    py = sys.executable
    me = os.path.abspath(__file__)
    steps["write"] = timed([py, me, "_step_write", inp, ref])
    data = "temp_text.txt"
    size = os.path.getsize(os.path.join(ref, data))

    if sa in ("parts", "parts-then-make"):
        parts = suffix_array_parts(ref, data, size, binary, threads, sa_parallel, merge_timeout)
        if parts["merge"].get("status") == "timed_out":
            steps["parts_attempt"] = parts
            if sa == "parts":
                return {"steps": steps, "status": "merge timed out", "text_bytes": size}
        else:
            steps.update(parts)
    if "merge" not in steps:
        steps["make"] = timed([binary, "make", "--data-file", data], cwd=ref)
    table = os.path.getsize(os.path.join(ref, data + ".table.bin"))
    if table % size:
        raise SystemExit("suffix array has the wrong size")
    steps["self_similar"] = timed([binary, "self-similar", "--data-file", data, "--length-threshold", str(L),
                                   "--cache-dir", "cache", "--num-threads", str(threads)], cwd=ref)
    steps["collect"] = timed([binary, "collect", "--data-file", data, "--cache-dir", "cache",
                              "--length-threshold", str(L)], cwd=ref, stdout_path=os.path.join(ref, "collect.txt"))
    steps["restore_clean_up"] = timed([py, me, "_step_restore", inp, ref, str(L)])
    done = {k: v for k, v in steps.items() if isinstance(v, dict) and k != "parts_attempt"}
    total = {"wall_s": round(sum(s["wall_s"] for s in done.values()), 2),
             "peak_rss_MB": max(max(s.get("peak_rss_MB", 0), s.get("sum_rss_peak_MB", 0)) for s in done.values())}
    cache = os.path.join(ref, "cache")
    return {"steps": steps, "total": total, "text_bytes": size, "pointer_bytes": table // size, "suffix_array": sa,
            "dups_bytes": sum(os.path.getsize(os.path.join(cache, x)) for x in os.listdir(cache) if x.startswith("dups_"))}


# ---------------------------------------------------------------------------------------------
# Analysis kernels (numba; written for this benchmark, independent of neardup's kernels)
# ---------------------------------------------------------------------------------------------

from numba import get_num_threads, njit, prange

# bits of the per-byte label array (uint16)
B_REF, B_INSIDE, B_ALL, B_LATER = 1, 2, 4, 8          # coverage of the window classes (ref suffix array)
B_EXPECT, B_NEARDUP, B_COLLECT, B_TD, B_NDALL = 16, 32, 64, 128, 256
NAMES = {B_REF: "ref_windows", B_INSIDE: "inside_windows", B_ALL: "all_occurrences", B_LATER: "later_occurrences",
         B_EXPECT: "expected_neardup_removal", B_NEARDUP: "neardup_removal", B_COLLECT: "reference_collect",
         B_TD: "text_dedup_removal", B_NDALL: "neardup_kernel_all_occurrences"}


@njit(parallel=True, cache=True)
def adjacent_equal(T, sa, L, eq, nt):
    """eq[j] = 1 iff the windows at sa[j-1] and sa[j] are both whole (L bytes before the end) and
    equal; returns the number of adjacent pairs out of order on their first L bytes."""
    n = sa.shape[0]
    N = T.shape[0]
    bad = np.zeros(nt, dtype=np.int64)
    step = (n + nt - 1) // nt
    for c in prange(nt):
        for j in range(max(1, c * step), min(n, (c + 1) * step)):
            a = sa[j - 1]
            b = sa[j]
            la = N - a
            lb = N - b
            m = min(L, min(la, lb))
            k = 0
            while k < m and T[a + k] == T[b + k]:
                k += 1
            if k == L:
                eq[j] = 1
            else:
                eq[j] = 0
                if k < m:
                    if T[a + k] > T[b + k]:
                        bad[c] += 1
                elif lb < la:          # b is a proper prefix of a, yet sorts after it
                    bad[c] += 1
    eq[0] = 0
    return bad.sum()


@njit(cache=True)
def is_permutation(sa, N):
    if sa.shape[0] != N:
        return False
    seen = np.zeros(N, dtype=np.uint8)
    for v in sa:
        if v < 0 or v >= N or seen[v]:
            return False
        seen[v] = 1
    return True


@njit(cache=True)
def lcp_stats(T, sa):
    """Sum and maximum of the longest common prefixes of neighbours in the suffix array (Kasai et
    al. through Phi, in place over one array: linear time)."""
    N = T.shape[0]
    phi = np.empty(N, dtype=sa.dtype)
    if N == 0:
        return 0, 0
    phi[sa[0]] = -1
    for j in range(1, N):
        phi[sa[j]] = sa[j - 1]
    total = 0
    mx = 0
    k = 0
    for i in range(N):
        q = phi[i]
        if q < 0:
            k = 0
            continue
        while i + k < N and q + k < N and T[i + k] == T[q + k]:
            k += 1
        total += k
        if k > mx:
            mx = k
        if k > 0:
            k -= 1
    return total, mx


@njit(cache=True)
def join_sep(T, off):
    """The documents each followed by 0xFF (neardup.index.suffix.join's layout), from T."""
    nd = off.shape[0] - 1
    out = np.full(T.shape[0] + nd, 0xFF, dtype=np.uint8)
    for d in range(nd):
        out[off[d] + d:off[d + 1] + d] = T[off[d]:off[d + 1]]
    return out


@njit(cache=True)
def inside_flags(off, L, N):
    inside = np.zeros(N, dtype=np.uint8)
    for d in range(off.shape[0] - 1):
        for p in range(off[d], off[d + 1] - L + 1):
            inside[p] = 1
    return inside


@njit(cache=True)
def classify_runs(sa, eq, inside, flags):
    """Window classes (bits B_REF, B_INSIDE, B_ALL, B_LATER of ``flags`` at each window start) from
    the runs of equal windows in suffix-array order."""
    n = sa.shape[0]
    j = 0
    while j < n:
        q = j + 1
        while q < n and eq[q]:
            q += 1
        if q - j >= 2:
            cin = 0
            first = -1
            for r in range(j, q):
                p = sa[r]
                flags[p] |= 1
                if inside[p]:
                    cin += 1
                    if first < 0 or p < first:
                        first = p
            for r in range(j, q):
                p = sa[r]
                if inside[p]:
                    f = 2
                    if cin >= 2:
                        f |= 4
                        if p != first:
                            f |= 8
                    flags[p] |= f
        j = q


@njit(cache=True)
def windows_to_coverage(flags, L, label, nbits):
    """label |= bit b at x iff some window start p in (x-L, x] has flag bit b (bits 0..nbits-1)."""
    N = flags.shape[0]
    last = np.full(nbits, -(1 << 62), dtype=np.int64)
    for x in range(N):
        f = flags[x]
        c = 0
        for b in range(nbits):
            if f & (1 << b):
                last[b] = x
            if last[b] > x - L:
                c |= 1 << b
        label[x] |= c


@njit(cache=True)
def trimmed_ranges(T, label, off, src, dst):
    """label |= dst over the maximal runs of ``src`` inside each document, trimmed inwards to UTF-8
    character boundaries as neardup trims (start past continuation bytes; end back while the byte
    at the end is a continuation byte, unless the end is the document's end)."""
    for d in range(off.shape[0] - 1):
        s, e = off[d], off[d + 1]
        p = s
        while p < e:
            if label[p] & src:
                a = p
                while p < e and (label[p] & src):
                    p += 1
                b = p
                while a < b and (T[a] & 0xC0) == 0x80:
                    a += 1
                while b > a and b < e and (T[b] & 0xC0) == 0x80:
                    b -= 1
                for x in range(a, b):
                    label[x] |= dst
            else:
                p += 1


@njit(cache=True)
def paint(label, base, docs, starts, ends, bit):
    for i in range(docs.shape[0]):
        o = base[docs[i]]
        for x in range(o + starts[i], o + ends[i]):
            label[x] |= bit


@njit(cache=True)
def count_runs(label, off, table):
    """Maximal runs of positions whose label satisfies ``table[label]``, cut at document boundaries."""
    r = 0
    for d in range(off.shape[0] - 1):
        prev = False
        for x in range(off[d], off[d + 1]):
            v = table[label[x]]
            if v and not prev:
                r += 1
            prev = v
    return r


@njit(cache=True)
def run_starts(label, off, table, limit):
    """Up to ``limit`` (start, end) of such runs, spread evenly over the text (every k-th run)."""
    total = count_runs(label, off, table)
    every = max(1, total // max(1, limit))
    out = np.empty((min(total, limit), 2), dtype=np.int64)
    k = 0
    i = 0
    for d in range(off.shape[0] - 1):
        x = off[d]
        e = off[d + 1]
        while x < e and k < out.shape[0]:
            if table[label[x]]:
                a = x
                while x < e and table[label[x]]:
                    x += 1
                if i % every == 0:
                    out[k, 0] = a
                    out[k, 1] = x
                    k += 1
                i += 1
            else:
                x += 1
    return out[:k]


@njit(cache=True)
def all_occurrence_flags(sa, plcp, L, flags):
    """From neardup's capped_plcp (plcp[sa[j]] >= L: the window at sa[j] equals its predecessor's):
    every window of a run of equal windows, first occurrence included."""
    for j in range(1, sa.shape[0]):
        if plcp[sa[j]] >= L:
            flags[sa[j]] = 1
            flags[sa[j - 1]] = 1


@njit(cache=True)
def copy_bit_to_docs(cov_sep, starts_sep, label, off, bit):
    for d in range(off.shape[0] - 1):
        o = starts_sep[d]
        for i in range(off[d + 1] - off[d]):
            if cov_sep[o + i]:
                label[off[d] + i] |= bit


def _table(pred) -> np.ndarray:
    v = np.arange(1 << 9, dtype=np.int64)
    return pred(v).astype(np.bool_)


# ---------------------------------------------------------------------------------------------
# Analysis
# ---------------------------------------------------------------------------------------------


def _occurrences(hay: bytes, needle: bytes, limit: int = 2) -> list[int]:
    out, i = [], hay.find(needle)
    while i >= 0 and len(out) < limit:
        out.append(i)
        i = hay.find(needle, i + 1)
    return out


def analyse(inp: str, work: str, L: int, samples: int, seed: int) -> dict:
    ref = os.path.join(work, "ref")
    nt = get_num_threads()
    t_all = time.perf_counter()
    T = np.fromfile(os.path.join(ref, "temp_text.txt"), dtype=np.uint8)
    N = T.shape[0]
    off = np.load(os.path.join(ref, "offsets.npy"))
    nd = off.shape[0] - 1
    res: dict = {"documents": int(nd), "text_bytes": int(N)}

    # the reference's suffix array
    width = os.path.getsize(os.path.join(ref, "temp_text.txt.table.bin")) // N
    dt = np.int32 if N < 2 ** 31 else np.int64
    if width in (4, 8) and np.dtype(dt).itemsize == width:
        sa = np.fromfile(os.path.join(ref, "temp_text.txt.table.bin"), dtype=f"<i{width}")
    else:
        raw = np.fromfile(os.path.join(ref, "temp_text.txt.table.bin"), dtype=np.uint8).reshape(N, width)
        sa = np.zeros(N, dtype=dt)
        sa.view(np.uint8).reshape(N, sa.itemsize)[:, :width] = raw
        del raw
    perm = bool(is_permutation(sa, N))
    eq = np.zeros(N, dtype=np.uint8)
    bad = int(adjacent_equal(T, sa, L, eq, nt))
    res["reference_suffix_array"] = {"pointer_bytes": int(width), "is_permutation": perm,
                                     "pairs_out_of_order_on_L_bytes": bad}
    inside = inside_flags(off, L, N)
    flags = np.zeros(N, dtype=np.uint8)
    classify_runs(sa, eq, inside, flags)
    del eq, inside
    # what makes upstream's merge slow: it compares neighbouring suffixes byte by byte (up to 5e7)
    lsum, lmax = lcp_stats(T, sa)
    res["reference_suffix_array"].update({"lcp_sum": int(lsum), "lcp_max": int(lmax), "lcp_mean": round(lsum / N, 1)})
    del sa
    label = np.zeros(N, dtype=np.uint16)
    windows_to_coverage(flags, L, label, 4)
    res["windows"] = {NAMES[b]: int(np.count_nonzero(flags & b)) for b in (B_REF, B_INSIDE, B_ALL, B_LATER)}
    trimmed_ranges(T, label, off, B_LATER, B_EXPECT)

    # what the tools reported
    coll = []
    with open(os.path.join(ref, "collect.txt")) as fh:
        for line in fh:
            if line.strip() == "out":
                break
        for line in fh:
            a, b = line.split()
            coll.append((int(a), int(b)))
    coll = np.asarray(coll, dtype=np.int64).reshape(-1, 2)
    z = np.zeros(coll.shape[0], dtype=np.int64)
    paint(label, np.zeros(1, dtype=np.int64), z, coll[:, 0], coll[:, 1], B_COLLECT)
    td = np.load(os.path.join(ref, "td_slices.npz"))
    paint(label, off, td["doc"], td["start"], td["stop"], B_TD)
    d_, s_, e_ = [], [], []
    with open(os.path.join(work, "neardup", "edits.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            for rng in r["removed"]:
                d_.append(r["row"])
                s_.append(rng[0])
                e_.append(rng[1])
    nd_d, nd_s, nd_e = (np.asarray(x, dtype=np.int64) for x in (d_, s_, e_))
    paint(label, off, nd_d, nd_s, nd_e, B_NEARDUP)

    # neardup's own kernel, all occurrences (one suffix array over the documents joined by 0xFF)
    from neardup.index.suffix import suffix_array
    from neardup.kernels.spans import capped_plcp
    text_sep = join_sep(T, off)                  # as neardup.index.suffix.join lays the documents out
    starts_sep = off + np.arange(nd + 1, dtype=np.int64)
    sa2 = suffix_array(text_sep)
    plcp = capped_plcp(text_sep, sa2, L, nt)
    f2 = np.zeros(text_sep.shape[0], dtype=np.uint8)
    all_occurrence_flags(sa2, plcp, L, f2)
    del sa2, plcp
    cov2 = np.zeros(text_sep.shape[0], dtype=np.uint16)
    windows_to_coverage(f2, L, cov2, 1)
    del f2
    copy_bit_to_docs(cov2, starts_sep, label, off, B_NDALL)
    del cov2

    hist = np.bincount(label, minlength=1 << 9).astype(np.int64)
    v = np.arange(hist.shape[0])

    def nbytes(pred) -> int:
        return int(hist[pred(v)].sum())

    def runs(pred) -> int:
        return int(count_runs(label, off, _table(pred)))

    def has(b):
        return lambda x: (x & b) != 0

    def compare(a: int, b: int) -> dict:
        return {"A": NAMES[a], "B": NAMES[b], "A_bytes": nbytes(has(a)), "B_bytes": nbytes(has(b)),
                "A_runs": runs(has(a)), "B_runs": runs(has(b)),
                "intersection_bytes": nbytes(lambda x: ((x & a) != 0) & ((x & b) != 0)),
                "A_not_B_bytes": nbytes(lambda x: ((x & a) != 0) & ((x & b) == 0)),
                "A_not_B_runs": runs(lambda x: ((x & a) != 0) & ((x & b) == 0)),
                "B_not_A_bytes": nbytes(lambda x: ((x & b) != 0) & ((x & a) == 0)),
                "B_not_A_runs": runs(lambda x: ((x & b) != 0) & ((x & a) == 0))}

    res["checks"] = {
        "reference_collect_vs_ref_windows": compare(B_COLLECT, B_REF),
        "neardup_edits_vs_expected": compare(B_NEARDUP, B_EXPECT),
        "neardup_kernel_all_vs_all_occurrences": compare(B_NDALL, B_ALL),
    }
    cov = compare(B_COLLECT, B_NDALL)
    cov["A_not_B_breakdown"] = {
        "window_crosses_documents": {"bytes": nbytes(lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_INSIDE) == 0)),
                                     "runs": runs(lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_INSIDE) == 0))},
        "other_occurrences_cross_documents": {
            "bytes": nbytes(lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_INSIDE) != 0) & ((x & B_ALL) == 0)),
            "runs": runs(lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_INSIDE) != 0) & ((x & B_ALL) == 0))},
        "unexplained": {"bytes": nbytes(lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_ALL) != 0)),
                        "runs": runs(lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_ALL) != 0))},
    }
    res["coverage_all_occurrences"] = cov
    rem = compare(B_TD, B_NEARDUP)
    td_not = lambda x: ((x & B_TD) != 0) & ((x & B_NEARDUP) == 0)  # noqa: E731
    cats = {
        "first_occurrence_kept_by_neardup": lambda x: td_not(x) & ((x & B_ALL) != 0) & ((x & B_LATER) == 0),
        "character_boundary_trimming": lambda x: td_not(x) & ((x & B_LATER) != 0) & ((x & B_EXPECT) == 0),
        "window_crosses_documents": lambda x: td_not(x) & ((x & B_ALL) == 0) & ((x & B_INSIDE) == 0),
        "other_occurrences_cross_documents": lambda x: td_not(x) & ((x & B_ALL) == 0) & ((x & B_INSIDE) != 0),
        "unexplained": lambda x: td_not(x) & ((x & B_EXPECT) != 0),
    }
    rem["A_not_B_breakdown"] = {k: {"bytes": nbytes(p), "runs": runs(p)} for k, p in cats.items()}
    res["removal"] = rem
    res["collect_vs_text_dedup_removal"] = compare(B_COLLECT, B_TD)

    # examples of each difference, with direct-search evidence
    rng = random.Random(seed)
    T_b = T.tobytes()
    S_b = text_sep.tobytes()
    del text_sep

    def doc_of(p):
        return int(np.searchsorted(off, p, side="right") - 1)

    def window_with(x, bit):
        for p in range(x, max(-1, x - L), -1):
            if flags[p] & bit:
                return p
        return -1

    def example(a, b, bit):
        d = doc_of(a)
        ex = {"doc": d, "start": int(a - off[d]), "end": int(b - off[d]), "bytes": int(b - a),
              "doc_bytes": int(off[d + 1] - off[d]), "text": T_b[a:min(b, a + 80)].decode("utf-8", "replace")}
        if bit:
            p = window_with(a, bit)
            if p >= 0:
                w = T_b[p:p + L]
                occ_t = _occurrences(T_b, w)
                occ_s = _occurrences(S_b, w)
                ex["window"] = {"doc_of_start": doc_of(p), "doc_of_end": doc_of(p + L - 1),
                                "occurrences_in_T_(first_2)_[doc,offset,doc_of_last_byte]":
                                    [[doc_of(o), int(o - off[doc_of(o)]), doc_of(o + L - 1)] for o in occ_t],
                                "occurrences_in_documents_(first_2)": len(occ_s),
                                "first_in_documents_is_this": bool(occ_s and occ_s[0] == starts_sep[d] + (p - off[d]))}
        else:
            ex["bytes_hex_around_edges"] = [T_b[max(a - 2, 0):a + 3].hex(" "), T_b[max(b - 2, 0):b + 3].hex(" ")]
        return ex

    examples = {}
    for name, pred, bit in (("first_occurrence_kept_by_neardup", cats["first_occurrence_kept_by_neardup"], 4),
                            ("character_boundary_trimming", cats["character_boundary_trimming"], 0),
                            ("window_crosses_documents", cats["window_crosses_documents"], 1),
                            ("other_occurrences_cross_documents", cats["other_occurrences_cross_documents"], 2),
                            ("removal_unexplained", cats["unexplained"], 8),
                            ("neardup_not_text_dedup", lambda x: ((x & B_NEARDUP) != 0) & ((x & B_TD) == 0), 8),
                            ("coverage_unexplained", lambda x: ((x & B_COLLECT) != 0) & ((x & B_NDALL) == 0) & ((x & B_ALL) != 0), 4),
                            ("neardup_all_not_collect", lambda x: ((x & B_NDALL) != 0) & ((x & B_COLLECT) == 0), 4)):
        found = run_starts(label, off, _table(pred), 3)
        if found.shape[0]:
            examples[name] = [example(int(a), int(b), bit) for a, b in found]
    res["examples"] = examples

    # direct search: every sampled range really is repeated
    ver = {"reference_collect": {"checked": 0, "failed": []}, "neardup": {"checked": 0, "failed": []}}
    for i in rng.sample(range(coll.shape[0]), min(samples, coll.shape[0])):
        a, b = (int(x) for x in coll[i])
        ok = b - a >= L and len(_occurrences(T_b, T_b[a:a + L])) >= 2 and len(_occurrences(T_b, T_b[b - L:b])) >= 2
        ver["reference_collect"]["checked"] += 1
        if not ok:
            ver["reference_collect"]["failed"].append([a, b])
    for i in rng.sample(range(nd_d.shape[0]), min(samples, nd_d.shape[0])):
        d, s, e = int(nd_d[i]), int(nd_s[i]), int(nd_e[i])
        n_d = int(off[d + 1] - off[d])
        base = int(starts_sep[d])
        doc = S_b[base:base + n_d]

        def earlier(p, n_d=n_d, doc=doc, base=base):   # the window at p of document d occurs earlier
            if p < 0 or p + L > n_d:
                return False
            return 0 <= S_b.find(doc[p:p + L]) < base + p

        head = any(earlier(p) for p in range(s, s - 4, -1))
        tail = any(earlier(p) for p in range(e - L, e - L + 4)) if e < n_d else earlier(n_d - L)
        bound = (doc[s] & 0xC0) != 0x80 and (e == n_d or (doc[e] & 0xC0) != 0x80)
        ver["neardup"]["checked"] += 1
        if not (head and tail and bound):
            ver["neardup"]["failed"].append({"doc": d, "start": s, "end": e, "head": head, "tail": tail,
                                             "char_boundaries": bound})
    res["direct_search_sample"] = ver
    rj = json.load(open(os.path.join(ref, "restore.json")))
    in_bytes = int(N)
    res["text_dedup_output"] = dict(rj, effective_removed_bytes=in_bytes - rj["output_bytes"],
                                    lost_to_decode_errors_ignore=in_bytes - rj["output_bytes"] - nbytes(has(B_TD)))
    res["analysis_s"] = round(time.perf_counter() - t_all, 1)
    return res


# ---------------------------------------------------------------------------------------------


def cut_first_mb(mb: float) -> str:
    """The first ``mb`` MB of text of the synthetic corpus (bench_spans.substrings_scale's file)."""
    src = synthetic(1_000_000)
    part = os.path.join(DATA, f"synthetic_first_{int(mb)}MB.jsonl")
    if not os.path.exists(part):
        total = 0
        with open(src, encoding="utf-8") as fh, open(part + ".tmp", "w", encoding="utf-8") as out:
            for line in fh:
                out.write(line)
                total += len(json.loads(line)["text"].encode("utf-8"))
                if total >= mb * 1e6:
                    break
        os.replace(part + ".tmp", part)
    return part


def _median(x: dict) -> float:
    v = sorted(x.get("wall_s_runs", [x["wall_s"]]))
    return v[len(v) // 2] if len(v) % 2 else round((v[len(v) // 2 - 1] + v[len(v) // 2]) / 2, 2)


def _fmt_table(entry: dict) -> str:
    rows = []
    n = entry["neardup"]
    runs = n.get("wall_s_runs", [])
    rows.append(("neardup dedup --method substrings", _median(n), max(n.get("peak_rss_MB_runs", [n["peak_rss_MB"]])),
                 f"runs: {runs}" if len(runs) > 1 else ""))
    r = entry["reference"]
    for k, s in r["steps"].items():
        extra = ""
        if k == "parts_attempt":
            rows.append(("  (text-dedup's make-part + merge: not used)", "", "", "merge stopped after "
                         f"{s['merge']['wall_s']} s; make-part took {s['make_part']['wall_s']} s"))
            continue
        if "sum_rss_peak_MB" in s:
            extra = f"{s['processes']} processes, {s['at_once']} at once; sum of RSS peak {s['sum_rss_peak_MB']} MB"
        if len(s.get("wall_s_runs", [])) > 1:
            extra = (extra + "; " if extra else "") + f"runs: {s['wall_s_runs']}"
        rows.append((f"  reference: {k}", _median(s), s.get("peak_rss_MB", "-"), extra))
    t = r["total"]
    rows.append(("reference total (text-dedup pipeline)", _median(t), t["peak_rss_MB"],
                 f"runs: {t['wall_s_runs']}" if len(t.get("wall_s_runs", [])) > 1 else ""))
    out = [f"{'step':<42} {'wall s':>8} {'peak RSS MB':>12}  note"]
    out += [f"{a:<42} {b:>8} {c:>12}  {d}" for a, b, c, d in rows]
    a = entry["analysis"]

    def line(title, c):
        return (f"{title}: A={c['A']} {c['A_bytes']:,} B, B={c['B']} {c['B_bytes']:,} B, both {c['intersection_bytes']:,} B, "
                f"A-B {c['A_not_B_bytes']:,} B in {c['A_not_B_runs']:,} runs, B-A {c['B_not_A_bytes']:,} B in {c['B_not_A_runs']:,} runs")
    out.append(line("coverage (all occurrences)", a["coverage_all_occurrences"]))
    for k, v in a["coverage_all_occurrences"]["A_not_B_breakdown"].items():
        out.append(f"    {k}: {v['bytes']:,} B, {v['runs']:,} runs")
    out.append(line("removal", a["removal"]))
    for k, v in a["removal"]["A_not_B_breakdown"].items():
        out.append(f"    {k}: {v['bytes']:,} B, {v['runs']:,} runs")
    for k, c in a["checks"].items():
        out.append(f"check {k}: A-B {c['A_not_B_bytes']:,} B, B-A {c['B_not_A_bytes']:,} B")
    return "\n".join(out)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_step_write":
        return step_write(sys.argv[2], sys.argv[3])
    if len(sys.argv) > 1 and sys.argv[1] == "_step_restore":
        return step_restore(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", nargs="?", default=None, help="JSONL with a 'text' field (default: the 92 MB corpus)")
    ap.add_argument("--first-mb", type=float, default=0,
                    help="instead: the first N MB of text of benchmarks/data/synthetic_1000000.jsonl")
    ap.add_argument("--min-length", "-L", type=int, default=100)
    ap.add_argument("--bin", default=DEFAULT_BIN, help="the reference binary (setup_substrings_reference.sh)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="the reference's --num-threads")
    ap.add_argument("--sa", choices=["make", "parts", "parts-then-make"], default="make",
                    help="suffix array: upstream's single `make`, or text-dedup's way (scripts/make_suffix_array.py: "
                         "make-part + merge), or that way first and `make` when the merge times out")
    ap.add_argument("--merge-timeout", type=float, default=None, help="seconds the merge may take (parts*)")
    ap.add_argument("--sa-parallel", type=int, default=os.cpu_count(), help="make-part processes at a time")
    ap.add_argument("--repeat", type=int, default=1, help="time both tools this many times (the table: median)")
    ap.add_argument("--samples", type=int, default=200, help="ranges of each tool checked by direct search")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default=None, help="work folder (default benchmarks/out/substrings_reference_work/NAME)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (suffix array, caches, outputs)")
    a = ap.parse_args()
    inp = cut_first_mb(a.first_mb) if a.first_mb else (a.input or corpus())
    if not os.path.exists(a.bin):
        raise SystemExit(f"no reference binary at {a.bin}: run bash benchmarks/setup_substrings_reference.sh")
    L = a.min_length
    name = f"{os.path.splitext(os.path.basename(inp))[0]}_L{L}"
    work = a.work or os.path.join(OUT, "substrings_reference_work", name)
    os.makedirs(work, exist_ok=True)
    print(f"input {inp} ({os.path.getsize(inp) / 1e6:.1f} MB), L={L}, work {work}", flush=True)
    entry = {"input": os.path.relpath(inp, ROOT), "input_MB": round(os.path.getsize(inp) / 1e6, 1), "L": L,
             "cpus": os.cpu_count(), "reference_threads": a.threads, "date": time.strftime("%Y-%m-%d %H:%M")}
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src"], capture_output=True,
                               text=True).stdout.strip()
        entry["neardup_commit"] = head + (" (src/ modified)" if dirty else "")
    except OSError:
        pass
    commit = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(a.bin))), "UPSTREAM_COMMIT")
    if os.path.exists(commit):
        entry["reference_commit"] = open(commit).read().strip()
    runs = []
    for _ in range(a.repeat):
        runs.append(run_neardup(inp, work, L))
        print("neardup", json.dumps(runs[-1]), flush=True)
    entry["neardup"] = dict(runs[0], wall_s_runs=[x["wall_s"] for x in runs],
                            peak_rss_MB_runs=[x["peak_rss_MB"] for x in runs])
    sa = a.sa
    refs = []
    for _ in range(a.repeat):
        refs.append(run_reference(inp, work, L, a.bin, a.threads, a.sa_parallel, sa, a.merge_timeout))
        print("reference", json.dumps(refs[-1]), flush=True)
        if "total" not in refs[-1]:
            raise SystemExit("the reference did not finish: " + json.dumps(refs[-1]))
        sa = "parts" if "merge" in refs[-1]["steps"] else "make"    # repeats: what worked, no second attempt
    entry["reference"] = refs[0]
    for k, st in refs[0]["steps"].items():
        if k != "parts_attempt":
            st["wall_s_runs"] = [r["steps"][k]["wall_s"] for r in refs]
    refs[0]["total"]["wall_s_runs"] = [r["total"]["wall_s"] for r in refs]
    entry["analysis"] = analyse(inp, work, L, a.samples, a.seed)
    results = {}
    if os.path.exists(RESULT):
        with open(RESULT, encoding="utf-8") as fh:
            results = json.load(fh)
    results[name] = entry
    os.makedirs(OUT, exist_ok=True)
    with open(RESULT, "w", encoding="utf-8") as fh:
        json.dump(results, fh, indent=2, ensure_ascii=False)
    print(_fmt_table(entry))
    print("wrote", RESULT)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
