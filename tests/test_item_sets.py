"""neardup.sign_sets: item sets signed in batches — equal to the one-at-a-time MinHash for every scheme
and input form, the documented results for empty sets, duplicates, one-item sets, mixed types and
nulls, clear errors naming the row, and the README's similar-users example run as written."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from neardup import SCHEMES, ConfigError, MinHash, sign_sets
from neardup.sketches.minhash import empty_value

ROOT = Path(__file__).resolve().parents[1]
SETS = [[1, 2, 3], [3, 4, 5, 5, 5], [], [7], [-1, 2**63, 2**64 - 1, -(2**63)], list(range(300))]
STRS = [["a", "b"], ["b", "c", "ü", "😀"], [], ["x"], ["a", "a", "a"]]


def _one(items, scheme, num_perm=64):
    return MinHash(num_perm, scheme, 3).update(items).hashvalues


def _check_rows(sigs, rows, scheme, num_perm=64):
    assert sigs.values.shape == (len(rows), num_perm) and sigs.scheme == scheme and sigs.seed == 3
    for i, items in enumerate(rows):
        assert np.array_equal(sigs.values[i], _one(items, scheme, num_perm)), (scheme, i, items)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_input_form_equals_one_at_a_time(scheme):
    kw = dict(num_perm=64, scheme=scheme, seed=3)
    _check_rows(sign_sets(SETS, **kw), SETS, scheme)                                  # Python lists
    _check_rows(sign_sets([np.array(s, dtype=np.uint64 if s and max(s) >= 2**63 else np.int64) for s in SETS
                           if not any(x < 0 for x in s) or max(s) < 2**63], **kw),
                [s for s in SETS if not any(x < 0 for x in s) or max(s) < 2**63], scheme)   # numpy rows
    _check_rows(sign_sets(STRS, **kw), STRS, scheme)
    ints = [s for s in SETS if all(-(2**63) <= x < 2**63 for x in s)]
    arr = pa.array(ints, pa.list_(pa.int64()))
    _check_rows(sign_sets(arr, **kw), ints, scheme)                                   # Arrow list
    _check_rows(sign_sets(arr.cast(pa.large_list(pa.int64())), **kw), ints, scheme)    # large list
    _check_rows(sign_sets(arr.slice(1, 3), **kw), ints[1:4], scheme)                  # a slice
    _check_rows(sign_sets(pa.chunked_array([arr.slice(0, 2), arr.slice(2)]), **kw), ints, scheme)
    _check_rows(sign_sets(pa.array(STRS, pa.list_(pa.string())), **kw), STRS, scheme)
    _check_rows(sign_sets(pa.array(STRS, pa.large_list(pa.large_string())), **kw), STRS, scheme)
    bins = [[x.encode() for x in s] for s in STRS]
    _check_rows(sign_sets(pa.array(bins, pa.list_(pa.binary())), **kw), bins, scheme)
    fixed = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12, dtype=np.int32)), 3)
    _check_rows(sign_sets(fixed, **kw), [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]], scheme)
    flat = [x for s in ints for x in s]
    indptr = np.concatenate([[0], np.cumsum([len(s) for s in ints])]).astype(np.int64)
    _check_rows(sign_sets(csr=(indptr, np.array(flat, dtype=np.int64)), **kw), ints, scheme)   # CSR ints
    sflat = [x for s in STRS for x in s]
    sptr = np.concatenate([[0], np.cumsum([len(s) for s in STRS])]).astype(np.int64)
    _check_rows(sign_sets(csr=(sptr, np.array(sflat, dtype=object)), **kw), STRS, scheme)      # CSR strings


def test_item_identity_duplicates_and_one_item_sets():
    """int8 42 = uint64 42 = Python 42 ≠ "42"; duplicates count once; a one-item set is that item's."""
    a = sign_sets(pa.array([[42]], pa.list_(pa.int8()))).values[0]
    assert np.array_equal(a, sign_sets(pa.array([[42]], pa.list_(pa.uint64()))).values[0])
    assert np.array_equal(a, sign_sets([[42]]).values[0])
    assert not np.array_equal(a, sign_sets([["42"]]).values[0])
    big = 2**63 + 5                                  # the same value as int64 and uint64 columns: one item
    as_u = pa.array([[5, big]], pa.list_(pa.uint64()))
    assert np.array_equal(sign_sets(pa.array([[5]], pa.list_(pa.int64()))).values,
                          sign_sets(pa.array([[5]], pa.list_(pa.uint64()))).values)
    assert np.array_equal(sign_sets(as_u).values, sign_sets([[5, big]]).values)
    # the same 8 bytes are the same item: uint64 2**63 + 5 is int64 -(2**63) + 5 (two's complement)
    _, n = sign_sets([[big, -(2**63) + 5, 2**64 - 1, -1]], sizes=True)
    assert n.tolist() == [2]
    mixed = sign_sets([[1, "1"], [1], ["1"]])        # mixed types in one row: two different items
    assert 0.0 < mixed.jaccard_pairs([0], [1])[0] < 1.0 and 0.0 < mixed.jaccard_pairs([0], [2])[0] < 1.0
    dup, sizes = sign_sets([[5, 5, 6, 6, 6], [5, 6]], sizes=True)
    assert np.array_equal(dup.values[0], dup.values[1]) and sizes.tolist() == [2, 2]
    _, sizes = sign_sets(pa.array([["a", "a", "b"], [], ["c"]]), sizes=True)
    assert sizes.tolist() == [2, 0, 1]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_empty_sets_get_the_empty_signature(scheme):
    s = sign_sets([[], [1, 2], []], num_perm=32, scheme=scheme)
    assert np.all(s.values[0] == empty_value(scheme)) and np.array_equal(s.values[0], s.values[2])
    assert s.jaccard_pairs([0, 0], [1, 2]).tolist() == [0.0, 0.0]
    assert sign_sets([], num_perm=32, scheme=scheme).values.shape == (0, 32)


