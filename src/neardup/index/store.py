"""Storage behind :class:`neardup.index.disk.DiskIndex`: the protocol every store keeps, the one rule
for document ids, and the errors of the index files.

A store holds, per document, a user key (``str``, ``int`` or ``bytes``; unique), its signature as
opaque bytes and its b band keys, and gives them out as segments of arrays
(:meth:`IndexStore.views`): per segment the band columns sorted by key with the row of each entry,
the signature rows and which rows are removed. It never scores: the index
(:mod:`neardup.index.probe`) runs the compiled probes over those arrays and verifies what they
find, whatever the store. The folder of segments and log, :class:`~neardup.index.segments.SegmentStore`,
is the store; the SQLite files of neardup 0.x are read only to migrate them
(:mod:`neardup.index.sqlite_legacy`, ``neardup index migrate``). What any store must guarantee:

* :meth:`IndexStore.put_batch`, :meth:`IndexStore.add_segment` and :meth:`IndexStore.delete` are
  atomic: after a crash a batch is there entirely (document, signature and band entries) or not at all;
* reads inside :meth:`IndexStore.snapshot` see one committed state, never half of a write.

Another backend subclasses :class:`IndexStore` and is passed as ``store=`` to ``DiskIndex.create`` /
``DiskIndex.open``.
"""
from __future__ import annotations

import abc
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, NeardupError


class NotAnIndexError(NeardupError, ValueError):
    """The file exists but is not a neardup index (or is one of an unknown format)."""


class IndexStoreError(NeardupError, sqlite3.OperationalError):
    """A store failed on an index (locked by another writer too long, a file it cannot create or read);
    the message names the index. Still a ``sqlite3.OperationalError``, as when the store was SQLite,
    for code that catches those."""


class IndexCorruptError(IndexStoreError):
    """An index file whose bytes do not verify (a checksum, a size, a record's structure): the
    message names the file and, in a log, the record and its byte offset. Nothing is repaired or
    dropped silently; ``neardup index verify IDX --repair NEW`` salvages what verifies."""


class DuplicateKeyError(NeardupError, ValueError):
    """A key being added is already in the index (or twice in the batch)."""


class ReadOnlyError(NeardupError, PermissionError):
    """A write on an index opened with ``readonly=True``."""


class InvalidKeyError(NeardupError, TypeError, ValueError):
    """A document id the index cannot hold (the one rule, :func:`check_key`): still a ``TypeError``
    (wrong type) and a ``ValueError`` (out of range) for code that catches those."""


MAX_KEY_BYTES = 4096          # a key's UTF-8 (or raw) bytes at most: ids are names, not documents (and one,
                              # percent-encoded, still fits in a URL the service reads: /v1/docs/{id})


def check_key(key, where: str = ""):
    """The one rule for document ids, shared by the library, every command and the service: an id is
    a ``str`` (any characters, the empty string and ``/`` included; lone surrogates kept), ``bytes``,
    or an ``int`` in the signed 64-bit range (not ``bool``), of at most :data:`MAX_KEY_BYTES` bytes;
    ``1`` and ``"1"`` are different ids. Anything else is :class:`InvalidKeyError` naming ``where``
    (e.g. ``"rows.jsonl:7"``) and the value."""
    at = f"{where}: " if where else ""
    if isinstance(key, bool) or not isinstance(key, (str, bytes, int, np.integer)):
        shown = repr(key)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise InvalidKeyError(f"{at}index keys (ids) must be str, bytes or int, got {type(key).__name__} {shown}")
    if isinstance(key, (int, np.integer)):
        key = int(key)
        if not -2**63 <= key < 2**63:
            shown = str(key) if key.bit_length() < 200 else f"an integer of {key.bit_length()} bits"
            raise InvalidKeyError(f"{at}integer keys (ids) must fit in 64 bits (signed), got {shown}")
    elif len(key) > MAX_KEY_BYTES // 4 and len(key.encode("utf-8", "surrogatepass") if isinstance(key, str)
                                              else key) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"{at}an id of more than {MAX_KEY_BYTES} bytes: ids are names, not texts")
    return key


def key_candidates(raw: str) -> list:
    """The ids a user may mean by the text ``raw`` (a command-line argument, a URL's path or query):
    the string itself, then — when it spells a decimal integer in the signed 64-bit range (ASCII
    digits, an optional minus) — that integer. Never raises: any text is a string id."""
    out = [raw]
    if re.fullmatch(r"-?[0-9]{1,19}", raw) and -2**63 <= int(raw) < 2**63:
        out.append(int(raw))
    return out


def check_batch(keys, signatures, band_keys, banded):
    """A batch for :meth:`IndexStore.put_batch`, checked: (keys, (n, b) uint64 band keys, banded);
    :class:`DuplicateKeyError` for a key given twice."""
    keys = [check_key(k) for k in keys]
    n = len(keys)
    band_keys = np.asarray(band_keys, dtype=np.uint64)
    if len(signatures) != n or band_keys.ndim != 2 or band_keys.shape[0] != n:
        raise ConfigError(f"put_batch: {n} keys, {len(signatures)} signatures, band keys "
                          f"{band_keys.shape} — need one of each per document")
    banded = np.ones(n, dtype=bool) if banded is None else np.asarray(banded, dtype=bool)
    if len(set(keys)) != n:
        seen, twice = set(), []
        for k in keys:
            if k in seen:
                twice.append(k)
            seen.add(k)
        raise DuplicateKeyError(f"keys repeated within the batch: {twice[:5]!r}")
    return keys, band_keys, banded


