"""The write-ahead log of the folder store (:mod:`neardup.index.segments`): records that verify
themselves, and a replay that tells a torn tail from damage.

A record (format 3)::

    head    magic "NDW2" | body length u32 | sequence number u64 | checksum u64
    body    u32 length of a JSON header | header | key offsets | key bytes | signatures |
            band keys | banded flags | deleted document ids
    foot    body length u32 | magic "NDWE"

The checksum is xxh3-64 of the head's first 16 bytes and the body, seeded with the log's salt (a
random 64-bit number the manifest keeps beside the log's name): a record copied from another log
or another index, a record moved, or any bit changed in its length, number or contents fails it
(xxh3's avalanche makes an undetected change a 2⁻⁶⁴ event per record). Numbers run 1, 2, 3, …
in each log, so a missing or repeated record is seen too.

Replay reads records in order. At the first one that does not verify it decides what the rest
of the file is (:func:`read_log`):

* a **torn tail** — the write of the last record that never completed: fewer bytes than a head,
  or a file that ends in zero bytes where the record's foot belongs (a tail the file system
  extended but never wrote), or a record whose declared end lies past the end of the file and
  whose foot is not there — when no complete, verifying record follows anywhere after it. It
  was never acknowledged (a writer acknowledges a record only after it is written whole); a
  writer cuts it off;
* anything else is **damage** — a complete record that fails its checksum, or a bad record with
  a good one after it — and replay refuses with :class:`~neardup.index.store.IndexCorruptError`
  naming the file, the record's number and byte offset. Nothing is dropped or folded away.

Format 2 logs (records ``"NDW1" | length u32 | crc32 u32 | body``, no number, no foot) are read
with the same rule: a bad record with a good one after it is damage.
"""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import xxhash

from ..errors import ConfigError, InputFormatError
from .store import IndexCorruptError

MAGIC = b"NDW2"
FOOT_MAGIC = b"NDWE"
HEAD = struct.Struct("<4sIQQ")       # magic, body length, sequence number, checksum
FOOT = struct.Struct("<I4s")         # body length, magic
MAGIC_V1 = b"NDW1"
HEAD_V1 = struct.Struct("<4sII")     # magic, body length, crc32(body)
MAX_BODY = (1 << 32) - 1


def checksum(head16: bytes, body, salt: int) -> int:
    h = xxhash.xxh3_64(seed=salt & 0xFFFFFFFFFFFFFFFF)
    h.update(head16)
    h.update(body)
    return h.intdigest()


def encode_body(first_id: int, raw_keys: list[bytes], sigs: np.ndarray, band_keys: np.ndarray,
                banded: np.ndarray, deleted: np.ndarray) -> bytes:
    """A record's body: documents ``first_id`` … (tagged keys, signature bytes, band keys, banded
    flags) and the ids of documents deleted."""
    off = np.zeros(len(raw_keys) + 1, dtype="<i8")
    np.cumsum([len(r) for r in raw_keys], out=off[1:])
    head = json.dumps({"first_id": int(first_id), "n": len(raw_keys),
                       "w": int(sigs.shape[1]) if sigs.ndim == 2 else 0, "b": int(band_keys.shape[1]),
                       "kb": int(off[-1]), "del": int(deleted.shape[0])}).encode()
    return b"".join([struct.pack("<I", len(head)), head, off.tobytes(), b"".join(raw_keys),
                     np.ascontiguousarray(sigs, dtype=np.uint8).tobytes(),
                     np.ascontiguousarray(band_keys, dtype="<u8").tobytes(),
                     np.asarray(banded, dtype=np.uint8).tobytes(), np.asarray(deleted, dtype="<i8").tobytes()])


def encode(seq: int, salt: int, body: bytes) -> bytes:
    """The bytes of record number ``seq`` of the log salted ``salt``."""
    if len(body) > MAX_BODY:
        raise ConfigError(f"a log record of {len(body)} bytes; at most {MAX_BODY}")
    head16 = struct.pack("<4sIQ", MAGIC, len(body), seq)
    return head16 + struct.pack("<Q", checksum(head16, body, salt)) + body + FOOT.pack(len(body), FOOT_MAGIC)


def decode_body(body) -> dict:
    """The record dict of a verified body; ``ValueError`` when its structure is inconsistent (a
    record made by something else than this module)."""
    hl = struct.unpack_from("<I", body, 0)[0]
    h = json.loads(bytes(body[4:4 + hl]))
    if not isinstance(h, dict):
        raise InputFormatError("the record's header is not an object")
    n, w, b, kb, nd, first = (h.get(k) for k in ("n", "w", "b", "kb", "del", "first_id"))
    if not all(type(v) is int and v >= 0 for v in (n, w, b, kb, nd, first)):
        raise InputFormatError("the record's header has a missing or negative count")
    p = 4 + hl
    if p + 8 * (n + 1) + kb + n * w + 8 * n * b + n + 8 * nd != len(body):
        raise InputFormatError("the record's counts do not add up to its length")
    off = np.frombuffer(body, "<i8", n + 1, p).astype(np.int64)
    p += 8 * (n + 1)
    if off[0] != 0 or off[-1] != kb or (n and (np.diff(off) < 0).any()):
        raise InputFormatError("the record's key offsets are not increasing within its key bytes")
    kbytes = bytes(body[p:p + kb])
    p += kb
    sigs = np.frombuffer(body, np.uint8, n * w, p).reshape(n, w)
    p += n * w
    bk = np.frombuffer(body, "<u8", n * b, p).reshape(n, b).astype(np.uint64)
    p += 8 * n * b
    banded = np.frombuffer(body, np.uint8, n, p).astype(bool)
    p += n
    dele = np.frombuffer(body, "<i8", nd, p).astype(np.int64)
    keys = [kbytes[off[i]:off[i + 1]] for i in range(n)]
    if any(len(k) == 0 or k[:1] not in (b"s", b"b", b"i") or k[:1] == b"i" and len(k) != 9 for k in keys):
        raise InputFormatError("the record holds a key that is not a tagged id")
    return {"first_id": first, "keys": keys, "sigs": sigs, "bands": bk, "banded": banded, "deleted": dele}


