"""``dedup --resume``: pass 1's results (every row read, every document signed) kept beside OUTDIR,
so that a run interrupted after signing continues from them instead of reading and signing again.

A run with ``--resume`` writes, once pass 1 is done, the folder ``.<OUTDIR name>.neardup-resume``
next to OUTDIR: ``arrays.npz`` (signatures, empty flags, set sizes and — with ``--verify exact`` —
the shingles) and ``state.json`` (the per-row bookkeeping, the JSON lines files' blocks, and a
fingerprint of the run; both engines write and read the same checkpoint). It is
written to a temporary name and renamed, so it is whole or absent; it is removed when the outputs
are in place. A later run with ``--resume`` and the same OUTDIR uses it when the fingerprint
matches — neardup's version, every parameter that changes a result (the word files of ``--idf``,
``--user-dict`` and ``--stop-words`` by the SHA-256 of their content too), and per input its path,
format, size, modification time and the xxh3-128 digest of its whole content (read again at ~20
GB/s from the page cache, so a change anywhere, at the same size and time, is seen) — and
otherwise stops with an error naming what differs (remove the folder to start over). The folder
is neardup's only when it holds the marker file ``.neardup-checkpoint`` (written first): a folder of
that name without it is the user's, and is never replaced or removed — the run refuses instead.
Pass 2 re-reads the inputs as always and checks them unchanged again. Not for standard input (a
pipe cannot be checked unchanged) nor for the span methods (``--method lines|substrings``, ``--spans``).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

import numpy as np
import xxhash

from .._arrays import int64_values
from .._version import __version__
from ..errors import ConfigError, NeardupError
from ..features.shingles import Features
from ..io.outdir import STDOUT
from ..text.dictionaries import file_keys
from .spans import span_method

SUFFIX = ".neardup-resume"
#: parameters that never change what pass 1 or the rest computes
_RUN_ONLY = ("workers", "batch_size", "quiet", "progress", "html", "samples", "resume")
_CHUNK = 8 << 20
MARK = ".neardup-checkpoint"      # inside a checkpoint folder: what makes it neardup's
_JSON_IDS = (str, int, float, bool, type(None))


def checkpoint_dir(outdir: str) -> str:
    """Where ``--resume`` keeps pass 1 for ``outdir``: a hidden folder beside it."""
    path = os.path.abspath(outdir).rstrip(os.sep)
    parent, name = os.path.split(path)
    return os.path.join(parent, f".{name}{SUFFIX}")


def owned(folder: str) -> bool:
    """Whether ``folder`` is a checkpoint neardup wrote: a real folder holding :data:`MARK`."""
    return (os.path.isdir(folder) and not os.path.islink(folder)
            and os.path.isfile(os.path.join(folder, MARK)) and not os.path.islink(os.path.join(folder, MARK)))


def _mark(folder: str) -> None:
    with open(os.path.join(folder, MARK), "x", encoding="utf-8") as fh:
        fh.write(f"neardup {__version__} checkpoint of pass 1 (dedup --resume); removed when the run succeeds\n")


def check_resumable(cfg, specs, outdir: str) -> None:
    """``--resume`` refusals, before anything is read."""
    if not cfg.resume:
        return
    folder = checkpoint_dir(outdir) if outdir != "-" else None
    if folder and os.path.lexists(folder) and not owned(folder):
        raise ConfigError(f"resume (--resume): {folder} exists and is not a neardup checkpoint (no {MARK} in it); "
                          "neardup will not replace it — move it away, or choose another output folder")

    if outdir == STDOUT:
        raise ConfigError("resume (--resume) keeps its checkpoint beside the output folder; -o - has none")
    if span_method(cfg) is not None:
        raise ConfigError("resume (--resume) checkpoints the signatures of whole-document methods; "
                          f"--method {cfg.method}{' --spans ' + cfg.spans if cfg.spans else ''} is not resumable")
    pipes = [s.label for s in specs if s.pipe]
    if pipes:
        raise ConfigError(f"resume (--resume) needs inputs it can check unchanged; {pipes[0]} is a pipe")


def content_digest(path: str) -> str:
    """xxh3-128 of the whole file, read in chunks (the input as pass 1 reads it, byte for byte)."""
    h = xxhash.xxh3_128()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _files(spec) -> list:
    if spec.entries:
        return [(os.path.join(spec.label, e.rel), e.path, e.stamp) for e in spec.entries]
    return [(spec.label, spec.path, spec.stamp)]


LAYOUT = 3      # of the files; 2: per-document columns in arrays.npz; 3: inputs bound by a digest of all their bytes


def fingerprint(cfg, specs) -> dict:
    """What a checkpoint must match: version, result parameters, inputs (path, format, size, mtime,
    xxh3-128 of the whole content)."""
    params = {k: v for k, v in asdict(cfg).items() if k not in _RUN_ONLY}
    params.update(file_keys(cfg.idf, cfg.user_dict, cfg.stop_words))   # the word files' contents, not their names
    inputs = []
    for spec in specs:
        for label, path, stamp in _files(spec):
            if stamp is None:       # a folder's entry that could not be listed (a dangling link, a FIFO, …):
                inputs.append({"input": label, "path": os.path.abspath(path), "format": spec.fmt,
                               "unreadable": True})        # an error row of its own, never opened here
                continue
            inputs.append({"input": label, "path": os.path.abspath(path), "format": spec.fmt,
                           "size": stamp[0], "mtime_ns": stamp[1], "xxh3_128": content_digest(path)})
    return json.loads(json.dumps({"neardup": __version__, "layout": LAYOUT, "parameters": params, "inputs": inputs},
                                 default=str))


def _difference(old: dict, new: dict) -> str:
    if old.get("neardup") != new["neardup"]:
        return f"made by neardup {old.get('neardup')}, this is {new['neardup']}"
    if old.get("layout") != new["layout"]:
        return f"written in checkpoint layout {old.get('layout')}, this run reads layout {new['layout']}"
    po, pn = old.get("parameters", {}), new["parameters"]
    for k in sorted(set(po) | set(pn)):
        if po.get(k) != pn.get(k):
            if k.endswith("_sha256"):
                option = "--" + k[:-len("_sha256")].replace("_", "-")
                return f"the file of {option} changed since (its content differs)"
            return f"made with {k}={po.get(k)!r}, this run has {k}={pn.get(k)!r}"
    io, inn = old.get("inputs", []), new["inputs"]
    if [i["input"] for i in io] != [i["input"] for i in inn]:
        return f"made from the inputs {[i['input'] for i in io][:5]}, this run reads {[i['input'] for i in inn][:5]}"
    for a, b in zip(io, inn):
        for what, said in (("path", "path"), ("format", "format"), ("unreadable", "readability"), ("size", "size"),
                           ("mtime_ns", "modification time"), ("xxh3_128", "content")):
            if a.get(what) != b.get(what):
                return f"input {b['input']} changed since ({'its ' + said} differs)"
    return ""


def load(folder: str, cfg, specs):
    """(arrays, corpus fields) of a matching checkpoint; None when there is none; ConfigError when
    one is there for another run or cannot be read."""
    state_path = os.path.join(folder, "state.json")
    if not os.path.exists(state_path) or not owned(folder):
        return None
    try:
        with open(state_path, encoding="utf-8") as fh:
            state = json.load(fh)
        why = _difference(state["fingerprint"], fingerprint(cfg, specs))
        if why:
            raise ConfigError(f"resume (--resume): the checkpoint {folder} is of another run ({why}); remove it to "
                              "start over, or run without --resume")
        with np.load(os.path.join(folder, "arrays.npz"), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except NeardupError:        # (a ValueError too) the refusal above, or an input or word file that cannot be read
        raise
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"resume (--resume): the checkpoint {folder} cannot be read ({exc}); remove it to start "
                          "over") from None
    return arrays, state["corpus"]


def save(folder: str, cfg, specs, values, empty, sizes, features, corpus) -> bool:
    """Write the checkpoint (whole or not at all). False, writing nothing, when an id or key is not a
    JSON value (the checkpoint keeps them as JSON: str, numbers, booleans, lists and objects of them)."""
    if not all(_is_json(i) for i in corpus.ids) or not all(_is_json(k) for k in corpus.keys):
        return False
    arrays = {"values": values, "empty": empty, "payload_of_doc": corpus.payload_of_doc}
    columns = {"doc_line": corpus.doc_line, "lengths": corpus.lengths, "doc_row": corpus.doc_row}
    if isinstance(corpus.ids, array):       # a document's id is its row
        columns["ids"] = corpus.ids
    for name, col in columns.items():
        arrays[name] = np.asarray(col, dtype=np.int64)
    if sizes is not None:
        arrays["sizes"] = sizes
    if features is not None:
        arrays.update(f_hashes=features.hashes, f_offsets=features.offsets)
        if features.counts is not None and features.counts.strides != (0,):   # (not Features.distinct's ones)
            arrays["f_counts"] = features.counts
    state = {"fingerprint": fingerprint(cfg, specs),
             "corpus": {"ids": None if "ids" in arrays else corpus.ids, "keys": corpus.keys,
                        "row_source": corpus.row_source,
                        "skipped": [list(x) for x in corpus.skipped], "replaced": corpus.replaced,
                        "n_rows": corpus.n_rows, "n_chars": corpus.n_chars,
                        "blocks": {str(k): [list(p) for p in v] for k, v in corpus.blocks.items()}}}
    tmp = f"{folder}.tmp-{secrets.token_hex(4)}"
    if os.path.lexists(folder) and not owned(folder):
        raise ConfigError(f"resume (--resume): {folder} is not a neardup checkpoint (no {MARK}); it is left as it is")
    try:
        os.mkdir(tmp)
        _mark(tmp)
        np.savez(os.path.join(tmp, "arrays.npz"), **arrays)
        with open(os.path.join(tmp, "state.json"), "w", encoding="utf-8") as fh:
            json.dump(state, fh, allow_nan=True)
            fh.flush()
            os.fsync(fh.fileno())
        old = f"{folder}.old-{secrets.token_hex(4)}"      # the parts stay until the whole checkpoint is in
        if os.path.lexists(folder):
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return True


def _is_json(v) -> bool:
    """Whether ``v`` comes back from JSON as itself (tuples and other types do not)."""
    if isinstance(v, _JSON_IDS):
        return True
    if isinstance(v, list):
        return all(_is_json(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _is_json(x) for k, x in v.items())
    return False


def restore(arrays: dict, fields: dict, corpus_cls):
    """(values, empty, sizes, features) and the corpus of a loaded checkpoint."""
    def column(name):
        return array("q", arrays[name].astype(np.int64).tobytes())

    corpus = corpus_cls(ids=column("ids") if fields["ids"] is None else fields["ids"], lengths=column("lengths"),
                        keys=fields["keys"], doc_row=column("doc_row"), doc_line=column("doc_line"),
                        row_source=fields["row_source"],
                        skipped=[tuple(x) for x in fields["skipped"]], replaced=fields["replaced"],
                        n_rows=fields["n_rows"], n_chars=fields["n_chars"])
    corpus.payload_of_doc = arrays["payload_of_doc"]
    # the JSON lines files' blocks, where pass 1 cut them: the texts re-read by block (older checkpoints: none)
    corpus.blocks = {int(k): [tuple(p) for p in v] for k, v in (fields.get("blocks") or {}).items()}
    features = None
    if "f_hashes" in arrays:
        features = (Features(arrays["f_hashes"], arrays["f_offsets"], arrays["f_counts"]) if "f_counts" in arrays
                    else Features.distinct(arrays["f_hashes"], arrays["f_offsets"]))
    return (arrays["values"], arrays["empty"], arrays.get("sizes"), features), corpus


#: input read between two checkpoints of a pass 1 under way, unless ``NEARDUP_RESUME_PART_MB`` says
PART_BYTES = 512 << 20


def part_bytes() -> int:
    """Input bytes between two parts: ``NEARDUP_RESUME_PART_MB`` (MiB, a positive number) or
    :data:`PART_BYTES`."""
    raw = os.environ.get("NEARDUP_RESUME_PART_MB")
    if raw is None:
        return PART_BYTES
    try:
        mb = float(raw)
    except ValueError:
        mb = 0.0
    if not 0 < mb < 1 << 30:
        raise ConfigError(f"NEARDUP_RESUME_PART_MB must be a positive number of MiB, got {raw!r}")
    return max(int(mb * (1 << 20)), 1)


class Parts:
    """Pass 1 checkpointed as it goes: after every :data:`PART_BYTES` of input read, the rows and
    signatures read since the last part go to ``part-NNNNNN/`` in the checkpoint folder (written
    under a temporary name and renamed: whole or absent), with the place where reading goes on. A run
    killed while signing continues with ``--resume`` from the last whole part: the parts' rows are
    taken as they are and reading starts after them (an uncompressed JSON lines file at that byte;
    any other input re-reads and skips the rows already taken). The full checkpoint written when
    pass 1 ends replaces the parts. Each part carries the run's fingerprint, checked as
    :func:`load` checks the full one. What it costs: the signatures written once more (k × 4 bytes per
    document), to the page cache."""

    def __init__(self, folder: str, cfg, specs):
        self.folder = folder
        self.fp = fingerprint(cfg, specs)
        self.count = 0
        self.ok = True
        self.taken_rows = 0
        self.part_bytes = part_bytes()
        self._pool = None
        self._pending = None

    def load(self) -> list:
        """The parts already written, in order, as (arrays, state); [] when there are none."""
        if not owned(self.folder) or os.path.exists(os.path.join(self.folder, "state.json")):
            return []
        names = sorted((n for n in os.listdir(self.folder) if n.startswith("part-") and n[5:].isdigit()),
                       key=lambda n: int(n[5:]))
        out = []
        for k, name in enumerate(names):
            path = os.path.join(self.folder, name)
            try:
                with open(os.path.join(path, "state.json"), encoding="utf-8") as fh:
                    state = json.load(fh)
                arrays = {f[:-4]: np.load(os.path.join(path, f), allow_pickle=False)
                          for f in sorted(os.listdir(path)) if f.endswith(".npy")}
            except (OSError, ValueError) as exc:
                raise ConfigError(f"resume (--resume): the checkpoint part {path} cannot be read ({exc}); remove "
                                  f"{self.folder} to start over") from None
            why = _difference(state.get("fingerprint", {}), self.fp)
            if why:
                raise ConfigError(f"resume (--resume): the checkpoint {self.folder} is of another run ({why}); "
                                  "remove it to start over, or run without --resume")
            if name != f"part-{k + 1:06d}":
                raise ConfigError(f"resume (--resume): the checkpoint {self.folder} misses a part before {name}; "
                                  "remove it to start over")
            if state.get("ids_int"):
                state["ids"] = arrays.pop("ids_list").tolist()
            out.append((arrays, state))
        self.count = len(out)
        return out

    def write(self, arrays: dict, state: dict) -> None:
        """The next part: a folder of ``.npy`` files and ``state.json``, written under a temporary
        name and renamed (no fsync, as for the full checkpoint: a part torn by a power cut fails to
        load, naming itself). ``arrays``: name → array, or a list of arrays written one after another
        as their concatenation. Written in a thread (the run reads on meanwhile); a part's failure is
        raised by the next :meth:`write` or :meth:`close`. Nothing when ids or keep values are not
        JSON values: then no part at all."""
        self.close()
        if not self.ok:
            return
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="neardup-resume-part")
        self.count += 1
        self._pending = self._pool.submit(self._write, self.count, arrays, state)

    def close(self) -> None:
        """Wait for the part being written (raising its failure)."""
        pending, self._pending = self._pending, None
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        if pending is not None and not pending.result():
            self.ok = False
            remove(self.folder)

    def _write(self, number: int, arrays: dict, state: dict) -> bool:
        ints = int64_values(state["ids"]) if state.get("ids") is not None else None
        if ints is not None:                           # integer ids (the usual ones) as an array, not JSON
            arrays = dict(arrays, ids_list=ints)
            state = dict(state, ids=None, ids_int=True)
        if not all(_is_json(i) for i in state.get("ids") or ()) or not all(_is_json(k) for k in state["keys"]):
            return False
        if not os.path.lexists(self.folder):
            os.mkdir(self.folder)
            _mark(self.folder)
        elif not owned(self.folder):
            raise ConfigError(f"resume (--resume): {self.folder} is not a neardup checkpoint (no {MARK}); it is "
                              "left as it is")
        tmp = os.path.join(self.folder, f".tmp-{secrets.token_hex(4)}")
        try:
            os.mkdir(tmp)
            for name, arr in arrays.items():
                _save_npy(os.path.join(tmp, f"{name}.npy"), arr)
            with open(os.path.join(tmp, "state.json"), "w", encoding="utf-8") as fh:
                json.dump(dict(state, fingerprint=self.fp), fh, allow_nan=True)
            os.replace(tmp, os.path.join(self.folder, f"part-{number:06d}"))
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return True


def _save_npy(path: str, arr) -> None:
    """``np.save`` of an array, or of the concatenation of a list of arrays (one dtype, rows of one
    shape) without making it."""
    if not isinstance(arr, list):
        np.save(path, arr, allow_pickle=False)
        return
    first = arr[0]
    shape = (sum(a.shape[0] for a in arr), *first.shape[1:])
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, {"descr": np.lib.format.dtype_to_descr(first.dtype),
                                                  "fortran_order": False, "shape": shape})
        for a in arr:
            fh.write(np.ascontiguousarray(a, dtype=first.dtype).data)


def remove(folder: str) -> None:
    """Remove a checkpoint folder — only one neardup wrote (:func:`owned`); anything else stays."""
    if owned(folder):
        shutil.rmtree(folder, ignore_errors=True)
