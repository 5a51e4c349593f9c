"""Compatibility modes: reproduce other libraries' published sketches and fingerprints exactly.

* :mod:`.datasketch` — datasketch MinHash;
* :mod:`.yanyiwu` — yanyiwu/simhash (cppjieba keywords, count × idf, Jenkins lookup3 hash);
* :mod:`.simhash_1e0ng` — 1e0ng/simhash (PyPI ``simhash``: md5 of 4-character windows);
* :mod:`.jieba_analyse` — the crawler's recipe, 1e0ng/simhash over ``jieba.analyse.extract_tags`` (compiled);
* :mod:`.simhash_py` — seomoz/simhash-py (``compute``, ``num_differing_bits``, ``shingle``).

Import the submodule you need; nothing heavy (jieba's dictionaries) loads until first use.
"""
