"""neardup.sketches.compat.datasketch reproduces datasketch 2.0.0 MinHash bit for bit.

References: /work/shared/corpora/reference_values/values.json (key ``datasketch``) restated
below, and tests/data/datasketch_vectors.json written by
benchmarks/peers/gen_datasketch_vectors.py. datasketch itself is not needed here.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from neardup.sketches.compat import datasketch as ds

VECTORS = json.loads((Path(__file__).parent / "data" / "datasketch_vectors.json").read_text("utf-8"))
DOCS = [[t if isinstance(t, str) else bytes.fromhex(t["hex"]) for t in d] for d in VECTORS["docs"]]
CASES = VECTORS["cases"]

DATA1 = ["minhash", "is", "a", "probabilistic", "data", "structure", "for",
         "estimating", "the", "similarity", "between", "datasets"]
DATA2 = ["minhash", "is", "a", "probability", "data", "structure", "for",
         "estimating", "the", "similarity", "between", "documents"]


def _case_id(c):
    return f"{c['scheme']}-seed{c['seed']}-k{c['num_perm']}"


@pytest.mark.parametrize(
    "scheme, expected",
    [
        ("legacy", [734825475, 960773806, 359816889, 342714745]),
        ("affine32", [3231258861, 1388533999, 831950533, 1845606703]),
    ],
)
def test_hello_num_perm4_seed1(scheme, expected):
    hv = ds.hashvalues([b"Hello"], num_perm=4, seed=1, scheme=scheme)
    assert hv.dtype == ds.DTYPES[scheme]
    assert hv.tolist() == expected
    assert ds.hashvalues(["Hello"], 4, 1, scheme).tolist() == expected  # str -> UTF-8


def test_default_scheme_is_affine32():
    assert ds.hashvalues([b"Hello"], 4, 1).tolist() == [3231258861, 1388533999, 831950533, 1845606703]


@pytest.mark.parametrize("scheme, expected", [("legacy", 0.7109375), ("affine32", 0.625), ("affine64", 0.7109375)])
def test_minhash_example_estimates(scheme, expected):
    m1 = ds.hashvalues([w.encode("utf-8") for w in DATA1], num_perm=128, seed=1, scheme=scheme)
    m2 = ds.hashvalues(DATA2, num_perm=128, seed=1, scheme=scheme)
    assert ds.jaccard(m1, m2) == expected


def test_sha1_hashes():
    # SHA-1("") = da39a3ee 5e6b4b0d ...; datasketch reads the leading bytes little-endian.
    assert ds.sha1_hash32(b"") == 0xEEA339DA
    assert ds.sha1_hash64(b"") == 0x0D4B6B5EEEA339DA
    toks = [b"", b"a", "é", b"Hello"]
    h32 = ds.sha1_hash32_many(toks)
    assert h32.dtype == np.uint32
    assert h32.tolist() == [ds.sha1_hash32(t if isinstance(t, bytes) else t.encode()) for t in toks]
    h64 = ds.sha1_hash64_many(toks)
    assert h64.dtype == np.uint64
    assert (h64 & np.uint64(0xFFFFFFFF)).astype(np.uint32).tolist() == h32.tolist()
    assert ds.sha1_hash32_many([]).shape == (0,)


@pytest.mark.parametrize("case", [c for c in CASES if "permutations" in c], ids=_case_id)
def test_permutations_match(case):
    a, b = ds.permutations(case["num_perm"], case["seed"], case["scheme"])
    assert a.dtype == b.dtype == ds.DTYPES[case["scheme"]]
    assert [a.tolist(), b.tolist()] == case["permutations"]
    assert np.all(a & 1 == 1) or case["scheme"] == "legacy"


def test_permutations_are_cached_and_read_only():
    a1, b1 = ds.permutations(16, 3, "legacy")
    a2, _ = ds.permutations(16, 3, "legacy")
    assert a1 is a2
    with pytest.raises(ValueError):
        a1[0] = 1
    # legacy draws (a_k, b_k) interleaved, so fewer permutations form a prefix
    a4, b4 = ds.permutations(4, 3, "legacy")
    assert a4.tolist() == a1[:4].tolist() and b4.tolist() == b1[:4].tolist()


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_vectors_batch(case):
    sig = ds.hashvalues_batch(DOCS, case["num_perm"], case["seed"], case["scheme"])
    assert sig.dtype == np.dtype(case["dtype"])
    assert sig.shape == (len(DOCS), case["num_perm"])
    assert sig.tolist() == case["hashvalues"]
    assert ds.jaccard(sig[0], sig[-1]) == case["jaccard_0_last"]
    assert ds.jaccard(sig[1], sig[2]) == case["jaccard_1_2"]


@pytest.mark.parametrize("case", [c for c in CASES if c["num_perm"] == 4], ids=_case_id)
def test_vectors_one_by_one_equals_batch(case):
    batch = ds.hashvalues_batch(DOCS, case["num_perm"], case["seed"], case["scheme"])
    for d, doc in enumerate(DOCS):
        one = ds.hashvalues(doc, case["num_perm"], case["seed"], case["scheme"])
        assert one.dtype == batch.dtype
        assert np.array_equal(one, batch[d])


def test_batch_accepts_generators_and_mixed_tokens():
    docs = [[b"a", "b", bytearray(b"c")], (t for t in [b"x", b"y"]), []]
    sig = ds.hashvalues_batch(docs, 8, 7, "legacy")
    assert np.array_equal(sig[0], ds.hashvalues([b"a", b"b", b"c"], 8, 7, "legacy"))
    assert np.array_equal(sig[1], ds.hashvalues([b"y", b"x", b"x"], 8, 7, "legacy"))  # a set
    assert sig[2].tolist() == [ds.EMPTY_VALUE] * 8


@pytest.mark.parametrize("scheme", ds.SCHEMES)
def test_empty_input(scheme):
    hv = ds.hashvalues([], 5, 1, scheme)
    assert hv.dtype == ds.DTYPES[scheme]
    assert hv.tolist() == [ds.EMPTY_VALUES[scheme]] * 5
    assert ds.hashvalues_batch([], 5, 1, scheme).shape == (0, 5)
    sig = ds.hashvalues_batch([[], [b"q"], []], 5, 1, scheme)
    assert sig[0].tolist() == sig[2].tolist() == [ds.EMPTY_VALUES[scheme]] * 5


def test_jaccard():
    a = np.array([1, 2, 3, 4], dtype=np.uint64)
    b = np.array([1, 0, 3, 0], dtype=np.uint64)
    assert ds.jaccard(a, b) == 0.5
    assert ds.jaccard(np.stack([a, a]), np.stack([a, b])).tolist() == [1.0, 0.5]
    with pytest.raises(ValueError):
        ds.jaccard(a, b[:3])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_perm": 0},
        {"num_perm": -3},
        {"num_perm": 2.0},
        {"num_perm": True},
        {"seed": -1},
        {"seed": 1 << 32},
        {"seed": "1"},
        {"scheme": "affine16"},
        {"scheme": None},
    ],
)
def test_parameter_validation(kwargs):
    params = {"num_perm": 4, "seed": 1, "scheme": "legacy", **kwargs}
    with pytest.raises(ValueError):
        ds.hashvalues([b"x"], **params)
    with pytest.raises(ValueError):
        ds.permutations(**params)


def test_token_validation():
    with pytest.raises(TypeError):
        ds.hashvalues(b"Hello", 4, 1, "legacy")  # a bare token, not a token list
    with pytest.raises(TypeError):
        ds.hashvalues_batch(["Hello"], 4, 1, "legacy")
    with pytest.raises(TypeError):
        ds.hashvalues([1, 2], 4, 1, "legacy")


def test_legacy_wraps_mod_2_64_before_mersenne_reduction():
    """a*h overflows uint64 for most (a, h); the kernel must reduce the wrapped value."""
    a, b = ds.permutations(64, 1, "legacy")
    toks = [b"t%d" % i for i in range(50)]
    h = ds.sha1_hash32_many(toks)
    ai = np.array(a.tolist(), dtype=object)
    bi = np.array(b.tolist(), dtype=object)
    p, m64 = ds.MERSENNE_PRIME, 1 << 64
    want = [min(((int(x) * ai[k] + bi[k]) % m64) % p & ds.MAX_HASH for x in h) for k in range(64)]
    assert ds.hashvalues(toks, 64, 1, "legacy").tolist() == want


def _fmix32(x: int) -> int:
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


def test_affine32_formula_in_python_ints():
    """Signature slot k = min_t (a_k * fmix32(sha1_hash32(t)) + b_k) mod 2^32."""
    a, b = ds.permutations(32, 42, "affine32")
    toks = [f"w{i}" for i in range(40)]
    hs = [_fmix32(ds.sha1_hash32(t.encode())) for t in toks]
    want = [min((int(a[k]) * x + int(b[k])) % (1 << 32) for x in hs) for k in range(32)]
    assert ds.hashvalues(toks, 32, 42, "affine32").tolist() == want


# -- text -> datasketch signatures inside kernels (SHA-1 compiled) --------------------------------

def test_compiled_sha1_equals_hashlib():
    import hashlib
    import random

    from neardup.kernels.sha1 import sha1_hash32_batch

    rng = random.Random(7)
    msgs = [bytes(rng.randrange(256) for _ in range(n)) for n in list(range(0, 140)) + [183, 184, 1000]]
    off = np.zeros(len(msgs) + 1, dtype=np.int64)
    np.cumsum([len(m) for m in msgs], out=off[1:])
    buf = np.frombuffer(b"".join(msgs) + b"\0", dtype=np.uint8)
    want = [int.from_bytes(hashlib.sha1(m).digest()[:4], "little") for m in msgs]
    assert sha1_hash32_batch(buf, off).tolist() == want
    assert ds.sha1_hash32_many(msgs).tolist() == want


@pytest.mark.parametrize("scheme", ["datasketch-legacy", "datasketch-affine32"])
@pytest.mark.parametrize("ngram", [1, 3, 5])
def test_text_batch_equals_shingle_strings_path(scheme, ngram):
    """MinHasher(scheme="datasketch-*").sign_batch builds and hashes the shingle strings in a
    kernel; it must equal datasketch's values for the strings Shingler.shingles makes."""
    from neardup import MinHasher

    texts = ["The quick brown fox jumps over the lazy dog; the quick brown fox again.",
             "", "   ", "one", "two words", "Straße ＦＵＬＬ ﬁne ½ cup — ΣΊΣΥΦΟΣ İstanbul",
             "中文文本的去重也应该能够直接工作，不需要任何额外的参数。",
             " ".join(["supercalifragilisticexpialidocious" * 3] * 7),  # shingles over 64 bytes
             "repeat repeat repeat repeat repeat repeat repeat repeat"]
    h = MinHasher(num_perm=64, scheme=scheme, seed=3, ngram=ngram)
    got = h.sign_batch(texts).values
    tokens = [[s.encode("utf-8") for s in h.shingler.shingles(t)] for t in texts]
    want = ds.hashvalues_batch(tokens, num_perm=64, seed=3, scheme=scheme.split("-", 1)[1]).astype(np.uint32)
    assert np.array_equal(got, want)
