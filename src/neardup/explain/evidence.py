"""The evidence behind a verdict (:mod:`neardup.explain.verdict`), in each method's own terms.

* **MinHash** (:func:`explain_minhash`). Think of the seed's permutation matrix: rows are the
  shingles of A ∪ B, column j is hash function (permutation) h_j, and slot j of a signature holds
  the first row in h_j's order that the document has. Two documents agree in slot j exactly when
  the first row of A ∪ B in that order lies in both, so P[agree] = J(A, B) and the estimate is the
  fraction of agreeing slots (Broder 1997). For each slot: the shingle (its text) that gives each
  side's minimum, and whether the two minima agree; where they differ, the smaller value is a
  shingle only one side has. ``permutation``: k hash functions; ``oph``: one hash, slot = bin, an
  empty bin borrows the value of the bin its seeded probe sequence reaches first (optimal
  densification, Shrivastava 2017); ``bottomk``: the k smallest hashes of A ∪ B, each in A, B or
  both. The LSH bands of a run's (b, r): band i collides when its r slots all agree. Containment
  both ways, C(A ⊆ B) = |A ∩ B| / |A| and C(B ⊆ A): exact, and estimated from the slot estimate
  and the set sizes as a run estimates it.
* **SimHash** (:func:`explain_simhash`). Features with weights and 64-bit hashes; bit j of the
  fingerprint is 1 iff Σ w·(+1 if bit j of h else −1) > 0 (Charikar 2002); the per-bit sums of
  each side, the bits that differ and their count (the Hamming distance), and the features whose
  weight differs between A and B (present in one only, or weighed differently), each with the
  differing bits it pushes the way they went: a bit's sums differ by Σ Δw·(±1) over exactly these
  features.
* **Sentence signature** (:func:`explain_sentences`): the n longest sentences of each side and
  whether the signatures match.

Every explanation is recomputed from the shingles and checked against the signatures the library
computes (``consistent``): the slot agreements give the signature estimate, the listed differing
bits the fingerprint distance.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .._seeds import scheme_salt
from ..dedup.report import INDEXED_TEXT
from ..errors import ConfigError
from ..features.shingles import Shingler
from ..kernels import minhash as K
from ..kernels.hashing import fmix64
from ..kernels.jieba_analyse import fold_majority
from ..similarity.estimates import containment_from_jaccard
from ..sketches.compat import jieba_analyse, simhash_1e0ng, yanyiwu
from ..sketches.minhash import MinHasher, empty_value
from ..sketches.sentences import SentenceSigner, exact_hash
from ..sketches.simhash import feature_signer, native_hasher
from ..text.normalize import Normalizer, _converter

__all__ = ["compact_explanation", "explain_minhash", "explain_pair", "explain_sentences", "explain_simhash"]


def _shingle_table(shingler: Shingler, text: str) -> tuple[np.ndarray, list[str]]:
    """Distinct shingle hashes of a text (first-occurrence order) and the text of each."""
    hashes = shingler.features([text]).hashes
    texts = shingler.shingles(text)
    names: dict[int, str] = {}
    if len(texts) == hashes.shape[0]:
        for h, s in zip(hashes.tolist(), texts):
            names.setdefault(h, s)
    else:                          # never seen: then each shingle is shown by its hash
        names = {h: f"#{h:016x}" for h in hashes.tolist()}
    uniq = list(names)
    return np.array(uniq, dtype=np.uint64), [names[h] for h in uniq]


def _slot_values(hashes: np.ndarray, scheme: str, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per slot: the winning shingle's index (−1: none), the slot's value, and (oph) the bin whose
    value it took (itself unless densified; −1 for an empty document)."""
    n = hashes.shape[0]
    win = np.full(k, -1, dtype=np.int64)
    src = np.arange(k)
    if n == 0:
        return win, np.full(k, empty_value(scheme), dtype=np.uint64), np.full(k, -1)
    if scheme == "permutation":            # in chunks of shingles: memory k × 8 × 8,192 bytes at most
        a, b = K.permutation_params(seed, k)
        best = np.full(k, np.iinfo(np.uint64).max, dtype=np.uint64)
        for lo in range(0, n, 8192):
            with np.errstate(over="ignore"):
                v = (hashes[lo:lo + 8192, None] * a[None, :] + b[None, :]) >> np.uint64(32)
            arg = np.argmin(v, axis=0)
            val = v[arg, np.arange(k)]
            better = val < best                # strictly: the first shingle with the minimum wins
            best[better] = val[better]
            win[better] = arg[better] + lo
        return win, best, src
    salt = scheme_salt(seed)
    h = fmix64(hashes ^ salt)
    bins = ((h >> np.uint64(32)) * np.uint64(k)) >> np.uint64(32)
    vals = h & K.U32_MAX
    best = np.full(k, K.EMPTY_BIN, dtype=np.uint64)
    order = np.lexsort((np.arange(n), vals, bins))       # per bin: smallest value, then first shingle
    first = np.ones(n, dtype=bool)
    first[1:] = bins[order][1:] != bins[order][:-1]
    top = order[first]
    best[bins[top]] = vals[top]
    win[bins[top]] = top
    out = best.copy()
    full = best != K.EMPTY_BIN
    _borrowed(full, np.uint64(salt), src)                 # optimal densification: the probe sequence
    empty = ~full
    out[empty], win[empty] = best[src[empty]], win[src[empty]]
    return win, out, src


