"""yanyiwu/simhash-compatible Chinese SimHash (cppjieba keywords + Jenkins hash).

Reference: github.com/yanyiwu/simhash (``Simhasher::make``) on github.com/yanyiwu/cppjieba
(``KeywordExtractor``, ``MixSegment``). For a text and ``top_n``:

1. segment it as cppjieba's MixSegment does (see :func:`cut`);
2. drop one-character words and cppjieba's stop words; weight of word w =
   count(w) × idf(w), idf from jieba's ``analyse/idf.txt``; a word without an idf gets the
   mean idf of cppjieba's ``idf.utf8`` (11.7392…);
3. keep the ``top_n`` heaviest, in the order libstdc++'s ``std::partial_sort`` leaves them
   (from the byte-ordered ``std::map``), so ties come out as in the C++ library;
4. h_k = Jenkins lookup3 64-bit hash of the UTF-8 keyword, seed 0
   (:mod:`neardup.kernels.jenkins`); fingerprint bit j = 1 iff Σ_k w_k·(±1 by bit j of h_k) > 0
   (:func:`neardup.kernels.simhash.fold_one`, the rule ``Simhasher::make`` uses).

cppjieba's dictionaries are jieba's (checked against cppjieba's files):
``jieba.dict.utf8`` is byte-identical to jieba's ``dict.txt``; ``idf.utf8`` is jieba's
``idf.txt`` without its one-character entries (so its mean is taken over those lines only);
``hmm_model.utf8`` is jieba's HMM with emission log-probabilities printed to 6 decimals.
The stop words are cppjieba's ``dict/stop_words.utf8`` (MIT, shipped in ``neardup/data``).
Dictionaries load on first use (about 1 s, ~150 MB) and are cached for the process.

Python ``jieba.cut`` and ``rjieba`` are not used: they pre-split text with regular
expressions, keep runs of one-character dictionary words apart and treat digits and
punctuation differently, which changes about half of the fingerprints of real text.
"""
from __future__ import annotations

import math
import os
import threading
from pathlib import Path

import numpy as np

from neardup.kernels.jenkins import jenkins64_batch, jenkins64_bytes
from neardup.kernels.segment import partial_sort, yanyiwu_batch, yanyiwu_batch_serial
from neardup.kernels.simhash import fold_one
from neardup.text.dictionaries import load_idf, load_stop_words
from neardup.text.jieba_dict import _file_shas, read_dictionary, read_idf, read_stop_words, tables, user_words

from ..._arrays import utf8_buffer
from ...errors import ConfigError
from ...text.jieba_dict import STOP_WORDS_FILE, cut_compiled_batch
from ...text.jieba_dict import utf8_batch as _utf8_batch

__all__ = [
    "cut",
    "extract_keywords",
    "keyword_hashes",
    "simhash",
    "simhash_batch",
    "simhash_batch_sizes",
    "simhash_reference",
    "top_n_for_length",
    "is_equal",
    "jenkins64",
]

MIN_DOUBLE = -3.14e100  # cppjieba's "log(0)"
MAX_WORD_LENGTH = 512  # cppjieba's longest dictionary match, in characters
SEPARATORS = frozenset(" \t\n\uff0c\u3002")  # cppjieba SPECIAL_SEPARATORS: space, tab, LF, '，', '。'
B, E, M, S = 0, 1, 2, 3  # cppjieba HMM state order
# Batches of at most this many documents are signed on the calling thread, so that a process that
# forks later (a run signing its index's probe text before its workers start) never starts numba's
# OpenMP pool. Larger batches take the prange kernel, which numba compiles about 2× faster even on
# one thread (13.4 against 7.5 MB/s measured on the Chinese pages).
SERIAL_DOCS = 4

_ABSENT = object()
_lock = threading.Lock()
_res: dict[tuple, _Resources] = {}


