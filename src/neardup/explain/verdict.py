"""The one sentence that leads an explanation: the verdict, the rule that decided it, the numbers
that decided, and what would change it — built from a :class:`~neardup.explain.replay.SmallRun`
and what the run recorded for the two documents (``explain``), or from the small run itself
(``compare``: the pair as a two-document run).

The verdicts:

* ``duplicates`` — one is kept and the other removed for it by their own pair: identical
  signatures; the estimate (outside the borderline band, or ``--verify minhash``); the exact value
  (the estimate inside the band, or ``--verify exact``); an unverified candidate
  (``--verify none``); containment (the smaller set held by the larger, which is kept); SimHash
  within k bits; equal sentence signatures or texts;
* ``in one cluster`` — together through other members (the chain of merges that joined them), or
  both removed for a third document;
* ``not merged`` — a verified pair that bounded linkage refused to merge (the sampled pair below
  t − δ), or that the drift rule split;
* ``not removed`` / ``not in one cluster`` — containment: the container was itself removed and its
  own container holds too little of the smaller one, or the smaller one went to another container
  that holds more of it;
* ``not duplicates`` — a candidate whose estimate or exact value stayed below t (SimHash: over k bits);
* ``not candidates`` — LSH never proposed the pair (the S-curve's probability at its similarity),
  or a side is empty.

The sentence states what the run recorded (which one is kept, the removed one's ``decided``); where
the small run does not reproduce the records (``replayed`` False: a cluster too large to replay,
a document of an index), the details that need the replay (chains, refusals) are left out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..index.lsh import s_curve
from .replay import PairFacts, SmallRun

__all__ = ["Side", "num", "sides_of", "verdict"]


@dataclass
class Side:
    """What a run recorded of a document: ``rep`` its kept document (a row of the small run; itself
    when kept; a number below 0 for one outside the small run, such as an index's), how it was
    ``decided`` and its ``similarity`` to it."""
    rep: int
    decided: str | None = None
    similarity: float | None = None


def sides_of(run: SmallRun, rows) -> dict[int, Side]:
    """The small run's own outcome for ``rows``."""
    return {x: Side(run.rep(x), run.decided(x), run.kept_similarity(x)) for x in rows}


def num(x: float, near: float | None = None) -> str:
    """A similarity to 3 digits (trailing zeros dropped), more where 3 would make it equal ``near``."""
    for d in (3, 4, 5, 6):
        s = f"{x:.{d}f}".rstrip("0").rstrip(".")
        if near is None or x == near or round(x, d) != round(near, d):
            return s or "0"
    return f"{x:.6f}"


def _up(x: float) -> str:
    """``x`` rounded up to 3 digits (a bound that must be reached)."""
    return num(math.ceil(round(x * 1000, 9)) / 1000)


def _p(x: float) -> str:
    """A probability: 3 digits, or 2 significant ones below 0.001."""
    return num(x) if x >= 0.001 or x == 0 else f"{x:.1e}"


class _Say:
    """The pieces of one sentence, for a pair of rows of a small run and their names."""

    def __init__(self, run: SmallRun, a: int, b: int, name, sides: dict[int, Side]):
        self.run, self.a, self.b, self.name, self.sides = run, a, b, name, sides
        self.cfg, self.t = run.cfg, run.threshold
        self.f: PairFacts = run.pair(a, b)
        #: classic SimHash: its rule, its numbers and its clustering are in bits
        self.in_bits = self.f.method == "simhash" and not run.verified_simhash

    # -- how one pair was decided ----------------------------------------------------------------
    def band(self) -> str:
        jt, d = self.run.band_delta(self.f)
        return f"{num(jt)} ± {num(d)}"

    def est(self) -> str:
        """The estimate as the rule reads it: J, or for containment the larger C (with its J)."""
        f = self.f
        if self.cfg.metric == "containment":
            return f"C = {num(f.similarity, self.t)} (Ĵ {num(f.estimate)})"
        return num(f.estimate, self.t)

    def phrase(self) -> str:
        """How the pair was decided, with its numbers (a candidate pair, or identical signatures)."""
        f, c, t = self.f, self.cfg, self.t
        if f.method == "simhash" and not self.in_bits:
            within = f"Hamming distance {f.distance} {'≤' if f.candidate else '>'} {c.candidate_bits} bits"
            if not f.candidate:
                return f"{within}, the candidate radius (their exact Jaccard is {num(f.exact, t)})"
            return (f"{within} (the candidate radius), so the pair was checked exactly: Jaccard "
                    f"{num(f.value, t)} {'≥' if f.verified else '<'} {num(t)}")
        if f.method == "simhash":
            k = c.bits
            if f.identical:
                return f"identical fingerprints (Hamming distance 0 ≤ {k} bits)"
            return f"Hamming distance {f.distance} {'≤' if f.verified else '>'} {k} bits"
        if f.method in ("sentences", "exact"):
            what = (f"sentence signatures (the {c.sentences} longest sentences)" if f.method == "sentences"
                    else "normalised texts (exact hash)")
            return f"identical {what}" if f.verified else f"the {what} differ"
        if f.identical:
            return f"identical signatures ({c.num_perm} of {c.num_perm} slots)"
        cmp = "≥" if f.value >= t else "<"
        value = num(f.value, t)
        if f.how == "candidate":
            return f"an LSH candidate accepted unverified (--verify none; its estimate is {self.est()})"
        if f.how == "exact" and not f.in_band:
            return f"checked exactly (--verify exact): {self.metric}{value} {cmp} {num(t)}"
        if c.verify == "minhash":
            return f"the estimate {self.est()} {cmp} {num(t)} (--verify minhash: the estimate decides)"
        if c.metric == "containment":
            return self._containment_phrase(value, cmp)
        _, d = self.run.band_delta(f)
        if f.how == "exact":
            return (f"the estimate {num(f.estimate, t)} was within the borderline band {self.band()}, so the pair was "
                    f"checked exactly: {value} {cmp} {num(t)}")
        if f.value >= t:
            return (f"the estimate {value} ≥ {num(t)}, outside the borderline band {self.band()}, so it decided "
                    "(not checked exactly)")
        return f"the estimate {value} < {num(t)} − {num(d)} (below the borderline band)"

    @property
    def metric(self) -> str:
        return "C = " if self.cfg.metric == "containment" else ""

    def _containment_phrase(self, value: str, cmp: str) -> str:
        """The borderline rule for containment: the band lies on Ĵ, around the J_t at which the pair
        reaches C = t (:func:`~neardup.dedup.verify.borderline_mask`)."""
        f, t = self.f, self.t
        c, j, band = num(f.similarity, t), num(f.estimate), f"J_t = {self.band()}"
        if f.how == "exact":
            return (f"the estimate C = {c} (Ĵ = {j}, within the borderline band {band}) was checked exactly: "
                    f"C = {value} {cmp} {num(t)}")
        if f.value >= t:
            return f"the estimate C = {c} ≥ {num(t)} (Ĵ = {j}, outside the borderline band {band}), so it decided"
        return f"the estimate C = {c} < {num(t)} (Ĵ = {j}, below the borderline band {band})"

    def change_dup(self) -> str:
        """What would keep a direct pair apart."""
        f = self.f
        if self.in_bits:
            return (f" (--bits {f.distance - 1} would keep both)" if f.distance else
                    " (identical fingerprints are joined at any --bits)")
        if f.method in ("sentences", "exact"):
            return ""
        if f.identical and f.method == "minhash":
            return (" (identical signatures are joined at any threshold; exact Jaccard "
                    f"{num(f.exact_jaccard)})")
        if self.cfg.verify == "none":
            return ""
        return f" (a threshold above {num(f.value, self.t)} would keep both)"

    def change_apart(self) -> str:
        """What would join a candidate pair that stayed below the threshold."""
        f = self.f
        if self.in_bits:
            return (f" (a limit of --bits {f.distance} would join them)" if f.distance <= 32
                    else " (beyond --bits' largest value, 32)")
        if f.method == "simhash" and not f.candidate:
            return (f" (--candidate-bits {f.distance} would make them candidates)" if f.distance <= 32
                    else " (beyond --candidate-bits' largest value, 32)")
        if f.method in ("sentences", "exact") or f.value is None or f.value <= 0:
            return ""
        return f" (a threshold of {num(f.value, self.t)} or less would accept it)"

    # -- the cases -----------------------------------------------------------------------------------------
    def names(self, *rows) -> list[str]:
        return [self.name(x) for x in rows]

    def themselves(self) -> str:
        """The pair's own standing, for pairs joined or kept apart by others."""
        f, t = self.f, self.t
        if f.method != "minhash":
            return self.phrase()
        if f.identical:
            return "identical signatures"
        if f.candidate:
            v = f.value
            return (f"{num(v, t)} {'≥' if v >= t else '<'} {num(t)}"
                    + (f" (checked exactly; estimate {self.est()})" if f.how == "exact" else ""))
        v = f.similarity
        return f"{num(v, t)} {'≥' if v >= t else '<'} {num(t)} by the estimate (not an LSH candidate)"

    def chain(self) -> str:
        path = self.run.chain(self.a, self.b) if self.run.consistent else None
        if not path:
            return ""
        inner = [self.name(y) for _, y, _, _ in path[:-1]]
        links = ", ".join(f"{self.name(x)}–{self.name(y)} {self.amount(s)}" + (" (identical)" if h == "identical"
                                                                                        else "")
                          for x, y, s, h in path)
        return f"; joined through {', '.join(inner)}: {links}"

    def amount(self, s: float) -> str:
        """A pair's similarity as the method states it: SimHash in bits apart, else the number."""
        return f"{round((1 - s) * 64)} bits" if self.in_bits else num(s)

    def removal(self, x: int) -> str:
        """How removed row ``x`` was decided, by which pair (where the small run is the run's)."""
        d = self.sides[x].decided
        got = self.run.deciding_pair(x) if self.run.consistent else None
        if got is None:
            return f"{self.name(x)} decided {d}"
        o, s, _ = got
        return f"{self.name(x)} decided {d} by its pair with {self.name(o)} ({self.amount(s)})"

    def linkage_note(self) -> str:
        c = self.cfg
        if c.linkage == "components":
            return " (--linkage components joins every chain of verified pairs)"
        if self.run.drift is None:
            return ""
        if self.in_bits:
            return (f" (bounded linkage admits sampled members up to k + drift = "
                    f"{c.bits + round(self.run.drift * 64)} bits apart)")
        return f" (bounded linkage admits sampled members down to t − δ = {num(self.run.threshold - self.run.drift)})"

    def not_candidates(self) -> str:
        f, run = self.f, self.run
        if f.empty:
            who = " and ".join(n for n, x in (("A", self.a), ("B", self.b)) if run.empty[x]) or "a side"
            return f"not candidates: {who} {'have' if ' and ' in who else 'has'} no features (an empty document is " \
                   "never compared)"
        if f.method != "minhash" or f.bands is None:
            return f"not candidates: {self.phrase()}{self.change_apart()}"

        nb, r, colliding = f.bands
        p = float(s_curve(f.exact_jaccard, nb, r))
        how = (f"banded for their size ratio ({min(f.sizes)} and {max(f.sizes)} distinct shingles): "
               if getattr(run, "per_ratio", False) else "")
        if colliding:        # (LSH proposed none of its pairs: a bucket over its size limit)
            lead = (f"not candidates: {how}bands {', '.join(map(str, colliding))} collide, but LSH did not propose "
                    "the pair")
        else:
            lead = (f"not candidates: {how}none of the {nb} LSH bands of {r} rows collides (P = {_p(p)} at exact "
                    f"J = {num(f.exact_jaccard)} by the S-curve 1 − (1 − J^{r})^{nb})")
        if f.similarity >= self.t:
            return lead + f"; its estimate {self.est()} would have passed"
        return lead + f"; its estimate is {self.est()}"


def verdict(run: SmallRun, a: int, b: int, name=None, sides: dict[int, Side] | None = None) -> dict:
    """The verdict on rows ``a`` (A) and ``b`` (B) of ``run``: its sentence and its parts (module
    docstring). ``name(row)``: how another document is named (A and B are "A" and "B");
    ``sides``: what the run recorded of the rows (default: the small run's own outcome)."""
    own = sides_of(run, range(run.n))
    replayed = sides is None or all(x in own and own[x].rep == s.rep and own[x].decided == s.decided
                                    for x, s in sides.items())
    sides = own if sides is None else {**own, **sides}
    label = name or (lambda x: f"row {x}")

    def nm(x):
        return "A" if x == a else "B" if x == b else label(x)
    say = _Say(run, a, b, nm, sides)
    if not replayed:
        run.consistent = False
    sa, sb = sides[a], sides[b]
    same = sa.rep == sb.rep
    if run.cfg.method == "minhash" and run.cfg.metric == "containment":
        kind, rule, text = _containment(say, same)
    elif same:
        kind, rule, text = _together(say)
    else:
        kind, rule, text = _apart(say)
    f = say.f
    kept = [nm(x) for x in (a, b) if sides[x].rep == x]
    return {"sentence": f"{kind}: {text}", "verdict": kind, "rule": rule, "same_cluster": bool(same),
            "kept": kept, "decided": {nm(x): sides[x].decided for x in (a, b) if sides[x].rep != x},
            "threshold": run.threshold, "value": f.value, "estimate": f.estimate, "exact": f.exact,
            "candidate": f.candidate, "verified": f.verified, "in_band": f.in_band, "how": f.how,
            "distance": f.distance, "replayed": bool(replayed and run.consistent)}


def _kept_clause(say: _Say, kept: int, gone: int) -> str:
    policy = say.cfg.keep
    return f"; {say.name(kept)} is kept (--keep {policy}) and {say.name(gone)} removed"


def _together(say: _Say) -> tuple[str, str, str]:
    """A and B in one cluster."""
    f, a, b, sides = say.f, say.a, say.b, say.sides
    rep = sides[a].rep
    if rep in (a, b):
        gone = b if rep == a else a
        if f.verified:
            return "duplicates", f.how or "verified", say.phrase() + _kept_clause(say, rep, gone) + say.change_dup()
    elif f.verified:
        return ("duplicates", f.how or "verified",
                f"{say.phrase()}; both were removed for {say.name(rep)}, which their cluster keeps (A decided "
                f"{sides[a].decided}, B decided {sides[b].decided})")
    if f.method in ("sentences", "exact"):       # (equal signatures: together only when equal)
        return "in one cluster", "chain", f"{say.phrase()}, yet the run put them in one cluster"
    gone = "; ".join(say.removal(x) for x in (a, b) if sides[x].rep != x)
    kept = f"{say.name(rep)} is kept; " if rep not in (a, b) else ""
    return ("in one cluster through other members", "chain",
            f"A and B themselves are at {say.themselves()}{say.chain()}; {kept}{gone}" + say.linkage_note())


def _apart(say: _Say) -> tuple[str, str, str]:
    """A and B in different clusters."""
    f, run = say.f, say.run
    if f.verified:
        value = (f"Hamming distance {f.distance} ≤ {say.cfg.bits} bits" if say.in_bits
                 else "identical signatures" if f.identical else f"{num(f.value, say.t)} ≥ {num(say.t)}")
        refused = run.refusal(say.a, say.b) if run.consistent else None
        if refused is not None:
            y, z = refused.worst
            if say.in_bits:
                bits = round((1 - refused.similarity) * 64)
                limit = say.cfg.bits + round(run.drift * 64)
                worse = f"{say.name(y)} and {say.name(z)} {bits} bits apart > k + drift = {limit} bits"
                change = f" (--max-drift {(bits - say.cfg.bits) / 64:.4g} or more would allow it)"
            else:
                worse = (f"{say.name(y)} and {say.name(z)} at {num(refused.similarity, refused.floor)} < t − δ = "
                         f"{num(refused.floor)}")
                change = f" (--max-drift {_up(say.t - refused.similarity)} or more would allow it)"
            return ("not merged", "linkage",
                    f"a verified pair ({value}), but bounded linkage kept the clusters apart: joining would put "
                    f"{worse}{change}")
        if run.consistent and run.groups[say.a] == run.groups[say.b]:
            k0, gone = run.group_kept(say.a), []
            for x in (say.a, say.b):
                if run.rep(x) != run.rep(k0):
                    gone.append(f"{say.name(x)} is at {say.amount(run.rule_similarity(x, k0))} from the kept "
                                f"{say.name(k0)}")
            floor = (f"{say.cfg.bits + round(run.drift * 64)} bits" if say.in_bits
                     else f"t − δ = {num(run.threshold - run.drift)}")
            return ("not merged", "drift",
                    f"a verified pair ({value}), linked into one group, but the drift rule (every member within "
                    f"{floor} of the kept document) split them: {'; '.join(gone)}")
        return ("not merged", "clustering",
                f"a verified pair ({value}) that the run's clustering left in different clusters")
    if f.empty or (not f.candidate and not say.in_bits and f.method != "sentences" and f.method != "exact"):
        return "not candidates", "lsh", say.not_candidates().removeprefix("not candidates: ")
    return "not duplicates", f.how or "estimate", say.phrase() + say.change_apart()


def _containment(say: _Say, same: bool) -> tuple[str, str, str]:
    """The directed rule (:mod:`neardup.clusters.containment`)."""
    f, run, sides, t = say.f, say.run, say.sides, say.t
    a, b = say.a, say.b
    ca, how_a = run.contained(a, b)
    cb, how_b = run.contained(b, a)
    if same:
        rep = sides[a].rep
        if rep in (a, b):
            kept, gone = (a, b) if rep == a else (b, a)
            if sides[gone].decided == "contained":
                c, how = (cb, how_b) if gone == b else (ca, how_a)
                g, k = say.name(gone), say.name(kept)
                exact = ("" if how != "exact" else " (checked exactly: the estimate was within the borderline band)"
                         if f.in_band else " (checked exactly)")
                over = ""
                if run.overridden is not None and run.consistent and bool(run.overridden[gone]):
                    over = f"; the keep policy alone (--keep {say.cfg.keep}) would have kept {g}"
                return ("duplicates", "contained",
                        f"{g} is contained in {k}, C({g} ⊆ {k}) = {num(c, t)} ≥ {num(t)}{exact}; {k} holds {g}, so "
                        f"{k} is kept and {g} removed (containment never removes the container){over}")
            if f.verified:
                return ("duplicates", f.how or "verified",
                        f"near-equal sets, C(A ⊆ B) = {num(ca)} and C(B ⊆ A) = {num(cb)}, both ≥ {num(t)} — "
                        f"{say.phrase()}" + _kept_clause(say, kept, gone))
        if rep not in (a, b) and any(sides[x].decided == "contained" for x in (a, b)):
            k = say.name(rep)
            how = "; ".join(f"{say.name(x)} is held by {k} (C({say.name(x)} ⊆ {k}) = {num(sides[x].similarity)})"
                            if sides[x].decided == "contained" else
                            f"{say.name(x)} is near-equal to {k} (decided {sides[x].decided}, "
                            f"{num(sides[x].similarity)})" for x in (a, b))
            return ("in one cluster", "contained",
                    f"both were removed for {k}, which is kept: {how}; A and B themselves: C(A ⊆ B) = {num(ca)}, "
                    f"C(B ⊆ A) = {num(cb)}")
        return _together(say)
    if not f.verified:
        if not f.candidate or f.empty:
            return "not candidates", "lsh", say.not_candidates().removeprefix("not candidates: ")
        return ("not duplicates", f.how or "estimate",
                f"neither holds the other enough, C(A ⊆ B) = {num(ca)}, C(B ⊆ A) = {num(cb)}: {say.phrase()}"
                + say.change_apart())
    small, large = (a, b) if f.sizes[0] <= f.sizes[1] else (b, a)
    if f.sizes[0] == f.sizes[1]:
        small, large = min(a, b), max(a, b)
    c_small = ca if small == a else cb
    s, lg = say.name(small), say.name(large)
    rs, rl = sides[small].rep, sides[large].rep
    if rs >= 0 and rs not in (small, large):
        other, _ = run.contained(small, rs)
        return ("not in one cluster", "contained",
                f"{lg} holds {s} (C({s} ⊆ {lg}) = {num(c_small, t)} ≥ {num(t)}), but {s} was removed for "
                f"{say.name(rs)}, which holds {'more' if other > c_small else 'as much'} of it "
                f"(C({s} ⊆ {say.name(rs)}) = {num(other)}){'; ties go by the keep policy' if other <= c_small else ''}")
    if rs == small and rl >= 0 and rl != large:
        held, _ = run.contained(small, rl)
        return ("not removed", "contained",
                f"{s} is held by {lg} (C({s} ⊆ {lg}) = {num(c_small, t)} ≥ {num(t)}) but {lg} was removed itself "
                f"(held by {say.name(rl)}), and {say.name(rl)} holds only {num(held, t)} of {s}"
                + (" < " + num(t) if held < t else ""))
    return _apart(say)