@njit(cache=True)
def _borrowed(full, salt, src):
    """``src[i]`` of each empty bin i (``full[i]`` False): the full bin its probe sequence reaches first,
    as :func:`neardup.kernels.minhash.oph_densify` probes (compiled: a short document of k = 65,536
    slots probes some 10^9 times, as its signing does)."""
    k = full.shape[0]
    kk = np.uint64(k)
    for i in range(k):
        if full[i]:
            continue
        attempt = np.uint64(1)
        while True:
            p = fmix64(salt + np.uint64(i) * np.uint64(0x9E3779B97F4A7C15) + attempt * np.uint64(0xD6E8FEB86659FD93))
            j = ((p >> np.uint64(32)) * kk) >> np.uint64(32)
            if full[j]:
                src[i] = j
                break
            attempt += np.uint64(1)


def explain_minhash(a: str, b: str, hasher: MinHasher | None = None, bands: tuple[int, int] | None = None,
                    show: int = 10) -> dict:
    """The slot-by-slot account of the MinHash estimate of two texts (see the module docstring);
    ``bands`` = (b, r) adds which LSH bands collide; ``show``: shared / unshared shingles listed."""
    hasher = hasher or MinHasher()
    scheme, k, seed = hasher.scheme, hasher.num_perm, hasher.seed
    if scheme.startswith("datasketch"):
        raise ConfigError(f"explain covers the native schemes (oph, permutation, bottomk); {scheme} hashes token "
                          "bytes with SHA-1 per slot — compare it with scheme 'permutation' instead")
    (ha, na), (hb, nb) = _shingle_table(hasher.shingler, a), _shingle_table(hasher.shingler, b)
    sig = hasher.sign_batch([a, b]).values
    estimate_sig = float(hasher.sign_batch([a, b]).jaccard_pairs([0], [1])[0])
    text_of = {**dict(zip(hb.tolist(), nb)), **dict(zip(ha.tolist(), na))}
    in_a, in_b = set(ha.tolist()), set(hb.tolist())
    out: dict = {"method": "minhash", "scheme": scheme, "num_perm": k, "seed": seed,
                 "shingles": {"a": len(in_a), "b": len(in_b), "shared": len(in_a & in_b)},
                 "jaccard": len(in_a & in_b) / len(in_a | in_b) if in_a | in_b else 0.0}
    if scheme == "bottomk":
        union = np.unique(np.concatenate([ha, hb]))
        salt = scheme_salt(seed)
        vals = fmix64(union ^ salt)
        order = np.argsort(vals, kind="stable")[:k]
        slots = []
        for rank, i in enumerate(order.tolist()):
            x = int(union[i])
            slots.append({"slot": rank, "value": int(vals[i]), "shingle": text_of[x],
                          "in_a": x in in_a, "in_b": x in in_b, "equal": x in in_a and x in in_b})
        agree = sum(s["equal"] for s in slots)
        estimate = agree / len(slots) if slots and in_a and in_b else 0.0
        out.update(slots=slots, agreeing=agree, estimate=estimate, signature_estimate=estimate_sig,
                   consistent=bool(abs(estimate - estimate_sig) < 1e-12))
        _shingle_lists(out, ha, na, hb, nb, in_a, in_b, {}, show)
        _containment(out)
        return out
    wa, va, sa = _slot_values(ha, scheme, k, seed)
    wb, vb, sb = _slot_values(hb, scheme, k, seed)
    equal = (va == vb) & (wa >= 0) & (wb >= 0)
    slots = []
    wins: dict[int, int] = {}
    for j in range(k):
        xa = int(ha[wa[j]]) if wa[j] >= 0 else None
        xb = int(hb[wb[j]]) if wb[j] >= 0 else None
        if equal[j] and xa is not None:
            wins[xa] = wins.get(xa, 0) + 1
        slots.append({"slot": j, "equal": bool(equal[j]),
                      "a": None if xa is None else {"shingle": text_of[xa], "value": int(va[j]), "bin": int(sa[j])},
                      "b": None if xb is None else {"shingle": text_of[xb], "value": int(vb[j]), "bin": int(sb[j])}})
    agree = int(equal.sum())
    estimate = agree / k if in_a and in_b else 0.0
    out.update(slots=slots, agreeing=agree, estimate=estimate, signature_estimate=estimate_sig,
               consistent=bool(np.array_equal(va.astype(sig.dtype), sig[0]) and np.array_equal(vb.astype(sig.dtype),
                                                                                             sig[1])
                               and abs(estimate - estimate_sig) < 1e-12))
    if bands is not None:
        nb_, r = bands
        collide = [i for i in range(nb_) if (i + 1) * r <= k and bool(equal[i * r:(i + 1) * r].all())]
        out["bands"] = {"b": nb_, "r": r, "colliding": collide, "candidate": bool(collide)}
    _shingle_lists(out, ha, na, hb, nb, in_a, in_b, wins, show)
    _containment(out)
    return out


