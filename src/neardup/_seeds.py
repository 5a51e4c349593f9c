"""Seeds derived in plain Python (no numba import), for the kernels' callers and for code that runs
before any kernel is loaded: one definition of each."""
from __future__ import annotations

import numpy as np

_M64 = (1 << 64) - 1
SALT_TAG = 0x6F70685F73616C74        # "oph_salt": keeps the salt apart from other uses of the seed


def splitmix64(state: int) -> tuple[int, int]:
    """One SplitMix64 step (Steele, Lea & Flood 2014) on Python ints: returns (new state, output).
    The same arithmetic mod 2^64 as :func:`neardup.kernels.hashing.splitmix64`."""
    state = (state + 0x9E3779B97F4A7C15) & _M64
    z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return state, z ^ (z >> 31)


def scheme_salt(seed: int) -> np.uint64:
    """The 64-bit salt of the single-hash schemes (oph, bottomk) derived from ``seed``: the first
    SplitMix64 output from ``seed XOR SALT_TAG``."""
    return np.uint64(splitmix64((int(seed) & _M64) ^ SALT_TAG)[1])
