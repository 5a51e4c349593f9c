"""The compiled jieba-rs cut (kernels/segment.rs_cut, text/tokenize.jieba_pieces) against rjieba itself
(``Jieba.cut(text, True)``, jieba-rs 0.11, the ``jieba`` tokenizer's definition): the same pieces on
every Chinese page of ../shared, on generated mixed text, on ASCII runs (its fast path and its
regular-expression rule), and the same shingles through the ``jieba`` tokenizer."""
from __future__ import annotations

import numpy as np
import pytest
import rjieba
from conftest import skip_unless_table_unicode
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup.features.shingles import Shingler
from neardup.kernels.shingle import token_shingles_batch
from neardup.text.normalize import encode_batch
from neardup.text.tokenize import jieba_cut, jieba_pieces
from neardup.text.unicode import char_map, class_table


def pieces(texts: list[str]) -> list[list[str]]:
    data = [t.encode("utf-8", "surrogatepass") for t in texts]
    buf = np.frombuffer(b"".join(data) or b"\0", dtype=np.uint8)
    off = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in data], out=off[1:])
    out, o = jieba_pieces(buf, off, np.arange(len(data), dtype=np.int64))
    b = out.tobytes()
    return [b[o[k]:o[k + 1]].decode("utf-8", "surrogatepass").split("\x1f") if o[k + 1] > o[k] else []
            for k in range(len(texts))]


def test_every_shared_chinese_document_cuts_as_rjieba(chinese_pages):
    pages = chinese_pages
    assert len(pages) >= 100
    got = pieces([t for _, t in pages])
    for (name, text), g in zip(pages, got):
        assert g == rjieba.cut(text, True), name
    # and the normalised text the tokenizer actually cuts (case folded, NFKC)
    folded = [Shingler(tokenizer="jieba").normalize(t) for _, t in pages[:30]]
    assert pieces(folded) == [rjieba.cut(t, True) for t in folded]


_CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
_WORDS = ["C++", "T恤", "B超", "中国", "人民", "北京烤鸭", "中华人民共和国", "A股", "iPhone", "卡拉OK", "3D",
          "Linux", "manpage", "的", "了"]
_MIXED = st.one_of(
    _CJK, st.sampled_from(_WORDS),
    st.sampled_from(list("的了是在一不人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里")),
    st.sampled_from(list(" \t\n\r，。、！？；：“”（）abcXYZ019.#+&-_%@/:　")),
    st.characters(min_codepoint=0x3400, max_codepoint=0x4DBF),      # CJK extension A (jieba-rs "han", not HMM)
    st.characters(min_codepoint=0x9FD0, max_codepoint=0x9FFF),      # past the HMM's U+9FD5
    st.characters(min_codepoint=0xF900, max_codepoint=0xFAFF),
    st.characters(min_codepoint=0x20000, max_codepoint=0x2A6DF),
    st.characters(min_codepoint=0x20, max_codepoint=0x2FFF),
    st.characters(min_codepoint=0x10000, max_codepoint=0x1F6FF))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_MIXED, max_size=60).map("".join), min_size=1, max_size=6))
@example(["2003-04-29 bugs.debian.org 1.47.3. a..b a.-b .abc abc. 12% 1.5% x_y a+b a&b C++"])
@example(["中文abc.def中文 中国人民abc-def.ghi 㐀a.b 你好world\r\n\r\n\r"])
@example(["", "。", "a", "鿖鿗", "𠀀𠀁中"])
def test_generated_text_cuts_as_rjieba(texts):
    want = [rjieba.cut(t, True) for t in texts]
    assert pieces(texts) == want
    assert [jieba_cut(t) for t in texts] == want          # the one-document API, from code points


_ASCII = st.text(st.sampled_from(list("aZk09._-%+#&x")), min_size=1, max_size=12)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ASCII, min_size=1, max_size=5).map(" ".join))
def test_ascii_runs_cut_as_rjieba(text):
    """Runs of ASCII letters, digits and ``._-%+#&``: the fast path (no dictionary word of two or
    more characters starts in the run) and jieba-rs's ``[a-zA-Z0-9]+(?:[._-][a-zA-Z0-9]+)*%?``."""
    assert pieces([text, "中" + text + "国"]) == [rjieba.cut(text, True), rjieba.cut("中" + text + "国", True)]