def test_estimates_follow_the_true_jaccard():
    """Item sets with planted overlaps: the k = 256 estimates lie within 4.5 standard deviations
    sqrt(J(1 − J)/k) of the true Jaccard (seed fixed; 40 pairs)."""
    rng = np.random.default_rng(11)
    a_rows, b_rows, true = [], [], []
    for _ in range(40):
        shared = int(rng.integers(0, 400))
        only = rng.integers(0, 300, size=2)
        base = rng.choice(10**9, size=shared + only.sum(), replace=False)
        a_rows.append(base[:shared + only[0]])
        b_rows.append(np.concatenate([base[:shared], base[shared + only[0]:]]))
        true.append(shared / (shared + only.sum()))
    sigs = sign_sets(a_rows + b_rows, num_perm=256)
    est = sigs.jaccard_pairs(np.arange(40), np.arange(40, 80))
    true = np.array(true)
    assert np.all(np.abs(est - true) <= 4.5 * np.sqrt(true * (1 - true) / 256) + 1e-9)


def test_nulls_are_refused_naming_the_row_or_ignored_when_asked():
    arr = pa.array([[1, 2], None, [3]], pa.list_(pa.int64()))
    with pytest.raises(ConfigError, match="set 1 is null"):
        sign_sets(arr)
    got = sign_sets(arr, nulls="ignore")
    assert np.array_equal(got.values, sign_sets([[1, 2], [], [3]]).values)
    items = pa.array([[1, 2], [3, None, 4]], pa.list_(pa.int64()))
    with pytest.raises(ConfigError, match="set 1 holds a null item"):
        sign_sets(items)
    assert np.array_equal(sign_sets(items, nulls="ignore").values, sign_sets([[1, 2], [3, 4]]).values)
    # a null set whose (ignored) range holds a null item, and Python None
    odd = pa.LargeListArray.from_arrays(pa.array([0, 2, 3, 4], pa.int64()), pa.array(["a", "b", None, "c"]),
                                        mask=pa.array([False, True, False]))
    with pytest.raises(ConfigError, match="set 1 is null"):
        sign_sets(odd)
    assert np.array_equal(sign_sets(odd, nulls="ignore").values, sign_sets([["a", "b"], [], ["c"]]).values)
    with pytest.raises(ConfigError, match="set 2 is None"):
        sign_sets([[1], [2], None])
    with pytest.raises(ConfigError, match="set 0 holds a None item"):
        sign_sets([[1, None]])
    assert np.array_equal(sign_sets([[1, None], None], nulls="ignore").values, sign_sets([[1], []]).values)
    for scheme in ("datasketch-legacy", "oph"):
        with pytest.raises(ConfigError, match="set 1"):
            sign_sets([["a"], ["b", None]], scheme=scheme)
    with pytest.raises(ConfigError, match="nulls must be one of"):
        sign_sets([[1]], nulls="drop")