class _Resources:
    """cppjieba's dictionary, HMM, idf table and stop words, rebuilt from jieba's files; the user's
    files (:mod:`neardup.text.dictionaries`) as cppjieba's ``DictTrie`` and ``KeywordExtractor`` read
    them (the rules are listed at :func:`neardup.text.jieba_dict.build`)."""

    def __init__(self, user_dict=None, idf=None, stop_words=None) -> None:
        import jieba  # noqa: PLC0415  (only the package files are read; jieba is not initialised)
        from jieba.finalseg import prob_emit, prob_start, prob_trans  # noqa: PLC0415  (jieba's HMM tables only; importing jieba costs 130 ms, measured, and Chinese runs alone need them)

        emit, start, trans = prob_emit.P, prob_start.P, prob_trans.P
        root = os.path.dirname(jieba.__file__)
        # --- MPSegment dictionary: weight = log(freq / Σ freq); prefixes map to None (trie nodes)
        units, total = read_dictionary(os.path.join(root, "dict.txt"))
        trie: dict[str, float | None] = {}
        min_w = math.inf
        for word, freq in units:
            w = math.log(freq / total)
            min_w = min(min_w, w)
            for k in range(1, len(word)):
                trie.setdefault(word[:k], None)
            trie[word] = w
        self.solo: set[str] = set()
        if user_dict is not None:
            for word, w in user_words(units, total, user_dict):
                for k in range(1, len(word)):
                    trie.setdefault(word[:k], None)
                trie[word] = w
                if len(word) == 1:
                    self.solo.add(word)
        self.trie = trie
        self.min_weight = min_w
        # --- HMM (B, E, M, S); cppjieba's model file rounds emissions to 6 decimals
        names = "BEMS"
        self.start = [start[s] for s in names]
        self.trans = [[trans[a].get(b, MIN_DOUBLE) for b in names] for a in names]
        self.emit = [{ch: float(f"{p:.6f}") for ch, p in emit[s].items()} for s in names]
        # --- idf: cppjieba's idf.utf8 = jieba's idf.txt minus one-character words
        if idf is None:
            self.idf, self.idf_average = read_idf(os.path.join(root, "analyse", "idf.txt"))
        else:
            f = load_idf(idf)
            self.idf, self.idf_average = dict(zip(f.words, f.values.tolist())), f.mean
        # --- stop words (cppjieba reads whole lines, no trimming)
        self.stop_words = (read_stop_words(Path(__file__).resolve().parents[2] / "data" / STOP_WORDS_FILE)
                           if stop_words is None else load_stop_words(stop_words).words)


def _resources(user_dict=None, idf=None, stop_words=None) -> _Resources:
    key = _file_shas(user_dict, idf, stop_words)
    r = _res.get(key)
    if r is None:
        with _lock:
            r = _res.get(key)
            if r is None:
                r = _res[key] = _Resources(user_dict, idf, stop_words)
    return r