def test_long_runs_and_lone_surrogates():
    long = "䶵" * 50_000 + "的" * 50_000 + "a1." * 20_000
    assert pieces([long]) == [rjieba.cut(long, True)]
    # the kernel takes any well-formed UTF-8 (surrogates passed through); rjieba cannot take them
    got = pieces(["x\ud800y 你好"])[0]
    assert "".join(got) == "x\ud800y 你好" == "".join(jieba_cut("x\ud800y 你好"))
    assert jieba_cut("a\x1fb") == rjieba.cut("a\x1fb", True) == ["a", "\x1f", "b"]


def _rjieba_pieces(buf, offsets, docs):
    """The definition: rjieba's pieces of each document, joined by U+001F."""
    raw = buf.tobytes()
    parts = ["\x1f".join(rjieba.cut(raw[offsets[d]:offsets[d + 1]].decode("utf-8"), True)).encode("utf-8")
             for d in docs]
    off = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parts], out=off[1:])
    return np.frombuffer(b"".join(parts) or b"\0", dtype=np.uint8)[:off[-1]].copy(), off


def _rjieba_shingles(buf, offsets, docs, maps, table, n, seed):
    """The definition, for a normalised buffer (identity map): rjieba's pieces, pre-split tokens."""
    assert maps[0].shape[0] == 0
    sub_buf, sub_off = _rjieba_pieces(buf, offsets, docs)
    return token_shingles_batch(sub_buf, sub_off, table, *char_map(False, False), n, seed, 2)


_ZH = ["今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。后天纽约的天气不好，昨天纽约的天气也不好。",
       "此外，公司拟对全资子公司吉林欧亚置业有限公司增资4.3亿元，增资后注册资本由7000万元增加到5亿元。",
       "我们中出了一个叛徒。小明硕士毕业于中国科学院计算所，后在日本京都大学深造。",
       "使用 -v 选项显示详细信息；参见 bugs.debian.org 与 man(1) 手册页 2003-04-29 版。",
       "区块链技术在金融领域的应用越来越广泛 C++ T恤 B超 A股 iPhone卡拉OK 3D打印 12.5% 的增长"]
_TEXTS = ["", "。。", "hello world", "中文 English 混合 text", "Ａ１２３ＫＧ ＡＢＣ　ｄｅｆ", "ÀÉÎ Straße ﬁne ㎏ ﷺ 中文", "İstanbul ǅ",
          "中\u0301文 e\u0301 ½ ™ x²", "Le CAFÉ du 北京烤鸭", "\r\n中国\r\n", "C++ T恤 B超 A股 iPhone卡拉OK"]


@pytest.mark.parametrize("n", [1, 3])
def test_jieba_tokenizer_features_equal_those_of_normalised_rjieba_pieces(chinese_pages, n):
    """The ``jieba`` tokenizer (one kernel: per-character normalisation, cut, token hashes, n-grams)
    against its definition: the text normalised in Python, cut by rjieba, the pieces holding a word
    character hashed as pre-split tokens — document by document, on the Chinese pages and on text
    that case folding and NFKC change (fullwidth forms, ligatures, compatibility characters, and
    the characters NFKC does not map one by one)."""
    skip_unless_table_unicode()
    texts = [t for _, t in chinese_pages[:40]] + _TEXTS
    sh = Shingler(tokenizer="jieba", ngram=n)
    got = sh.features(texts)
    buf, off = encode_batch(texts, sh.normalizer, whitespace=False)
    want = _rjieba_shingles(buf, off, np.arange(len(texts)), char_map(False, False), class_table(), n,
                            np.uint64(sh.seed))
    assert np.array_equal(got.offsets, want[1])
    assert np.array_equal(got.hashes, want[0])
    assert got.hashes.shape[0] > 1000


