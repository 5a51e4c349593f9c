import numpy as np
import pytest

from neardup import MinHasher, Shingler, SimHasher


@pytest.mark.parametrize("text", ["", "   \n\t ", "\u3000\u00a0"])
def test_empty_and_whitespace_only(text):
    sigs = MinHasher().sign_batch([text, "real words here"])
    assert sigs.jaccard_pairs([0], [0])[0] == 0.0
    assert SimHasher().sign(text) == 0
    assert len(Shingler().features_one(text)) == 0


def test_lone_surrogates_are_replaced_and_counted():
    sh = Shingler(ngram=1)
    f = sh.features(["bad \ud800 text", "bad \ufffd text"])
    assert np.array_equal(f.doc(0), f.doc(1))
    assert sh.normalizer.replaced == 1


def test_invalid_utf8_bytes_are_replaced():
    sh = Shingler(ngram=1)
    f = sh.features([b"caf\xe9 ok", "caf\ufffd ok".encode()])
    assert np.array_equal(f.doc(0), f.doc(1))
    assert sh.normalizer.replaced == 1


def test_none_and_non_text_are_type_errors_naming_the_position():
    with pytest.raises(TypeError, match="document 1"):
        MinHasher().sign_batch(["ok", None])
    with pytest.raises(TypeError, match="int"):
        MinHasher().sign(42)
    with pytest.raises(TypeError):
        Shingler().features("a single string is not a batch")


def test_hundred_megabyte_document():
    unit = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
    big = unit * (100_000_000 // len(unit) + 1)
    assert len(big) >= 100_000_000
    h = MinHasher()
    one = h.sign(big)
    small = h.sign(unit * 3)
    assert one.jaccard(small) == 1.0  # the same 5-gram set
