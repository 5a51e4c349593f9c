"""Request bodies and ids (:mod:`neardup.service.app`): :func:`json_shape` bounds a body's nesting
and values before it is parsed, :func:`parse_documents` reads its documents (:func:`parse_bulk` those
of a bulk add), :func:`_decode_id` a percent-decoded id."""
import json

import numpy as np

from ..index.store import InvalidKeyError, check_key
from .limits import MAX_DEPTH, VALUES_PER_DOCUMENT, RequestError

_DELTA = np.zeros(256, np.int8)           # nesting: +1 at an opening bracket, -1 at a closing one
_DELTA[list(b"[{")] = 1
_DELTA[list(b"]}")] = -1
_COUNTED = np.zeros(256, bool)            # a value starts after each of these (and once at the start)
_COUNTED[list(b"[{,:")] = True
_CHUNK = 1 << 19                          # bytes scanned at a time: temporaries stay ~10 MB
_LOOK_BACK = 16                           # backslash runs this long before a quote take the slow way


def _backslashes_before(a: np.ndarray, at: int) -> int:
    """How many backslashes end just before ``a[at]`` (windows doubling up to :data:`_CHUNK`)."""
    n, size = 0, 64
    while at - n > 0:
        w = a[max(0, at - n - size):at - n]
        other = np.flatnonzero(w != 92)
        if len(other):
            return n + len(w) - 1 - int(other[-1])
        n += len(w)
        size = min(2 * size, _CHUNK)
    return n


