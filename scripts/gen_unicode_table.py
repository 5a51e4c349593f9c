"""Generate ``src/neardup/data/unicode_classes.npz``: the code-point classes of the word tokenizer,
and ``unicode_casefold.npz``: full case folding of every non-ASCII code point that folds.

Shipped as data (not computed at import) so that tokenisation does not depend on the Unicode
version of the Python that runs it: every machine and engine splits text identically.

Classes: 0 separator (punctuation, symbols, spaces, controls, unassigned), 1 word character
(letters, digits, combining marks of any script), 2 a token by itself (CJK ideographs, kana,
hangul syllables — scripts written without spaces between words).
Run-length encoded as (starts, classes).

Case folding (``str.casefold``, Unicode's full default case folding, context free) is stored as
the sorted folding code points and their folded UTF-8 bytes (at most 3 code points, 12 bytes), so
the word kernel folds while it scans. The script checks the two facts that kernel relies on: ASCII
folds exactly A–Z → a–z, and a folded character keeps its class (word → word characters,
separator → separators; no class-2 character folds).
"""
import sys
import unicodedata
from pathlib import Path

import numpy as np

SOLO_RANGES = [
    (0x3040, 0x30FF),   # hiragana, katakana
    (0x31F0, 0x31FF),   # katakana phonetic extensions
    (0xFF66, 0xFF9F),   # halfwidth katakana
    (0x3400, 0x4DBF),   # CJK extension A
    (0x4E00, 0x9FFF),   # CJK unified ideographs
    (0xF900, 0xFAFF),   # CJK compatibility ideographs
    (0xAC00, 0xD7A3),   # hangul syllables
    (0x20000, 0x2FA1F), # CJK extensions B..F, compatibility supplement
    (0x30000, 0x323AF), # CJK extensions G, H
]


def classify(cp: int) -> int:
    for lo, hi in SOLO_RANGES:
        if lo <= cp <= hi:
            cat = unicodedata.category(chr(cp))
            return 2 if cat[0] in "LN" or cat == "Cn" and 0x4E00 <= cp <= 0x9FFF else (1 if cat[0] == "M" else 0)
    cat = unicodedata.category(chr(cp))
    return 1 if cat[0] in "LNM" else 0


def main() -> None:
    classes = np.fromiter((classify(cp) for cp in range(0x110000)), dtype=np.uint8, count=0x110000)
    change = np.flatnonzero(np.diff(classes)) + 1
    starts = np.concatenate([[0], change]).astype(np.uint32)
    out = Path(__file__).resolve().parents[1] / "src" / "neardup" / "data" / "unicode_classes.npz"
    np.savez_compressed(out, starts=starts, classes=classes[starts],
                        unicode_version=np.array(unicodedata.unidata_version))
    print(f"{out}: {len(starts)} runs, Unicode {unicodedata.unidata_version}, python {sys.version.split()[0]}")
    write_casefold(classes, out.with_name("unicode_casefold.npz"))
    write_nfkc(classes, out.with_name("unicode_nfkc.npz"))


def write_casefold(classes: np.ndarray, out: Path) -> None:
    for cp in range(0x80):
        folded = chr(cp).casefold()
        assert folded == (chr(cp + 32) if 0x41 <= cp <= 0x5A else chr(cp)), cp
    cps, rows = [], []
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        folded = chr(cp).casefold()
        if folded == chr(cp):
            continue
        assert len(folded) <= 3 and classes[cp] != 2, hex(cp)
        assert all(classes[ord(c)] == classes[cp] for c in folded), hex(cp)
        data = folded.encode("utf-8")
        cps.append(cp)
        rows.append(bytes([len(data)]) + data.ljust(12, b"\0"))
    np.savez_compressed(out, cps=np.array(cps, dtype=np.int32),
                        utf8=np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), 13),
                        unicode_version=np.array(unicodedata.unidata_version))
    print(f"{out}: {len(cps)} folding code points")


