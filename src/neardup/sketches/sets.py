"""Sets of items (user ids, product ids, tags …) → MinHash signatures, a whole batch at a time.

``sign_sets(sets, num_perm=128, scheme="oph", seed=1)`` takes the sets as an Arrow list array
(``list``/``large_list``/``fixed_size_list`` of integers, strings or binary; chunked or not), as CSR
``csr=(indptr, values)`` of numpy arrays, or as a Python sequence of iterables (a tuple of two
arrays is two sets). Items are the ones of
:mod:`neardup.sketches.items`: an integer is its 8-byte little-endian two's-complement form, a
string its UTF-8 bytes, so ``42`` and ``"42"`` are different items while int8 42 and uint64 42 are
the same (and, being the same 8 bytes, uint64 2**64 − 1 and int64 −1 too); each hashes to
XXH64(bytes, 0). Floats, booleans, nested lists and other items are refused: in Python rows naming
the row, in Arrow or numpy naming the column's type. A set is a set: duplicate items count once
(MinHash is the minimum over the items, so repeating one changes nothing; ``sizes`` counts distinct
items).
The signature of row i is exactly ``MinHash(num_perm, scheme, seed).update(items_i).hashvalues``
(tested); an empty set gets the empty signature, which estimates 0 against everything.

Nulls: ``nulls="error"`` (default) refuses a null set or a null item, naming the row;
``nulls="ignore"`` reads a null set as the empty set and leaves null items out; ``nulls="skip"``
leaves null sets out of the result (so it has fewer rows: the input rows left out are listed, in
order, in ``signatures.config["null_rows"]``) and null items out of their sets. An Arrow chunked
array is read chunk by chunk (no combined copy); dictionary-encoded items are decoded.

The native schemes hash Arrow or numpy buffers inside compiled kernels (no Python object per
item); the ``datasketch-*`` schemes hash item bytes by SHA-1 as datasketch does.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .._arrays import utf8_buffer
from ..errors import ConfigError
from ..features.shingles import Features
from .items import _hash_spans, _hash_u64_words, hash_items, item_bytes
from .minhash import SCHEMES, Signatures, _check, _datasketch_values, sign_features

NULLS = ("error", "ignore", "skip")


class _CSR(tuple):
    """``csr=(indptr, values)`` of :func:`sign_sets` (a plain tuple of sets is a sequence of sets)."""


def sign_sets(sets=None, num_perm: int = 128, scheme: str = "oph", seed: int = 1, *, csr=None,
              nulls: str = "error", sizes: bool = False):
    """Signatures (:class:`Signatures`, one row per set) of a batch of item sets; with ``sizes=True``
    also the number of distinct items of each set (what containment needs). ``csr=(indptr, values)``
    gives the sets as CSR arrays instead of ``sets``. See the module docstring for the inputs, items
    and nulls."""
    if csr is not None:
        if sets is not None:
            raise ConfigError("give the sets once: as sets or as csr=(indptr, values), not both")
        if not isinstance(csr, (tuple, list)) or len(csr) != 2 or not _is_indptr(np.asarray(csr[0])):
            raise ConfigError("csr must be a pair (indptr, values): n + 1 integer offsets and the items")
        sets = _CSR((np.asarray(csr[0]), csr[1]))
    elif sets is None:
        raise ConfigError("sign_sets needs the sets (or csr=(indptr, values))")
    _check(num_perm, scheme, seed)
    if nulls not in NULLS:
        raise ConfigError(f"nulls must be one of {NULLS}, got {nulls!r}")
    if scheme.startswith("datasketch"):
        buf, offsets, indptr, null_rows = _as_bytes(sets, nulls)
        indptr = _skip_rows(indptr, null_rows, nulls)
        tokens = [[bytes(buf[offsets[j]:offsets[j + 1]]) for j in range(indptr[i], indptr[i + 1])]
                  for i in range(indptr.shape[0] - 1)]
        values = _datasketch_values(tokens, int(num_perm), scheme, int(seed))
        hashes = _hash_spans(buf, offsets) if sizes else None
    else:
        hashes, indptr, null_rows = _as_hashes(sets, nulls)
        indptr = _skip_rows(indptr, null_rows, nulls)
        values = sign_features(Features(hashes, indptr), int(num_perm), scheme, int(seed))
    config = {"method": "minhash", "num_perm": int(num_perm), "scheme": scheme, "seed": int(seed), "items": True}
    if nulls == "skip":
        config["null_rows"] = null_rows.tolist()
    sigs = Signatures(values, scheme, int(seed), config)
    if not sizes:
        return sigs
    return sigs, Features(hashes, indptr).unique().sizes().astype(np.int64)


def _skip_rows(indptr: np.ndarray, null_rows: np.ndarray, nulls: str) -> np.ndarray:
    """``indptr`` without the null sets (read as empty) when ``nulls="skip"``."""
    return np.delete(indptr, null_rows + 1) if nulls == "skip" and null_rows.shape[0] else indptr


_NO_ROWS = np.zeros(0, dtype=np.int64)


# -- inputs → (hashes, indptr, null rows) -------------------------------------------------------------------
def _as_hashes(sets, nulls: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item hashes, set offsets and the null sets' rows (read as empty sets)."""
    chunks = _arrow_chunks(sets)
    if chunks is not None:
        return _concat_chunks([_arrow_hashes(c, nulls, base) for c, base in chunks])
    if isinstance(sets, _CSR):
        return _csr_hashes(*sets, nulls)
    return _python_hashes(sets, nulls)


