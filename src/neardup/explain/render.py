"""The evidence of :mod:`neardup.explain.evidence` as text for a terminal.

MinHash slots are shown in the permutation-matrix terms of the evidence: per slot j (hash function
h_j) the shingle each side has first in h_j's order, ``=`` when they agree. By default only the
slots that matter are listed — every disagreeing slot (why the estimate is below 1) and the slots
of the first colliding LSH band (why the pair is a candidate) — and the others are counted as
hidden; ``slots="all"`` lists every slot.
"""
from __future__ import annotations

#: ``--slots`` of ``explain`` and ``compare``: the slots that matter, or every slot
SLOT_CHOICES = ("matter", "all")
#: disagreeing slots listed at most with ``slots="matter"`` (the rest counted as hidden)
MAX_DISAGREEING = 64


def _cut(s: str, width: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= width else s[:width - 1] + "…"


def _shown_slots(e: dict, slots: str) -> list[int]:
    """The slots listed: all, or the disagreeing ones (at most :data:`MAX_DISAGREEING`) and those of the
    first colliding band, in slot order."""
    if slots == "all":
        return [s["slot"] for s in e["slots"]]
    shown = [s["slot"] for s in e["slots"] if not s["equal"]][:MAX_DISAGREEING]
    bd = e.get("bands")
    if bd and bd["colliding"]:
        first = bd["colliding"][0]
        shown += list(range(first * bd["r"], (first + 1) * bd["r"]))
    return sorted(set(shown))


def _minhash_lines(e: dict, width: int, slots: str) -> list[str]:
    lines = [f"MinHash ({e['scheme']}, k={e['num_perm']}, seed {e['seed']}): {e['agreeing']} of {len(e['slots'])} "
             f"slots agree → estimate {e['estimate']:.4f}  (exact Jaccard {e['jaccard']:.4f}; shingles A "
             f"{e['shingles']['a']}, B {e['shingles']['b']}, shared {e['shingles']['shared']})"]
    c = e.get("containment")
    if c:
        lines.append(f"  containment: C(A ⊆ B) exact {c['a_in_b']['exact']:.4f}, estimate {c['a_in_b']['estimate']:.4f}"
                     f"; C(B ⊆ A) exact {c['b_in_a']['exact']:.4f}, estimate {c['b_in_a']['estimate']:.4f}")
    bd = e.get("bands")
    if bd:
        lines.append(f"  LSH b={bd['b']} r={bd['r']} (band i = slots {bd['r']}i … {bd['r']}i+{bd['r'] - 1}): bands "
                     f"colliding {', '.join(map(str, bd['colliding'])) or 'none'} → "
                     f"{'a candidate pair' if bd['candidate'] else 'not a candidate pair'}")
    if e["scheme"] == "bottomk":
        lines.append("  rank  in  shingle (the k smallest hashes of A ∪ B)")
        for s in e["slots"]:
            where = "AB" if s["equal"] else ("A " if s["in_a"] else " B")
            lines.append(f"  {s['slot']:4d}  {where}  {_cut(s['shingle'], 2 * width)}")
    else:
        shown = _shown_slots(e, slots)
        r = bd["r"] if bd else None
        lines.append("  slot j = hash function h_j: the shingle each side has first in h_j's order; = when the first "
                     "of A ∪ B is in both")
        lines.append(f"  slot band  {'A: first shingle':{width}s}  =  B: first shingle")
        for j in shown:
            s = e["slots"][j]
            a = "(empty)" if s["a"] is None else _cut(s["a"]["shingle"], width)
            b = "(empty)" if s["b"] is None else _cut(s["b"]["shingle"], width)
            band = f"{j // r:4d}" if r and (j // r) < bd["b"] else "   -"
            note = ""
            if s["a"] is not None and s["a"]["bin"] != s["slot"]:
                note = f"  (bin {s['a']['bin']})"
            elif not s["equal"] and s["a"] is not None and s["b"] is not None and s["b"]["bin"] == s["slot"]:
                note = ("  (A's comes first in A ∪ B: B lacks it)" if s["a"]["value"] < s["b"]["value"]
                        else "  (B's comes first in A ∪ B: A lacks it)")
            lines.append(f"  {j:4d} {band}  {a:{width}s}  {'=' if s['equal'] else '≠'}  {b}{note}")
        hidden = len(e["slots"]) - len(shown)
        if hidden:
            lines.append(f"  … {hidden} slots hidden ({sum(s['equal'] for s in e['slots'])} agree in all; "
                         "--slots all lists every slot)")
    lines.append("  shared shingles, most slots won first: " + "; ".join(
        f"{_cut(x['shingle'], width)} ({x['slots_won']})" for x in e["examples"]["shared"]))
    return lines


def _simhash_lines(e: dict, width: int) -> list[str]:
    bits = ", ".join(map(str, e["differing_bits"])) or "none"
    lines = [f"SimHash: distance {e['distance']} bits (differing bits: {bits})"]
    for side in ("a", "b"):
        x = e[side]
        lines.append(f"  {side.upper()}: {x['features']} features, fingerprint {x['fingerprint']:016x}; heaviest: "
                     + "; ".join(f"{_cut(f['feature'], width)} ×{f['weight']:.4g} #{f['hash']:016x}"
                                 for f in x["top"][:5]))
    feats = e.get("differing_features") or []
    if feats:
        lines.append(f"  features whose weight differs ({len(feats)} of {e['differing_feature_count']}, largest "
                     "first): weight in A, in B → the differing bits it pushes the way they went")
        for f in feats:
            lines.append(f"    {_cut(f['feature'], width):{width}s}  A {f['weight_a']:.4g}, B {f['weight_b']:.4g} → "
                         f"bits {', '.join(map(str, f['pushes'])) or 'none'}")
    for j in e["differing_bits"]:
        lines.append(f"  bit {j:2d}: Σ±w A {e['a']['sums'][j]:+.4g}, B {e['b']['sums'][j]:+.4g}")
    return lines


def render(parts: dict, width: int = 34, slots: str = "matter") -> str:
    """The explanations of :func:`~neardup.explain.evidence.explain_pair` / ``compare --explain`` (a
    dict method → explanation) as text; ``slots``: ``matter`` or ``all`` (module docstring)."""
    lines: list[str] = []
    for e in parts.values():
        m = e["method"]
        if m == "minhash":
            lines += _minhash_lines(e, width, slots)
        elif m == "simhash":
            lines += _simhash_lines(e, width)
        elif m == "sentences":
            lines.append(f"Sentence signature ({e['n']} longest): {'match' if e['match'] else 'differ'}")
            for side in ("a", "b"):
                for s in e[side]:
                    lines.append(f"  {side.upper()}: {_cut(s, 2 * width)}")
        elif m == "exact":
            lines.append(f"Exact hash: {'match' if e['match'] else 'differ'}")
        lines.append("")
    return "\n".join(lines).rstrip()
