"""MinHash (Broder 1997): estimate Jaccard similarity J(A, B) = |A ∩ B| / |A ∪ B| from k values.

For a random permutation π of the universe, P[min π(A) = min π(B)] = J(A, B); with k slots the
estimate Ĵ = (1/k) Σ_j [sig_A,j = sig_B,j] is unbiased with variance J(1 − J)/k.

Schemes (``scheme=``):

* ``"oph"`` (default) — one permutation hashing with optimal densification, O(n + k);
* ``"permutation"`` — k independent multiply-shift hash functions, O(n k);
* ``"bottomk"`` — one hash, the k smallest values; estimator over the k smallest of the union;
* ``"datasketch-legacy"`` / ``"datasketch-affine32"`` — bit-for-bit the values of datasketch
  2.0.0's ``legacy`` / ``affine32`` schemes for the same seed and token bytes.

See :mod:`neardup.kernels.minhash` for the exact hash functions.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np

from .._arrays import in_threads
from .._seeds import scheme_salt
from .._version import __version__
from ..errors import ConfigError, InputFormatError
from ..features.shingles import Features, Shingler, sorted_distinct
from ..kernels import minhash as K
from ..kernels.sha1 import datasketch_shingle_hashes
from ..text.normalize import encode_batch, kernel_char_map, run_nfkc_checked
from ..text.tokenize import signing_tokenizer
from ..text.unicode import char_map, class_table
from .compat import datasketch as ds
from .compat.datasketch import hashvalues_from_hash32
from .items import hash_items, item_bytes

SCHEMES = ("oph", "permutation", "bottomk", "datasketch-legacy", "datasketch-affine32")
DEFAULT_SCHEME = "oph"
_DTYPES = {"oph": np.uint32, "permutation": np.uint32, "bottomk": np.uint64,
           "datasketch-legacy": np.uint32, "datasketch-affine32": np.uint32}
SLOTWISE = frozenset(SCHEMES) - {"bottomk"}   # schemes whose Jaccard estimate is the fraction of equal slots
_MAGIC = b"NDMH"


def _check(num_perm, scheme, seed) -> None:
    if scheme not in SCHEMES:
        raise ConfigError(f"unknown MinHash scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if isinstance(num_perm, bool) or not isinstance(num_perm, (int, np.integer)) or not 1 <= num_perm <= 1 << 16:
        raise ConfigError(f"num_perm must be an integer in [1, 65536], got {num_perm!r}")
    hi = 2**32 if scheme.startswith("datasketch") else 2**64
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < hi:
        raise ConfigError(f"seed must be an integer in [0, {hi}) for scheme {scheme!r}, got {seed!r}")


def empty_value(scheme: str) -> int:
    return int(np.iinfo(_DTYPES[scheme]).max)


def sign_features(features: Features, num_perm: int, scheme: str, seed: int) -> np.ndarray:
    """Signature matrix (n_docs × num_perm) of CSR shingle hashes for the native schemes."""
    h, off = features.hashes, features.offsets
    if scheme == "oph":
        return K.oph_batch(h, off, num_perm, scheme_salt(seed))
    if scheme == "permutation":
        a, b = K.permutation_params(seed, num_perm)
        return K.permutation_batch(h, off, a, b)
    if scheme == "bottomk":
        return K.bottomk_batch(h, off, num_perm, scheme_salt(seed))
    raise ConfigError(f"scheme {scheme!r} hashes token bytes, not 64-bit features")


def _datasketch_values(token_lists: Sequence[Sequence[bytes]], num_perm: int, scheme: str, seed: int) -> np.ndarray:
    vals = ds.hashvalues_batch(token_lists, num_perm=num_perm, seed=seed, scheme=scheme.split("-", 1)[1])
    return vals.astype(np.uint32)


def jaccard_rows(values: np.ndarray, ii, jj, scheme: str) -> np.ndarray:
    ii = np.asarray(ii, dtype=np.int64)
    jj = np.asarray(jj, dtype=np.int64)
    if ii.shape != jj.shape:
        raise ConfigError("row index arrays must have the same shape")
    if scheme == "bottomk":
        def run(a, b):
            return K.bottomk_pairs(values, ii[a:b], jj[a:b])
    else:
        empty = values.dtype.type(empty_value(scheme))

        def run(a, b):
            return K.equal_fraction_pairs(values, ii[a:b], jj[a:b], empty)
    parts = in_threads(run, ii.shape[0])      # (108 M pairs at 10 M documents: a minute on one core)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class MinHash:
    """The MinHash sketch of one set (a document's shingles, or any items).

    ``MinHash(num_perm=128, scheme="oph", seed=1)`` starts empty; :meth:`update` adds items
    (``str``, ``bytes`` or integers, e.g. user ids); :meth:`jaccard` estimates similarity;
    :meth:`merge` gives the sketch of the union. Two sketches are comparable only when
    ``scheme``, ``seed`` and ``num_perm`` agree.
    """

    __slots__ = ("num_perm", "scheme", "seed", "_state", "_mergeable")

    def __init__(self, num_perm: int = 128, scheme: str = DEFAULT_SCHEME, seed: int = 1, *, _state=None,
                 _mergeable: bool = True):
        _check(num_perm, scheme, seed)
        self.num_perm = int(num_perm)
        self.scheme = scheme
        self.seed = int(seed)
        self._mergeable = _mergeable
        if _state is None:
            fill = K.EMPTY_BIN if scheme == "oph" else empty_value(scheme)
            dtype = np.uint64 if scheme == "oph" else _DTYPES[scheme]
            _state = np.full(self.num_perm, fill, dtype=dtype)
        self._state = _state

    # -- building -----------------------------------------------------------------------------
    def update(self, items: Iterable) -> MinHash:
        """Add items (an iterable of ``str`` / ``bytes`` / ints, or a numpy integer array)."""
        if isinstance(items, (str, bytes)):
            items = [items]
        if self.scheme.startswith("datasketch"):
            toks = item_bytes(items)      # the bytes hash_items hashes (an int: 8 bytes little-endian)
            part = _datasketch_values([toks], self.num_perm, self.scheme, self.seed)[0]
            np.minimum(self._state, part, out=self._state)
            return self
        self.update_hashes(hash_items(items))
        return self

    def update_hashes(self, hashes: np.ndarray) -> MinHash:
        """Add items given as 64-bit hashes (e.g. shingle hashes from :class:`Shingler`)."""
        hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
        off = np.array([0, hashes.shape[0]], dtype=np.int64)
        if self.scheme == "oph":
            bins = np.empty(self.num_perm, dtype=np.uint64)
            K.oph_bins(hashes, 0, hashes.shape[0], self.num_perm, scheme_salt(self.seed), bins)
            np.minimum(self._state, bins, out=self._state)
        elif self.scheme == "bottomk":
            part = K.bottomk_batch(hashes, off, self.num_perm, scheme_salt(self.seed))[0]
            self._state = K.bottomk_merge(self._state, part, self.num_perm)
        elif self.scheme == "permutation":
            a, b = K.permutation_params(self.seed, self.num_perm)
            np.minimum(self._state, K.permutation_batch(hashes, off, a, b)[0], out=self._state)
        else:
            raise ConfigError(f"scheme {self.scheme!r} hashes item bytes; use update()")
        return self

    # -- reading ------------------------------------------------------------------------------
    @property
    def hashvalues(self) -> np.ndarray:
        """The signature (for ``oph``: densified)."""
        if self.scheme == "oph":
            out = np.empty(self.num_perm, dtype=np.uint32)
            K.oph_densify(self._state, scheme_salt(self.seed), out)
            return out
        return self._state.copy()

    def is_empty(self) -> bool:
        if self.scheme == "oph":
            return bool(np.all(self._state == K.EMPTY_BIN))
        return bool(np.all(self._state == empty_value(self.scheme)))

    def _check_compatible(self, other: MinHash) -> None:
        if not isinstance(other, MinHash):
            raise TypeError(f"expected a MinHash, got {type(other).__name__}")
        if (self.scheme, self.seed, self.num_perm) != (other.scheme, other.seed, other.num_perm):
            raise ConfigError(
                "MinHash sketches differ in (scheme, seed, num_perm): "
                f"{(self.scheme, self.seed, self.num_perm)} vs {(other.scheme, other.seed, other.num_perm)}")

    def jaccard(self, other: MinHash) -> float:
        """Estimated Jaccard similarity (0.0 when either set is empty)."""
        self._check_compatible(other)
        sig = np.stack([self.hashvalues, other.hashvalues])
        return float(jaccard_rows(sig, [0], [1], self.scheme)[0])

    def merge(self, other: MinHash) -> MinHash:
        """Sketch of the union (in place; returns self)."""
        self._check_compatible(other)
        if not (self._mergeable and other._mergeable):
            raise ConfigError("a densified OPH row taken from a signature matrix cannot be merged; "
                              "build the sketch with MinHasher.sign() or MinHash.update() instead")
        if self.scheme == "bottomk":
            self._state = K.bottomk_merge(self._state, other._state, self.num_perm)
        else:
            np.minimum(self._state, other._state, out=self._state)
        return self

    def copy(self) -> MinHash:
        return MinHash(self.num_perm, self.scheme, self.seed, _state=self._state.copy(), _mergeable=self._mergeable)

    def __eq__(self, other) -> bool:
        return (isinstance(other, MinHash) and (self.scheme, self.seed, self.num_perm) ==
                (other.scheme, other.seed, other.num_perm) and np.array_equal(self.hashvalues, other.hashvalues))

    def __len__(self) -> int:
        return self.num_perm

    def __repr__(self) -> str:
        return f"MinHash(num_perm={self.num_perm}, scheme={self.scheme!r}, seed={self.seed})"

    # -- serialisation --------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """``NDMH`` + header length + JSON header (format, version, scheme, seed, k, dtype) + state."""
        header = json.dumps({"format": 1, "neardup": __version__, "scheme": self.scheme, "seed": self.seed,
                             "num_perm": self.num_perm, "dtype": self._state.dtype.str,
                             "mergeable": self._mergeable}).encode()
        state = self._state.astype(self._state.dtype.newbyteorder("<"), copy=False)
        return _MAGIC + len(header).to_bytes(4, "little") + header + state.tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> MinHash:
        if len(data) < 8 or data[:4] != _MAGIC:
            raise InputFormatError("not a serialised neardup MinHash (bad magic)")
        n = int.from_bytes(data[4:8], "little")
        try:
            header = json.loads(data[8:8 + n])
        except ValueError as exc:
            raise InputFormatError(f"corrupt MinHash header: {exc}") from None
        if header.get("format") != 1:
            raise InputFormatError(f"unsupported MinHash format {header.get('format')!r}")
        dtype = np.dtype(header["dtype"])
        state = np.frombuffer(data[8 + n:], dtype=dtype).astype(dtype.newbyteorder("="))
        if state.shape[0] != header["num_perm"]:
            raise InputFormatError(f"MinHash payload has {state.shape[0]} values, header says {header['num_perm']}")
        return cls(header["num_perm"], header["scheme"], header["seed"], _state=state.copy(),
                   _mergeable=header.get("mergeable", True))


class Signatures:
    """A signature matrix: row i is the MinHash of document i (all with one scheme/seed/k)."""

    def __init__(self, values: np.ndarray, scheme: str, seed: int, config: dict | None = None):
        _check(values.shape[1] if values.ndim == 2 else 0, scheme, seed)
        self.values = values
        self.scheme = scheme
        self.seed = int(seed)
        self.config = dict(config or {})

    @property
    def num_perm(self) -> int:
        return self.values.shape[1]

    def __len__(self) -> int:
        return self.values.shape[0]

    def __getitem__(self, i: int) -> MinHash:
        row = self.values[i].copy()
        if self.scheme == "oph":
            row = row.astype(np.uint64)  # densified values stand in for raw bins; see merge()
        return MinHash(self.num_perm, self.scheme, self.seed, _state=row, _mergeable=self.scheme != "oph")

    def jaccard_pairs(self, ii, jj) -> np.ndarray:
        """Estimated Jaccard for each row pair (ii[p], jj[p])."""
        return jaccard_rows(self.values, ii, jj, self.scheme)

    def jaccard_matrix(self, rows=None) -> np.ndarray:
        """All-pairs estimates among ``rows`` (default: all; quadratic — for small sets)."""
        idx = np.arange(len(self)) if rows is None else np.asarray(rows, dtype=np.int64)
        ii, jj = np.meshgrid(idx, idx, indexing="ij")
        return self.jaccard_pairs(ii.ravel(), jj.ravel()).reshape(len(idx), len(idx))

    def save(self, path) -> None:
        meta = json.dumps({"format": 1, "neardup": __version__, "scheme": self.scheme, "seed": self.seed,
                           "config": self.config})
        with open(path, "wb") as fh:
            np.savez(fh, values=self.values, meta=np.array(meta))

    @classmethod
    def load(cls, path) -> Signatures:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            return cls(data["values"], meta["scheme"], meta["seed"], meta.get("config"))


class MinHasher:
    """Text → MinHash signatures, for one document or a batch.

    Parameters: ``num_perm`` k (128), ``scheme`` (``"oph"``), ``seed`` (1), ``tokenizer``
    (``"word"``; ``"auto"`` shingles with ``word``, as the quality table favours:
    :func:`neardup.text.tokenize.signing_tokenizer`), ``ngram`` (5), ``normalizer`` (NFKC +
    casefold + whitespace), ``hash_seed`` (0, the seed of the shingle hash), ``user_dict`` (a jieba
    user dictionary for the ``jieba`` tokenizer; its SHA-256 is part of :meth:`config`).
    """

    def __init__(self, num_perm: int = 128, scheme: str = DEFAULT_SCHEME, seed: int = 1, tokenizer: str = "word",
                 ngram: int = 5, normalizer="default", hash_seed: int = 0, user_dict=None):
        _check(num_perm, scheme, seed)
        self.num_perm = int(num_perm)
        self.scheme = scheme
        self.seed = int(seed)
        self.shingler = Shingler(tokenizer=signing_tokenizer(tokenizer, user_dict=user_dict), ngram=ngram,
                                 normalizer=normalizer, seed=hash_seed, user_dict=user_dict)

    def config(self) -> dict:
        return {"method": "minhash", "num_perm": self.num_perm, "scheme": self.scheme, "seed": self.seed,
                **self.shingler.config()}

    def sign_features(self, features: Features) -> Signatures:
        return Signatures(sign_features(features, self.num_perm, self.scheme, self.seed), self.scheme, self.seed,
                          self.config())

    def sign_batch(self, texts: Sequence) -> Signatures:
        """Signatures of a batch of documents (``str`` or UTF-8 ``bytes``)."""
        return self.sign_batch_sizes(texts)[0]

    def sign_batch_sizes(self, texts: Sequence) -> tuple[Signatures, np.ndarray | None]:
        """Signatures and, where the path computes it for free, the number of shingles per
        document (``None`` otherwise). ``oph`` with the ``word`` tokenizer runs the fused kernel
        (text → signature per document, no batch-wide shingle array); results are identical."""
        if self.scheme == "oph" and self.shingler.tokenizer == "word":
            norm = self.shingler.normalizer
            buf, offsets = encode_batch(texts, norm, whitespace=False, kernel_maps=True, nfkc_checked=True)
            values, sizes = run_nfkc_checked(K.oph_word_batch, buf, offsets, norm, class_table(),
                                             *kernel_char_map(norm), self.shingler.ngram,
                                             np.uint64(self.shingler.seed), self.num_perm, scheme_salt(self.seed))
            return Signatures(values, self.scheme, self.seed, self.config()), sizes
        if self.scheme.startswith("datasketch") and self.shingler.tokenizer == "word":
            # the shingle strings are built and SHA-1-hashed in a kernel, over the normalised text

            buf, offsets = encode_batch(texts, self.shingler.normalizer, whitespace=False)
            h, off = datasketch_shingle_hashes(buf, offsets, class_table(), *char_map(False, False),
                                               self.shingler.ngram)
            h, _, off = sorted_distinct(h.astype(np.uint64), off, False)  # a MinHash is a function of the set
            vals = hashvalues_from_hash32(h, off, self.num_perm, self.seed, self.scheme.split("-", 1)[1])
            return Signatures(vals.astype(np.uint32), self.scheme, self.seed, self.config()), None
        if self.scheme.startswith("datasketch"):
            # a MinHash is a function of the set: hash each distinct shingle once
            toks = [[s.encode("utf-8") for s in dict.fromkeys(self.shingler.shingles(t))] for t in texts]
            return Signatures(_datasketch_values(toks, self.num_perm, self.scheme, self.seed), self.scheme,
                              self.seed, self.config()), None
        feats = self.shingler.features(texts)
        return self.sign_features(feats), feats.sizes()

    def sign(self, text) -> MinHash:
        """Sketch of one document (mergeable, for every scheme)."""
        mh = MinHash(self.num_perm, self.scheme, self.seed)
        if self.scheme.startswith("datasketch"):
            return mh.update(self.shingler.shingles(text))
        return mh.update_hashes(self.shingler.features_one(text))