def _concat_chunks(parts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One (hashes, indptr, null rows) of the chunks' ones, in order."""
    if len(parts) == 1:
        return parts[0]
    starts = np.cumsum([0] + [p[1][-1] for p in parts])
    indptr = np.concatenate([np.zeros(1, np.int64)] + [p[1][1:] + s for p, s in zip(parts, starts)])
    hashes = np.concatenate([np.zeros(0, np.uint64)] + [p[0] for p in parts])
    return hashes, indptr, np.concatenate([_NO_ROWS] + [p[2] for p in parts])


def _is_indptr(x) -> bool:
    return isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind in "iu"


def _arrow_chunks(sets):
    """[(list array, its first row)] of a pyarrow list array or chunked array; None when not Arrow."""
    if isinstance(sets, pa.ChunkedArray):
        chunks = [c for c in sets.chunks if len(c)] or [pa.array([], sets.type)]
    elif isinstance(sets, pa.Array):
        chunks = [sets]
    else:
        return None
    starts = np.cumsum([0] + [len(c) for c in chunks]).tolist()
    return [(_arrow_list(c), base) for c, base in zip(chunks, starts)]


def _arrow_list(sets):
    """``sets`` as a list or large_list array of plain (not dictionary-encoded) items."""
    t = sets.type
    if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)):
        raise ConfigError(f"sets as an Arrow array must be a list array (one list of items per set); got {t}")
    vt = t.value_type
    if pa.types.is_dictionary(vt):
        vt = vt.value_type
    if vt != t.value_type or pa.types.is_fixed_size_list(t):
        sets = sets.cast(pa.large_list(vt))
    return sets


def _row_of(indptr: np.ndarray, position: int) -> int:
    """The set (row) holding item ``position``."""
    return int(np.searchsorted(indptr, position, side="right") - 1)


def _arrow_hashes(arr, nulls: str, base: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hashes, indptr, null rows) of one list array whose first row is row ``base`` of the input."""
    n = len(arr)
    offsets = np.asarray(arr.offsets, dtype=np.int64)        # this slice's n + 1 offsets into arr.values
    where = _NO_ROWS
    if arr.null_count:
        where = np.flatnonzero(np.asarray(arr.is_null()))
        if nulls == "error":
            raise ConfigError(f"set {base + int(where[0])} is null ({arr.null_count} null sets here); pass "
                              "nulls='ignore' to read a null set as the empty set or nulls='skip' to leave it out")
        keep_items = np.ones(int(offsets[-1] - offsets[0]) if n else 0, dtype=bool)
        for i in where.tolist():                             # a null set's offsets need not be equal
            keep_items[offsets[i] - offsets[0]:offsets[i + 1] - offsets[0]] = False
    else:
        keep_items = None
    values = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0])) if n else arr.values.slice(0, 0)
    indptr = offsets - offsets[0]
    vt = values.type
    if values.null_count:
        bad = np.asarray(values.is_null())
        if keep_items is not None:
            bad &= keep_items
        if bad.any():
            if nulls == "error":
                raise ConfigError(f"set {base + _row_of(indptr, int(np.flatnonzero(bad)[0]))} holds a null item; "
                                  "pass nulls='ignore' to leave null items out")
            keep_items = ~np.asarray(values.is_null()) if keep_items is None else keep_items & ~np.asarray(
                values.is_null())
    if pa.types.is_integer(vt):
        ints = values.cast(pa.uint64() if pa.types.is_unsigned_integer(vt) else pa.int64())
        if ints.null_count:          # left out below; filled so that the buffer converts as integers
            import pyarrow.compute as pc  # noqa: PLC0415  (pyarrow.compute: 41 ms of start-up, measured; nulls only)

            ints = pc.fill_null(ints, 0)
        words = np.ascontiguousarray(ints.to_numpy(zero_copy_only=False)).view(np.uint64)
        hashes = _hash_u64_words(words)
    elif pa.types.is_string(vt) or pa.types.is_large_string(vt) or pa.types.is_binary(vt) or \
            pa.types.is_large_binary(vt):
        hashes = _hash_spans(*_arrow_buffer(values))
    else:
        raise ConfigError(f"set items must be integers, strings or binary; the list holds {vt}")
    if keep_items is not None:
        hashes, indptr = _compact(hashes, indptr, keep_items)
    return hashes, indptr, where.astype(np.int64) + base


def _arrow_buffer(values) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of an Arrow string/binary array without copying the data."""
    n = len(values)
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    bufs = values.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32)[values.offset: values.offset + n + 1]
    offs = offs.astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None and bufs[2].size else np.zeros(1, np.uint8)
    return data, offs


