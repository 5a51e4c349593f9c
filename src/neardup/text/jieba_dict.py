"""cppjieba's dictionary, HMM, IDF table and stop words as a few flat arrays for the compiled
segmenter (:mod:`neardup.kernels.segment`), built once from jieba's files and cached.

The Python port (:mod:`neardup.sketches.compat.yanyiwu`) holds the same data as Python dicts:
about 150 MB and 1 s per process. Here one trie over every word of the three tables (jieba's
``dict.txt``, its ``analyse/idf.txt``, cppjieba's stop words) is stored as arrays in CSR form:

* node 0 is the root; the children of node v are ``child_cp[child_start[v]:child_start[v+1]]``
  (code points, sorted, searched by bisection) and ``child_node[...]``;
* per node: ``word_weight`` (log(freq / Σ freq) of a dictionary word, NaN for a node that is only a
  prefix or a word of the other tables), ``idf`` (NaN when absent), ``stop`` (a stop word);
* the HMM: start (4), transitions (4 × 4), emissions for the Basic Multilingual Plane (65,536 × 4,
  rounded to 6 decimals as cppjieba's model file; MIN_DOUBLE where jieba has none — every jieba
  emission is in the BMP);
* scalars: the smallest word weight and cppjieba's mean IDF.

Walking extra nodes (prefixes of IDF or stop words) never changes a segmentation: the maximum-
probability route uses only nodes with a word weight, and a node that is no dictionary prefix
has none below it. Memory: about 35 MB of arrays (memory-mapped from the cache), loaded in
about 20 ms; the first build reads jieba's files in about 2 s. The jieba-rs segmenter
(:func:`neardup.kernels.segment.rs_cut`) also reads ``log_freq`` (ln freq of each dict.txt word),
the unrounded emissions, and builds the edge hash table (17 MB) on first use.
"""
from __future__ import annotations

import ast
import hashlib
import math
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._arrays import utf8_buffer
from ..errors import InputFormatError
from ..kernels.jieba_analyse import keywords_batch
from ..kernels.segment import ascii_pairs, cut_batch, edge_table
from .dictionaries import file_keys, jieba_median, load_idf, load_stop_words, load_user_dict

BUILD = 5                     # bump when the layout or the rules change (a new cache file)
STOP_WORDS_FILE = "cppjieba_stop_words.utf8"   # in neardup/data: cppjieba's stop words (yanyiwu's keywords)
MIN_DOUBLE = -3.14e100        # cppjieba's "log(0)"
_FIELDS = ("child_start", "child_cp", "child_node", "word_weight", "solo", "idf", "stop", "hmm_start", "hmm_trans",
           "hmm_emit", "log_freq", "hmm_emit_full")
_lock = threading.Lock()
_loaded: dict[tuple, JiebaTables] = {}