def _record_at(data, pos: int, salt: int, seq: int | None, version: int):
    """(end, body) of the verifying record number ``seq`` (None: any) at ``pos``, or (None, why)."""
    if version < 3:
        if pos + HEAD_V1.size > len(data):
            return None, "cut short"
        magic, length, crc = HEAD_V1.unpack_from(data, pos)
        end = pos + HEAD_V1.size + length
        if magic != MAGIC_V1:
            return None, "no record starts here"
        if end > len(data):
            return None, "cut short"
        body = data[pos + HEAD_V1.size:end]
        return (end, body) if zlib.crc32(body) == crc else (None, "checksum mismatch")
    if pos + HEAD.size > len(data):
        return None, "cut short"
    magic, length, got_seq, got_sum = HEAD.unpack_from(data, pos)
    if magic != MAGIC:
        return None, "no record starts here"
    end = pos + HEAD.size + length + FOOT.size
    if end > len(data):
        return None, "cut short"
    body = data[pos + HEAD.size:end - FOOT.size]
    if checksum(bytes(data[pos:pos + 16]), body, salt) != got_sum:
        return None, "checksum mismatch"
    if FOOT.unpack_from(data, end - FOOT.size) != (length, FOOT_MAGIC):
        return None, "its foot does not match its head"
    if seq is not None and got_seq != seq:
        return None, f"it is record {got_seq} where record {seq} belongs"
    return end, body


def _verifies_later(data, pos: int, salt: int, version: int) -> int | None:
    """The offset of a complete, verifying record after ``pos`` (any number), or None."""
    magic = MAGIC if version >= 3 else MAGIC_V1
    at = data.find(magic, pos + 1) if isinstance(data, bytes) else bytes(data).find(magic, pos + 1)
    while at >= 0:
        if _record_at(data, at, salt, None, version)[0] is not None:
            return at
        at = data.find(magic, at + 1)
    return None


def _complete_at_end(data, pos: int) -> bool:
    """Whether the file ends with a foot whose length points back to ``pos``: the record there
    was written whole (its head may be what is damaged)."""
    if len(data) - pos < HEAD.size + FOOT.size:
        return False
    length, magic = FOOT.unpack_from(data, len(data) - FOOT.size)
    return magic == FOOT_MAGIC and pos + HEAD.size + length + FOOT.size == len(data)


def read_log(data, label: str, salt: int, version: int = 3, pos: int = 0, seq: int = 1):
    """The verifying records of ``data`` from byte ``pos`` (numbered from ``seq``): a list of
    (end offset, body), and the offset of a torn tail (None when the log ends cleanly). Raises
    :class:`IndexCorruptError` naming ``label`` for damage (see the module docstring)."""
    out = []
    while pos < len(data):
        end, body = _record_at(data, pos, salt, seq, version)
        if end is not None:
            out.append((end, body))
            pos = end
            seq += 1
            continue
        why = body
        later = _verifies_later(data, pos, salt, version)
        unwritten = not bytes(data[max(pos, len(data) - FOOT.size):]).strip(b"\0")
        torn = later is None and (unwritten or why == "cut short" and (version < 3 or not _complete_at_end(data, pos)))
        if torn:
            return out, pos
        after = f"; a verifying record follows at byte {later}" if later is not None else ""
        raise IndexCorruptError(f"{label}: record {seq} at byte {pos} is damaged ({why}{after}); the index "
                                "refuses to open rather than lose acknowledged writes — run `neardup index "
                                "verify` on it, and --repair to salvage what verifies into a new index")
    return out, None


def salvage(data, salt: int, version: int = 3) -> tuple[list, list]:
    """Every complete, verifying record of ``data`` wherever it lies — (offset, number, body),
    in file order — and the byte ranges that are not such records — (start, end, why), a torn tail
    included as ``"torn tail"``. For ``neardup index verify --repair``."""
    good, bad = [], []
    pos = 0
    while pos < len(data):
        end, body = _record_at(data, pos, salt, None, version)
        if end is not None:
            seq = HEAD.unpack_from(data, pos)[2] if version >= 3 else len(good) + 1
            good.append((pos, seq, body))
            pos = end
            continue
        later = _verifies_later(data, pos, salt, version)
        stop = len(data) if later is None else later
        bad.append((pos, stop, body))
        pos = stop
    if bad and bad[-1][1] == len(data):
        try:
            read_log(data[bad[-1][0]:], "", salt, version, 0, None)
        except IndexCorruptError:
            pass
        else:
            bad[-1] = (bad[-1][0], bad[-1][1], "torn tail")
    return good, bad


__all__ = ["decode_body", "encode", "encode_body", "read_log", "salvage"]