# --------------------------------------------------------------------------- segmentation
def _mp_cut(r: _Resources, text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """cppjieba MPSegment: max Σ log P(word) over the dictionary DAG of ``text[lo:hi]``.

    A character that is not a dictionary word costs the dictionary's minimum weight; among
    equal scores the shortest word wins (the first strictly better candidate)."""
    trie, min_w = r.trie, r.min_weight
    n = hi - lo
    best = [0.0] * (n + 1)  # best[k]: score of text[lo+k:hi]; best[n] = 0
    choice = [0] * n  # choice[k]: end (exclusive, relative) of the word starting at k
    for k in range(n - 1, -1, -1):
        i = lo + k
        w = trie.get(text[i], _ABSENT)
        bw = best[k + 1] + (min_w if w is None or w is _ABSENT else w)
        bj = k + 1
        if w is not _ABSENT:  # a trie node: longer dictionary words may start here
            for m in range(k + 2, min(n, k + MAX_WORD_LENGTH) + 1):
                w = trie.get(text[i:lo + m], _ABSENT)
                if w is _ABSENT:
                    break
                if w is not None:
                    val = best[m] + w
                    if val > bw:
                        bw, bj = val, m
        best[k] = bw
        choice[k] = bj
    out = []
    k = 0
    while k < n:
        out.append((lo + k, lo + choice[k]))
        k = choice[k]
    return out


def _viterbi(r: _Resources, text: str, lo: int, hi: int) -> list[int]:
    """cppjieba HMMSegment::Viterbi over ``text[lo:hi]``: the B/E/M/S state of each character."""
    emit, trans = r.emit, r.trans
    n = hi - lo
    weight = [[0.0] * 4 for _ in range(n)]
    path = [[-1] * 4 for _ in range(n)]
    ch = text[lo]
    for y in range(4):
        weight[0][y] = r.start[y] + emit[y].get(ch, MIN_DOUBLE)
    for x in range(1, n):
        ch = text[lo + x]
        prev = weight[x - 1]
        for y in range(4):
            e = emit[y].get(ch, MIN_DOUBLE)
            best, arg = MIN_DOUBLE, E
            for py in range(4):
                t = prev[py] + trans[py][y] + e
                if t > best:
                    best, arg = t, py
            weight[x][y] = best
            path[x][y] = arg
    state = E if weight[n - 1][E] >= weight[n - 1][S] else S
    states = [0] * n
    for x in range(n - 1, -1, -1):
        states[x] = state
        state = path[x][state]
    return states


def _is_letter(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z")


def _hmm_cut(r: _Resources, text: str, lo: int, hi: int, out: list[tuple[int, int]]) -> None:
    """cppjieba HMMSegment::Cut: ASCII runs by rule (letter[alnum]*, digit[digit.]*, else one
    character); each maximal non-ASCII run by Viterbi, a word ending at every E or S state."""

    def hmm(a: int, b: int) -> None:
        start = a
        for x, st in enumerate(_viterbi(r, text, a, b)):
            if st == E or st == S:
                out.append((start, a + x + 1))
                start = a + x + 1

    left = i = lo
    while i < hi:
        c = text[i]
        if ord(c) < 0x80:
            if left != i:
                hmm(left, i)
            j = i + 1
            if _is_letter(c):
                while j < hi and (_is_letter(text[j]) or "0" <= text[j] <= "9"):
                    j += 1
            elif "0" <= c <= "9":
                while j < hi and ("0" <= text[j] <= "9" or text[j] == "."):
                    j += 1
            out.append((i, j))
            left = i = j
        else:
            i += 1
    if left != hi:
        hmm(left, hi)


def _mix_cut(r: _Resources, text: str, lo: int, hi: int, out: list[tuple[int, int]]) -> None:
    """cppjieba MixSegment on one pre-filtered range: MP words, runs of single characters
    re-cut by the HMM (a one-character word of the user dictionary stays a word)."""
    words = _mp_cut(r, text, lo, hi)
    k = 0
    while k < len(words):
        a, b = words[k]
        if b - a > 1 or text[a] in r.solo:
            out.append((a, b))
            k += 1
            continue
        m = k
        while m < len(words) and words[m][1] - words[m][0] == 1 and text[words[m][0]] not in r.solo:
            m += 1
        _hmm_cut(r, text, a, words[m - 1][1], out)
        k = m


def cut(text: str, user_dict=None) -> list[str]:
    """Words of ``text`` as cppjieba's ``MixSegment::Cut`` (HMM on) gives them: split at the
    separators (each its own word), then :func:`_mix_cut` on each piece."""
    r = _resources(user_dict)
    spans: list[tuple[int, int]] = []
    lo = 0
    n = len(text)
    while lo < n:
        hi = lo
        while hi < n and text[hi] not in SEPARATORS:
            hi += 1
        if hi == lo:
            hi = lo + 1
        _mix_cut(r, text, lo, hi, spans)
        lo = hi
    return [text[a:b] for a, b in spans]


# --------------------------------------------------------------------------- keywords
def extract_keywords(text: str | bytes, top_n: int, user_dict=None, idf=None,
                     stop_words=None) -> list[tuple[str, float]]:
    """cppjieba ``KeywordExtractor::Extract``: the ``top_n`` (word, count × idf) pairs."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    r = _resources(user_dict, idf, stop_words)
    counts: dict[str, int] = {}
    for w in cut(text, user_dict):
        if len(w) == 1 or w in r.stop_words:
            continue
        counts[w] = counts.get(w, 0) + 1
    idf, avg = r.idf, r.idf_average
    # std::map order (byte-wise UTF-8), then count × idf as cppjieba multiplies it
    words = sorted(counts, key=lambda w: w.encode("utf-8"))
    items = [(w, float(counts[w]) * idf.get(w, avg)) for w in words]
    top = min(int(top_n), len(items))

    order = partial_sort(np.array([w for _, w in items], dtype=np.float64), top)
    return [items[i] for i in order.tolist()]


def keyword_hashes(text: str | bytes, top_n: int) -> list[tuple[int, float]]:
    """``Simhasher::make`` (list form): (Jenkins 64-bit hash of the UTF-8 keyword, weight)."""
    kws = extract_keywords(text, top_n)
    hashes, _ = _hash_keywords(kws)
    return [(int(h), w) for h, (_, w) in zip(hashes, kws)]


def _hash_keywords(kws: list[tuple[str, float]]) -> tuple[np.ndarray, np.ndarray]:
    blobs = [w.encode("utf-8") for w, _ in kws]
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in blobs]) if blobs else []
    buf = utf8_buffer(blobs)
    hashes = jenkins64_batch(buf, offsets, np.uint64(0))
    weights = np.array([w for _, w in kws], dtype=np.float64)
    return hashes, weights


def simhash_reference(text: str | bytes, top_n: int, **files) -> int:
    """yanyiwu/simhash ``Simhasher::make(text, topN, uint64&)`` by this module's Python port (the
    reference of the compiled :func:`simhash_batch`); ``files``: ``user_dict``, ``idf``,
    ``stop_words`` paths, as for :func:`simhash_batch`."""
    hashes, weights = _hash_keywords(extract_keywords(text, top_n, **files))
    return int(fold_one(hashes, weights, 0, hashes.shape[0]))


def simhash(text: str | bytes, top_n: int) -> int:
    """yanyiwu/simhash ``Simhasher::make(text, topN, uint64&)``: the 64-bit fingerprint (compiled)."""
    return int(simhash_batch([text], top_n)[0])


def simhash_batch(texts, top_n: int | None = None, *, user_dict=None, idf=None, stop_words=None) -> np.ndarray:
    """Fingerprints of a batch of texts (str, or UTF-8 bytes) by the compiled segmenter and keyword
    extractor (:mod:`neardup.kernels.segment`, on all cores); ``top_n`` None: yanyiwu's rule by
    length (:func:`top_n_for_length`). The same values as :func:`simhash_reference`.

    ``user_dict``, ``idf``, ``stop_words``: paths of the user's files (jieba's formats, see
    :mod:`neardup.text.dictionaries`), as cppjieba's ``KeywordExtractor`` takes them: words added to
    the dictionary, and an IDF table and stop-word list in place of cppjieba's."""
    return simhash_batch_sizes(texts, top_n, user_dict=user_dict, idf=idf, stop_words=stop_words)[0]


