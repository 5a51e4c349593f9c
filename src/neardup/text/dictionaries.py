"""The user's own word files for Chinese SimHash: an IDF table, a user dictionary and stop words,
each read strictly (a bad entry is an :class:`~neardup.errors.InputFormatError` naming the file and
line) and identified by the SHA-256 of its bytes, so that an index or a report records which file
content made its fingerprints (a path alone would not notice an edited file).

Formats, as jieba and cppjieba write them (UTF-8; a byte-order mark at the start is ignored; blank
lines are skipped):

* **IDF** (``--idf PATH``): ``word idf`` per line, one space, a finite number; a later line for the
  same word replaces the earlier one. Unknown words get the median (neardup's native pipeline, as
  ``jieba.analyse`` does) or the mean over the lines (``--compat yanyiwu``, as cppjieba does). A table
  ``neardup idf fit`` wrote starts with ``#neardup-tokenizer:NAME idf``: the tokenizer its words came
  from (``word``, ``jieba``, ``auto``; ``yanyiwu`` or ``jieba-analyse`` for those modes' cuts), in the
  same two-field form so that jieba and cppjieba still read the file (to them a word no text holds);
  every command refuses the table with another tokenizer (:func:`idf_tokenizer_mismatch`). A table
  without it is taken as given.
* **User dictionary** (``--user-dict PATH``): ``word [freq] [tag]``, fields separated by one space,
  freq a positive integer. A word may not contain a space.
* **Stop words** (``--stop-words PATH``): one word per line, taken whole (cppjieba does not trim);
  a trailing carriage return is dropped.

``neardup idf fit`` writes the IDF format (:func:`write_idf`).

Limits (:func:`read_limited`: at most limit + 1 bytes are read, so an endless stream such as
``/dev/zero`` stops at the limit; a stat of the size alone would not, it says 0 there):

* an IDF value is a finite number in [0, :data:`MAX_IDF`] (100: jieba's table spans 0.88–13.9, a
  fitted table ln((1 + N) / (1 + df)) + 1 stays below 45 for any corpus of fewer than 10^18 documents);
  a negative, huge or non-finite weight would swamp every other feature of a fingerprint;
* an IDF table holds at most :data:`MAX_IDF_BYTES` (256 MiB: jieba's is 5.9 MiB; a table fitted on
  a large corpus with ``--min-df 1`` may hold some millions of words), a user dictionary
  :data:`MAX_USER_DICT_BYTES` (64 MiB: jieba's whole ``dict.txt`` is 4.8 MiB), a stop-word list
  :data:`MAX_STOP_WORDS_BYTES` (16 MiB: cppjieba's is 6 KiB).
"""
from __future__ import annotations

import hashlib
import math
import os
import sys
import threading
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, InputFormatError

MAX_FREQ = 2**53             # a frequency the segmenters take exactly (rjieba: 64-bit; cppjieba: a double)
TOKENIZER_MARK = "#neardup-tokenizer:"   # the first "word" of a table idf fit wrote (see the module docstring)
MAX_IDF = 100.0              # the largest IDF value a table may give (see the module docstring)
MiB = 1 << 20
MAX_IDF_BYTES = 256 * MiB
MAX_USER_DICT_BYTES = 64 * MiB
MAX_STOP_WORDS_BYTES = 16 * MiB
_lock = threading.Lock()
_cache: dict[tuple, object] = {}


@dataclass(frozen=True)
class IdfFile:
    path: str
    sha256: str
    words: tuple[str, ...]          # distinct words, first-seen order
    values: np.ndarray              # float64, the last value given for each word
    mean: float                     # Σ idf / lines read, blank ones included (cppjieba's default for unknown words)
    median: float                   # over the distinct words (jieba.analyse's default)
    tokenizer: str | None = None    # the tokenizer ``neardup idf fit`` counted with (its first line), if any


@dataclass(frozen=True)
class UserDict:
    path: str
    sha256: str
    entries: tuple[tuple[str, str | None, str | None], ...]   # (word, second field, third field) per line


@dataclass(frozen=True)
class StopWords:
    path: str
    sha256: str
    words: frozenset