def _escaped(a: np.ndarray, q: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Which of the quotes at ``q`` (positions in ``a``, within [lo, hi)) are escaped: preceded by
    an odd run of backslashes (in a JSON string, backslashes pair up from the left)."""
    out = np.zeros(len(q), bool)
    cand = np.flatnonzero(a[np.maximum(q - 1, 0)] == 92)
    cand = cand[q[cand] > 0]
    if not len(cand):
        return out
    p = q[cand]
    run = np.ones(len(p), np.int64)
    longer = np.ones(len(p), bool)
    for k in range(2, _LOOK_BACK + 1):
        idx = p - k
        longer &= idx >= 0
        longer[longer] = a[idx[longer]] == 92
        if not longer.any():
            break
        run += longer
    else:       # a run of _LOOK_BACK or more: measure the chunk's runs, and the one ending at its start
        back = _backslashes_before(a, lo)
        bs = np.flatnonzero(a[lo:hi] == 92) + lo
        first = np.ones(len(bs), bool)
        np.not_equal(bs[1:], bs[:-1] + 1, out=first[1:])
        starts = bs[first]
        if len(bs) and bs[0] == lo:
            starts[0] -= back
        run = np.full(len(p), back, np.int64)         # a quote at the chunk's start: the run before it
        within = p > lo
        run[within] = p[within] - starts[np.cumsum(first) - 1][np.searchsorted(bs, p[within] - 1)]
    out[cand] = run % 2 == 1
    return out


def json_shape(body, chunk: int = _CHUNK, most: tuple[float, float] = (np.inf, np.inf)) -> tuple[int, int]:
    """(deepest nesting of arrays and objects, values) of the JSON text ``body`` (bytes), without
    parsing it: from its brackets, commas and colons outside strings, found with numpy. ``values``
    is 1 + every ``[``, ``{``, ``,`` and ``:`` outside strings: the number of values, keys included,
    plus one per empty array or object. Exact for valid JSON; for invalid JSON, exact up to the
    first error (where a parser stops). Returns early, with either count so far, once the nesting
    or the values exceed ``most``."""
    a = np.frombuffer(body, np.uint8)
    depth = top = 0
    values = 1
    inside = 0                                # in a string at the start of the chunk
    for lo in range(0, len(a), chunk):
        c = a[lo:lo + chunk]
        m = len(c)
        q = np.flatnonzero(c == 34)
        if len(q):
            q = q[~_escaped(a, q + lo, lo, lo + m)]
        edges = np.empty(len(q) + 2, np.int64)   # the quotes cut the chunk into pieces, alternately
        edges[0], edges[1:-1], edges[-1] = -1, q, m   # outside and inside strings
        starts = edges[inside:-1:2] + 1
        ends = edges[1 + inside::2]
        inside ^= len(q) & 1
        lens = ends - starts
        total = int(lens.sum())
        if total == m:
            outside = c
        elif total:
            pos = np.repeat(starts - (np.cumsum(lens) - lens), lens)
            pos += np.arange(total)
            outside = c[pos]
        else:
            continue
        values += int(np.count_nonzero(_COUNTED[outside]))
        d = _DELTA[outside]
        d = d[d != 0]
        if len(d):
            levels = np.cumsum(d, dtype=np.int64)
            top = max(top, depth + int(levels.max()))
            depth += int(levels[-1])
        if top > most[0] or values > most[1]:
            break
    return top, values


def _bounded(body: bytes, max_batch: int) -> str:
    """``body`` as text once its nesting and number of values are checked (:func:`json_shape`,
    before anything is parsed), else :class:`RequestError`."""
    most = VALUES_PER_DOCUMENT * (max_batch + 1)
    depth, values = json_shape(body, most=(MAX_DEPTH, most))
    if depth > MAX_DEPTH:
        raise RequestError(400, f"the body nests arrays/objects {depth} deep (or more); at most {MAX_DEPTH}")
    if values > most:
        raise RequestError(413, f"the body holds over {most} JSON values: a batch of at most {max_batch} "
                                f"documents may hold {VALUES_PER_DOCUMENT} a document")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the body is not valid UTF-8 (byte {exc.start})") from None


def parse_documents(body: bytes, need_id: bool, max_batch: int) -> tuple:
    """(ids, texts) of a request body, or :class:`RequestError` naming what is wrong (and where).
    The body's nesting and number of values are checked before it is parsed (:func:`json_shape`)."""
    text = _bounded(body, max_batch)
    try:
        obj = json.loads(text)
        del text
    except ValueError as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(obj, dict) or "documents" not in obj:
        raise RequestError(422, 'the body must be an object {"documents": [{"id": …, "text": …}, …]}')
    return _documents(obj["documents"], need_id, max_batch, "documents")


def parse_bulk(body: bytes, ndjson: bool, max_batch: int, id_field: str = "id", text_field: str = "text") -> tuple:
    """(ids, texts) of a bulk add's body: NDJSON (one object a line, its id in ``id_field`` and its
    text in ``text_field``; blank lines skipped) or JSON (an array of them, or ``{"documents": [...]}``);
    else :class:`RequestError` naming the line or element. Bounded as :func:`parse_documents` is."""
    text = _bounded(body, max_batch)
    if not ndjson:
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise RequestError(400, f"the body is not valid JSON: {exc} (NDJSON needs Content-Type: "
                                    "application/x-ndjson)") from None
        if isinstance(obj, dict) and "documents" in obj:
            return _documents(obj["documents"], True, max_batch, "documents", id_field, text_field)
        if not isinstance(obj, list):
            raise RequestError(422, 'the body must be an array [{"id": …, "text": …}, …] (or NDJSON: '
                                    "Content-Type: application/x-ndjson)")
        return _documents(obj, True, max_batch, "", id_field, text_field)
    docs, lines = [], []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if len(docs) == max_batch:
            raise RequestError(413, f"more than {max_batch} documents in one request (line {n})")
        try:
            docs.append(json.loads(line))
        except ValueError as exc:
            raise RequestError(400, f"line {n} is not valid JSON: {exc}") from None
        lines.append(n)
    return _documents(docs, True, max_batch, "the lines", id_field, text_field, lines)


def _documents(docs, need_id: bool, max_batch: int, name: str, id_field: str = "id", text_field: str = "text",
               lines: list | None = None):
    """(ids, texts) of a list of objects (``id_field``, ``text_field``); errors name ``name[i]``
    (``documents[i]``, ``[i]`` of an array) or, for NDJSON, ``line N`` (``lines``: each one's)."""
    def where(i: int, field: str = "") -> str:
        if lines is not None:
            return f"line {lines[i]}" + (f": {field}" if field else "")
        return f"{name}[{i}]" + (f".{field}" if field else "")

    if not isinstance(docs, list):
        raise RequestError(422, f"{name or 'the body'} must be a list")
    if not docs:
        raise RequestError(422, ("the body holds no document" if lines is not None else f"{name or 'the body'} is "
                                 "empty") + ": send at least one document")
    if len(docs) > max_batch:
        raise RequestError(413, f"{len(docs)} documents in one request; at most {max_batch}")
    ids, texts = [], []
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            raise RequestError(422, f"{where(i)} must be an object with {id_field} and {text_field}")
        t = d.get(text_field)
        if not isinstance(t, str):
            raise RequestError(422, f"{where(i, text_field)} must be a string"
                               + ("" if text_field in d else " (missing)"))
        k = d.get(id_field)
        if k is None and need_id:
            raise RequestError(422, f"{where(i, id_field)} is missing")
        if k is not None:
            try:
                k = check_key(k, where(i, id_field))
            except InvalidKeyError as exc:
                raise RequestError(422, str(exc)) from None
        ids.append(k)
        texts.append(t)
    if need_id and len(set(map(repr, ids))) != len(ids):
        raise RequestError(422, f"an id appears twice in {name or 'the body'}")
    return ids, texts


def _decode_id(data: bytes, where: str) -> str:
    """A percent-decoded id as text: UTF-8 with lone surrogates kept (JSON's ``\\ud800`` can add
    them), else 400 naming ``where``."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"{where} is not UTF-8 once percent-decoded (byte {exc.start})") from None