def _containment(out: dict) -> None:
    """Both directions, exact on the shingle sets and estimated from the slot estimate and the set
    sizes (:func:`~neardup.similarity.estimates.containment_from_jaccard`, as a run estimates them)."""
    na, nb, shared = out["shingles"]["a"], out["shingles"]["b"], out["shingles"]["shared"]
    est = out["estimate"]
    out["containment"] = {
        "a_in_b": {"exact": shared / na if na else 0.0, "estimate": float(containment_from_jaccard(est, na, nb))},
        "b_in_a": {"exact": shared / nb if nb else 0.0, "estimate": float(containment_from_jaccard(est, nb, na))}}


def _shingle_lists(out, ha, na, hb, nb, in_a, in_b, wins, show) -> None:
    """Shared shingles (those that decide agreeing slots first, by slots won) and some of each side's own."""
    shared = [(wins.get(int(h), 0), i, s) for i, (h, s) in enumerate(zip(ha.tolist(), na)) if h in in_b]
    shared.sort(key=lambda t: (-t[0], t[1]))
    out["examples"] = {
        "shared": [{"shingle": s, "slots_won": w} for w, _, s in shared[:show]],
        "only_a": [s for h, s in zip(ha.tolist(), na) if h not in in_b][:show],
        "only_b": [s for h, s in zip(hb.tolist(), nb) if h not in in_a][:show]}


