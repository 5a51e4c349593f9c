import json

import numpy as np
import pytest
from conftest import skip_unless_table_unicode
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import Normalizer, Shingler
from neardup.text.tokenize import tokenize


def test_word_tokens_any_script_and_punctuation():
    text = "Héllo, wörld! Привет—мир; naïve café 3.14 «quoted» ¿qué? x_y"
    assert tokenize(text, "word") == ["Héllo", "wörld", "Привет", "мир", "naïve", "café", "3", "14",
                                      "quoted", "qué", "x", "y"]


def test_cjk_ideographs_kana_hangul_are_single_tokens():
    assert tokenize("中文abc日本語カナ한국어", "word") == ["中", "文", "abc", "日", "本", "語", "カ", "ナ", "한", "국", "어"]
    # fullwidth and ideographic punctuation split too
    assert tokenize("你好，世界。（测试）", "word") == ["你", "好", "世", "界", "测", "试"]


def test_normalizer_steps():
    n = Normalizer()
    assert n("ＦＵＬＬ\u3000Width  Straße\n\tﬁ") == "full width strasse fi"
    assert Normalizer(nfkc=False, casefold=False, whitespace=False)("ＡB  c") == "ＡB  c"
    assert Normalizer(casefold=False)("A  B") == "A B"


def test_short_document_gets_one_shingle_and_empty_none():
    sh = Shingler(ngram=5)
    f = sh.features(["just three words", "", "   ", "one two three four five six"])
    assert list(f.sizes()) == [1, 0, 0, 2]
    assert sh.shingles("just three words") == ["just three words"]


def test_identical_short_texts_match_and_differ_from_others():
    sh = Shingler(ngram=5)
    f = sh.features(["ok", "OK", "no"])
    assert f.doc(0)[0] == f.doc(1)[0] != f.doc(2)[0]


@pytest.mark.parametrize("tokenizer,ngram", [("word", 1), ("word", 3), ("char", 4), ("jieba", 2), ("auto", 2)])
def test_kernel_shingles_agree_with_python_view(tokenizer, ngram):
    texts = ["The cat sat on the mat; the cat sat.", "我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪",
             "Ünïcödé ﬁne   text with   spaces", "a", ""]
    sh = Shingler(tokenizer=tokenizer, ngram=ngram)
    f = sh.features(texts)
    for i, t in enumerate(texts):
        strings = sh.shingles(t)
        # the kernel's hashes are a function of the shingle: equal strings ⇔ equal hashes
        assert len(f.doc(i)) == len(strings)
        by_string = {}
        for s, h in zip(strings, f.doc(i)):
            assert by_string.setdefault(s, h) == h
        assert len(set(by_string.values())) == len(by_string)


def test_char_ngrams_on_normalised_whitespace():
    sh = Shingler(tokenizer="char", ngram=3)
    assert sh.shingles("ab  c\n") == ["ab ", "b c"]
    f = sh.features(["ab  c\n", "ab c"])
    assert np.array_equal(f.doc(0), f.doc(1))


def test_auto_uses_jieba_for_chinese_and_word_otherwise():
    sh = Shingler(tokenizer="auto", ngram=1)
    assert sh.shingles("手扶拖拉机专业") == ["手扶拖拉机", "专业"]
    assert sh.shingles("hello world") == ["hello", "world"]
    f = sh.features(["hello world", "手扶拖拉机专业", "x"])
    assert list(f.sizes()) == [2, 2, 1]
    solo = Shingler(tokenizer="jieba", ngram=1).features(["手扶拖拉机专业"])
    assert np.array_equal(f.doc(1), solo.doc(0))


def test_bad_parameters():
    with pytest.raises(ValueError, match="tokenizer"):
        Shingler(tokenizer="nope")
    with pytest.raises(ValueError, match="ngram"):
        Shingler(ngram=0)


# -- case folding inside the word kernel ---------------------------------------------------------

def _folding_code_points():
    import unicodedata

    from neardup.text.unicode import char_map

    slot, _ = char_map(False, True)
    return [cp for cp in range(0x80, slot.shape[0]) if slot[cp]], unicodedata.unidata_version


