"""The operations behind the endpoints (:mod:`neardup.service.app`): :class:`IndexService` —
check, add, bulk add, get, delete, stats and compaction under one lock, and check-and-add by group
commit."""
import asyncio
import collections
import threading
import time

import numpy as np

from ..index.store import DuplicateKeyError, InvalidKeyError, check_key, key_candidates
from .limits import RequestError


class _Pending:
    """One queued check-and-add request: its documents, and how to deliver the outcome."""
    __slots__ = ("ids", "texts", "deliver")

    def __init__(self, ids, texts, deliver):
        self.ids, self.texts, self.deliver = ids, texts, deliver


class IndexService:
    """The operations behind the endpoints. The index object belongs to one thread at a time (one
    lock); check-and-add must be atomic.

    Group commit: check-and-add requests go to a queue served by one writer thread. Each round takes
    every queued request (up to ``max_group`` documents), in arrival order, as one batch — one call
    of the signing kernels, one probe of the index, one log record, one fsync — and gives each
    request its own results. The outcome is the one of processing the requests one after another
    in that order (a document is checked against everything added before it, including by earlier
    requests of the round). Under load the rounds grow by themselves, so the fixed cost of a round
    (the fsync above all) is shared by more requests; while fewer requests are queued than the last
    round took, a round waits up to ``commit_delay`` seconds for the rest (PostgreSQL's
    ``commit_delay``): with 8 clients on 2 cores, 2 ms raised single-document requests from about
    550/s to 800–930/s and lowered p99 (benchmarks/INDEX.md)."""

    def __init__(self, index, max_group: int = 4096, commit_delay: float = 0.002):
        self.index = index
        self.lock = threading.Lock()
        self.simhash = index.kind == "simhash"
        self.field = "distance" if self.simhash else "similarity"
        self.max_group = max_group
        self.commit_delay = commit_delay
        self.last_round = 0
        self._queue: collections.deque[_Pending] = collections.deque()
        self._wake = threading.Condition()
        self._closed = False
        self._compacting = threading.Lock()
        self._size = len(index)
        self._writer = threading.Thread(target=self._serve, name="neardup-writer", daemon=True)
        self._writer.start()

    def _matches(self, ms) -> list:
        return [{"id": k, self.field: (int(s) if self.simhash else float(s))} for k, s in ms]

    def check(self, ids, texts) -> list:
        values, empty = self.index._sign(texts)          # signing needs no lock
        with self.lock:
            found = self.index._check(values, empty, self.index._default_accept())
        return [{"id": k, "duplicate": bool(m), "added": False, "matches": self._matches(m)}
                for k, m in zip(ids, found)]

    def add(self, ids, texts) -> list:
        values, empty = self.index._sign(texts)
        with self.lock:
            try:
                self.index._put(ids, values, empty, replace=False, bulk=False)
            except DuplicateKeyError as exc:
                raise RequestError(409, str(exc)) from None
        return [{"id": k, "duplicate": False, "added": True, "matches": []} for k in ids]

    def bulk_add(self, ids, texts, replace: bool) -> dict:
        """Add a batch as ``neardup index add`` does (a large one becomes a segment at once), replacing
        documents of the same id with ``replace``; 409 and nothing added if an id is taken without it."""
        values, empty = self.index._sign(texts)
        with self.lock:
            try:
                self.index._put(ids, values, empty, replace=replace)
            except DuplicateKeyError as exc:
                raise RequestError(409, str(exc).replace("pass replace=True to overwrite",
                                                         "add ?replace=true to replace them")) from None
            return {"added": len(ids), "documents": len(self.index)}

    def compact(self) -> dict:
        """Rewrite the index as one segment without removed documents (``neardup index compact``), in
        this process's writer: every other operation waits meanwhile; a second compaction asked for
        while one runs is refused (409)."""
        if not self._compacting.acquire(blocking=False):
            raise RequestError(409, "a compaction is already running; wait for its answer")
        try:
            start = time.monotonic()
            with self.lock:
                before = self.index.stats()
                self.index.compact()
                after = self.index.stats()
            return {"documents": after["documents"], "segments_before": before.get("segments"),
                    "segments_after": after.get("segments"), "bytes_before": before["bytes"],
                    "bytes_after": after["bytes"], "seconds": round(time.monotonic() - start, 3)}
        finally:
            self._compacting.release()

    def backup(self, dest) -> dict:
        """A consistent copy of the index as the new folder ``dest``
        (:meth:`~neardup.index.disk_base.BaseDiskIndex.backup`: hard links to the segments where it
        can), taken while every other operation waits; 409 if ``dest`` exists."""
        start = time.monotonic()
        with self.lock:
            try:
                out = self.index.backup(dest)
            except FileExistsError as exc:
                raise RequestError(409, str(exc)) from None
            documents = len(self.index)
        return {"path": str(dest), "documents": documents, **out, "seconds": round(time.monotonic() - start, 3)}

    def size(self) -> int:
        """Documents in the index (a metric's value at each scrape): the last value seen when the
        index is busy (a compaction) for more than a quarter of a second."""
        if self.lock.acquire(timeout=0.25):
            try:
                self._size = len(self.index)
            finally:
                self.lock.release()
        return self._size

    # -- check-and-add: the queue and its writer thread ----------------------------------------
    def _submit(self, ids, texts, deliver) -> None:
        with self._wake:
            if self._closed:
                raise RequestError(503, "the service is shutting down")
            self._queue.append(_Pending(ids, texts, deliver))
            self._wake.notify()

    def check_and_add(self, ids, texts) -> list:
        """Blocking form (for threads): queue the request and wait for its round."""
        done = threading.Event()
        box: list = []

        def deliver(result, error):
            box.append((result, error))
            done.set()

        self._submit(ids, texts, deliver)
        done.wait()
        result, error = box[0]
        if error is not None:
            raise error
        return result

    async def check_and_add_async(self, ids, texts) -> list:
        """Awaitable form (for the event loop): no thread is held while the request waits."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def settle(result, error):
            if not fut.done():
                if error is not None:
                    fut.set_exception(error)
                else:
                    fut.set_result(result)

        self._submit(ids, texts, lambda r, e: loop.call_soon_threadsafe(settle, r, e))
        return await fut

    def _take(self) -> list[_Pending] | None:
        with self._wake:
            while not self._queue and not self._closed:
                self._wake.wait()
            if not self._queue:
                return None
            # group commit's delay: while fewer are queued than the last round took, more are
            # probably on their way (clients answered by that round): let them join, up to the delay
            deadline = time.monotonic() + self.commit_delay
            while len(self._queue) < self.last_round and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
            group, size = [], 0
            while self._queue and (not group or size + len(self._queue[0].ids) <= self.max_group):
                p = self._queue.popleft()
                group.append(p)
                size += len(p.ids)
            self.last_round = len(group)
            return group

    def _serve(self) -> None:
        while True:
            group = self._take()
            if group is None:
                return
            try:
                self._round(group)
            except BaseException as exc:   # every request of the round learns of it; nothing was added
                for p in group:
                    p.deliver(None, exc)

    def _round(self, group: list[_Pending]) -> None:
        ids = [k for p in group for k in p.ids]
        values, empty = self.index._sign([t for p in group for t in p.texts])
        with self.lock:
            res = self.index._check_and_add(ids, values, empty, self.index._default_accept())
        at = 0
        for p in group:
            out = res[at:at + len(p.ids)]
            at += len(p.ids)
            for r in out:
                r["matches"] = self._matches(r["matches"])
            p.deliver(out, None)

    def close(self) -> None:
        """Serve what is queued, then stop the writer thread."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
        self._writer.join()

    def _key(self, raw: str):
        """The id a URL's text means: the string, or (when only that exists) the integer it spells
        (:func:`~neardup.index.store.key_candidates`); 404 when neither is indexed."""
        try:
            check_key(raw, "id")
        except InvalidKeyError as exc:
            raise RequestError(422, str(exc)) from None
        for key in key_candidates(raw):
            if key in self.index:
                return key
        shown = repr(raw) if len(raw) <= 200 else repr(raw[:200]) + "…"
        raise RequestError(404, f"no document with id {shown}")

    def get(self, raw: str) -> dict:
        with self.lock:
            key = self._key(raw)
            sig = self.index.get(key)
        if self.simhash:
            return {"id": key, "fingerprint": int(np.asarray(sig).reshape(-1)[0])}
        if self.index.kind == "simhash-verified":  # (the fingerprint, then the sketch's slots)
            return {"id": key, "fingerprint": int(sig[0]),
                    "sketch": self.index.sketch_of_row(sig).tolist()}
        if self.index.kind == "containment":       # (signature slots, distinct-shingle count)
            return {"id": key, "signature": np.asarray(sig)[:-1].tolist(), "size": int(sig[-1])}
        return {"id": key, "signature": np.asarray(sig).tolist()}

    def delete(self, raw: str) -> dict:
        with self.lock:
            key = self._key(raw)
            self.index.remove(key)
        return {"id": key, "deleted": True}

    def stats(self) -> dict:
        with self.lock:
            return self.index.stats()
