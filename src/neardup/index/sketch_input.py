"""Sketches handed to an in-memory index, in any form it accepts (:class:`~neardup.sketches.minhash.Signatures`,
an n × k array, :class:`~neardup.sketches.minhash.MinHash` objects, datasketch's), as one n × k
matrix of the index's dtype, checked to come from the index's (scheme, seed, k); and a batch's
keys, checked. Shared by :class:`~neardup.index.memory.MinHashLSH` and
:class:`~neardup.index.containment.ContainmentIndex`."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from ..sketches.minhash import MinHash, Signatures
from .store import DuplicateKeyError


def new_keys(keys: Sequence, count: int, taken) -> list:
    """``keys`` as a list, checked for a batch of ``count`` sketches: one key each, no key twice, none
    in ``taken`` already (``ValueError`` otherwise)."""
    keys = list(keys)
    if len(keys) != count:
        raise ConfigError(f"{len(keys)} keys for {count} sketches")
    if len(set(keys)) != len(keys):
        raise DuplicateKeyError("a key appears twice in the batch")
    there = [k for k in keys if k in taken]
    if there:
        raise DuplicateKeyError(f"already in the index: {there[:5]!r}")
    return keys


class SketchInput:
    """The mixin: needs ``scheme``, ``seed``, ``num_perm`` and ``_dtype`` on the index."""

    def _values(self, sketches) -> np.ndarray:
        """An (n, num_perm) matrix of this index's dtype from sketches of any accepted kind."""
        if isinstance(sketches, Signatures):
            self._same(sketches.scheme, sketches.seed, sketches.num_perm, "Signatures")
            return np.ascontiguousarray(sketches.values, dtype=self._dtype)
        if isinstance(sketches, np.ndarray) and sketches.ndim == 2:
            rows = sketches
        else:
            rows = np.stack([self._one(s) for s in sketches]) if len(sketches) else \
                np.zeros((0, self.num_perm), self._dtype)
        if rows.shape[1:] != (self.num_perm,):
            raise ConfigError(f"sketches must have {self.num_perm} slots; got shape {rows.shape}")
        info = np.iinfo(self._dtype)
        if rows.size and rows.dtype != self._dtype and (rows.min() < 0 or rows.max() > info.max):
            raise ConfigError(f"sketch values out of range for {self._dtype} (scheme {self.scheme!r})")
        return np.ascontiguousarray(rows, dtype=self._dtype)

    def _one(self, s) -> np.ndarray:
        if isinstance(s, MinHash):
            self._same(s.scheme, s.seed, s.num_perm, "MinHash")
            return s.hashvalues
        hv = getattr(s, "hashvalues", None)
        if hv is not None and type(s).__module__.startswith("datasketch"):
            # datasketch ≥ 2.0 names its scheme ("legacy", its old default, or "affine32", the new
            # default); earlier versions have only the legacy one
            scheme = "datasketch-" + str(getattr(s, "scheme", "legacy"))
            if scheme != self.scheme:
                raise ConfigError(f"a datasketch {type(s).__name__} of scheme {scheme!r} (neardup's name); this index "
                                  f"uses {self.scheme!r} — create it with scheme={scheme!r}")
            self._same(scheme, int(getattr(s, "seed", self.seed)), len(hv), f"datasketch {type(s).__name__}")
            return np.asarray(hv)
        return np.asarray(s)

    def _same(self, scheme, seed, num_perm, what) -> None:
        if (scheme, int(seed), int(num_perm)) != (self.scheme, self.seed, self.num_perm):
            raise ConfigError(f"{what} made with (scheme, seed, num_perm) = {(scheme, seed, num_perm)}; this index "
                              f"uses {(self.scheme, self.seed, self.num_perm)}")