def test_shipped_fold_table_is_pythons_casefold():
    """The table is str.casefold at the class table's Unicode version (14.0): where the running
    Python has that version, every code point must agree, folding or not."""

    from neardup.text.unicode import char_map

    skip_unless_table_unicode()
    slot, utf8 = char_map(False, True)
    for cp in range(0x80, 0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        folded = chr(cp).casefold()
        if cp < slot.shape[0] and slot[cp]:
            row = utf8[slot[cp] - 1]
            assert bytes(row[1:1 + row[0]]).decode("utf-8") == folded, hex(cp)
        else:
            assert folded == chr(cp), hex(cp)


def test_kernel_folding_equals_casefold_first_for_every_folding_character():
    """Folding in the scan gives the hashes of folding the text first, for each of the ~1,500
    non-ASCII characters that fold (ß → ss, ŉ → ʼn, ΐ → three code points, Ⓐ a separator)."""
    cps, _ = _folding_code_points()
    texts = [f"{chr(cp)} x{chr(cp)}y{chr(cp)}{chr(cp)}ABCDEFGHIJ{chr(cp)} 中{chr(cp)}" for cp in cps]
    folding = Shingler(ngram=2, normalizer=Normalizer(nfkc=False))
    first = Shingler(ngram=2, normalizer=Normalizer(nfkc=False, casefold=False))
    a = folding.features(texts)
    b = first.features([t.casefold() for t in texts])
    assert np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.hashes, b.hashes)


def test_kernel_folding_property():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    cps, _ = _folding_code_points()
    alphabet = st.sampled_from([chr(c) for c in cps[::7]] + list("AZaz09 ,.-_\n") + ["中", "カ", "é", "É", "ß"])
    folding = Shingler(ngram=3, normalizer=Normalizer(nfkc=False))
    first = Shingler(ngram=3, normalizer=Normalizer(nfkc=False, casefold=False))

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.text(alphabet=alphabet, max_size=40), min_size=1, max_size=5))
    def check(texts):
        a = folding.features(texts)
        b = first.features([t.casefold() for t in texts])
        assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.hashes, b.hashes)

    check()


def test_every_fused_path_folds_like_the_normalizer():
    """MinHash (fused oph and two-step), SimHash and the Shingler see the same folded text."""
    from neardup import MinHasher, SimHasher

    texts = ["STRASSE Straße straße İstanbul ǅemal ΣΊΣΥΦΟΣ", "ＦＵＬＬ width ﬁne Ⓐ", "plain ascii TEXT here"]
    folded = [Normalizer()(t) for t in texts]
    raw = Normalizer(nfkc=False, casefold=False)
    for scheme in ("oph", "permutation"):
        a = MinHasher(scheme=scheme, ngram=2).sign_batch(texts).values
        b = MinHasher(scheme=scheme, ngram=2, normalizer=raw).sign_batch(folded).values
        assert np.array_equal(a, b)
    assert np.array_equal(SimHasher(ngram=2).sign_batch(texts), SimHasher(ngram=2, normalizer=raw).sign_batch(folded))


# -- the ASCII word scanner (bitmap + SWAR) against the byte-at-a-time scanner ------------------

def _scan_both(texts, fold):
    from neardup.kernels.shingle import general_word_scan, word_scan
    from neardup.text.normalize import encode_batch
    from neardup.text.unicode import char_map, class_table

    buf, offsets = encode_batch(texts, None)
    slot, utf8 = char_map(False, fold)
    size = buf.shape[0] + 1
    out = []
    for scan in (word_scan, general_word_scan):
        rows = []
        for d in range(len(texts)):
            s, e, h = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.uint64)
            m = scan(buf, offsets[d], offsets[d + 1], class_table(), slot, utf8, s, e, h, np.uint64(12345))
            rows.append((s[:m].tolist(), e[:m].tolist(), h[:m].tolist()))
        out.append(rows)
    return out


def test_ascii_scanner_equals_general_scanner_on_edges():
    """Neighbouring documents touch in the buffer (no token may run across), tokens cross the
    8- and 64-byte steps, and a document ends exactly on a step."""
    texts = ["abc", "DEF", "x" * 64, "y" * 63 + " ", " " * 64 + "Z", "a1" * 40 + "," + "b" * 9,
             "Mixed CASE and digits 0123456789 under_score", "", "!!!", "tail" + "q" * 100]
    for fold in (True, False):
        fast, slow = _scan_both(texts, fold)
        assert fast == slow


