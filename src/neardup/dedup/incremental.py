"""``neardup dedup NEW... --index IDX``: deduplicate new rows within themselves *and* against every
document already in a persistent index, then add the kept new rows to it.

The rule. The index's documents take part in the clustering as rows placed before the new ones
("older"), with three constraints: they are never linked to each other (they were decided by earlier
runs), they win the keep policy against any new row (they have been published), and they are not
outputs. So a new row that is a near-duplicate of an indexed document is removed with that
document's id as its cluster (its record says ``"indexed": true``); new rows among themselves follow
the usual rules. With ``keep=first`` and clusters that do not bridge two earlier clusters, running
day 1 then day 2 keeps exactly the rows that one run over day 1 ∪ day 2 keeps.

Only the matched indexed documents are loaded (from the memory-mapped segments): memory grows with
the new rows and their matches, not with the index.

One unit, also after a crash. The outputs are staged in full first; then the kept rows become one
index segment, published by the manifest rename together with a *run record*: a key made from the
configuration and each input's name, size, modification time and content digest, and the segment's
name. Then the outputs are put in place. A rerun of the same command finds its run record: it
queries the index as it was before that segment, writes the same outputs, and adds nothing. So a
crash at any point leaves the old state or the new one, and rerunning completes it without adding a
document twice.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass

import numpy as np

from .._arrays import sorted_unique
from ..config import DedupConfig
from ..errors import ConfigError, InputFormatError
from ..index.disk import (
    AtLeast,
    AtMost,
    IndexConfigError,
    stored_kind,
)
from ..index.segments import remove_empty_index
from ..index.store import DuplicateKeyError
from ..io.outdir import STDOUT, _is_within
from .methods import method_of
from .resume import content_digest

RUNS_KEPT = 1000      # run records kept in the index's metadata (the newest)


def open_index(cfg: DedupConfig):
    """The run's index, created with the run's parameters when absent; an existing one must have
    been built with the same ones (:class:`~neardup.index.disk.IndexConfigError` names the first
    that differs). Held for writing until closed (one writer at a time)."""
    return create_index(cfg.index, cfg, exist_ok=True)


def create_index(path, cfg: DedupConfig, exist_ok: bool):
    """A folder index with the parameters of ``cfg`` (resolved); ``exist_ok``: open an existing one,
    which must match them."""
    kind, want = stored_kind(path), index_kind(cfg)
    if kind is not None and kind != want:
        flag = {"simhash": "--method simhash --bits K or --compat (the classic rule)",
                "simhash-verified": "--method simhash without --bits or --compat",
                "minhash": "--method minhash --metric jaccard", "containment": "--method minhash --metric containment"}
        raise IndexConfigError(f"{path} is a {kind} index; this run would need a {want} one (use another "
                               f"--index, or {flag.get(kind, kind)})")
    return method_of(cfg).create_index(path, cfg, exist_ok)


def index_kind(cfg: DedupConfig) -> str:
    """The kind of index a run uses (its method's: ``minhash``, ``containment``, ``simhash``,
    ``simhash-verified``)."""
    return method_of(cfg).index_kind(cfg)


def run_key(specs, cfg: DedupConfig) -> str:
    """What makes two runs "the same command": the algorithm's parameters and each input's name, size,
    modification time and the xxh3-128 digest of its whole content (as ``--resume`` binds its inputs):
    another file of the same name, size and time is another run, whose kept rows are added."""
    algo = {k: v for k, v in cfg.group("algorithm").items()}
    ins = []
    for s in specs:
        try:
            st = os.stat(s.path)
            ins.append([s.label, st.st_size, st.st_mtime_ns, content_digest(s.path)])
        except OSError:
            ins.append([s.label, None, None, None])
    blob = json.dumps({"algorithm": algo, "id_field": cfg.id_field, "text_field": cfg.text_field, "inputs": ins},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def is_key(v) -> bool:
    """Whether an id can be an index key: a string or a 64-bit integer."""
    return type(v) is str or type(v) is int and -2**63 <= v < 2**63


def check_ids(ids: list, place) -> None:
    """Index keys are strings or integers: other id types (floats, booleans, null, objects) are refused
    before anything is written, naming the first row."""
    for d, v in enumerate(ids):
        if not is_key(v):
            raise InputFormatError(f"{place(d)}: id {v!r} cannot name a document in the index (--index needs "
                                   "string or 64-bit integer ids)")


@dataclass
class IndexPart:
    """The indexed documents that new rows matched: their keys and signatures (prepended to the new
    rows for the clustering), and whether this run was already added (a rerun)."""
    keys: list
    values: np.ndarray
    rerun: bool
    documents: int
    sizes: np.ndarray | None = None     # their set sizes (a containment index)


def rerun_view(index, cfg: DedupConfig, key: str) -> tuple[bool, set]:
    """(rerun, hidden): whether this run's record is in the index, and the segments to hide so that
    the index reads as it was before that run added its rows. A run whose segment has since been
    merged cannot be reproduced: :class:`~neardup.errors.ConfigError`."""
    st = index.store
    runs = st.get_meta("runs") or {}
    rec = runs.get(key)
    if rec is None:
        return False, set()
    names = {s["dir"] for s in st.segments()}
    if rec["segment"] is not None and rec["segment"] not in names:
        raise ConfigError(f"{cfg.index}: this run was added to the index before (generation "
                          f"{rec['generation']}) and later merged with other segments, so its outputs "
                          "cannot be reproduced; use a new output folder and index, or change the inputs")
    return True, {rec["segment"]} - {None}


def accept_rule(cfg: DedupConfig):
    """The index's acceptance rule for this run: Jaccard estimate ≥ t (MinHash, verified SimHash's
    sketches), or Hamming distance ≤ k (classic SimHash)."""
    return AtLeast(float(cfg.threshold)) if cfg.bits is None else AtMost(int(cfg.bits))


def matched_rows(index, values: np.ndarray, empty: np.ndarray, cfg: DedupConfig):
    """(document ids, keys, signatures) of the indexed documents within the run's rule of any row of
    ``values`` (rows where ``empty`` is set are not probed), in document-id order (older first)."""
    classic = values.ndim == 1      # one word per document (classic SimHash; verified SimHash's rows hold sketches)
    if classic:
        values = values.reshape(-1, 1)
    _, ci, _, keys, ids, cvals = index._matches(values, empty, accept_rule(cfg))
    used = sorted_unique(ci)
    used = used[np.argsort(ids[used], kind="stable")]      # by document id: older documents first
    vals = cvals[used]
    if classic:
        vals = vals.reshape(-1)
    return ids[used], [keys[c] for c in used.tolist()], vals


def matched_sized(index, values: np.ndarray, empty: np.ndarray, cfg: DedupConfig, sizes=None):
    """:func:`matched_rows` for any index: a containment index is probed with the new rows' set
    ``sizes``, and its matches come back as (document ids, keys, signatures, set sizes); other
    indexes give None for the sizes."""
    if index.kind != "containment":
        return (*matched_rows(index, values, empty, cfg), None)
    ids, keys, vals = matched_rows(index, index._with_sizes(values, sizes)[0], empty, cfg)
    return ids, keys, vals[:, :-1], vals[:, -1].astype(np.int64)        # (signature slots, set size) rows


def matched(index, values: np.ndarray, empty: np.ndarray, cfg: DedupConfig, key: str, sizes=None) -> IndexPart:
    """Indexed documents within the run's threshold of any new row (a rerun hides its own segment);
    ``sizes``: the new rows' set sizes (a containment index, whose matches come with theirs)."""
    st = index.store
    rerun, hidden = rerun_view(index, cfg, key)
    st.hide(hidden)
    try:
        _, keys, vals, found_sizes = matched_sized(index, values, empty, cfg, sizes)
        documents = len(index)
    finally:
        st.hide(())
    return IndexPart(keys, vals, rerun, documents, found_sizes)