@pytest.mark.parametrize("with_pages", [False, True])
def test_auto_tokenizer_features_equal_those_of_rjieba_pieces(request, monkeypatch, with_pages):
    import neardup.features.shingles as shingles

    pages = [t for _, t in request.getfixturevalue("chinese_pages")[:40]] if with_pages else []
    texts = pages + _ZH + _TEXTS
    for n in (1, 3):
        got = Shingler(tokenizer="auto", ngram=n).features(texts)
        with monkeypatch.context() as m:
            m.setattr(shingles, "jieba_shingles", _rjieba_shingles)
            want = Shingler(tokenizer="auto", ngram=n).features(texts)
        assert np.array_equal(got.offsets, want.offsets)
        assert np.array_equal(got.hashes, want.hashes)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.one_of(_MIXED, st.characters(min_codepoint=0xA0, max_codepoint=0x33FF),
                                   st.characters(min_codepoint=0xFB00, max_codepoint=0xFFEF)),
                         max_size=40).map("".join), min_size=1, max_size=5), st.integers(1, 4))
@example(["一一一一一一一一一一一一一﬩"], 1)     # a separator whose NFKC is another ('+', a jieba "han" character)
def test_generated_text_features_equal_the_definition(texts, n):
    skip_unless_table_unicode()
    sh = Shingler(tokenizer="jieba", ngram=n)
    got = sh.features(texts)
    buf, off = encode_batch(texts, sh.normalizer, whitespace=False)
    want = _rjieba_shingles(buf, off, np.arange(len(texts)), char_map(False, False), class_table(), n,
                            np.uint64(sh.seed))
    assert np.array_equal(got.offsets, want[1]) and np.array_equal(got.hashes, want[0])


def test_the_cut_s_character_map_is_python_s_normalisation_for_every_safe_code_point():
    """Every code point the kernels may map themselves (not NFKC-unsafe, not a surrogate), in one
    text: the jieba kernel's per-character map gives exactly Python's NFKC + case folding of it —
    separators whose NFKC is another separator included, which the word kernel's map leaves out."""
    skip_unless_table_unicode()
    from neardup.kernels.segment import _mapped_code_points
    from neardup.text.normalize import kernel_char_map
    from neardup.text.unicode import nfkc_unsafe

    unsafe = nfkc_unsafe()
    cps = [c for c in range(1, 0x110000) if not (0xD800 <= c < 0xE000) and not unsafe[c]]
    text = "".join(map(chr, cps))
    sh = Shingler(tokenizer="jieba")
    data = text.encode("utf-8")
    got = _mapped_code_points(np.frombuffer(data, dtype=np.uint8), 0, len(data),
                              *kernel_char_map(sh.normalizer, separators=True))
    buf, off = encode_batch([text], sh.normalizer, whitespace=False)
    assert "".join(map(chr, got.tolist())) == buf.tobytes().decode("utf-8")
    assert len(cps) > 250_000


@pytest.mark.parametrize("with_pages", [False, True])
def test_idf_fit_counts_the_words_of_the_per_document_tokenizer(request, with_pages):
    """``neardup idf fit --tokenizer jieba`` counts pieces a batch at a time; the document frequencies
    are those of the ``jieba`` tokenizer's words, document by document (hostile pieces included:
    U+001F, lone surrogates, empty documents, white space)."""
    from collections import Counter

    from neardup.features.weights import fit_idf_words
    from neardup.text.normalize import Normalizer

    pages = [t for _, t in request.getfixturevalue("chinese_pages")[:60]] if with_pages else []
    texts = pages + _ZH + ["", "a\x1fb 中\x1f文", "x\ud800y 你好", "   ", "Ａ１ ＫＧ 中文",
                                                       "﬩+ C++"]
    words, idf, n = fit_idf_words([texts[:31], texts[31:]], "jieba")
    norm = Normalizer()
    table = class_table()
    df: Counter = Counter()
    for t in texts:          # the definition: rjieba's pieces of the normalised text holding a word character
        pieces_ = rjieba.cut(norm(t).encode("utf-8", "replace").decode("utf-8"), True)
        df.update({p for p in pieces_ if any(table[ord(c)] for c in p)})
    want = sorted(w for w in df if w and not any(c.isspace() for c in w))
    assert n == len(texts) and words == want
    assert np.allclose(idf, np.log((1.0 + n) / (1.0 + np.array([df[w] for w in want], dtype=np.float64))) + 1.0)