def test_ascii_scanner_property():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    alphabet = st.sampled_from(list("aZ09 ,.-_\t\n\x00\x7f") + ["Word", "LONGERTOKEN" * 3, " " * 9])

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.lists(alphabet, max_size=60).map("".join), min_size=1, max_size=6), st.booleans())
    def check(texts, fold):
        fast, slow = _scan_both(texts, fold)
        assert fast == slow

    check()


# -- the mixed-text scanner (bitmaps, ASCII stretches by SWAR) against the byte-at-a-time scanner ---

def _scan_bytes(docs: list[bytes], maps):
    """(starts, ends, hashes) per document from mixed_word_scan (padded buffer) and from
    general_word_scan; documents touch in the buffer."""
    from neardup.kernels.shingle import general_word_scan, mixed_word_scan
    from neardup.text.unicode import class_table

    data = b"".join(docs)
    offsets = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    buf = np.frombuffer(data + b"\0" * 8, dtype=np.uint8)
    out = []
    for scan in (mixed_word_scan, general_word_scan):
        rows = []
        for d in range(len(docs)):
            size = len(data) + 2
            s, e, h = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.uint64)
            m = scan(buf, offsets[d], offsets[d + 1], class_table(), *maps, s, e, h, np.uint64(99))
            rows.append((s[:m].tolist(), e[:m].tolist(), h[:m].tolist()))
        out.append(rows)
    return out


def _all_maps():
    from neardup.text.normalize import Normalizer, kernel_char_map
    from neardup.text.unicode import char_map

    return [char_map(False, False), char_map(False, True), kernel_char_map(Normalizer())]


MIXED = ["abc", "中文", "Ａ", "ｶﾀ", "豈", "é", "e\u0301", "😀", "\u3000", "，。", "한국", "İ", "ß", "ǅ",
         "Word", "LONG" * 5, " ", "\n", "0.5", "Straße", "Ⅻ", "ﬁ", "-", "x" * 9]


def test_mixed_scanner_equals_general_scanner_on_edges():
    docs = [s.encode() for s in ["中文 text", "a" * 63 + "中", "中" + "b" * 70, "é" * 40, "abc中def", "",
                                 "Ａｂｃ１２３ 豈 更", "a\u0301bc", "😀x😀", "中文" * 50 + "end", "x" * 64 + "é"]]
    docs += [b"\xff\xfeab", b"ab\xe4\xb8", b"\xe4\xb8\xadz", b"caf\xc3", b"\xc3\xa9" * 5 + b"\x80"]
    for maps in _all_maps():
        fast, slow = _scan_bytes(docs, maps)
        assert fast == slow


def test_mixed_scanner_property():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    piece = st.sampled_from(MIXED) | st.binary(max_size=3)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(piece, max_size=40), min_size=1, max_size=5), st.integers(0, 2))
    def check(docs, which):
        raw = [b"".join(p if isinstance(p, bytes) else p.encode() for p in d) for d in docs]
        fast, slow = _scan_bytes(raw, _all_maps()[which])
        assert fast == slow

    check()


# -- NFKC inside the word kernel, where it is exact per character -------------------------------

def _python_first(texts, ngram):
    """Reference: Python's NFKC + casefold first, then the kernel with no character map."""
    norm = Normalizer(whitespace=False)
    return Shingler(ngram=ngram, normalizer=None).features([norm(t) for t in texts])


def _mapped_code_points():
    from neardup.text.unicode import char_map

    slot, _ = char_map(True, False)
    return [cp for cp in range(0x80, slot.shape[0]) if slot[cp]]


def test_kernel_nfkc_equals_python_nfkc_for_every_mapped_character():
    """Each of the ~3,500 characters the kernel normalises (fullwidth forms, ligatures,
    superscripts, compatibility ideographs, ...) in contexts where a composition or a token
    boundary could go wrong, including next to characters that send the document to Python."""
    skip_unless_table_unicode()
    texts = []
    for cp in _mapped_code_points():
        c = chr(cp)
        texts += [f"{c}", f"x{c}y {c}{c}Ab", f"A{c}\u0300 e{c}", f"中{c}文 ½{c}", f"{c}\u3000{c}，{c}"]
    a = Shingler(ngram=2).features(texts)
    b = _python_first(texts, 2)
    assert np.array_equal(a.offsets, b.offsets)
    assert np.array_equal(a.hashes, b.hashes)


