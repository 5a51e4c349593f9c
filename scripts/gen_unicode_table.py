"""Generate ``src/neardup/data/unicode_classes.npz``: the code-point classes of the word tokenizer.

Shipped as data (not computed at import) so that tokenisation does not depend on the Unicode
version of the Python that runs it: every machine and engine splits text identically.

Classes: 0 separator (punctuation, symbols, spaces, controls, unassigned), 1 word character
(letters, digits, combining marks of any script), 2 a token by itself (CJK ideographs, kana,
hangul syllables — scripts written without spaces between words).
Run-length encoded as (starts, classes).
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


if __name__ == "__main__":
    main()