@pytest.mark.parametrize("scheme", ["oph", "bottomk", "datasketch-legacy"])
def test_nulls_skip_leaves_null_sets_out_and_lists_their_rows(scheme):
    kw = dict(num_perm=32, scheme=scheme)
    want = sign_sets([[1, 2], [3], [4, 5]], **kw).values
    arr = pa.array([None, [1, 2], [3, None], None, [4, 5]], pa.list_(pa.int64()))
    got = sign_sets(arr, nulls="skip", **kw)
    assert np.array_equal(got.values, want) and got.config["null_rows"] == [0, 3]
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2, 0), arr.slice(2)])
    got, sizes = sign_sets(chunked, nulls="skip", sizes=True, **kw)
    assert np.array_equal(got.values, want) and got.config["null_rows"] == [0, 3] and sizes.tolist() == [2, 1, 2]
    got = sign_sets([None, [1, 2], [3, None], None, [4, 5]], nulls="skip", **kw)
    assert np.array_equal(got.values, want) and got.config["null_rows"] == [0, 3]
    none = sign_sets([None, None], nulls="skip", **kw)
    assert none.values.shape == (0, 32) and none.config["null_rows"] == [0, 1]
    assert sign_sets([[1]], nulls="skip", **kw).config["null_rows"] == []
    assert "null_rows" not in sign_sets([[1]], **kw).config


def test_chunked_arrays_name_the_row_of_the_whole_column():
    """Chunks are read one by one; an error names the row in the whole column, not in its chunk."""
    col = pa.chunked_array([pa.array([[1], [2]]), pa.array([[3], None])])
    with pytest.raises(ConfigError, match="set 3 is null"):
        sign_sets(col)
    col = pa.chunked_array([pa.array([["a"], ["b"]]), pa.array([], pa.list_(pa.string())),
                            pa.array([["c"], ["d", None]])])
    with pytest.raises(ConfigError, match="set 3 holds a null item"):
        sign_sets(col)
    assert np.array_equal(sign_sets(col, nulls="ignore").values, sign_sets([["a"], ["b"], ["c"], ["d"]]).values)
    empty = pa.chunked_array([], pa.list_(pa.int64()))
    assert sign_sets(empty, num_perm=16).values.shape == (0, 16)


def test_dictionary_items_and_csr_nulls():
    """Dictionary-encoded items (as Parquet readers may give) are their values; CSR values honour nulls."""
    plain = pa.array([["a", "b"], ["b"], []], pa.list_(pa.string()))
    dict_items = pa.ListArray.from_arrays(pa.array([0, 2, 3, 3], pa.int32()),
                                          pa.array(["a", "b", "b"]).dictionary_encode())
    assert np.array_equal(sign_sets(dict_items).values, sign_sets(plain).values)
    csr = (np.array([0, 2, 3]), ["a", None, "b"])
    with pytest.raises(ConfigError, match="set 0 holds a null item"):
        sign_sets(csr=csr)
    assert np.array_equal(sign_sets(csr=csr, nulls="ignore").values, sign_sets([["a"], ["b"]]).values)
    assert np.array_equal(sign_sets(csr=csr, nulls="ignore", scheme="datasketch-legacy").values,
                          sign_sets([["a"], ["b"]], scheme="datasketch-legacy").values)