@dataclass(frozen=True)
class JiebaTables:
    child_start: np.ndarray   # int64 (nodes + 1)
    child_cp: np.ndarray      # int32
    child_node: np.ndarray    # int32
    word_weight: np.ndarray   # float64 per node
    solo: np.ndarray          # bool per node: a one-character word of the user dictionary (kept out of the HMM)
    idf: np.ndarray           # float64 per node
    stop: np.ndarray          # bool per node
    hmm_start: np.ndarray     # float64 (4,)
    hmm_trans: np.ndarray     # float64 (4, 4)
    hmm_emit: np.ndarray      # float64 (65536, 4)
    log_freq: np.ndarray      # float64 per node: ln(freq) of a word of jieba's dict.txt, NaN for other nodes
    hmm_emit_full: np.ndarray  # float64 (65536, 4): jieba's emissions unrounded (jieba / jieba-rs's model)
    min_weight: float
    idf_average: float
    log_total: float          # ln(Σ freq) over dict.txt's distinct words (a repeated word: its last line)
    log_total_lines: float    # ln(Σ freq) over every line of dict.txt (Python jieba's ``total``)
    idf_median: float         # jieba.analyse's ``median_idf`` of the IDF table (:func:`jieba_median`)

    @property
    def root(self) -> np.ndarray:
        """The root's child for every BMP code point (−1: none), int32 (256 KB), made on first use."""
        r = self.__dict__.get("_root")
        if r is None:
            r = np.full(65536, -1, dtype=np.int32)
            lo, hi = int(self.child_start[0]), int(self.child_start[1])
            cps = self.child_cp[lo:hi]
            bmp = cps < 65536
            r[cps[bmp]] = self.child_node[lo:hi][bmp]
            object.__setattr__(self, "_root", r)
        return r

    @property
    def edges(self) -> tuple:
        """Every trie edge in one hash table and its filter (:func:`neardup.kernels.segment.edge_table`):
        17 MB, built on first use."""
        e = self.__dict__.get("_edges")
        if e is None:
            e = edge_table(self.child_start, self.child_cp, self.child_node)
            object.__setattr__(self, "_edges", e)
        return e

    def rs_args(self) -> tuple:
        """The tables the jieba-rs cut takes, in :func:`neardup.kernels.segment.rs_cut`'s order (after
        the code points): root, edges, ASCII pairs, ln freq, ln Σfreq, the HMM with unrounded emissions."""
        return (self.root, *self.edges, self.ascii_pairs, self.log_freq, self.log_total, self.hmm_start,
                self.hmm_trans, self.hmm_emit_full)

    @property
    def ascii_pairs(self) -> np.ndarray:
        """:func:`neardup.kernels.segment.ascii_pairs` (16 KB), made on first use."""
        p = self.__dict__.get("_pairs")
        if p is None:
            p = ascii_pairs(self.child_start, self.child_cp, self.child_node, self.log_freq)
            object.__setattr__(self, "_pairs", p)
        return p

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in _FIELDS)


def _sources() -> list[Path]:
    import jieba  # noqa: PLC0415  (its files only; jieba is not initialised)

    root = Path(jieba.__file__).parent

    return [root / "dict.txt", root / "analyse" / "idf.txt", root / "finalseg" / "prob_emit.py",
            root / "finalseg" / "prob_start.py", root / "finalseg" / "prob_trans.py",
            Path(__file__).resolve().parents[1] / "data" / STOP_WORDS_FILE]


