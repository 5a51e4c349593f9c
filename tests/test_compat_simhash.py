"""SimHash compatibility modes reproduce their reference libraries' published values.

Expected values come from ../shared/corpora: yanyiwu_simhash_testdata/expected.json
(yanyiwu/simhash's tests and README) and reference_values/values.json (keys
``simhash_1e0ng`` and ``simhash_py_seomoz``). Tests that need them skip when ../shared is
absent; the rest (lookup3 vectors, rules, error handling) always run.
"""
from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from neardup.kernels.jenkins import hashlittle2, jenkins64_bytes
from neardup.sketches.compat import simhash_1e0ng as s1e0ng
from neardup.sketches.compat import simhash_py as seomoz
from neardup.sketches.compat import yanyiwu

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = SHARED / "corpora"
YANYIWU_DIR = CORPORA / "yanyiwu_simhash_testdata"
needs_shared = pytest.mark.skipif(
    not CORPORA.is_dir(), reason="../shared/corpora (reference values) is not beside the repository"
)


@pytest.fixture(scope="module")
def expected() -> dict:
    if not YANYIWU_DIR.is_dir():
        pytest.skip("../shared/corpora/yanyiwu_simhash_testdata is not beside the repository")
    return json.loads((YANYIWU_DIR / "expected.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def values() -> dict:
    path = CORPORA / "reference_values" / "values.json"
    if not path.is_file():
        pytest.skip("../shared/corpora/reference_values/values.json is not beside the repository")
    return json.loads(path.read_text("utf-8"))


def _assert(expected: dict, prefix: str) -> str:
    hits = [a["expected"] for a in expected["asserts"] if a["test"].startswith(prefix)]
    assert len(hits) == 1, prefix
    return hits[0]


def _news(name: str) -> bytes:
    return (YANYIWU_DIR / name).read_bytes()


# ----------------------------------------------------------------------------- Jenkins lookup3
def _lookup3_reference(data: bytes, pc: int, pb: int) -> tuple[int, int]:
    """Plain-Python hashlittle2 (byte-at-a-time branch of lookup3), to cross-check the kernel."""
    m = 0xFFFFFFFF

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & m

    n = len(data)
    a = b = c = (0xDEADBEEF + n + pc) & m
    c = (c + pb) & m
    if n == 0:
        return c, b
    k = 0
    while n - k > 12:
        a = (a + int.from_bytes(data[k:k + 4], "little")) & m
        b = (b + int.from_bytes(data[k + 4:k + 8], "little")) & m
        c = (c + int.from_bytes(data[k + 8:k + 12], "little")) & m
        a = (a - c) & m; a ^= rot(c, 4); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 6); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 8); b = (b + a) & m  # noqa: E702
        a = (a - c) & m; a ^= rot(c, 16); c = (c + b) & m  # noqa: E702
        b = (b - a) & m; b ^= rot(a, 19); a = (a + c) & m  # noqa: E702
        c = (c - b) & m; c ^= rot(b, 4); b = (b + a) & m  # noqa: E702
        k += 12
    tail = data[k:] + bytes(12 - (n - k))
    a = (a + int.from_bytes(tail[0:4], "little")) & m
    b = (b + int.from_bytes(tail[4:8], "little")) & m
    c = (c + int.from_bytes(tail[8:12], "little")) & m
    c ^= b; c = (c - rot(b, 14)) & m  # noqa: E702
    a ^= c; a = (a - rot(c, 11)) & m  # noqa: E702
    b ^= a; b = (b - rot(a, 25)) & m  # noqa: E702
    c ^= b; c = (c - rot(b, 16)) & m  # noqa: E702
    a ^= c; a = (a - rot(c, 4)) & m  # noqa: E702
    b ^= a; b = (b - rot(a, 14)) & m  # noqa: E702
    c ^= b; c = (c - rot(b, 24)) & m  # noqa: E702
    return c, b