@pytest.mark.parametrize("bad, match", [
    ([[1, 2.5]], r"set 0: set items must be str, bytes or int, got float"),
    ([[1], [[2, 3]]], r"set 1: set items must be str, bytes or int, got list"),
    ([[True]], r"set 0: .*got bool"),
    ([[1], [2**64]], r"set 1: integer item 18446744073709551616 does not fit in 64 bits"),
    (["abc"], r"set 0 is a str, not a collection"),
    ([[1], 5], r"set 1 is not iterable"),
    ("abc", r"sets must be an Arrow list array"),
    (pa.array([1, 2, 3]), r"must be a list array"),
    (pa.array([[1.5]]), r"set items must be integers, strings or binary; the list holds double"),
    (pa.array([[True]]), r"the list holds bool"),
    ((np.array([0, 2, 1]), np.array([1, 2, 3])), r"indptr must be non-decreasing"),
    ((np.array([0, 5]), np.array([1, 2, 3])), r"past the 3 values"),
    ((np.array([0, 1]), np.array([1.5])), r"CSR values are float64"),
    ((np.array([0, 2]), np.array(["a", 1], dtype=object)), r"CSR values must be all integers"),
    ((np.array([0, 1]), np.array([[5]])), r"CSR values must be one-dimensional"),
    ((np.array([], np.int64), np.array([], np.int64)), r"hold n \+ 1 offsets"),
])
def test_bad_input_is_named(bad, match):
    with pytest.raises(ConfigError, match=match):
        if isinstance(bad, tuple):
            sign_sets(csr=bad)
        else:
            sign_sets(bad)


def test_a_tuple_of_two_arrays_is_two_sets_and_csr_is_explicit():
    """A tuple of sets is a sequence of sets, even when it looks like (indptr, values)."""
    two = sign_sets((np.array([0, 1]), np.array([5, 6, 7])))
    assert len(two) == 2 and np.array_equal(two.values, sign_sets([[0, 1], [5, 6, 7]]).values)
    one = sign_sets(csr=(np.array([0, 1]), np.array([5, 6, 7])))
    assert len(one) == 1 and np.array_equal(one.values, sign_sets([[5]]).values)
    with pytest.raises(ConfigError, match="not both"):
        sign_sets([[1]], csr=(np.array([0, 1]), np.array([1])))
    with pytest.raises(ConfigError, match="needs the sets"):
        sign_sets()
    with pytest.raises(ConfigError, match="csr must be a pair"):
        sign_sets(csr=[np.array([1, 2])])


def test_guide_similar_users_example(tmp_path, monkeypatch):
    """The guide's example (docs/guide/python.md), run as written on a ratings file with planted similar
    users: every planted pair (true Jaccard ≥ 0.8) is found and no pair below 0.2 is reported."""
    text = (ROOT / "docs" / "guide" / "python.md").read_text(encoding="utf-8")
    code = re.search(r"<!-- example: similar-users -->\s*```python\n(.*?)```", text, re.S).group(1)
    rng = np.random.default_rng(5)
    users, items, sets = [], [], {}
    for u in range(200):
        if u % 2 and u > 0 and (u - 1) in sets and rng.random() < 0.5:
            base = sets[u - 1]                     # a near copy of the previous user: J ≈ 0.9
            s = set(base[: int(len(base) * 0.95)]) | set(rng.integers(10**6, 2 * 10**6, size=2).tolist())
        else:
            s = set(rng.choice(10**6, size=int(rng.integers(20, 80)), replace=False).tolist())
        sets[u] = sorted(s)
        for it in s:
            users.append(f"user-{u}")
            items.append(int(it))
    order = rng.permutation(len(users))
    pq.write_table(pa.table({"user": pa.array(users).take(order), "item": pa.array(items).take(order)}),
                   tmp_path / "ratings.parquet")
    monkeypatch.chdir(tmp_path)
    env: dict = {}
    exec(compile(code, "README.md example", "exec"), env)
    found = {(r["id_a"], r["id_b"]) for r in env["similar"].to_pylist()}
    found |= {(b, a) for a, b in found}

    def jac(a, b):
        sa, sb = set(sets[a]), set(sets[b])
        return len(sa & sb) / len(sa | sb)

    planted = [(f"user-{u - 1}", f"user-{u}") for u in range(1, 200) if jac(u - 1, u) >= 0.8]
    assert len(planted) >= 20 and all(p in found for p in planted)
    for a, b in found:
        assert jac(int(a[5:]), int(b[5:])) >= 0.2
