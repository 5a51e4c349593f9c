"""``neardup index migrate``: an index in neardup 0.x's SQLite file format
(:mod:`neardup.index.sqlite_legacy`) copied into a new index folder, the store every command reads.

What is carried over: the configuration the index was built with (method, scheme, seed, k, bands,
tokenizer, n-gram, normaliser, user dictionary's checksum, …) and every document's id and stored
signature, in the order they were added. The band keys are computed again from the signatures (the
same function that computed them). Before anything is written the file's probe signature is
checked against this neardup's (:meth:`~neardup.index.disk_base.BaseDiskIndex._verify_probe`): an
index whose signatures this neardup would compute differently cannot be migrated, only rebuilt from
its texts. The new folder is built under a temporary name beside ``NEW`` and renamed into place at
the end, so a failed or killed migration leaves no ``NEW``; the SQLite file is only read.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from .disk import open_index_class
from .disk_base import set_up, stored_config
from .files import taken
from .segments_open import building
from .sqlite_legacy import LegacySQLiteIndex, is_sqlite_file
from .store import IndexCorruptError, InvalidKeyError, NotAnIndexError, check_key

KINDS = ("minhash", "simhash", "simhash-verified")   # what neardup 0.x's SQLite store could hold


def _config(old: LegacySQLiteIndex) -> dict:
    config = stored_config(old.meta("config"), old.path)
    if config.get("kind") not in KINDS:
        raise NotAnIndexError(f"{old.path}: an index of kind {config.get('kind')!r}; an SQLite index holds one "
                              f"of {', '.join(KINDS)}")
    return config


def migrate_sqlite(path, new_path, batch: int = 65536) -> dict:
    """Copy the SQLite index at ``path`` into a new index folder ``new_path`` (absent, or an empty
    folder); returns ``{"path", "new", "kind", "documents"}``. :class:`FileExistsError` when
    ``new_path`` holds anything, :class:`NotAnIndexError` when ``path`` is not an SQLite index,
    :class:`~neardup.index.disk_base.IndexConfigError` when this neardup signs differently."""
    src, dest = Path(path), Path(new_path)
    if not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"batch must be a positive integer, got {batch!r}")
    if not str(new_path):
        raise ConfigError("the new index's path is empty")
    if not is_sqlite_file(src):
        if src.is_dir():
            raise NotAnIndexError(f"{src} is a folder: an index folder needs no migration (migrate converts "
                                  "neardup 0.x's SQLite index files)")
        if not src.exists():
            raise FileNotFoundError(f"no SQLite index file at {src}")
        raise NotAnIndexError(f"{src} is not a neardup index (not an SQLite database)")
    if taken(dest):
        raise FileExistsError(f"{dest} already exists; migrate writes a new index")
    with LegacySQLiteIndex.open(src) as old:
        config = _config(old)
        cls = open_index_class(config["kind"])
        proto = cls.__new__(cls)
        proto.config, proto.path = config, src
        set_up(proto, config, src)                 # refuses a text pipeline this neardup cannot sign
        proto._verify_probe(old.meta("probe"))
        width = proto._dtype.itemsize * proto._width
        tmp = building(dest, "migrated index")
        try:
            n = 0
            with cls._create(tmp, config, exist_ok=False, store=None, options={}) as new:
                for keys, sigs in old.documents(batch):
                    try:
                        keys = [check_key(k, f"{src}: document {n + i + 1}") for i, k in enumerate(keys)]
                    except InvalidKeyError as exc:
                        raise IndexCorruptError(f"{exc}; nothing was written") from None
                    bad = next((i for i, s in enumerate(sigs) if not isinstance(s, bytes) or len(s) != width), None)
                    if bad is not None:
                        raise IndexCorruptError(f"{src}: document {keys[bad]!r} has a signature of "
                                                f"{len(sigs[bad]) if isinstance(sigs[bad], bytes) else 'no'} bytes "
                                                f"(this index's are {width}); nothing was written")
                    raw = np.frombuffer(b"".join(sigs), dtype=np.uint8).reshape(len(sigs), width)
                    new._put_stored(keys, raw)
                    n += len(keys)
            if dest.is_dir():
                dest.rmdir()             # the empty folder given; one filled meanwhile stays, and rename fails
            os.rename(tmp, dest)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)    # only what this migration built
            raise
    return {"path": str(src), "new": str(dest), "kind": config["kind"], "documents": n}


__all__ = ["KINDS", "migrate_sqlite"]
