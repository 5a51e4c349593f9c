"""MinHash values identical to datasketch 2.0.0 (``datasketch.MinHash``), computed in batches.

Reference: ``datasketch/minhash.py`` and ``datasketch/hashfunc.py`` of datasketch 2.0.0.
A document is a set of tokens; each token is hashed with SHA-1 and each of the ``num_perm``
slots keeps the minimum of a seeded permutation of those hashes:

* token hash: ``sha1_hash32(t)`` = first 4 bytes of SHA-1(t) read as little-endian uint32
  (``affine64`` uses the first 8 bytes, ``sha1_hash64``);
* ``legacy``:   pi_k(h) = ((a_k h + b_k mod 2^64) mod (2^61 - 1)) & (2^32 - 1), where
  numpy ``RandomState(seed)`` draws, for k = 0..num_perm-1 in turn, a_k in [1, 2^61 - 1)
  then b_k in [0, 2^61 - 1) (uint64 scalars, interleaved);
* ``affine32``: pi_k(h) = (a_k fmix32(h) + b_k) mod 2^32, where ``RandomState(seed)`` draws
  the whole vector u in [0, 2^31) first, a = 2u + 1, then the vector b in [0, 2^32) (uint32);
* ``affine64``: the same over 64 bits: a = 2u + 1 with u in [0, 2^63), b in [0, 2^64) (uint64).

An empty document keeps the empty value (2^32 - 1, or 2^64 - 1 for ``affine64``) in every
slot. Values come back in datasketch's dtypes: uint64 (legacy, affine64) and uint32 (affine32).
Strings are encoded as UTF-8 before hashing (datasketch itself requires bytes).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from neardup.kernels.datasketch_compat import (
    minhash_affine32,
    minhash_affine64,
    minhash_legacy,
)

from ...errors import ConfigError

__all__ = [
    "SCHEMES",
    "DEFAULT_SCHEME",
    "MERSENNE_PRIME",
    "MAX_HASH",
    "MAX_HASH64",
    "EMPTY_VALUE",
    "EMPTY_VALUES",
    "DTYPES",
    "permutations",
    "sha1_hash32",
    "sha1_hash64",
    "sha1_hash32_many",
    "sha1_hash64_many",
    "hashvalues",
    "hashvalues_batch",
    "jaccard",
]

SCHEMES = ("legacy", "affine32", "affine64")
#: datasketch 2.0.0's default scheme (``MinHash()`` with no ``scheme``).
DEFAULT_SCHEME = "affine32"
#: 2^61 - 1, the modulus of the legacy permutations.
MERSENNE_PRIME = (1 << 61) - 1
#: 2^32 - 1: largest 32-bit hash and the empty value of ``legacy`` and ``affine32``.
MAX_HASH = (1 << 32) - 1
#: 2^64 - 1: largest 64-bit hash and the empty value of ``affine64``.
MAX_HASH64 = (1 << 64) - 1
EMPTY_VALUE = MAX_HASH
EMPTY_VALUES = {"legacy": MAX_HASH, "affine32": MAX_HASH, "affine64": MAX_HASH64}
DTYPES = {"legacy": np.dtype(np.uint64), "affine32": np.dtype(np.uint32), "affine64": np.dtype(np.uint64)}

_MAX_NUM_PERM = 1 << 32  # datasketch's own bound


def _check_params(num_perm, seed, scheme) -> None:
    if isinstance(num_perm, bool) or not isinstance(num_perm, (int, np.integer)):
        raise ConfigError(f"num_perm must be an int >= 1, got {num_perm!r}")
    if not 1 <= num_perm <= _MAX_NUM_PERM:
        raise ConfigError(f"num_perm must be in [1, 2^32], got {num_perm}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed must be an int in [0, 2^32), got {seed!r}")
    if not 0 <= seed < (1 << 32):
        raise ConfigError(f"seed must be in [0, 2^32) (numpy RandomState), got {seed}")
    if scheme not in SCHEMES:
        raise ConfigError(f"scheme must be one of {', '.join(SCHEMES)}, got {scheme!r}")


@lru_cache(maxsize=64)
def _permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        p = np.uint64(MERSENNE_PRIME)
        ab = np.empty((2, num_perm), dtype=np.uint64)
        for k in range(num_perm):  # a_k then b_k, one scalar draw each
            ab[0, k] = gen.randint(1, p, dtype=np.uint64)
            ab[1, k] = gen.randint(0, p, dtype=np.uint64)
        a, b = ab[0].copy(), ab[1].copy()
    else:
        width = 32 if scheme == "affine32" else 64
        dt = np.uint32 if width == 32 else np.uint64
        a = gen.randint(0, 1 << (width - 1), num_perm, dtype=dt) * dt(2) + dt(1)
        b = gen.randint(0, 1 << width, num_perm, dtype=dt)
    a.setflags(write=False)
    b.setflags(write=False)
    return a, b


def permutations(num_perm: int = 128, seed: int = 1, scheme: str = DEFAULT_SCHEME) -> tuple[np.ndarray, np.ndarray]:
    """datasketch's permutation parameters ``(a, b)`` (``MinHash(...).permutations``).

    Cached per ``(num_perm, seed, scheme)``; the returned arrays are read-only.
    """
    _check_params(num_perm, seed, scheme)
    return _permutations(int(num_perm), int(seed), scheme)


def _as_bytes(token) -> bytes:
    if isinstance(token, str):
        return token.encode("utf-8")
    if isinstance(token, (bytes, bytearray, memoryview)):
        return token
    raise TypeError(f"tokens must be bytes or str, got {type(token).__name__}")


def sha1_hash32(data: bytes) -> int:
    """First 4 bytes of SHA-1(data) as a little-endian uint32 (datasketch ``sha1_hash32``)."""
    return int.from_bytes(hashlib.sha1(data).digest()[:4], "little")


def sha1_hash64(data: bytes) -> int:
    """First 8 bytes of SHA-1(data) as a little-endian uint64 (datasketch ``sha1_hash64``)."""
    return int.from_bytes(hashlib.sha1(data).digest()[:8], "little")


def _sha1_prefix_many(tokens: Iterable, nbytes: int, dtype: str) -> np.ndarray:
    sha1 = hashlib.sha1
    if not isinstance(tokens, (list, tuple)):
        tokens = list(tokens)
    try:  # fast path: every token is already bytes-like
        buf = b"".join([sha1(t).digest()[:nbytes] for t in tokens])
    except TypeError:  # str tokens (or invalid ones, reported by _as_bytes)
        buf = b"".join([sha1(_as_bytes(t)).digest()[:nbytes] for t in tokens])
    return np.frombuffer(buf, dtype=dtype).astype(dtype[1:], copy=True)


def sha1_hash32_many(tokens: Iterable[bytes | str]) -> np.ndarray:
    """:func:`sha1_hash32` of every token, as a uint32 array (str tokens encoded UTF-8)."""
    return _sha1_prefix_many(tokens, 4, "<u4")


def sha1_hash64_many(tokens: Iterable[bytes | str]) -> np.ndarray:
    """:func:`sha1_hash64` of every token, as a uint64 array (str tokens encoded UTF-8)."""
    return _sha1_prefix_many(tokens, 8, "<u8")


def _check_tokens(tokens, what: str) -> None:
    if isinstance(tokens, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be an iterable of tokens, not a single {type(tokens).__name__}")


def hashvalues_batch(
    docs: Sequence[Iterable[bytes | str]],
    num_perm: int = 128,
    seed: int = 1,
    scheme: str = DEFAULT_SCHEME,
) -> np.ndarray:
    """Signatures of many documents: row d equals datasketch's
    ``MinHash(num_perm, seed, scheme=scheme)`` after ``update_batch(docs[d])``.

    Returns an ``(ndocs, num_perm)`` array (uint64 for legacy/affine64, uint32 for affine32).
    """
    _check_params(num_perm, seed, scheme)
    _check_tokens(docs, "docs")
    a, b = _permutations(int(num_perm), int(seed), scheme)
    lengths = []
    flat: list = []
    for doc in docs:
        _check_tokens(doc, "each document")
        before = len(flat)
        flat.extend(doc)
        lengths.append(len(flat) - before)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if scheme == "affine64":
        return minhash_affine64(sha1_hash64_many(flat), offsets, a, b)
    return hashvalues_from_hash32(sha1_hash32_many(flat), offsets, num_perm, seed, scheme)


def hashvalues_from_hash32(h: np.ndarray, offsets: np.ndarray, num_perm: int = 128, seed: int = 1,
                           scheme: str = DEFAULT_SCHEME) -> np.ndarray:
    """Signatures from the tokens' ``sha1_hash32`` values in CSR form (document d owns
    ``h[offsets[d]:offsets[d+1]]``), for the 32-bit schemes ``legacy`` and ``affine32``."""
    _check_params(num_perm, seed, scheme)
    if scheme not in ("legacy", "affine32"):
        raise ConfigError(f"hashvalues_from_hash32 takes the 32-bit schemes, got {scheme!r}")
    a, b = _permutations(int(num_perm), int(seed), scheme)
    if scheme == "legacy":
        return minhash_legacy(h, offsets, a, b)
    return minhash_affine32(h, offsets, a, b)


def hashvalues(
    tokens: Iterable[bytes | str],
    num_perm: int = 128,
    seed: int = 1,
    scheme: str = DEFAULT_SCHEME,
) -> np.ndarray:
    """One document's signature: datasketch ``MinHash(num_perm, seed, scheme=scheme)`` after
    updating with every token, i.e. its ``hashvalues`` (same values and dtype)."""
    _check_tokens(tokens, "tokens")
    return hashvalues_batch([tokens], num_perm, seed, scheme)[0]


def jaccard(a: np.ndarray, b: np.ndarray) -> float | np.ndarray:
    """datasketch's Jaccard estimate: the fraction of slots where two signatures are equal.

    For 2-D inputs of equal shape the estimate is taken row by row.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim == 0 or a.shape[-1] == 0:
        raise ConfigError(f"signatures must be non-empty and of equal shape, got {a.shape} and {b.shape}")
    eq = np.count_nonzero(a == b, axis=-1) / a.shape[-1]
    return float(eq) if a.ndim == 1 else eq