@pytest.mark.parametrize(
    ("key", "pc", "pb", "want"),
    [  # the self-test values printed by lookup3.c's driver5()
        (b"", 0, 0, (0xDEADBEEF, 0xDEADBEEF)),
        (b"", 0, 0xDEADBEEF, (0xBD5B7DDE, 0xDEADBEEF)),
        (b"", 0xDEADBEEF, 0xDEADBEEF, (0x9C093CCD, 0xBD5B7DDE)),
        (b"Four score and seven years ago", 0, 0, (0x17770551, 0xCE7226E6)),
        (b"Four score and seven years ago", 0, 1, (0xE3607CAE, 0xBD371DE4)),
        (b"Four score and seven years ago", 1, 0, (0xCD628161, 0x6CBEA4B3)),
    ],
)
def test_hashlittle2_published_vectors(key, pc, pb, want):
    buf = np.frombuffer(key, dtype=np.uint8)
    assert tuple(int(v) for v in hashlittle2(buf, 0, len(key), pc, pb)) == want


def test_jenkins64_every_tail_length_and_seed_halves():
    rng = random.Random(1)
    for n in range(0, 41):
        data = bytes(rng.randrange(256) for _ in range(n))
        for seed in (0, 1, 0xDEADBEEF, 0x123456789ABCDEF0, 2**64 - 1):
            c, b = _lookup3_reference(data, seed >> 32, seed & 0xFFFFFFFF)
            assert jenkins64_bytes(data, seed) == (c << 32) | b, (n, seed)
            assert yanyiwu.jenkins64(data, seed) == (c << 32) | b
    # an offset inside a larger buffer hashes the same bytes
    big = np.frombuffer(b"xx" + b"hello world" + b"yy", dtype=np.uint8)
    from neardup.kernels.jenkins import jenkins64
    assert int(jenkins64(big, 2, 13, np.uint64(0))) == jenkins64_bytes(b"hello world")


@needs_shared
def test_jenkins_news_content(expected):
    want = int(_assert(expected, "jenkins(news_content"))
    assert yanyiwu.jenkins64(_news("news_content"), 0) == want


# ----------------------------------------------------------------------------- yanyiwu/simhash
def _fmt(pairs) -> list[str]:
    """C++ ostream's default formatting (6 significant digits) of key:weight pairs."""
    return [f"{k}:{w:.6g}" for k, w in pairs]


@needs_shared
def test_readme_demo(expected):
    demo = expected["readme_demo"]
    assert _fmt(yanyiwu.extract_keywords(demo["text"], demo["topN"])) == demo["keywords"]
    assert yanyiwu.simhash(demo["text"], demo["topN"]) == int(demo["simhash"])


@needs_shared
def test_news_content_top5_hashes_and_fingerprint(expected):
    text = _news("news_content")
    got = "[" + ", ".join(_fmt(yanyiwu.keyword_hashes(text, 5))) + "]"
    assert got == _assert(expected, "make(news_content, topN=5) -> (keyword hash")
    want = int(_assert(expected, "make(news_content, topN=5) -> simhash"))
    assert yanyiwu.simhash(text, 5) == want
    assert yanyiwu.simhash(text.decode("utf-8"), 5) == want  # str and bytes agree


@needs_shared
def test_news_equalities_at_top50(expected):
    fp = {n: yanyiwu.simhash(_news(n), 50) for n in ("news_content", "news_content.2",
                                                     "news_content.3", "news_content.4")}
    assert _assert(expected, "make(news_content, 50) == make(news_content.2, 50)") is True
    assert fp["news_content"] == fp["news_content.2"]
    assert _assert(expected, "make(news_content.3, 50) == make(news_content.4, 50)") is True
    assert fp["news_content.3"] == fp["news_content.4"]
    assert _assert(expected, "make(news_content.2, 50) != make(news_content.3, 50)") is True
    assert fp["news_content.2"] != fp["news_content.3"]


@needs_shared
def test_hello_world_top3(expected):
    assert yanyiwu.simhash("你好世界", 3) == int(_assert(expected, "make('你好世界', topN=3)"))


@needs_shared
def test_is_equal_cases(expected):
    cases = [a for a in expected["asserts"] if a["test"].startswith("isEqual(")]
    assert len(cases) == 3
    for case in cases:
        m = re.fullmatch(r"isEqual\(bin (\d+), bin (\d+), n=(\d+)\)", case["test"])
        a, b, n = int(m[1], 2), int(m[2], 2), int(m[3])
        assert yanyiwu.is_equal(a, b, n) is case["expected"], case["test"]
    assert yanyiwu.is_equal(0b100010110110, 0b110010110111)  # default n = 3
    assert not yanyiwu.is_equal(0, 2**64 - 1, 63)
    assert yanyiwu.is_equal(0, 2**64 - 1, 64)