def read_limited(path, limit: int, what: str, hint: str = "") -> bytes:
    """The bytes of the file ``path``, reading at most ``limit`` + 1 of them: more than ``limit``
    (a huge file, an endless stream such as ``/dev/zero``) is an :class:`InputFormatError` naming the
    file, ``what`` it is and the limit (``hint``: what to do instead); so is a file that cannot be read."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputFormatError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputFormatError(f"{path}: the {what} is over its size limit of {_size(limit)}{hint}")
    return data


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n % MiB == 0 else f"{n:,} bytes"


def _lines(path: str, what: str, limit: int):
    """(line number, text) of each non-blank line of ``path`` (at most ``limit`` bytes,
    :func:`read_limited`); a clear error for a missing file or bytes that are not UTF-8 (with the line)."""
    data = read_limited(path, limit, what)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    out = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputFormatError(f"{path}:{n}: the {what} is not UTF-8 (byte {exc.start + 1} of the line)") from None
        if text.strip():
            out.append((n, text))
    return data, out


def _getline_count(data: bytes) -> int:
    """Lines as C++ ``getline`` counts them (a final line without a newline counts; the empty piece
    after a final newline does not)."""
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _cached(kind: str, path, loader):
    path = os.fspath(path)
    try:
        st = os.stat(path)
        key = (kind, os.path.abspath(path), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None:
        with _lock:
            hit = _cache.get(key)
        if hit is not None:
            return hit
    value = loader(path)
    if key is not None:
        with _lock:
            _cache[key] = value
    return value


def load_idf(path) -> IdfFile:
    """An IDF file, checked line by line (cached per path, modification time and size)."""
    return _cached("idf", path, _load_idf)


def _load_idf(path: str) -> IdfFile:
    data, lines = _lines(path, "IDF table", MAX_IDF_BYTES)
    table: dict[str, float] = {}
    total = 0.0
    tokenizer = None
    if lines and lines[0][1].startswith(TOKENIZER_MARK):
        tokenizer = lines[0][1][len(TOKENIZER_MARK):].split(" ")[0]
        lines = lines[1:]
    for n, text in lines:
        parts = text.split(" ")
        if len(parts) != 2 or not parts[0]:
            raise InputFormatError(f"{path}:{n}: expected 'word idf' (one space between), got {text[:80]!r}")
        try:
            value = float(parts[1])
        except ValueError:
            value = math.nan
        if not 0.0 <= value <= MAX_IDF:           # (False for NaN)
            raise InputFormatError(f"{path}:{n}: the idf of {parts[0]!r} must be a finite number in "
                                   f"[0, {MAX_IDF:g}], got {parts[1][:40]!r}")
        table[parts[0]] = value
        total += value
    if not table:
        raise InputFormatError(f"{path}: the IDF table has no entries")
    values = np.fromiter(table.values(), dtype=np.float64, count=len(table))
    return IdfFile(path, hashlib.sha256(data).hexdigest(), tuple(table), values,
                   total / (_getline_count(data) - (tokenizer is not None)), float(np.median(values)), tokenizer)


def jieba_median(values) -> float:
    """``jieba.analyse``'s default IDF for an unknown word (``IDFLoader.median_idf``): the distinct words'
    values sorted, the one at index n // 2 (the upper middle for even n, where ``np.median`` averages)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    return float(v[v.shape[0] // 2])


def _flag(tokenizer: str) -> str:
    return f"--compat {tokenizer}" if tokenizer in ("yanyiwu", "jieba-analyse") else f"--tokenizer {tokenizer}"


def idf_tokenizer_mismatch(idf, tokenizer: str) -> str | None:
    """Why the IDF table ``idf`` (a path; ``"jieba"`` or None: none) cannot weigh words cut by
    ``tokenizer`` (``yanyiwu``, ``jieba-analyse``: those modes' cuts), or None when it can: a table
    records the tokenizer ``neardup idf fit`` counted with, and its words are another tokenizer's tokens (jieba words
    looked up among characters find nothing, silently)."""
    if idf is None or idf == "jieba":
        return None
    made = load_idf(idf).tokenizer
    if made is None or made == tokenizer:
        return None
    flag, used = _flag(made), _flag(tokenizer)
    return (f"a table of this run's tokens: {os.fspath(idf)} was fitted with {flag} (its first line), this run "
            f"uses {used}; sign with {flag}, or fit the table again with {used}")


def load_user_dict(path) -> UserDict:
    """A user dictionary, checked line by line (cached like :func:`load_idf`)."""
    return _cached("user_dict", path, _load_user_dict)