def cache_folder() -> Path:
    """``$NEARDUP_CACHE_DIR``, else ``$XDG_CACHE_HOME/neardup`` (``~/.cache/neardup``), else a per-user
    folder in the temporary directory when those cannot be written."""
    given = os.environ.get("NEARDUP_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "neardup"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"neardup-cache-{uid}"


def _key(files: tuple) -> str:
    h = hashlib.sha256(f"jieba-tables {BUILD}".encode())
    for p in _sources():
        h.update(p.read_bytes())
    for kind, sha in zip(("user_dict", "idf", "stop_words"), files):
        h.update(f"{kind}={sha}".encode())
    return h.hexdigest()[:20]


def _file_shas(user_dict, idf, stop_words) -> tuple:
    keys = file_keys(idf, user_dict, stop_words)
    return tuple(keys.get(f"{name}_sha256") for name in ("user_dict", "idf", "stop_words"))


def user_words(units: list[tuple[str, float]], total: float, user_dict) -> list[tuple[str, float]]:
    """(word, weight) of each line of a user dictionary, as cppjieba's ``DictTrie`` weighs it:
    ``word freq tag`` → log(freq / Σ freq), ``word`` or ``word tag`` → the median weight of the
    main dictionary's ``units`` (the compiled tables and the Python port both take it from here)."""
    median = sorted(math.log(freq / total) for _, freq in units)[len(units) // 2]
    return [(word, math.log(int(second) / total) if third is not None else median)
            for word, second, third in load_user_dict(user_dict).entries]


def tables(user_dict=None, idf=None, stop_words=None) -> JiebaTables:
    """The tables, from the cache (built and saved there on first use). ``user_dict``, ``idf``,
    ``stop_words``: the user's files (:mod:`neardup.text.dictionaries`) in place of, or for
    ``user_dict`` on top of, cppjieba's; tables for other file contents are other cache entries."""
    files = (user_dict, idf, stop_words)
    shas = _file_shas(*files) if any(f is not None for f in files) else (None, None, None)
    t = _loaded.get(shas)
    if t is None:
        with _lock:
            t = _loaded.get(shas)
            if t is None:
                t = _loaded[shas] = _load_or_build(files, shas)
    return t


def _load_or_build(files: tuple = (None, None, None), shas: tuple = (None, None, None)) -> JiebaTables:
    path = cache_folder() / f"jieba-tables-{_key(shas)}.npz"
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {f: z[f] for f in _FIELDS}
            scal = z["scalars"]
        return JiebaTables(**arrays, min_weight=float(scal[0]), idf_average=float(scal[1]), log_total=float(scal[2]),
                           log_total_lines=float(scal[3]), idf_median=float(scal[4]))
    except (OSError, KeyError, ValueError):
        pass
    t = build(*files)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.savez(fh, **{f: getattr(t, f) for f in _FIELDS},
                     scalars=np.array([t.min_weight, t.idf_average, t.log_total, t.log_total_lines, t.idf_median],
                                      dtype=np.float64))
        os.replace(tmp, path)
    except OSError:
        pass                      # no cache: built again by the next process
    return t


def build(user_dict=None, idf=None, stop_words=None) -> JiebaTables:
    """The tables from jieba's files (the rules of :class:`neardup.sketches.compat.yanyiwu._Resources`),
    with the user's files as cppjieba reads them (``DictTrie``, ``KeywordExtractor``):

    * user dictionary: ``word`` or ``word tag`` gets the median word weight of the main dictionary,
      ``word freq tag`` gets log(freq / Σ freq) (Σ over the main dictionary); a user word replaces a
      dictionary word's weight; one-character user words are marked ``solo``; the smallest weight
      (of unknown characters) stays the main dictionary's;
    * IDF: every line of the file; unknown words get its mean (Σ idf / lines read), or with
      ``jieba.analyse``'s rule its median (``idf_median``, over every distinct word of the file);
    * stop words: the file's lines in place of cppjieba's list."""
    from jieba.finalseg import prob_emit, prob_start, prob_trans  # noqa: PLC0415  (jieba's HMM tables only; importing jieba costs 130 ms, measured, and Chinese runs alone need them)

    emit, start, trans = prob_emit.P, prob_start.P, prob_trans.P
    dict_path, idf_path, *_, stop_path = _sources()
    units, total = read_dictionary(dict_path)
    if idf is None:
        idf_words, idf_average = read_idf(idf_path)
    else:
        f = load_idf(idf)
        idf_words, idf_average = dict(zip(f.words, f.values.tolist())), f.mean
    idf_median = jieba_median(load_idf(idf_path if idf is None else idf).values)
    ids: dict[str, int] = {"": 0}
    parent, cps = [-1], [0]

    def node(word: str) -> int:
        v = ids.get(word)
        if v is not None:
            return v
        p = node(word[:-1]) if len(word) > 1 else 0
        v = ids[word] = len(parent)
        parent.append(p)
        cps.append(ord(word[-1]))
        return v

    weights: dict[int, float] = {}
    min_w = math.inf
    last_freq: dict[int, float] = {}        # jieba-rs: a repeated word keeps its last frequency
    for word, freq in units:
        w = math.log(freq / total)
        min_w = min(min_w, w)
        weights[node(word)] = w
        last_freq[node(word)] = freq
    solo_nodes = []
    if user_dict is not None:
        for word, w in user_words(units, total, user_dict):
            weights[node(word)] = w
            if len(word) == 1:
                solo_nodes.append(node(word))
    idf = {node(w): v for w, v in idf_words.items() if w}
    stop_set = read_stop_words(stop_path) if stop_words is None else load_stop_words(stop_words).words
    stops = [node(w) for w in sorted(stop_set)]
    n = len(parent)
    # renumber in depth-first (lexicographic) order: a path from the root reads nearby memory
    rank = np.empty(n, dtype=np.int64)
    rank[[ids[w] for w in sorted(ids)]] = np.arange(n)
    par = np.full(n, -1, dtype=np.int64)
    par[rank[1:]] = rank[np.asarray(parent[1:], dtype=np.int64)]
    cp = np.zeros(n, dtype=np.int32)
    cp[rank] = np.asarray(cps, dtype=np.int32)
    weights = {int(rank[v]): w for v, w in weights.items()}
    log_freq = np.full(n, np.nan)
    log_freq[[int(rank[v]) for v in last_freq]] = [math.log(f) if f > 0 else -math.inf for f in last_freq.values()]
    log_total = math.log(sum(int(f) for f in last_freq.values()))
    idf = {int(rank[v]): w for v, w in idf.items()}
    stops = rank[np.asarray(stops, dtype=np.int64)] if stops else np.zeros(0, np.int64)
    solo = np.zeros(n, dtype=bool)
    solo[rank[np.asarray(solo_nodes, dtype=np.int64)]] = True
    kids = np.arange(1, n, dtype=np.int64)
    order = kids[np.lexsort((cp[kids], par[kids]))]
    child_start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(par[kids], minlength=n), out=child_start[1:])
    word_weight = np.full(n, np.nan)
    word_weight[list(weights)] = list(weights.values())
    idf_arr = np.full(n, np.nan)
    idf_arr[list(idf)] = list(idf.values())
    stop = np.zeros(n, dtype=bool)
    stop[stops] = True
    names = "BEMS"
    emit_arr = np.full((65536, 4), MIN_DOUBLE)
    emit_full = np.full((65536, 4), MIN_DOUBLE)
    for y, s in enumerate(names):
        for ch, p in emit[s].items():
            emit_arr[ord(ch), y] = float(f"{p:.6f}")
            emit_full[ord(ch), y] = p
    return JiebaTables(
        child_start=child_start, child_cp=cp[order].copy(), child_node=order.astype(np.int32),
        word_weight=word_weight, solo=solo, idf=idf_arr, stop=stop,
        hmm_start=np.array([start[s] for s in names], dtype=np.float64),
        hmm_trans=np.array([[trans[a].get(b, MIN_DOUBLE) for b in names] for a in names], dtype=np.float64),
        hmm_emit=emit_arr, log_freq=log_freq, hmm_emit_full=emit_full, min_weight=float(min_w),
        idf_average=idf_average, log_total=log_total, log_total_lines=math.log(total), idf_median=idf_median)


# -- jieba's files, read by cppjieba's rules (also the Python port's reader) ------------------------
def read_dictionary(path) -> tuple[list[tuple[str, float]], float]:
    """(word, frequency) of each line of jieba's ``dict.txt`` (``word freq tag``), and their sum."""
    units, total = [], 0.0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ")
            if len(parts) != 3:
                raise InputFormatError(f"{path}:{n}: expected 'word frequency tag', got {line.rstrip()!r}")
            freq = float(parts[1])
            units.append((parts[0], freq))
            total += freq
    return units, total


def read_idf(path) -> tuple[dict[str, float], float]:
    """cppjieba's IDF table from jieba's ``analyse/idf.txt``: one-character words are not in
    cppjieba's ``idf.utf8``; the mean is over that file's lines (a malformed line counts, with no
    value), as cppjieba computes it."""
    idf: dict[str, float] = {}
    total, lines = 0.0, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split(" ")
            if len(parts) == 2 and len(parts[0]) == 1:
                continue
            lines += 1
            if len(parts) != 2:
                continue
            v = float(parts[1])
            idf[parts[0]] = v
            total += v
    return idf, total / lines


def jieba_analyse_stop_words() -> frozenset:
    """``jieba.analyse``'s ``KeywordExtractor.STOP_WORDS``, read from jieba's source as a literal (importing
    ``jieba.analyse`` costs 1.3 s: it loads the IDF table and the POS tagger)."""
    import jieba  # noqa: PLC0415  (its files only; jieba is not initialised)

    tree = ast.parse((Path(jieba.__file__).parent / "analyse" / "tfidf.py").read_text("utf-8"))
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == "KeywordExtractor":
            for node in cls.body:
                if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["STOP_WORDS"]
                        and isinstance(node.value, ast.Call) and len(node.value.args) == 1):
                    return frozenset(ast.literal_eval(node.value.args[0]))
    raise RuntimeError("jieba/analyse/tfidf.py: KeywordExtractor.STOP_WORDS is not a set literal in this jieba")