def test_kernel_nfkc_property():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    skip_unless_table_unicode()
    mapped = [chr(c) for c in _mapped_code_points()[::11]]
    unsafe = ["\u0301", "\u0308", "´", "½", "™", "Ⓒ", "\u0d4d", "\u1161", "\u11a8", "ª", "\u0f73"]
    alphabet = st.sampled_from(mapped + unsafe + list("AaEe09 ,\n") + ["中", "가", "ｶ", "Ａ", "１", "　", "ﬁ", "ß"])
    kernel = Shingler(ngram=2)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.text(alphabet=alphabet, max_size=30), min_size=1, max_size=4))
    def check(texts):
        a = kernel.features(texts)
        b = _python_first(texts, 2)
        assert np.array_equal(a.offsets, b.offsets) and np.array_equal(a.hashes, b.hashes)

    check()


def test_nfkc_unsafe_documents_are_normalised_by_python():
    """A document holding a character whose NFKC is not exact per character (here ½ → 1⁄2, which
    splits into the tokens 1 and 2) is normalised by Python before the kernel sees it."""
    from neardup.text.normalize import encode_batch

    texts = ["Ｆｕｌｌ width only", "half ½ cup", "e\u0301 composed"]
    buf, offsets = encode_batch(texts, Normalizer(), whitespace=False, kernel_maps=True)
    docs = [bytes(buf[offsets[i]:offsets[i + 1]]).decode() for i in range(3)]
    assert docs[0] == "Ｆｕｌｌ width only"  # left to the kernel
    assert docs[1] == "half 1\u20442 cup" and docs[2] == "\u00e9 composed"  # NFKC by Python
    f = Shingler(ngram=1).features(texts)
    assert list(f.sizes()) == [3, 4, 2]


def test_characters_unassigned_in_the_tables_send_their_document_to_python():
    """U+1E030 is unassigned in Unicode 14 (the tables) and assigned in 15: whatever the running
    Python knows of it, its document is normalised by that Python, never half by the tables."""
    import unicodedata

    from neardup.text.normalize import encode_batch
    from neardup.text.unicode import nfkc_unsafe

    assert nfkc_unsafe()[0x1E030] == 1 and nfkc_unsafe()[ord("Ａ")] == 0
    text = "Ｆｕｌｌ \U0001e030 width"
    buf, offsets = encode_batch([text], Normalizer(), whitespace=False, kernel_maps=True)
    assert bytes(buf[offsets[0]:offsets[1]]).decode() == unicodedata.normalize("NFKC", text)