@needs_shared
def test_top_n_for_length(expected):
    rule = next(a["test"] for a in expected["asserts"] if a["test"].startswith("getTopN"))
    pairs = re.findall(r"(\d+)->(\d+)", rule)
    assert len(pairs) == 5
    for n_bytes, top in pairs:
        assert yanyiwu.top_n_for_length(int(n_bytes)) == int(top)
    assert yanyiwu.top_n_for_length(0) == 5
    assert yanyiwu.top_n_for_length(24000) == 200 and yanyiwu.top_n_for_length(23999) == 199


@needs_shared
def test_older_test6(expected):
    """The equality still holds. Its keyword list came from a 2014 cppjieba that kept 白富美
    whole; cppjieba's current dictionary and HMM cut 迎娶白富美 as 迎娶/白富/美 (checked against
    cppjieba built from source), so the same list has 白富 instead."""
    t6 = next(v for k, v in expected.items() if k.startswith("older_test_Test6"))
    assert t6["make(s1,5) == make(s2,5)"] is True
    assert yanyiwu.simhash(t6["s1"], 5) == yanyiwu.simhash(t6["s2"], 5)
    assert "迎娶/白富/美" in "/".join(yanyiwu.cut(t6["s1"]))
    old = Counter(s.replace("白富美", "白富") for s in t6["extract(s1, topN=5)"])
    assert Counter(_fmt(yanyiwu.extract_keywords(t6["s1"], 5))) == old


@needs_shared
def test_idf_table_matches_cppjieba(expected):
    """Known-word idf values agree with jieba's table; the unknown-word idf prints as 11.7392."""
    r = yanyiwu._resources()
    assert f"{r.idf_average:.6g}" == "11.7392"
    cross = expected["python_jieba_0.42.1_cross_check"]["why_different"]
    known = re.findall(r"([^\s(,]+) (\d+\.\d+)[,)]", cross)
    assert [w for w, _ in known] == ["升职", "加薪", "手扶拖拉机"]
    for word, idf in known:
        assert r.idf[word] == float(idf), word


@needs_shared
def test_shipped_stop_words_are_cppjieba_s():
    shipped = Path(yanyiwu.__file__).resolve().parents[2] / "data" / yanyiwu.STOP_WORDS_FILE
    assert shipped.read_bytes() == (CORPORA / "cppjieba_dict" / "stop_words.utf8").read_bytes()
    assert (shipped.parent / "NOTICE-cppjieba.txt").read_text("utf-8").count("MIT License") == 1


def test_cppjieba_segmentation_rules():
    """Outputs of upstream cppjieba's MixSegment (C++, built from source) on inputs where
    Python jieba cuts differently: 3.5% -> 3.5/% , 12.34.56 stays whole, x86_64 -> x86/_/64,
    a single-character MP run that is a dictionary word (当上) is still merged by the HMM,
    and full-width punctuation goes into the HMM run (so 张三 inside （）is cut 张/三)."""
    text = ("GDP增长3.5%，CPI上涨2.1个百分点；iPhone15发布（苹果公司）“重磅”消息——2023年10月1日\r\n"
            "上午9:30😀表情符号 abc123def 12.34.56 x86_64 C++ c#编程")
    want = ["GDP", "增长", "3.5", "%", "，", "CPI", "上涨", "2.1", "个", "百分点", "；", "iPhone15",
            "发布", "（", "苹果公司", "）", "“", "重磅", "”", "消息", "—", "—", "2023", "年", "10",
            "月", "1", "日", "\r", "\n", "上午", "9", ":", "30", "😀", "表情符号", " ", "abc123def",
            " ", "12.34.56", " ", "x86", "_", "64", " ", "C++", " ", "c#", "编程"]
    assert yanyiwu.cut(text) == want
    assert yanyiwu.cut("当上总经理当上了") == ["当上", "总经理", "当上", "了"]
    assert yanyiwu.cut("（张三）说") == ["（", "张", "三", "）", "说"]
    assert yanyiwu.cut("张三") == ["张三"]
    assert yanyiwu.cut("") == [] and yanyiwu.extract_keywords("", 5) == []
    # multi-character ASCII tokens are keywords with the unknown-word idf
    avg = yanyiwu._resources().idf_average
    assert yanyiwu.extract_keywords(text, 3) == [("10", avg), ("12.34.56", avg), ("2.1", avg)]