def read_stop_words(path) -> frozenset:
    """cppjieba's stop words: whole lines, no trimming."""
    return frozenset(Path(path).read_bytes().decode("utf-8").split("\n")) - {""}


def utf8_batch(texts, errors: str = "surrogatepass") -> tuple[np.ndarray, np.ndarray, bytes]:
    """(buf, offsets, the bytes) of texts (str, or UTF-8 bytes) packed for the kernels."""
    blobs = [(x if isinstance(x, str) else bytes(x).decode("utf-8")).encode("utf-8", errors) for x in texts]
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    if blobs:
        np.cumsum([len(b) for b in blobs], out=offsets[1:])
    data = b"".join(blobs)
    return utf8_buffer(data), offsets, data


def cut_compiled_batch(texts, user_dict=None, errors: str = "surrogatepass") -> list[list[str]]:
    """:func:`cut` of each text by the compiled segmenter (``errors``: for a lone surrogate)."""
    t = tables(user_dict)
    buf, offsets, data = utf8_batch(texts, errors)
    ends, woff = cut_batch(buf, offsets, t.root, t.child_start, t.child_cp, t.child_node, t.word_weight, t.solo,
                           t.min_weight, t.hmm_start, t.hmm_trans, t.hmm_emit)
    ends = ends.tolist()
    out = []
    for d in range(offsets.shape[0] - 1):
        words, a = [], int(offsets[d])
        for b in ends[woff[d]:woff[d + 1]]:
            words.append(data[a:b].decode("utf-8", "surrogatepass"))
            a = b
        out.append(words)
    return out