@dataclass(frozen=True)
class SegmentView:
    """One segment of a store as a query reads it, inside :meth:`IndexStore.snapshot`: ``first_id``
    (the document id of row 0), ``bands`` ((b, m) uint32 folded band keys, each column sorted),
    ``band_row`` ((b, m) the row of each entry), ``sigs`` ((n, bytes) uint8 little-endian signature
    rows), ``dead`` ((n,) bool, removed rows; length 0 when none is) and ``sizes`` (a sized store's
    set size of each row and their maximum, else None). Checked: every row number is below n."""
    first_id: int
    bands: np.ndarray
    band_row: np.ndarray
    sigs: np.ndarray
    dead: np.ndarray
    sizes: tuple[np.ndarray, int] | None = None

    @property
    def n(self) -> int:
        return self.sigs.shape[0]


class IndexStore(abc.ABC):
    """What the disk index needs from storage. Document ids are store-assigned positive ints, in
    the order documents are added; ``path`` and ``readonly`` are attributes; ``**options`` of
    ``create``/``open`` are the store's own (the index passes ``synchronous=``)."""

    readonly: bool = False

    # -- opening ------------------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def create(cls, path, meta: Mapping[str, object], **options) -> IndexStore:
        """A new, empty store at ``path`` holding ``meta``, created atomically (``FileExistsError``
        when one appeared there meanwhile)."""

    @classmethod
    @abc.abstractmethod
    def open(cls, path, readonly: bool = False, **options) -> IndexStore:
        """An existing store; :class:`NotAnIndexError` if ``path`` is not one."""

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- writing ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def put_batch(self, keys: Sequence, signatures: Sequence[bytes], band_keys: np.ndarray,
                  banded: np.ndarray | None = None, replace: bool = False) -> None:
        """Add documents in one transaction. ``band_keys`` is (n, b) uint64; rows where ``banded``
        is False get no band rows (empty documents). Raises :class:`DuplicateKeyError` (and adds
        nothing) when a key exists, unless ``replace`` — then the old document goes first."""

    @abc.abstractmethod
    def add_segment(self, keys: Sequence, signatures: np.ndarray, band_keys: np.ndarray,
                    banded: np.ndarray | None = None, replace: bool = False, meta=None) -> None:
        """:meth:`put_batch` for a large batch, ``signatures`` an (n, bytes) uint8 matrix, written as
        one segment; ``meta``: entries (or a function of the new segment's name giving them) set in
        the same atomic publish."""

    @abc.abstractmethod
    def delete(self, keys: Sequence) -> int:
        """Remove documents in one transaction; returns how many existed."""

    @abc.abstractmethod
    def set_meta(self, items: Mapping[str, object]) -> None:
        """Set several metadata entries atomically."""

    @abc.abstractmethod
    def flush(self) -> None:
        """Write what the log holds in its final form (it is durable already)."""

    @abc.abstractmethod
    def compact(self) -> None:
        """Rewrite the store without removed documents."""

    @abc.abstractmethod
    def note_writer(self, what: str = "") -> None:
        """Name this writer to a second one, which is refused naming it."""

    def backup(self, dest) -> dict:
        """A consistent copy of the store as a new store at ``dest``."""
        raise IndexStoreError(f"{getattr(self, 'path', '')}: this store ({type(self).__name__}) makes no backups")

    # -- reading ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def snapshot(self):
        """Context manager: every read inside sees the same committed state."""

    @abc.abstractmethod
    def views(self) -> list[SegmentView]:
        """The live segments' arrays (:class:`SegmentView`), inside :meth:`snapshot`."""

    @abc.abstractmethod
    def fetch_arrays(self, ids, keys: bool = True) -> tuple[list | None, np.ndarray]:
        """Keys (None unless ``keys``) and the (len(ids), bytes) uint8 signature rows of documents
        ``ids``, in that order; ``KeyError`` for an id that is not there."""

    @abc.abstractmethod
    def lookup_many(self, keys: Sequence) -> np.ndarray:
        """The document id of each key (−1 where absent)."""

    @abc.abstractmethod
    def live_ids(self) -> np.ndarray:
        """The ids of every live document, ascending."""

    @abc.abstractmethod
    def get_meta(self, name: str): ...

    @abc.abstractmethod
    def count(self) -> int:
        """Number of documents."""

    def lookup(self, key) -> int:
        """The document id of ``key``, or −1."""
        return int(self.lookup_many([key])[0])

    def contains(self, key) -> bool:
        return self.lookup(key) >= 0

    def hide(self, names) -> None:
        """Read as if the segments ``names`` were not there (a rerun's view); ``hide(())`` undoes it."""
        if names:
            raise IndexStoreError(f"{getattr(self, 'path', '')}: this store cannot hide segments")

    @property
    def sized(self) -> bool:
        """Whether each signature ends with its set size and band columns are sorted by (key, size)."""
        return False

    @property
    def generation(self) -> int:
        """How many times the store's state was published (0 for a store that does not count)."""
        return 0

    def segments(self) -> list[dict]:
        """The segments: ``dir``, ``first_id``, ``n`` (empty for a store without them)."""
        return []

    def size_bytes(self) -> int | None:
        """Bytes on disk (None when unknown)."""
        return None

    def check(self) -> dict:
        """Consistency report: counts, and band entries pointing nowhere."""
        raise NotImplementedError
