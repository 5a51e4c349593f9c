import numpy as np
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.kernels.hashing import fmix64, splitmix64_array, xxh64_bytes


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(min_value=0, max_value=2**64 - 1))
def test_xxh64_matches_reference(data, seed):
    assert xxh64_bytes(data, seed) == xxhash.xxh64_intdigest(data, seed)


def test_xxh64_known_boundaries():
    for n in (0, 1, 3, 4, 7, 8, 15, 31, 32, 33, 63, 64, 65, 1000):
        data = bytes(range(256)) * 4
        assert xxh64_bytes(data[:n], 7) == xxhash.xxh64_intdigest(data[:n], 7)


def test_fmix64_is_a_bijection_on_a_sample():
    xs = np.arange(200_000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    ys = np.array([fmix64(x) for x in xs[:2000]], dtype=np.uint64)
    assert len(np.unique(ys)) == 2000


def test_splitmix_stream_is_deterministic_and_prefix_stable():
    a = splitmix64_array(np.uint64(42), 10)
    b = splitmix64_array(np.uint64(42), 20)
    assert np.array_equal(a, b[:10])
    # published first output of SplitMix64 seeded with 0 (Vigna's reference implementation)
    assert int(splitmix64_array(np.uint64(0), 1)[0]) == 0xE220A8397B1DCDAF


# -- the shingle hash definition, re-implemented in plain Python -------------------------------
M64 = (1 << 64) - 1
_P1, _P2, _P5 = 11400714785074694791, 14029467366897019727, 2870177450012600261


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _fmix(k):
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    return k ^ (k >> 33)


def ref_token_hash(data: bytes, seed: int) -> int:
    h, w, pending = seed, 0, 0
    for b in data:
        w = ((w << 8) | b) & M64
        pending += 1
        if pending == 8:
            h = (_rotl(h ^ ((w * _P2) & M64), 31) * _P1) & M64
            w, pending = 0, 0
    if pending:
        h = (_rotl(h ^ ((w * _P2) & M64), 31) * _P1) & M64
    return _fmix(h ^ ((len(data) * _P5) & M64))


def ref_shingles(tokens: list[bytes], n: int, seed: int) -> list[int]:
    th = [ref_token_hash(t, seed) for t in tokens]
    if not th:
        return []
    if len(th) < n:
        h = 0
        for t in th:
            h = (h * _P1 + t) & M64
        return [_fmix(h ^ seed ^ len(th))]
    out = []
    for i in range(len(th) - n + 1):
        h = 0
        for t in th[i:i + n]:
            h = (h * _P1 + t) & M64
        out.append(_fmix(h ^ seed))
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(categories=["Ll", "Lu", "Nd", "Lo"]), min_size=1, max_size=20),
                max_size=30),
       st.integers(1, 6), st.integers(0, 2**64 - 1))
def test_kernel_shingle_hashes_match_the_definition(words, n, seed):
    from neardup import Shingler
    from neardup.text.tokenize import tokenize

    text = " ".join(words)
    sh = Shingler(ngram=n, seed=seed, normalizer=None)
    got = sh.features([text]).hashes.tolist()
    tokens = [t.encode("utf-8") for t in tokenize(text, "word")]
    assert got == ref_shingles(tokens, n, seed)


def test_the_plain_python_salt_is_the_kernels_splitmix():
    from neardup._seeds import SALT_TAG, scheme_salt
    from neardup.kernels.hashing import splitmix64_array

    rng = np.random.default_rng(5)
    for seed in [0, 1, 2, 2**63, 2**64 - 1, *rng.integers(0, 2**63, 20).tolist()]:
        want = splitmix64_array(np.uint64(seed) ^ np.uint64(SALT_TAG), 1)[0]
        assert scheme_salt(seed) == want and type(scheme_salt(seed)) is np.uint64