def simhash_batch_sizes(texts, top_n: int | None = None, *, user_dict=None, idf=None,
                        stop_words=None) -> tuple[np.ndarray, np.ndarray]:
    """(fingerprints, distinct keywords of each text); a text without keywords has fingerprint 0."""

    t = tables(user_dict, idf, stop_words)
    buf, offsets, _ = _utf8_batch(texts)
    top = 0 if top_n is None else int(top_n)
    if top_n is not None and top < 1:
        raise ConfigError(f"top_n must be at least 1, got {top_n}")
    kernel = yanyiwu_batch if offsets.shape[0] - 1 > SERIAL_DOCS else yanyiwu_batch_serial
    return kernel(buf, offsets, top, t.root, t.child_start, t.child_cp, t.child_node, t.word_weight, t.solo,
                         t.idf, t.stop, t.min_weight, t.idf_average, t.hmm_start, t.hmm_trans, t.hmm_emit)


def cut_compiled(text: str, user_dict=None) -> list[str]:
    """:func:`cut` by the compiled segmenter."""
    return cut_compiled_batch([text], user_dict)[0]


def top_n_for_length(n_bytes: int) -> int:
    """yanyiwu/simhash's ``getTopN``: max(5, min(200, n_bytes // 120)) keywords for a text of
    ``n_bytes`` UTF-8 bytes."""
    return max(5, min(200, int(n_bytes) // 120))


def is_equal(a: int, b: int, n: int = 3) -> bool:
    """``Simhasher::isEqual``: Hamming distance of the two 64-bit values ≤ ``n``."""
    return ((int(a) ^ int(b)) & 0xFFFFFFFFFFFFFFFF).bit_count() <= n


def jenkins64(data: bytes, seed: int = 0) -> int:
    """The 64-bit Jenkins (lookup3 ``hashlittle2``) hash yanyiwu/simhash gives keywords."""
    return jenkins64_bytes(bytes(data), seed)
