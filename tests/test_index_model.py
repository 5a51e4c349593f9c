"""A model-checked index: a hypothesis state machine drives add (online and bulk, with and without
replace), remove, flush, compact, reopen, crashes (a writer killed between any two of its writes,
its last write cut at any byte) and damage (a byte changed in any file the index owns) against a
plain dict of the acknowledged operations. After every step the index, opened again, either holds
exactly the model (keys, and each key's stored signature) or refuses to open with a NeardupError —
never a silently different answer. A crash leaves the state before the interrupted operation or
after it (it was not acknowledged either way), never anything else.

Fixed seed, bounded steps: the run is the same in CI every time."""
from __future__ import annotations

import os
import random
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from neardup.errors import NeardupError
from neardup.index import disk_base, segments
from neardup.index.disk import DiskIndex
from neardup.index.store import DuplicateKeyError

WORDS = [f"w{i}" for i in range(60)]
KEYS = st.sampled_from([f"k{i}" for i in range(24)] + [0, 7, -3, 2**40, "", "a/b", "ü\udcff"])


class Crash(Exception):
    """A simulated kill: the process stops at this write."""


def _text(seed: int) -> str:
    r = random.Random(seed)
    return " ".join(r.choice(WORDS) for _ in range(25))


class IndexMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.root = None
        self.model: dict = {}
        self.idx = None

    @initialize(tmp=st.just(None))
    def setup(self, tmp):
        import tempfile

        self.root = tempfile.mkdtemp(prefix="neardup-model-")
        self.path = os.path.join(self.root, "idx")
        self.idx = DiskIndex.create(self.path, threshold=0.5, num_perm=32)
        self.signer = self.idx            # signs texts as the index does

    def teardown(self):
        if self.idx is not None:
            self.idx.close()
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- helpers --------------------------------------------------------------------------------
    def _sig(self, text: str) -> np.ndarray:
        return self.signer._sign([text])[0][0]

    def _expected(self) -> dict:
        return {k: self._sig(t) for k, t in self.model.items()}

    def _observe(self, idx) -> dict:
        keys, raw = idx.store.fetch_arrays(idx.store.live_ids())
        vals = idx._values_of(raw)
        return {k: vals[i] for i, k in enumerate(keys)}

    @staticmethod
    def _same(got: dict, want: dict) -> bool:
        return got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)

    def _reopen(self):
        if self.idx is not None:
            self.idx.close()
        self.idx = DiskIndex.open(self.path)

    def _abandon(self):
        """Drop the writer as a killed process would: descriptors closed, nothing cleaned up."""
        st_ = self.idx.store
        if st_._wal_fh is not None:
            st_._wal_fh.close()
            st_._wal_fh = None
        if st_._lock_fd is not None:
            os.close(st_._lock_fd)
            st_._lock_fd = None
        self.idx._store = None
        self.idx = None

    # -- operations -----------------------------------------------------------------------------
    @rule(keys=st.lists(KEYS, min_size=1, max_size=6, unique=True), seed=st.integers(0, 10**6),
          bulk=st.booleans(), replace=st.booleans())
    def add(self, keys, seed, bulk, replace):
        texts = [_text(seed + i) for i in range(len(keys))]
        try:
            self.idx.add_batch(keys, texts, replace=replace, bulk=bulk)
        except DuplicateKeyError:
            assert not replace and any(k in self.model for k in keys)
            return
        self.model.update(zip(keys, texts))

    @rule(key=KEYS)
    def remove(self, key):
        try:
            self.idx.remove(key)
        except KeyError:
            assert key not in self.model
            return
        del self.model[key]

    @rule()
    def flush(self):
        self.idx.flush()

    @rule()
    def compact(self):
        self.idx.compact()

    @rule()
    def reopen(self):
        self._reopen()

    @rule(keys=st.lists(KEYS, min_size=1, max_size=4, unique=True), seed=st.integers(0, 10**6),
          bulk=st.booleans(), at=st.integers(0, 12), cut=st.floats(0, 1))
    def crash_during_add(self, keys, seed, bulk, at, cut):
        """The writer killed at its ``at``-th write of an add (a log record cut at ``cut`` of its bytes,
        or a publish stopped before one of its file operations)."""
        texts = [_text(seed + i) for i in range(len(keys))]
        before = dict(self.model)
        after = {**self.model, **dict(zip(keys, texts))}
        count = [0]
        st_ = self.idx.store
        orig = (segments.write_new, segments.save_array, segments.os.replace, st_._append)

        def tick():
            count[0] += 1
            if count[0] > at:
                raise Crash

        def write_new(p, data, *a):
            tick()
            return orig[0](p, data, *a)

        def save_array(p, arr):
            tick()
            return orig[1](p, arr)

        def replace(a, b):
            tick()
            return orig[2](a, b)

        def append(record):
            if count[0] + 1 > at:
                with open(st_.path / st_._manifest["wal"], "ab") as fh:     # the record's first bytes only
                    fh.write(record[:int(len(record) * cut)])
            tick()
            return orig[3](record)

        segments.write_new, segments.save_array = write_new, save_array
        st_._append = append
        real_replace = os.replace
        os.replace = replace
        try:
            try:
                self.idx.add_batch(keys, texts, replace=True, bulk=bulk)
                crashed = False
            except Crash:
                crashed = True
        finally:
            segments.write_new, segments.save_array = orig[0], orig[1]
            os.replace = real_replace
            del st_._append
        event(f"crash during add: {'crashed' if crashed else 'completed'}")
        if not crashed:
            self.model = after
            return
        self._abandon()
        self.idx = DiskIndex.open(self.path)
        got = self._observe(self.idx)
        if self._same(got, {k: self._sig(t) for k, t in before.items()}):
            event("crash: the state before")
            self.model = before
        else:
            assert self._same(got, {k: self._sig(t) for k, t in after.items()}), "a crash left a third state"
            event("crash: the state after")
            self.model = after

    @rule(which=st.integers(0, 10**6), pos=st.floats(0, 1), bit=st.integers(0, 7))
    def damage_then_restore(self, which, pos, bit):
        """One bit changed in one file the index owns: opening (reader or writer) refuses, or — never
        for a byte that matters — gives exactly the model. Then the byte is put back."""
        self.idx.close()
        self.idx = None
        files = sorted(p for p in _owned_files(self.path) if os.path.getsize(p) > 0)
        victim = files[which % len(files)]
        data = bytearray(open(victim, "rb").read())
        i = int(pos * (len(data) - 1))
        data[i] ^= 1 << bit
        with open(victim, "r+b") as fh:
            fh.write(bytes(data))
        try:
            for readonly in (True, False):
                try:
                    with DiskIndex.open(self.path, readonly=readonly) as idx:
                        got = self._observe(idx)
                except NeardupError:
                    event(f"damage: refused ({os.path.basename(victim)})")
                    continue
                assert self._same(got, self._expected()), f"a changed byte in {victim} gave another answer"
        finally:
            data[i] ^= 1 << bit
            with open(victim, "r+b") as fh:
                fh.write(bytes(data))
        self.idx = DiskIndex.open(self.path)

    @precondition(lambda self: self.idx is not None)
    @invariant()
    def equals_the_model(self):
        got = self._observe(self.idx)
        assert self._same(got, self._expected())
        assert len(self.idx) == len(self.model)


def _owned_files(path: str) -> list:
    """Every file the manifest names (segment files, the removed list, the log) and the manifest."""
    import json

    m = json.loads(open(os.path.join(path, "MANIFEST"), "rb").read())
    out = [os.path.join(path, "MANIFEST"), os.path.join(path, m["wal"])]
    if m["deleted"]:
        out.append(os.path.join(path, m["deleted"]))
    for s in m["segments"]:
        out += [os.path.join(path, s["dir"], f) for f in s["files"]]
    return out


@pytest.fixture(autouse=True)
def _small_thresholds(monkeypatch):
    """Few documents make a segment, and a few segments a merge: every path is reached in few steps."""
    monkeypatch.setattr(segments, "FLUSH_DOCS", 9)
    monkeypatch.setattr(segments, "MERGE_SEGMENTS", 3)
    monkeypatch.setattr(disk_base, "BULK_DOCS", 4)


TestIndexModel = IndexMachine.TestCase
TestIndexModel.settings = settings(max_examples=30, stateful_step_count=25, deadline=None, derandomize=True,
                                   database=None, suppress_health_check=list(HealthCheck))
