"""The folder store's names and its manifest (:mod:`neardup.index.segments`): the file names an
index folder holds, and how a manifest is written and checked — sorted JSON carrying ``checksum``,
the xxh3-64 of the same JSON without it (format 3; format 2 has no checksum)."""
from __future__ import annotations

import json

import xxhash

FORMAT = 3                      # the folder layout (the SQLite store is format 1); format 2 is still read
MANIFEST = "MANIFEST"
PENDING = "PENDING"             # the names a publish is about to create (removed by the next writer after a crash)


def _manifest_sum(m: dict) -> str:
    body = json.dumps({k: v for k, v in m.items() if k != "checksum"}, sort_keys=True).encode()
    return xxhash.xxh3_64_hexdigest(body)


def manifest_bytes(m: dict) -> bytes:
    """The manifest as written: sorted JSON carrying ``checksum``, the xxh3-64 of itself without it."""
    return json.dumps({**m, "checksum": _manifest_sum(m)}, sort_keys=True).encode()


def manifest_problem(m: dict) -> str:
    """Why manifest ``m`` (as read) does not verify; empty when it does (format 2 has no checksum)."""
    if m.get("format", 2) >= 3 and m.get("checksum") != _manifest_sum(m):
        return "its checksum does not match its contents (a changed byte)"
    return ""


def _record(x) -> bool:
    """A file's manifest record: ``[size, xxh3-64 hex]``."""
    return isinstance(x, list) and len(x) == 2 and isinstance(x[0], int) and x[0] >= 0 and isinstance(x[1], str)


def manifest_shape_problem(m) -> str:
    """Why manifest ``m`` (as parsed) is not shaped as neardup writes one — a field missing or of the
    wrong type, a name that is not a plain entry of the folder; empty when it is. The one rule the
    index (on open) and ``index verify`` (before it reads any field) both apply."""
    try:
        segs = m["segments"]
        ok = (m.get("format") in (2, FORMAT)
              and all(isinstance(m[k], int) and m[k] >= 0 for k in ("generation", "next_id", "count"))
              and isinstance(m["meta"], dict) and isinstance(m["wal"], str) and isinstance(segs, list)
              and all(isinstance(x, dict) and _plain(x.get("dir")) and isinstance(x.get("first_id"), int)
                      and isinstance(x.get("n"), int) and x["n"] >= 0
                      and (x.get("files") is None or isinstance(x["files"], dict)
                           and all(_plain(k) and _record(v) for k, v in x["files"].items()))
                      for x in segs)
              and _plain(m["wal"]) and (m["deleted"] is None or _plain(m["deleted"]))
              and isinstance(m.get("wal_salt", 0), int)
              and (m.get("deleted_file") is None or _record(m["deleted_file"])))
    except (KeyError, TypeError, AttributeError):
        ok = False
    return "" if ok else "a field is missing or of the wrong type"


def _plain(name) -> bool:
    """A name of an entry directly inside the index folder (what a manifest may name)."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name