def add_kept(index, keys: list, values: np.ndarray, empty: np.ndarray, key: str, cfg: DedupConfig,
             sizes=None) -> dict:
    """The kept new rows as one segment, published with this run's record in the same manifest (all
    or nothing). A kept row whose id is already indexed (its text is not a near-duplicate of the
    indexed one, or it would not be kept) replaces that document with ``--replace`` and is refused
    otherwise (:class:`~neardup.index.store.DuplicateKeyError`, nothing added), as by ``index add``."""
    st = index.store
    if not cfg.replace and keys:
        taken = [k for k, d in zip(keys, st.lookup_many(keys).tolist()) if d >= 0]
        if taken:
            raise DuplicateKeyError(f"{cfg.index}: {len(taken)} kept rows have ids already in the index with "
                                    f"another text ({', '.join(map(repr, taken[:5]))}"
                                    f"{', …' if len(taken) > 5 else ''}); nothing was added and no output written "
                                    "— pass --replace to replace those documents")
    runs = dict(st.get_meta("runs") or {})
    gen = st.generation + 1

    def meta(segment):
        runs[key] = {"generation": gen, "segment": segment, "documents": len(keys)}
        for old in sorted(runs, key=lambda k: runs[k]["generation"])[: max(0, len(runs) - RUNS_KEPT)]:
            del runs[old]
        return {"runs": runs}

    vals = values.reshape(-1, 1) if values.ndim == 1 else values
    if index.kind == "containment":
        vals = index._with_sizes(values, sizes)[0]
    index._put(keys, vals, empty, replace=True, bulk=True, meta=meta)
    return {"added": len(keys), "segment": runs[key]["segment"], "generation": st.generation}


def check_index_path(index: str, outdir: str, specs) -> None:
    """``--index`` must not be the output folder, inside it or around it, nor an input."""
    ipath = os.path.realpath(index)
    if outdir != STDOUT:
        opath = os.path.realpath(outdir)
        if _is_within(ipath, opath) or _is_within(opath, ipath):
            raise ConfigError(f"index (--index) must be a folder apart from the output folder {outdir}; "
                              f"got {index!r}")
    for s in specs:
        if not getattr(s, "pipe", False) and _is_within(os.path.realpath(s.path), ipath):
            raise ConfigError(f"index (--index) must not hold an input ({s.label}); got {index!r}")


@contextlib.contextmanager
def opened_index(cfg: DedupConfig):
    """The run's index (``--index``), held for writing for the whole run; None without one."""
    if cfg.index is None:
        yield None
        return
    made = not os.path.lexists(cfg.index)
    index = open_index(cfg)
    try:
        yield index
    except BaseException:
        empty = made and len(index) == 0 and not index.store.segments()
        index.close()
        if empty:     # a failed first run leaves no index behind (it would fix the parameters)
            remove_empty_index(cfg.index)
        raise
    else:
        index.close()