def test_register_decode_equals_decode_at_and_nfkc_check():
    """decode_word (a character from a register) against decode_at on every prefix of generated
    bytes; the batch NFKC check against decoding every character and reading the table."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from numba import njit

    from neardup.kernels.normalize import nfkc_unsafe_batch
    from neardup.kernels.shingle import decode_at, decode_word
    from neardup.kernels.swar import load_u64
    from neardup.text.unicode import nfkc_clean_leads, nfkc_unsafe

    @njit
    def both(buf, n):
        out = np.empty((n, 4), np.int64)
        for i in range(n):
            a, la = decode_at(buf, i, n)
            b, lb = decode_word(load_u64(buf, i), n - i)
            out[i] = (a, la, b, lb)
        return out

    @njit
    def reference(buf, offsets, unsafe):
        out = np.zeros(offsets.shape[0] - 1, np.bool_)
        for d in range(offsets.shape[0] - 1):
            i, end = offsets[d], offsets[d + 1]
            while i < end:
                cp, ln = decode_at(buf, i, end)
                out[d] |= unsafe[cp] != 0
                i += ln
        return out

    unsafe, clean = nfkc_unsafe(), nfkc_clean_leads()
    piece = st.sampled_from([p.encode() for p in MIXED] + ["\u0301".encode(), "가".encode(), "\u1100".encode()]) \
        | st.binary(max_size=4)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.lists(piece, max_size=30).map(b"".join), min_size=1, max_size=4))
    def check(docs):
        data = b"".join(docs)
        buf = np.frombuffer(data + b"\0" * 8, dtype=np.uint8)
        r = both(buf, len(data))
        assert np.array_equal(r[:, :2], r[:, 2:])
        offsets = np.zeros(len(docs) + 1, np.int64)
        np.cumsum([len(d) for d in docs], out=offsets[1:])
        tight = np.frombuffer(data or b"\0", dtype=np.uint8)          # no padding: the tail decodes in place
        got = nfkc_unsafe_batch(tight, offsets, np.arange(len(docs), dtype=np.int64), unsafe, clean)
        want = reference(tight, offsets, unsafe).tolist()
        assert got.tolist() == want
        # the word scanner's own check (fused signing) flags the same documents, padded or not
        for b in (tight, buf):
            flagged = [scan(b, offsets[d], offsets[d + 1]) < 0 for d in range(len(docs))]
            assert flagged == want

    from neardup.kernels.shingle import word_scan_nfkc
    from neardup.text.normalize import nfkc_check_tables
    from neardup.text.unicode import char_map, class_table

    table, (slot, utf8), (u8, leads8) = class_table(), char_map(True, True), nfkc_check_tables()
    scratch = [np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.uint64)]

    def scan(b, start, end):
        return word_scan_nfkc(b, start, end, table, slot, utf8, *scratch, np.uint64(0), True, u8, leads8)

    check()


def test_signing_that_checks_nfkc_in_the_kernel_equals_checking_first():
    """The fused word kernels check NFKC as they scan and send a flagged document back to Python's NFKC
    (:func:`neardup.text.normalize.run_nfkc_checked`): the same MinHash and SimHash values and sizes
    as checking every document first and normalising the flagged ones before the kernel, for str
    and packed input; and signing is unchanged by NFKC applied beforehand (a fixed point)."""
    import unicodedata

    from neardup import MinHasher, SimHasher
    from neardup._seeds import scheme_salt
    from neardup.kernels.minhash import oph_word_batch
    from neardup.kernels.simhash import simhash_word_batch
    from neardup.text.normalize import encode_batch, kernel_char_map, nfkc_check_tables
    from neardup.text.packed import PackedTexts
    from neardup.text.unicode import class_table

    mh, sh = MinHasher(num_perm=32, tokenizer="word", ngram=2), SimHasher(ngram=2)
    norm = mh.shingler.normalizer
    pieces = MIXED + ["½", "́", "𞀰", "ﬁ", " ", "\n", "Ⅻ", "㍿", "가"]

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.lists(st.sampled_from(pieces), max_size=25).map("".join), min_size=1, max_size=6))
    def check(texts):
        buf, offsets = encode_batch(texts, norm, whitespace=False, kernel_maps=True)    # checked first
        args = (class_table(), *kernel_char_map(norm), 2)
        off = (False, *nfkc_check_tables())
        v0, z0 = oph_word_batch(buf, offsets, *args, np.uint64(mh.shingler.seed), 32, scheme_salt(mh.seed), *off)
        f0, y0 = simhash_word_batch(buf, offsets, *args, np.uint64(sh.shingler.seed), *off)
        data = [t.encode() for t in texts]
        offs = np.zeros(len(data) + 1, np.int64)
        np.cumsum([len(d) for d in data], out=offs[1:])
        for given_ in (texts, PackedTexts(np.frombuffer(b"".join(data) or b"\0", np.uint8).copy(), offs)):
            v, z = mh.sign_batch_sizes(given_)
            f, y = sh.sign_batch_sizes(given_)
            assert np.array_equal(v.values, v0) and z.tolist() == z0.tolist()
            assert f.tolist() == f0.tolist() and y.tolist() == y0.tolist()
        fixed = [unicodedata.normalize("NFKC", t) for t in texts]
        assert np.array_equal(mh.sign_batch(fixed).values, v0)
        assert sh.sign_batch(fixed).tolist() == f0.tolist()

    check()


def test_both_packers_give_the_same_bytes_and_offsets(monkeypatch):
    """The batch packer's two paths (Arrow's StringBuilder while pandas is not loaded, pa.array
    after) pack the same bytes; bytes that are not UTF-8 pass unchanged, empty parts included."""
    from neardup.text import normalize

    rng = np.random.default_rng(3)
    parts = ["", "abc", b"\xe4\xb8\xad\xe6\x96\x87", b"", b"\xff\xfe raw", "x" * 1000]
    parts += [bytes(rng.integers(0, 256, int(rng.integers(0, 50)), dtype=np.uint8)) for _ in range(200)]
    monkeypatch.setattr(normalize, "_built", 0)
    monkeypatch.setattr(normalize, "_pandas_installed", lambda: True)
    monkeypatch.delitem(__import__("sys").modules, "pandas", raising=False)
    built = normalize._pack(parts)
    assert normalize._built == built[1][-1] > 0
    import pyarrow as pa

    arrowed = normalize._pack_array(pa, parts)
    assert built[1].dtype == arrowed[1].dtype == np.int64 and built[1].tolist() == arrowed[1].tolist()
    assert built[0].tobytes() == arrowed[0].tobytes() == b"".join(p.encode() if isinstance(p, str) else p
                                                               for p in parts)
    assert built[0].flags.writeable                      # folded in place by encode_batch
    monkeypatch.setattr(normalize, "_built", normalize._BUILDER_BYTES)     # past the limit: pa.array
    assert normalize._pack(parts)[1].tolist() == arrowed[1].tolist()
    empty = normalize._pack(["", b""])
    assert empty[0].shape == (1,) and empty[1].tolist() == [0, 0, 0]
    few = normalize._pack(parts[:normalize._FEW])                  # the join path for a few parts
    assert few[1].tolist() == arrowed[1][:normalize._FEW + 1].tolist()
    assert few[0].tobytes() == arrowed[0].tobytes()[:int(arrowed[1][normalize._FEW])] and few[0].flags.writeable


def test_a_signing_process_does_not_import_pandas(tmp_path):
    """pyarrow's pa.array imports pandas on first use (0.2–0.5 s per signing worker); a small run in
    a fresh process packs its batches without it."""
    import subprocess
    import sys

    pytest.importorskip("pandas")          # without pandas installed there is nothing to avoid
    src = tmp_path / "in.jsonl"
    src.write_text("".join(f'{{"text": "document {i} with some words in it, ünïcode too"}}\n' for i in range(50)),
                   encoding="utf-8")
    code = ("import sys; from neardup import DedupConfig, run_dedup; "
            f"run_dedup([{str(src)!r}], {str(tmp_path / 'o')!r}, DedupConfig(workers=1)); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


# -- tokenizer "auto": what the quality table favours ----------------------------------------------
_ZH = ["我是蓝翔技工拖拉机学院手扶拖拉机专业的。不用多久，我就会升职加薪，当上总经理",
       "手扶拖拉机专业的学生不用多久就会升职加薪", "The cat sat on the mat; the cat sat.", "混合 text 文本"]


def test_auto_shingles_with_word_tokens():
    """MinHash and shingled SimHash sign ``auto`` exactly as ``word`` (EVAL.md: word ≥ jieba at every
    n on the Chinese pages), and say so in their config, so an index made under the older per-document
    rule (config ``auto``) is not reused with different features."""
    import neardup

    auto, word = neardup.MinHasher(tokenizer="auto", ngram=2), neardup.MinHasher(tokenizer="word", ngram=2)
    assert np.array_equal(auto.sign_batch(_ZH).values, word.sign_batch(_ZH).values)
    assert auto.config() == word.config()
    assert not np.array_equal(auto.sign_batch(_ZH[:1]).values,
                              neardup.MinHasher(tokenizer="jieba", ngram=2).sign_batch(_ZH[:1]).values)
    assert neardup.SimHasher(tokenizer="auto").sign_batch(_ZH).tolist() == neardup.SimHasher().sign_batch(_ZH).tolist()


def test_auto_keywords_segment_chinese_documents_only():
    """tf-idf keywords (single words weighed by jieba's IDF table of words): jieba's words for the CJK
    documents, word tokens for the English one."""
    import neardup

    def fp(tok):
        return neardup.SimHasher(tokenizer=tok, ngram=1, weighting="tfidf", idf="jieba", top_n=5).sign_batch(_ZH)

    auto, jieba, word = fp("auto"), fp("jieba"), fp("word")
    assert auto[:2].tolist() == jieba[:2].tolist() != word[:2].tolist()
    assert auto[2] == word[2]


def test_auto_refuses_a_user_dictionary_where_it_means_word(tmp_path):
    import neardup
    from neardup.config import DedupConfig
    from neardup.errors import ConfigError

    ud = tmp_path / "u.txt"
    ud.write_text("手扶拖拉机专业 5\n", encoding="utf-8")
    with pytest.raises(ValueError, match="auto.*word tokenizer.*tokenizer='jieba'"):
        neardup.MinHasher(tokenizer="auto", user_dict=str(ud))
    with pytest.raises(ValueError, match="auto.*word tokenizer"):
        neardup.SimHasher(tokenizer="auto", user_dict=str(ud))
    with pytest.raises(ConfigError, match="user_dict.*--tokenizer jieba"):
        DedupConfig(method="minhash", tokenizer="auto", user_dict=str(ud)).resolved()
    with pytest.raises(ConfigError, match="user_dict.*--tokenizer jieba"):
        DedupConfig(method="simhash", tokenizer="auto", user_dict=str(ud)).resolved()
    cfg = DedupConfig(method="simhash", tokenizer="auto", idf="jieba", user_dict=str(ud)).resolved()
    assert (cfg.ngram, cfg.weighting) == (1, "tfidf")
    h = neardup.SimHasher(tokenizer="auto", ngram=1, weighting="tfidf", idf="jieba", top_n=5, user_dict=str(ud))
    assert h.config()["user_dict_sha256"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.sampled_from(list(" \t,.;-_+#%，。、　：!?abcXYZ019ａ１中文的é̀ß😀\x00")), min_size=1, max_size=4),
                max_size=40), st.integers(1, 4))
def test_pre_split_tokens_without_word_characters_are_dropped(tokens, n):
    """The jieba path's kernel mode 2 keeps a 0x1F-separated token when one of its characters is a
    word character (ASCII tested without decoding, others decoded from a register): the same
    shingles as mode 1 over the tokens a per-character reference keeps."""
    from neardup._arrays import utf8_buffer
    from neardup.kernels.shingle import token_shingles_batch
    from neardup.text.unicode import char_map, class_table

    table = class_table()
    keep = [t for t in tokens if any(table[ord(c)] != 0 for c in t)]

    def run(toks, mode):
        data = "\x1f".join(toks).encode("utf-8", "surrogatepass")
        off = np.array([0, len(data)], dtype=np.int64)
        return token_shingles_batch(utf8_buffer([data]), off, table, *char_map(False, False), n, np.uint64(0),
                                    mode)[0].tolist()

    assert run(tokens, 2) == run(keep, 1)


def test_auto_everywhere_a_run_looks_at_shingles(tmp_path):
    """Exact Jaccard, `compare` and `idf fit` agree with what `auto` signs: word shingles for the
    similarity, jieba's words (and a user dictionary) for an IDF table of keywords."""
    from click.testing import CliRunner

    from neardup.cli import main
    from neardup.similarity import exact_jaccard

    a, b = "我们研究中文分词的方法和技术发展历史", "我们研究中文分词的方法和技术发展现状"
    assert exact_jaccard(a, b, tokenizer="auto", ngram=2) == exact_jaccard(a, b, tokenizer="word", ngram=2)
    out = {tok: CliRunner().invoke(main, ["compare", "--text", a, b, "--tokenizer", tok, "--ngram", "2", "--json"])
           for tok in ("auto", "word")}
    assert out["auto"].exit_code == 0, out["auto"].output
    got = {tok: json.loads(r.output) for tok, r in out.items()}
    assert got["auto"]["jaccard"] == got["word"]["jaccard"]
    assert got["auto"]["minhash_jaccard"] == got["word"]["minhash_jaccard"]
    ud = tmp_path / "ud.txt"
    ud.write_text("中文分词 10 n\n", encoding="utf-8")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"text": "我们研究中文分词的方法"}, ensure_ascii=False) + "\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["idf", "fit", str(src), "-o", str(tmp_path / "idf.txt"), "--tokenizer", "auto",
                                    "--user-dict", str(ud)])
    assert res.exit_code == 0, res.output
    assert "中文分词" in (tmp_path / "idf.txt").read_text(encoding="utf-8").split()