def _load_user_dict(path: str) -> UserDict:
    data, lines = _lines(path, "user dictionary", MAX_USER_DICT_BYTES)
    entries = []
    for n, text in lines:
        parts = text.split(" ")
        if len(parts) > 3 or not all(parts):
            raise InputFormatError(f"{path}:{n}: expected 'word [freq] [tag]' (single spaces between), "
                                   f"got {text[:80]!r}")
        if len(parts) == 3 and not (parts[1].isascii() and parts[1].isdigit() and 0 < int(parts[1]) <= MAX_FREQ):
            raise InputFormatError(f"{path}:{n}: the frequency of {parts[0]!r} must be a positive integer up to "
                                   f"2**53, got {parts[1]!r}")
        if len(parts) == 2 and parts[1].isascii() and parts[1].isdigit() and int(parts[1]) > MAX_FREQ:
            raise InputFormatError(f"{path}:{n}: the frequency of {parts[0]!r} must be at most 2**53, "
                                   f"got {parts[1]!r}")
        entries.append((parts[0], parts[1] if len(parts) > 1 else None, parts[2] if len(parts) > 2 else None))
    return UserDict(path, hashlib.sha256(data).hexdigest(), tuple(entries))


def load_stop_words(path) -> StopWords:
    """A stop-word list (cached like :func:`load_idf`); an empty file is an empty list."""
    return _cached("stop_words", path, _load_stop_words)


def _load_stop_words(path: str) -> StopWords:
    data, lines = _lines(path, "stop-word list", MAX_STOP_WORDS_BYTES)
    return StopWords(path, hashlib.sha256(data).hexdigest(), frozenset(t for _, t in lines))


def user_frequency(entry: tuple[str, str | None, str | None]) -> int | None:
    """jieba's reading of a user-dictionary line: a second field of digits is the frequency (else a
    tag); None lets the segmenter choose one."""
    _, second, third = entry
    if third is not None or (second is not None and second.isascii() and second.isdigit() and int(second) > 0):
        return int(second)
    return None


def write_idf(path, words, values, tokenizer: str | None = None) -> None:
    """Write ``word idf`` lines (words sorted by code point, values with 12 significant digits: the
    same corpus always gives the same bytes) to the file ``path``, fsynced (``-``: standard output),
    after a first line ``#neardup-tokenizer:NAME median`` when ``tokenizer`` is given (its value is
    :func:`jieba_median`, which leaves jieba's median of the file unchanged when jieba reads that line
    as a word; cppjieba's mean moves a little).
    A table larger than :data:`MAX_IDF_BYTES` is refused (``--idf`` would not read it back). ``neardup
    idf fit`` writes into the temporary file of :func:`neardup.io.outfile.replacing`, renamed over its
    ``-o`` only once whole."""
    order = sorted(range(len(words)), key=lambda i: words[i])
    head = f"{TOKENIZER_MARK}{tokenizer} {jieba_median(values) if len(values) else 0.0:.12g}\n" if tokenizer else ""
    body = (head + "".join(f"{words[i]} {float(values[i]):.12g}\n" for i in order)).encode("utf-8")
    if len(body) > MAX_IDF_BYTES:
        raise ConfigError(f"{os.fspath(path)}: the table of {len(words):,} words would take {len(body):,} bytes, "
                          f"more than the {_size(MAX_IDF_BYTES)} an IDF table may hold (--idf reads no more); "
                          "leave out rare words with --min-df")
    path = os.fspath(path)
    if path == "-":
        sys.stdout.buffer.write(body)
        sys.stdout.flush()
        return
    with open(path, "wb") as fh:
        fh.write(body)
        fh.flush()
        os.fsync(fh.fileno())


def word_files(idf=None, user_dict=None, stop_words=None) -> list[tuple[str, str]]:
    """(option, path) of the word files given; ``idf="jieba"`` (the shipped table) is none."""
    given = (("--idf", None if idf == "jieba" else idf), ("--user-dict", user_dict), ("--stop-words", stop_words))
    return [(option, os.fspath(path)) for option, path in given if path is not None]


def file_keys(idf=None, user_dict=None, stop_words=None) -> dict:
    """The content keys of the files given (``{"idf_sha256": ..., ...}``), for configs that must
    notice a changed file; ``idf="jieba"`` (the shipped table) has none."""
    keys = {"--idf": ("idf_sha256", load_idf), "--user-dict": ("user_dict_sha256", load_user_dict),
            "--stop-words": ("stop_words_sha256", load_stop_words)}
    return {keys[option][0]: keys[option][1](path).sha256 for option, path in word_files(idf, user_dict, stop_words)}