def explain_simhash(a: str, b: str, tokenizer: str = "word", ngram: int | None = 3, weighting: str | None = None,
                    idf: str | None = None, top_n: int | None = None, compat: str | None = None,
                    convert: str | None = None, show: int = 10, *, user_dict=None, stop_words=None) -> dict:
    """Features (text, weight, 64-bit hash) of each side, the per-bit sums Σ ±w, the fingerprints, the
    bits that differ and the distance — under the feature options of
    :func:`neardup.sketches.simhash.feature_signer`."""
    files = {"user_dict": user_dict, "stop_words": stop_words}
    fps = feature_signer(tokenizer, ngram, weighting, idf, top_n, compat, convert, **files)([a, b])[0]
    sides = []
    tables = []
    for text in (a, b):
        names, hashes, weights = _simhash_features(text, tokenizer, ngram, weighting, idf, top_n, compat, convert,
                                                   **files)
        tables.append((names, hashes, weights))
        bits = ((hashes[:, None] >> np.arange(64, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(bool)
        sums = (np.where(bits, 1.0, -1.0) * weights[:, None]).sum(axis=0) if len(names) else np.zeros(64)
        fp = int(sum(1 << j for j in range(64) if sums[j] > 0))
        if compat == "jieba-analyse":       # 1e0ng's rule in floats: S_j > W / 2 can differ from Σ ±w > 0 at 1e-16
            fp = int(fold_majority(hashes, weights, len(names)))
        order = np.argsort(-weights, kind="stable")[:show]
        sides.append({"features": len(names), "fingerprint": fp,
                      "top": [{"feature": names[i], "weight": float(weights[i]), "hash": int(hashes[i])}
                              for i in order.tolist()],
                      "sums": [round(float(x), 6) for x in sums]})
    diff = int(fps[0]) ^ int(fps[1])
    differing = [j for j in range(64) if diff >> j & 1]
    consistent = sides[0]["fingerprint"] == int(fps[0]) and sides[1]["fingerprint"] == int(fps[1])
    changed, total = _differing_features(tables, sides, differing, show)
    return {"method": "simhash", "options": {"tokenizer": tokenizer, "ngram": ngram, "weighting": weighting or "tf",
                                             "idf": idf, "top_n": top_n, "compat": compat, "convert": convert,
                                             **{k: v for k, v in files.items() if v is not None}},
            "a": sides[0], "b": sides[1], "differing_bits": differing, "distance": len(differing),
            "differing_features": changed, "differing_feature_count": total, "consistent": bool(consistent)}


def _differing_features(tables, sides, differing: list[int], show: int) -> tuple[list[dict], int]:
    """The features whose weight differs between A and B (Δw = w_A − w_B ≠ 0; absent: 0), largest
    |Δw| first (``show`` of them), each with the differing bits it pushes the way they went: bit j's
    sums differ by D_j = Σ Δw·s_j(h) (s_j = +1 where bit j of the feature's hash is 1, else −1), and
    a feature pushes bit j when Δw·s_j(h) has D_j's sign. Returns them and how many there are."""
    w: dict[int, list] = {}
    for side, (names, hashes, weights) in enumerate(tables):
        for name, h, x in zip(names, hashes.tolist(), weights.tolist()):
            entry = w.setdefault(int(h), [name, 0.0, 0.0])
            entry[1 + side] += float(x)
    d = {j: sides[0]["sums"][j] - sides[1]["sums"][j] for j in differing}
    rows = []
    for h, (name, wa, wb) in w.items():
        delta = wa - wb
        if delta == 0:
            continue
        push = [j for j in differing if delta * (1.0 if h >> j & 1 else -1.0) * d[j] > 0]
        rows.append({"feature": name, "weight_a": wa, "weight_b": wb, "delta": delta, "hash": h, "pushes": push})
    rows.sort(key=lambda x: (-abs(x["delta"]), x["feature"]))
    return rows[:show], len(rows)


def _simhash_features(text, tokenizer, ngram, weighting, idf, top_n, compat, convert, user_dict=None,
                      stop_words=None):
    """(feature texts, hashes uint64, weights float64) as the fingerprint folds them."""
    if compat is not None and convert:
        text = _converter(convert).convert(text)
    if compat == "yanyiwu":
        n = top_n if top_n is not None else yanyiwu.top_n_for_length(len(text.encode("utf-8", "surrogatepass")))
        kws = yanyiwu.extract_keywords(text, n, user_dict, idf, stop_words)
        hashes, weights = yanyiwu._hash_keywords(kws)
        return [w for w, _ in kws], hashes, weights
    if compat == "jieba-analyse":
        kws = jieba_analyse.extract_tags(text, top_n, stop_words, idf)
        names = [w for w, _ in kws]
        return names, jieba_analyse.keyword_hashes(names), np.array([w for _, w in kws], dtype=np.float64)
    if compat == "1e0ng":
        names, weights = simhash_1e0ng._weighted(text)
        return names, simhash_1e0ng.feature_hashes(names), np.asarray(weights, dtype=np.float64)

    hasher = native_hasher(tokenizer, ngram, weighting, idf, top_n, convert, user_dict=user_dict,
                           stop_words=stop_words)
    uniq, w = hasher.weights(hasher.shingler.features([text]))
    hashes, names = _shingle_table(hasher.shingler, text)
    text_of = dict(zip(hashes.tolist(), names))
    return [text_of.get(h, f"#{h:016x}") for h in uniq.hashes.tolist()], uniq.hashes.astype(np.uint64), w


def explain_sentences(a: str, b: str, n: int = 3, convert: str | None = None) -> dict:
    """The n longest sentences of each side and whether the sentence signatures match."""
    s = SentenceSigner(n=n, convert=convert)
    sa, sb = s.sign(a), s.sign(b)
    return {"method": "sentences", "n": n, "a": s.longest(a), "b": s.longest(b), "signature_a": sa,
            "signature_b": sb, "match": bool(sa == sb and sa != 0)}


def explain_pair(a: str, b: str, params: dict, show: int = 10) -> dict:
    """The explanation under a run's parameters (``report.json``'s ``parameters``): its method's,
    with the exact Jaccard and containment of the shingles beside it."""
    method = params.get("method", "minhash")
    if method == "simhash":
        return explain_simhash(a, b, params.get("tokenizer") or "word", params.get("ngram"), params.get("weighting"),
                               params.get("idf"), params.get("top_n"), params.get("compat"), params.get("convert"),
                               show, user_dict=params.get("user_dict"), stop_words=params.get("stop_words"))
    if method == "sentences":
        return explain_sentences(a, b, params.get("sentences") or 3, params.get("convert"))
    if method == "exact":
        norm = Normalizer(convert=params.get("convert"))
        return {"method": "exact", "match": exact_hash(a, norm) == exact_hash(b, norm)}

    hasher = MinHasher(num_perm=params.get("num_perm") or 128, scheme=params.get("scheme") or "oph",
                       seed=params.get("seed") if params.get("seed") is not None else 1,
                       tokenizer=params.get("tokenizer") or "word", ngram=params.get("ngram") or 5,
                       normalizer=Normalizer(convert=params.get("convert")), user_dict=params.get("user_dict"))
    bands = (params["b"], params["r"]) if params.get("b") and params.get("r") else None
    return explain_minhash(a, b, hasher, bands, show)


COMPACT_EXPLAIN_CHARS = 200_000   # longer sample texts get no compact explanation (seconds each)


def compact_explanation(a: str, b: str, params: dict) -> dict | None:
    """A report sample pair's explanation in a few numbers (``neardup explain OUT A B`` gives all of
    it): MinHash — agreeing slots of k, colliding LSH bands, the shared shingles that decide most
    slots; SimHash — the differing bits; sentences / exact — whether the signatures match. None for a
    document of an index (its text is not stored) or a very long pair (seconds each)."""
    if INDEXED_TEXT in (a, b) or max(len(a), len(b)) > COMPACT_EXPLAIN_CHARS:
        return None
    try:
        e = explain_pair(a, b, params, show=3)
    except (ValueError, ImportError):      # a scheme explain does not cover (datasketch-*)
        return None
    if e["method"] == "minhash":
        out = {"agreeing_slots": e["agreeing"], "slots": len(e["slots"]), "exact_jaccard": round(e["jaccard"], 4),
               "deciding_shingles": [x["shingle"][:80] for x in e["examples"]["shared"]]}
        if "bands" in e:
            out["colliding_bands"] = e["bands"]["colliding"]
        return out
    if e["method"] == "simhash":
        return {"distance": e["distance"], "differing_bits": e["differing_bits"]}
    return {"match": e["match"]}