def test_partial_sort_matches_a_full_sort_without_ties():
    from neardup.kernels.segment import partial_sort

    rng = random.Random(5)
    for n in range(0, 30):
        w = np.array([rng.random() for _ in range(n)])
        for k in range(0, n + 1):
            assert partial_sort(w, k).tolist() == np.argsort(-w, kind="stable")[:k].tolist()


def test_keywords_are_sorted_weighted_and_filtered():
    text = "我们我们研究研究研究生命起源，生命起源的研究。" * 3
    kws = yanyiwu.extract_keywords(text, 100)
    words = [w for w, _ in kws]
    assert all(len(w) > 1 for w in words) and "我们" not in words  # stop word
    assert [w for _, w in kws] == sorted((w for _, w in kws), reverse=True)
    counts = Counter(yanyiwu.cut(text))
    r = yanyiwu._resources()
    for w, weight in kws:
        assert weight == counts[w] * r.idf.get(w, r.idf_average)
    assert yanyiwu.extract_keywords(text, 2) == kws[:2]


def test_lazy_and_thread_safe_loading(monkeypatch):
    code = ("import sys, neardup.sketches.compat, neardup.sketches.compat.yanyiwu; "
            "sys.exit(int('jieba' in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    monkeypatch.setattr(yanyiwu, "_res", {})
    out: list[int] = []
    threads = [threading.Thread(target=lambda: out.append(yanyiwu.simhash("你好世界，再见世界", 5)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 4 and len(set(out)) == 1 and out[0] != 0


# ----------------------------------------------------------------------------- 1e0ng/simhash
TFIDF_DOCS = [  # the four sentences of 1e0ng/simhash's tests
    "How are you? I Am fine. blar blar blar blar blar Thanks.",
    "How are you i am fine. blar blar blar blar blar than",
    "This is simhash test.",
    "How are you i am fine. blar blar blar blar blar thank1",
]


def _tfidf_rows(docs: list[str]) -> list[dict[str, float]]:
    """scikit-learn TfidfVectorizer() defaults: lowercase, tokens ``\\b\\w\\w+\\b``, raw counts,
    idf = ln((1 + n) / (1 + df)) + 1, each row scaled to unit L2 norm."""
    toks = [re.findall(r"(?u)\b\w\w+\b", d.lower()) for d in docs]
    n = len(docs)
    df = Counter(t for ts in toks for t in set(ts))
    rows = []
    for ts in toks:
        w = {t: c * (math.log((1 + n) / (1 + df[t])) + 1.0) for t, c in Counter(ts).items()}
        norm = math.sqrt(sum(v * v for v in w.values()))
        rows.append({t: v / norm for t, v in w.items()})
    return rows


def _1e0ng_expressions() -> dict:
    rows = _tfidf_rows(TFIDF_DOCS)
    return {
        "Simhash(['aaa','bbb']).value": lambda: s1e0ng.simhash(["aaa", "bbb"]),
        "Simhash([str(i) for i in range(500)]).value": lambda: s1e0ng.simhash(str(i) for i in range(500)),
        "Simhash([(str(i), 50*i) for i in range(500)]).value":
            lambda: s1e0ng.simhash([(str(i), 50 * i) for i in range(500)]),
        "tfidf": lambda: s1e0ng.simhash(rows[0]),
        "Simhash('How are you? I AM fine. Thanks. And you?').value":
            lambda: s1e0ng.simhash("How are you? I AM fine. Thanks. And you?"),
        "Simhash('How old are you ? :-) i am fine. Thanks. And you?').value":
            lambda: s1e0ng.simhash("How old are you ? :-) i am fine. Thanks. And you?"),
        "Simhash('你好　世界！　　呼噜。').value": lambda: s1e0ng.simhash("你好　世界！　　呼噜。"),
        "Simhash('My name is John').value": lambda: s1e0ng.simhash("My name is John"),
    }


@needs_shared
def test_1e0ng_published_values(values):
    ref = values["simhash_1e0ng"]
    table = {**ref["asserts"], **ref["observed_here"]}
    exprs = _1e0ng_expressions()
    checked = 0
    for key, want in table.items():
        name = "tfidf" if key.startswith("Simhash(tfidf dict") else key
        if name in exprs:
            assert exprs[name]() == int(want), key
            checked += 1
    assert checked == len(exprs)  # every expression found its value in values.json


@needs_shared
def test_1e0ng_distances_and_index_query(values):
    ref = values["simhash_1e0ng"]
    a = s1e0ng.simhash("How are you? I AM fine. Thanks. And you?")
    b = s1e0ng.simhash("How old are you ? :-) i am fine. Thanks. And you?")
    assert s1e0ng.distance(a, b) == ref["observed_here"]["their distance"]
    assert ref["asserts"]["distance('你好　世界！　　呼噜。', '你好，世界　呼噜')"] == 0
    assert s1e0ng.distance(s1e0ng.simhash("你好　世界！　　呼噜。"), s1e0ng.simhash("你好，世界　呼噜")) == 0
    # SimhashIndex(k=10).get_near_dups finds every stored value within distance 10
    query = s1e0ng.simhash("How are you i am fine.ablar ablar xyz blar blar blar blar blar blar blar thank")
    near = [d for d in TFIDF_DOCS if s1e0ng.distance(query, s1e0ng.simhash(d)) <= 10]
    key = next(k for k in ref["asserts"] if k.startswith("SimhashIndex(k=10)"))
    assert f"{len(near)} results" == ref["asserts"][key]


def test_1e0ng_tfidf_rows_behave_like_its_test():
    shs = [s1e0ng.simhash(list(r.items())) for r in _tfidf_rows(TFIDF_DOCS)]
    assert s1e0ng.distance(shs[0], shs[1]) != 0 and s1e0ng.distance(shs[2], shs[3]) != 0
    assert s1e0ng.distance(shs[0], shs[1]) < s1e0ng.distance(shs[2], shs[3])
    row0 = _tfidf_rows(TFIDF_DOCS)[0]
    assert s1e0ng.simhash(row0) == s1e0ng.simhash(list(row0.items()))  # dict == pairs
    assert s1e0ng.simhash(row0) != s1e0ng.simhash(TFIDF_DOCS[0])


def test_1e0ng_features_and_forms():
    assert s1e0ng.features("") == [""]
    assert s1e0ng.features("Ab!") == ["ab"]
    assert s1e0ng.features("How are you?") == ["howa", "owar", "ware", "arey", "reyo", "eyou"]
    assert s1e0ng.features("你好，世界", width=2) == ["你好", "好世", "世界"]
    text = "the cat sat on the mat, the cat sat"
    counted = Counter(s1e0ng.features(text))
    assert s1e0ng.simhash(text) == s1e0ng.simhash(dict(counted)) == s1e0ng.simhash(s1e0ng.features(text))
    assert s1e0ng.simhash(["a", "a", "b"]) == s1e0ng.simhash({"a": 2, "b": 1})
    # each f-bit value is the low f bits of the wider one (the hash is md5's last f/8 bytes)
    for f in (8, 16, 32):
        assert s1e0ng.simhash(text, f) == s1e0ng.simhash(text) & ((1 << f) - 1)
    assert s1e0ng.simhash(text, 128) & (2**64 - 1) == s1e0ng.simhash(text)
    assert s1e0ng.simhash([]) == 0
    assert s1e0ng.distance(0b1011, 0b0001) == 2
    assert s1e0ng.distance(2**64 - 1, 0, f=32) == 32


def test_1e0ng_bad_input():
    with pytest.raises(ValueError):
        s1e0ng.simhash("abc", f=12)
    with pytest.raises(ValueError):
        s1e0ng.simhash("abc", f=256)
    with pytest.raises(ValueError):
        s1e0ng.simhash([("a", -1)])
    with pytest.raises(TypeError):
        s1e0ng.simhash(b"bytes")
    with pytest.raises(TypeError):
        s1e0ng.simhash(3.5)
    with pytest.raises(ValueError):
        s1e0ng.features("abc", width=0)


# ----------------------------------------------------------------------------- seomoz/simhash-py
@needs_shared
def test_seomoz_published_values(values):
    asserts = values["simhash_py_seomoz"]["asserts"]
    got = {
        "num_differing_bits(0xDEADBEEF, 0xDEADBEAD)": seomoz.num_differing_bits(0xDEADBEEF, 0xDEADBEAD),
        "compute([])": seomoz.compute([]),
        "compute([0xDEADBEEF]*100)": seomoz.compute([0xDEADBEEF] * 100),
        "compute([0xDEADBEEFDEADBEEF, 0x2152411021524110])":
            seomoz.compute([0xDEADBEEFDEADBEEF, 0x2152411021524110]),
        "compute([0xABCD, 0xBCDE, 0xCDEF])": seomoz.compute([0xABCD, 0xBCDE, 0xCDEF]),
    }
    for key, value in got.items():
        want = asserts[key]
        assert value == (int(want, 0) if isinstance(want, str) else want), key
    assert seomoz.num_differing_bits(0xDEADBEEFDEADBEEF, 0x2152411021524110) == 64


def test_seomoz_shingle():
    assert seomoz.shingle(range(10), 4) == [tuple(range(i, i + 4)) for i in range(7)]
    assert seomoz.shingle(list(range(3)), 4) == []
    assert seomoz.shingle(iter("abcde"), 5) == [tuple("abcde")]
    for window in (0, -1):
        with pytest.raises(ValueError):
            seomoz.shingle(list(range(10)), window)


def test_seomoz_compute_rule():
    rng = random.Random(9)
    hashes = [rng.getrandbits(64) for _ in range(7)]
    want = sum(1 << j for j in range(64) if sum(h >> j & 1 for h in hashes) * 2 > len(hashes))
    assert seomoz.compute(hashes) == want
    assert seomoz.compute(iter([1, 1, 0])) == 1
    with pytest.raises(OverflowError):
        seomoz.compute([-1])
    with pytest.raises(OverflowError):
        seomoz.compute([2**64])
    assert seomoz.unsigned_hash("abc") == int("900150983cd24fb0", 16)  # md5('abc')[:8]


JABBERWOCKY = """
Twas brillig, and the slithy toves
Did gyre and gimble in the wabe:
All mimsy were the borogoves,
And the mome raths outgrabe.
"Beware the Jabberwock, my son!
The jaws that bite, the claws that catch!
Beware the Jubjub bird, and shun
The frumious Bandersnatch!"
He took his vorpal sword in hand:
Long time the manxome foe he sought --
So rested he by the Tumtum tree,
And stood awhile in thought.
And, as in uffish thought he stood,
The Jabberwock, with eyes of flame,
Came whiffling through the tulgey wood,
And burbled as it came!
One, two! One, two! And through and through
The vorpal blade went snicker-snack!
He left it dead, and with its head
He went galumphing back.
"And, has thou slain the Jabberwock?
Come to my arms, my beamish boy!
O frabjous day! Callooh! Callay!'
He chortled in his joy.
`Twas brillig, and the slithy toves
Did gyre and gimble in the wabe;
All mimsy were the borogoves,
And the mome raths outgrabe."""

POPE = """There once was a man named 'Pope'
Who loved an oscilloscope
And the cyclical trace
Of their carnal embrace
Had a damned-near infinite slope!"""


def _poem_hash(text: str) -> int:
    """The reference's functional test: 4-character shingles of the lowercased words run
    together, each hashed with ``unsigned_hash``, then ``compute``."""
    letters = "".join(re.split(r"\W+", text.lower()))
    return seomoz.compute(seomoz.unsigned_hash("".join(p)) for p in seomoz.shingle(letters, 4))


@needs_shared
def test_seomoz_functional(values):
    assert "Jabberwocky" in values["simhash_py_seomoz"]["asserts"]["functional"]
    a = _poem_hash(JABBERWOCKY)
    assert seomoz.num_differing_bits(a, _poem_hash(JABBERWOCKY)) == 0
    assert seomoz.num_differing_bits(a, _poem_hash(JABBERWOCKY + " - Lewis Carroll (Alice in Wonderland)")) <= 3
    assert seomoz.num_differing_bits(a, _poem_hash(POPE)) > 3