def test_auto_stop_words_are_keywords(tmp_path):
    """Stop words are single words: with them, auto segments Chinese documents with jieba, so a
    stop word of two characters is dropped as it is with tokenizer='jieba'."""
    import neardup

    stop = tmp_path / "stop.txt"
    stop.write_text("我们\n研究\n", encoding="utf-8")
    t = ["我们研究中文分词的方法"]
    auto = neardup.SimHasher(tokenizer="auto", ngram=1, stop_words=str(stop)).sign_batch(t)
    jieba = neardup.SimHasher(tokenizer="jieba", ngram=1, stop_words=str(stop)).sign_batch(t)
    plain = neardup.SimHasher(tokenizer="auto", ngram=1).sign_batch(t)
    assert auto.tolist() == jieba.tolist() != plain.tolist()


def test_an_index_built_with_auto_and_a_user_dictionary_is_refused_clearly(tmp_path):
    """Under the earlier rule an index could hold tokenizer 'auto' with a user dictionary for MinHash;
    opening one names the index and says to rebuild it (no traceback)."""
    from neardup import DiskIndex, IndexConfigError

    ud = tmp_path / "ud.txt"
    ud.write_text("中文分词 10 n\n", encoding="utf-8")
    ix = DiskIndex.create(tmp_path / "ix", tokenizer="jieba", user_dict=str(ud))
    ix.add_batch(["a"], ["我们研究中文分词的方法"])
    ix.close()
    import json

    from neardup.index.segments import manifest_bytes

    m = tmp_path / "ix" / "MANIFEST"                  # (rewritten as that neardup wrote it: its checksum too)
    data = json.loads(m.read_text(encoding="utf-8"))
    data["meta"]["config"] = data["meta"]["config"].replace('"tokenizer": "jieba"', '"tokenizer": "auto"')
    m.write_bytes(manifest_bytes(data))
    with pytest.raises(IndexConfigError, match="ix: the index was built with a text pipeline.*rebuild"):
        DiskIndex.open(tmp_path / "ix", readonly=True)


