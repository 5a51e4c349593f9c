"""The compiled cppjieba segmenter and yanyiwu keyword SimHash (kernels/segment.py, text/jieba_dict.py)
against the Python port they were written from (sketches/compat/yanyiwu.py): the same words and the
same fingerprints on every Chinese page of ../shared, yanyiwu's test documents, generated
Chinese/mixed text, and the hostile cases."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from neardup.sketches.compat import yanyiwu
from neardup.text import jieba_dict


def test_every_shared_chinese_document_matches_the_port(chinese_pages):
    pages = chinese_pages
    assert len(pages) >= 100
    texts = [t for _, t in pages]
    for top_n in (5, None):
        got = yanyiwu.simhash_batch(texts, top_n)
        for (name, text), g in zip(pages, got.tolist()):
            n = yanyiwu.top_n_for_length(len(text.encode())) if top_n is None else top_n
            assert g == yanyiwu.simhash_reference(text, n), (name, top_n)
    for name, text in pages[:20]:
        assert yanyiwu.cut_compiled(text) == yanyiwu.cut(text), name


def test_published_values(shared):
    exp = json.loads((shared / "corpora/yanyiwu_simhash_testdata/expected.json").read_text(encoding="utf-8"))
    news = (shared / "corpora/yanyiwu_simhash_testdata/news_content").read_text(encoding="utf-8")
    assert yanyiwu.simhash_batch([news], 5)[0] == 15286165794479097173
    demo = exp["readme_demo"]
    assert yanyiwu.simhash_batch([demo["text"]], demo["topN"])[0] == int(demo["simhash"])
    assert yanyiwu.simhash_batch(["你好世界"], 3)[0] == 17676873585679812141


_CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
_MIXED = st.one_of(_CJK, st.sampled_from(list("的了是在一不人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里 \t\n，。、！？；：“”（）abcXYZ019.#+&-_ 　")),
                   st.characters(min_codepoint=0x20, max_codepoint=0x2FFF),
                   st.characters(min_codepoint=0x10000, max_codepoint=0x1F6FF))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(_MIXED, max_size=120), min_size=1, max_size=6), st.integers(1, 12))
def test_generated_text_matches_the_port(texts, top_n):
    got = yanyiwu.simhash_batch(texts, top_n)
    assert got.tolist() == [yanyiwu.simhash_reference(t, top_n) for t in texts]
    for t in texts:
        assert yanyiwu.cut_compiled(t) == yanyiwu.cut(t)


def test_hostile_texts_have_defined_fingerprints():
    """No Chinese, only punctuation, only stop words, empty: no keyword → fingerprint 0; a lone
    surrogate is a character like any other; bytes must be UTF-8."""
    texts = ["", "。。。，，，", "的了是在", "   \t\n", "hello world hello", "x\ud800y 你好世界"]
    got = yanyiwu.simhash_batch(texts, 5)
    assert got[:4].tolist() == [0, 0, 0, 0]
    assert got[4] == yanyiwu.simhash_reference("hello world hello", 5) != 0
    assert got[5] == yanyiwu.simhash_batch(["x\ud800y 你好世界"], 5)[0]     # deterministic
    assert yanyiwu.simhash_batch([b"\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c"], 3)[0] == 17676873585679812141
    with pytest.raises(UnicodeDecodeError):
        yanyiwu.simhash_batch([b"\xff\xfe"], 3)
    with pytest.raises(ValueError, match="top_n"):
        yanyiwu.simhash_batch(["你好"], 0)
    assert yanyiwu.simhash_batch([], 5).shape == (0,)
    # a long run of one unknown character goes through Viterbi in one piece
    long = "䶵" * 200_000
    assert yanyiwu.simhash_batch([long], 5)[0] == yanyiwu.simhash_reference(long, 5)


def test_tables_are_cached_and_rebuilt_alike(tmp_path, monkeypatch):
    built = jieba_dict.build()
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(jieba_dict, "_loaded", {})
    first = jieba_dict.tables()
    files = list(tmp_path.glob("jieba-tables-*.npz"))
    assert len(files) == 1
    monkeypatch.setattr(jieba_dict, "_loaded", {})
    again = jieba_dict.tables()                         # read from the cache
    for f in jieba_dict._FIELDS:
        assert np.array_equal(getattr(first, f), getattr(built, f), equal_nan=True), f
        assert np.array_equal(getattr(again, f), getattr(built, f), equal_nan=True), f
    assert again.min_weight == built.min_weight and again.idf_average == built.idf_average
    files[0].write_bytes(b"not an npz")                 # a damaged cache is rebuilt, not trusted
    monkeypatch.setattr(jieba_dict, "_loaded", {})
    assert np.array_equal(jieba_dict.tables().child_cp, built.child_cp)


_PREFIXED = ["inter", "internal", "international", "interval", "intern", "interna", "int", "in",
             "中华人民", "中华人民共和国", "中华", "中华民国", "𠀀𠀁𠀂𠀃", "𠀀𠀁𠀂", "𠀀𠀁"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_PREFIXED), min_size=1, max_size=80), st.integers(1, 20))
def test_keywords_sharing_long_prefixes_keep_the_port_s_order(words, top_n):
    """Keywords are grouped by a hash and ordered by their first three characters, then by the whole
    text where three are shared: many words with one prefix, repeated, at every top-N (ties between
    equal weights resolved as cppjieba's partial sort leaves them) give the port's fingerprint."""
    text = " ".join(words)
    assert yanyiwu.simhash_batch([text, text + "。" + text[::-1]], top_n).tolist() == [
        yanyiwu.simhash_reference(text, top_n), yanyiwu.simhash_reference(text + "。" + text[::-1], top_n)]


@pytest.fixture(scope="module")
def ascii_user_dict(tmp_path_factory):
    """User words made of ASCII (two and more characters, and one-character ones, which stay words)."""
    path = tmp_path_factory.mktemp("dict") / "user.dict"
    path.write_text("ab 50 n\nabc\nb2 30\nx\nq\nzz.z 9\n", encoding="utf-8")
    return str(path)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.text(st.sampled_from(list("aaabbbccczz22.. \n-_中文的T恤xq")), max_size=60))
@example("cab aab zz.z b2b qab xab abc T恤")
def test_ascii_pieces_with_user_words_match_the_port(ascii_user_dict, text):
    """Pieces of ASCII skip the route arithmetic only when no word of two or more characters and no
    one-character user word occurs in them: user words made of ASCII, alone or inside longer runs,
    cut as the port cuts them, with and without the user dictionary."""
    for ud in (None, ascii_user_dict):
        assert yanyiwu.cut_compiled(text, ud) == yanyiwu.cut(text, ud)
        assert yanyiwu.simhash_batch([text], 4, user_dict=ud)[0] == yanyiwu.simhash_reference(text, 4, user_dict=ud)
