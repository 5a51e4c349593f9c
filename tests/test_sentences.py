from neardup import SentenceSigner, exact_hash


def test_longest_sentences_and_order_independence():
    s = SentenceSigner(n=2)
    doc = "Short one. This is the longest sentence of all here! Medium length sentence? Tiny."
    assert s.longest(doc) == ["thisisthelongestsentenceofallhere", "mediumlengthsentence"]
    reordered = "Medium length sentence? Tiny. This is the longest sentence of all here! Short one."
    assert s.sign(doc) == s.sign(reordered)
    assert s.sign(doc) != s.sign(doc.replace("longest", "widest"))


def test_chinese_punctuation_and_line_breaks():
    s = SentenceSigner(n=3)
    doc = "第一句话很短。第二句话稍微长一点！第三句\n第四句话是最长的一句话了吗？"
    assert s.sentences(doc) == ["第一句话很短", "第二句话稍微长一点", "第三句", "第四句话是最长的一句话了吗"]
    assert s.sign(doc) == s.sign(doc.replace("。", "。 "))


def test_empty_and_exact_hash():
    s = SentenceSigner()
    assert s.sign("") == 0 and s.sign(" ... ") == 0
    assert exact_hash("Hello  World") == exact_hash("hello world") != exact_hash("hello world!")
    assert s.sign_batch(["a. b.", ""]).dtype.name == "uint64"