# -- jieba.analyse's keywords (--compat jieba-analyse; neardup.sketches.compat.jieba_analyse) --------------
_analyse_lock = threading.Lock()
_analyse: dict[tuple, tuple] = {}


def analyse_args(stop_words=None, idf=None) -> tuple:
    """The arguments :mod:`neardup.kernels.jieba_analyse` takes after the text and topK: the cut's tables
    with Python jieba's ln Σ freq, the IDF per trie node (jieba's, or the file ``idf``'s as
    ``set_idf_path`` reads it) and its :func:`jieba_median`, jieba's stop words as keys, and the trie's
    stop marks (the words of the file ``stop_words``, as ``set_stop_words``) with whether to use them."""
    key = (None if stop_words is None else load_stop_words(stop_words).sha256,
           None if idf is None else load_idf(idf).sha256)
    args = _analyse.get(key)
    if args is None:
        with _analyse_lock:
            args = _analyse.get(key)
            if args is None:
                t = tables(idf=idf, stop_words=stop_words)
                rs = list(t.rs_args())
                rs[7] = t.log_total_lines
                args = _analyse[key] = (*rs, t.idf, t.idf_median, _stop_keys(jieba_analyse_stop_words()), t.stop,
                                        stop_words is not None)
    return args


def _stop_keys(words) -> np.ndarray:
    """Each stop word (ASCII, at most 8 bytes) packed big-endian into a uint64, sorted."""
    keys = []
    for w in words:
        if not (w.isascii() and 0 < len(w) <= 8 and w == w.lower()):
            raise RuntimeError(f"jieba's stop word {w!r} is not lowercase ASCII of at most 8 characters, which the "
                               "compiled jieba-analyse mode assumes")
        keys.append(int.from_bytes(w.encode("ascii"), "big"))
    return np.array(sorted(keys), dtype=np.uint64)


def analyse_keywords(texts) -> list[list[str]]:
    """Every distinct keyword of each text (the words of ``jieba.analyse.extract_tags(text, topK=None)``;
    what ``neardup idf fit --compat jieba-analyse`` counts), compiled over the batch (a lone surrogate
    becomes '?': it could not be written to a table)."""
    buf, offsets, data = utf8_batch(texts, errors="replace")
    s, e, off = keywords_batch(buf, offsets, *analyse_args())
    s, e, off = s.tolist(), e.tolist(), off.tolist()
    return [[data[s[k]:e[k]].decode("utf-8") for k in range(off[d], off[d + 1])] for d in range(len(off) - 1)]