def test_a_borrowed_view_is_the_array_without_its_reference():
    """kernels/swar.borrowed: the same memory, shape and strides (reads and writes go through to the
    array, also for a 2-d array and a strided view); dropping the views frees nothing (the arrays'
    reference counts are those of before, and they stay usable)."""
    import sys

    from numba import njit

    from neardup.kernels.swar import borrowed

    @njit
    def use(a, b, reps):
        s = 0
        for _ in range(reps):
            v = borrowed(a)
            w = borrowed(b)
            v[0] += 1
            w[1, 2] = v[0]
            s += v.shape[0] + w.shape[0] * w.shape[1]
        return s

    a = np.zeros(5, dtype=np.int64)
    b = np.zeros((3, 4), dtype=np.int64)[:, ::1]
    before = sys.getrefcount(a), sys.getrefcount(b)
    assert use(a, b, 7) == 7 * (5 + 12)
    assert a[0] == 7 and b[1, 2] == 7
    assert (sys.getrefcount(a), sys.getrefcount(b)) == before
    strided = np.arange(20, dtype=np.int64)[::3]

    @njit
    def total(x):
        v = borrowed(x)
        s = 0
        for i in range(v.shape[0]):
            s += v[i]
        return s

    assert total(strided) == int(strided.sum())


def test_nfkc_of_utf8_lines_equals_pythons_nfkc_of_the_text():
    """:func:`neardup.text.nfkc.nfkc_utf8` (only lines with non-ASCII bytes decoded) against
    :func:`~neardup.text.nfkc.nfkc` of the decoded text: 20,000 seeded texts of characters NFKC
    changes, composes or leaves, line feeds anywhere (first, last, doubled)."""
    import random

    from neardup.text.nfkc import nfkc, nfkc_utf8

    rng = random.Random(7)
    alphabet = ["a", "b", " ", "\n", "\n", "é", "e\u0301", "\u0301", "ﬁ", "½", "Ｆ", "中", "\u1100\u1161", "\u11a8",
                "ß", "İ", "\u2028", "\r", "㎏", "\U0001d400"]
    changed = 0
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        want = nfkc(text).encode("utf-8")
        assert nfkc_utf8(np.frombuffer(text.encode("utf-8"), np.uint8)) == want, repr(text)
        changed += want != text.encode("utf-8")
    assert changed > 5000                    # (most texts hold something NFKC changes)