def _compact(hashes, indptr, keep) -> tuple[np.ndarray, np.ndarray]:
    """The items where ``keep`` is set, with their sets' offsets recounted."""
    kept = np.zeros(keep.shape[0] + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    return np.ascontiguousarray(hashes[keep]), kept[indptr]


def _csr_hashes(indptr, values, nulls: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    indptr, values = _csr_checked(indptr, values)
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        sub = values[int(indptr[0]):int(indptr[-1])]
        return hash_items(np.ascontiguousarray(sub)), (indptr - indptr[0]).astype(np.int64), _NO_ROWS
    return _arrow_hashes(_csr_arrow(indptr, values), nulls)


def _csr_checked(indptr, values):
    """(indptr, values) of a CSR input, checked: offsets in order and within the values, one item each."""
    indptr = np.asarray(indptr)
    if indptr.shape[0] < 1 or np.any(np.diff(indptr) < 0) or indptr[0] < 0:
        raise ConfigError("CSR indptr must be non-decreasing, start at 0 or more, and hold n + 1 offsets")
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ConfigError(f"CSR values must be one-dimensional (one item each); got shape {values.shape}")
    if isinstance(values, np.ndarray) and values.dtype.kind in "fcb":
        raise ConfigError(f"set items must be integers, strings or bytes; the CSR values are {values.dtype}")
    if not hasattr(values, "__len__"):
        values = list(values)
    if indptr[-1] > len(values):
        raise ConfigError(f"CSR indptr ends at {int(indptr[-1])}, past the {len(values)} values")
    return indptr, values


def _csr_arrow(indptr, values):
    """A checked CSR pair of non-integer-array values as an Arrow large_list array."""
    try:
        arr = values if isinstance(values, pa.Array) else pa.array(values if isinstance(values, np.ndarray)
                                                                   else list(values))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ConfigError(f"CSR values must be all integers, all strings or all bytes: {exc}") from None
    offsets = pa.array(indptr.astype(np.int64), pa.int64())
    return _arrow_list(pa.LargeListArray.from_arrays(offsets, arr))


def _python_hashes(sets, nulls: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    _check_sequence(sets)
    parts, indptr = [], np.zeros(len(sets) + 1, dtype=np.int64)
    for i, s in enumerate(sets):
        h = _row_hashes(i, s, nulls)
        parts.append(h)
        indptr[i + 1] = indptr[i] + h.shape[0]
    hashes = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    return hashes, indptr, _none_rows(sets, nulls)


def _check_sequence(sets) -> None:
    if isinstance(sets, (str, bytes)) or not isinstance(sets, (Sequence, np.ndarray)):
        raise ConfigError("sets must be an Arrow list array, a (indptr, values) pair of arrays, or a sequence "
                          f"of iterables of items; got {type(sets).__name__}")


def _none_rows(rows, nulls: str) -> np.ndarray:
    """The rows that are None (null sets); only wanted by ``nulls="skip"``."""
    if nulls != "skip":
        return _NO_ROWS
    return np.array([i for i, s in enumerate(rows) if s is None], dtype=np.int64)


def _row_items(i: int, s, nulls: str) -> list:
    if s is None:
        if nulls == "error":
            raise ConfigError(f"set {i} is None; pass nulls='ignore' to read it as the empty set or "
                              "nulls='skip' to leave it out")
        return []
    if isinstance(s, (str, bytes)):
        raise ConfigError(f"set {i} is a {type(s).__name__}, not a collection of items (wrap one item in a list)")
    try:
        items = list(s)
    except TypeError:
        raise ConfigError(f"set {i} is not iterable: {type(s).__name__}") from None
    if any(x is None for x in items):
        if nulls == "error":
            raise ConfigError(f"set {i} holds a None item; pass nulls='ignore' to leave null items out")
        items = [x for x in items if x is not None]
    return items


def _row_hashes(i: int, s, nulls: str) -> np.ndarray:
    if isinstance(s, np.ndarray) and s.dtype.kind in "iu":
        return hash_items(s)
    try:
        return hash_items(_row_items(i, s, nulls))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"set {i}: {exc}") from None


def _as_bytes(sets, nulls: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every item's bytes (the ``datasketch-*`` schemes hash bytes): (buffer, item offsets, set indptr,
    null rows)."""
    chunks = _arrow_chunks(sets)
    if chunks is None and isinstance(sets, _CSR):
        chunks = [(_csr_arrow(*_csr_checked(*sets)), 0)]
    if chunks is not None:
        rows = [r for c, _ in chunks for r in c.to_pylist()]
    else:
        _check_sequence(sets)
        rows = list(sets)
    chunks, counts = [], []
    for i, s in enumerate(rows):
        try:
            items = _row_items(i, s.tolist() if isinstance(s, np.ndarray) else s, nulls)
            chunks.append(item_bytes(items))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"set {i}: {exc}") from None
        counts.append(len(chunks[-1]))
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    flat = [b for c in chunks for b in c]
    offsets = np.zeros(len(flat) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in flat], out=offsets[1:])
    buf = utf8_buffer(flat)
    return buf, offsets, indptr, _none_rows(rows, nulls)


__all__ = ["sign_sets", "NULLS", "SCHEMES"]