def composition_seconds() -> set[int]:
    """Code points that can be the second of a canonical composition pair (NFC_QC = Maybe):
    the second half of every primary composite's two-code-point decomposition, and the Hangul
    vowel and trailing-consonant jamo (composed algorithmically)."""
    seconds = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        d = unicodedata.decomposition(chr(cp))
        if d and not d.startswith("<"):
            parts = [int(x, 16) for x in d.split()]
            if len(parts) == 2 and unicodedata.normalize("NFC", chr(cp)) == chr(cp):
                seconds.add(parts[1])
    return seconds


def write_nfkc(classes: np.ndarray, out: Path) -> None:
    """NFKC per character, where that is exact, for the word kernel.

    A text is NFKC-normalised per character when it holds no *unsafe* code point: then every
    character is a starter (canonical combining class 0) and none can be the second of a
    composition, so decomposition results sit side by side, reordering has nothing to move and
    composition has nothing to join: NFKC(text) = ∏ NFKC(c). Unsafe: code points unassigned at
    this Unicode version (so a document with a character assigned later is normalised by the
    running Python, whatever else it holds), combining marks (ccc ≠ 0), possible composition
    seconds, and characters whose NFKC is not itself such a run of safe starters or would change
    token boundaries (a word character must map to word characters,
    a class-2 character to one class-2 character; separators may map to separators).
    A document with an unsafe code point is normalised by Python instead.
    Stored: ``map_cps`` (safe characters that change, word or class 2), their NFKC as UTF-8
    (``map_plain``) and its case folding (``map_folded``), each row [length, bytes…]; the same for
    the safe separators that change (``sep_cps``, ``sep_plain``, ``sep_folded``: nothing for the
    word tokenizer, but the jieba cut reads every character); and the unsafe set run-length
    encoded (``unsafe_starts``, ``unsafe``)."""
    seconds = composition_seconds()

    def stable_starter(ch: str) -> bool:
        cp = ord(ch)
        return (unicodedata.combining(ch) == 0 and cp not in seconds
                and unicodedata.normalize("NFKC", ch) == ch)

    unsafe = np.zeros(0x110000, dtype=np.uint8)
    cps, plain, folded = [], [], []
    sep_cps, sep_plain, sep_folded = [], [], []
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        norm = unicodedata.normalize("NFKC", ch)
        if unicodedata.category(ch) == "Cn" or unicodedata.combining(ch) != 0 or cp in seconds:
            unsafe[cp] = 1
            continue
        if norm == ch:
            continue
        cls = classes[cp]
        out_cls = [classes[ord(c)] for c in norm]
        same = (all(c == 0 for c in out_cls) if cls == 0 else
                all(c == 1 for c in out_cls) if cls == 1 else len(norm) == 1 and out_cls[0] == 2)
        if not (same and all(stable_starter(c) for c in norm)):
            unsafe[cp] = 1
            continue
        if cls == 0:    # a separator that maps to separators: nothing for the word tokenizer to do
            sep_cps.append(cp)
            sep_plain.append(norm.encode("utf-8"))
            sep_folded.append(norm.casefold().encode("utf-8"))
            continue
        assert all(classes[ord(c)] == cls for c in norm.casefold()), hex(cp)
        cps.append(cp)
        plain.append(norm.encode("utf-8"))
        folded.append(norm.casefold().encode("utf-8"))
    width = max(len(b) for b in plain + folded)
    sep_width = max(len(b) for b in sep_plain + sep_folded)

    def rows(items, width=width):
        return np.frombuffer(b"".join(bytes([len(b)]) + b.ljust(width, b"\0") for b in items),
                             dtype=np.uint8).reshape(len(items), width + 1)

    change = np.flatnonzero(np.diff(unsafe)) + 1
    starts = np.concatenate([[0], change]).astype(np.uint32)
    np.savez_compressed(out, map_cps=np.array(cps, dtype=np.int32), map_plain=rows(plain),
                        map_folded=rows(folded), sep_cps=np.array(sep_cps, dtype=np.int32),
                        sep_plain=rows(sep_plain, sep_width), sep_folded=rows(sep_folded, sep_width),
                        unsafe_starts=starts, unsafe=unsafe[starts],
                        unicode_version=np.array(unicodedata.unidata_version))
    print(f"{out}: {len(cps)} mapped code points, {int(unsafe.sum())} unsafe, rows of {width} bytes")


if __name__ == "__main__":
    main()
