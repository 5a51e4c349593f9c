"""End-to-end `neardup dedup` on every input format: nothing lost, kept rows preserved, errors named."""
import csv
import gzip
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from neardup import DedupConfig, run_dedup
from neardup.cli import main

BASE = ("the licence grants permission to use copy modify merge publish distribute sublicense and sell copies "
        "of the software subject to the following conditions stated in this notice")
DOCS = [
    BASE,
    BASE + " today",                              # near duplicate of 0
    "an unrelated text about gardening tomatoes basil and the summer weather in the north of the country",
    BASE,                                         # exact duplicate of 0
    "",                                           # empty: kept and counted
    "中文文本的去重也应该能够直接工作不需要任何额外的参数设置就可以完成",
    "中文文本的去重也应该能够直接工作不需要任何额外的参数设置就可以完成。",
]
EXPECTED_KEPT = [True, False, True, False, True, True, False]


def read_clusters(out):
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        return [json.loads(x) for x in fh]


def check_accounting(out, n_rows, skipped=0):
    rep = json.load(open(os.path.join(out, "report.json"), encoding="utf-8"))
    c = rep["counts"]
    assert c["input_rows"] == n_rows
    assert c["kept"] + c["removed"] + c["skipped_records"] == n_rows
    assert c["skipped_records"] == skipped and c["accounted"] is True
    recs = read_clusters(out)
    assert len(recs) == n_rows and [r["row"] for r in recs] == list(range(n_rows))
    return rep, recs


def config(**kw):
    return DedupConfig(workers=1, ngram=3, threshold=0.7, **kw)


def test_jsonl_gz_end_to_end(tmp_path):
    src = tmp_path / "in.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as fh:
        for i, d in enumerate(DOCS):
            fh.write(json.dumps({"doc_id": f"d{i}", "text": d, "extra": {"n": i}}, ensure_ascii=False) + "\n")
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), config(id_field="doc_id"))
    rep, recs = check_accounting(out, len(DOCS))
    assert [r["kept"] for r in recs] == EXPECTED_KEPT
    assert recs[1]["cluster"] == "d0" and recs[3]["cluster"] == "d0" and recs[3]["similarity"] == 1.0
    assert recs[6]["cluster"] == "d5"
    assert rep["counts"]["empty_documents"] == 1 and recs[4]["empty"] is True
    with gzip.open(out / "kept" / "in.jsonl.gz", "rt", encoding="utf-8") as fh:
        kept = [json.loads(x) for x in fh]
    assert [k["doc_id"] for k in kept] == [f"d{i}" for i in range(len(DOCS)) if EXPECTED_KEPT[i]]
    assert kept[0]["extra"] == {"n": 0}                      # every field preserved
    assert not [p for p in os.listdir(out) if p.startswith(".neardup-tmp")]
    assert rep["lsh"]["b"] * rep["lsh"]["r"] <= 128 and rep["samples"]


def test_parquet_csv_lines_and_dir_inputs(tmp_path):
    pq.write_table(pa.table({"text": DOCS, "num": list(range(len(DOCS)))}), tmp_path / "a.parquet")
    with open(tmp_path / "b.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text"])
        for i, d in enumerate(DOCS):
            w.writerow([f"c{i}", d.replace("the software", "the\nsoftware")])  # quoted newline
    (tmp_path / "c.txt").write_text("\n".join(DOCS) + "\n", encoding="utf-8")
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, d in enumerate(DOCS):
        (folder / f"{i:02d}.txt").write_text(d, encoding="utf-8")
    out = tmp_path / "out"
    inputs = [str(tmp_path / "a.parquet"), str(tmp_path / "b.csv"), str(tmp_path / "c.txt"), str(folder)]
    run_dedup(inputs, str(out), config())
    n = 4 * len(DOCS)
    rep, recs = check_accounting(out, n)
    # across inputs: only the first copy of each group survives (keep=first, input order)
    assert [r["kept"] for r in recs[:len(DOCS)]] == EXPECTED_KEPT
    assert not any(r["kept"] for r in recs[len(DOCS):] if not r["empty"])
    t = pq.read_table(out / "kept" / "a.parquet")
    assert t.column_names == ["text", "num"] and t.column("num").to_pylist() == [0, 2, 4, 5]
    with open(out / "kept" / "b.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["id", "text"], ["c4", ""]]
    assert (out / "kept" / "c.txt").read_text(encoding="utf-8") == "\n"
    assert sorted(os.listdir(out / "kept" / "docs")) == ["04.txt"]


def test_bad_lines_raise_with_location_or_skip_counted(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"text": "good one here"}\n{"text": nope}\n\n{"body": "x"}\n{"text": "good one here"}\n',
                   encoding="utf-8")
    res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o1"), "--workers", "1", "-q"])
    assert res.exit_code == 1 and f"{src}:2: malformed JSON" in res.output
    assert not (tmp_path / "o1" / "report.json").exists()
    res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / "o2"), "--workers", "1", "-q",
                                    "--on-error", "skip"])
    assert res.exit_code == 0, res.output
    rep, recs = check_accounting(tmp_path / "o2", 5, skipped=3)
    assert [s["line"] for s in rep["skipped"]] == [2, 3, 4]
    assert "fields present: 'body'" in rep["skipped"][2]["reason"]
    assert [r["status"] for r in recs] == ["kept", "skipped", "skipped", "skipped", "duplicate"]


def test_invalid_utf8_replaced_and_counted(tmp_path):
    src = tmp_path / "x.txt"
    src.write_bytes(b"caf\xe9 au lait\nplain line\n")
    run_dedup([str(src)], str(tmp_path / "o"), config())
    rep, _ = check_accounting(tmp_path / "o", 2)
    assert rep["counts"]["invalid_utf8_replaced"] == 1
    assert (tmp_path / "o" / "kept" / "x.txt").read_bytes() == b"caf\xe9 au lait\nplain line\n"


@pytest.mark.parametrize("method", ["simhash", "sentences", "exact"])
def test_other_methods(tmp_path, method):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(method=method, workers=1))
    rep, recs = check_accounting(tmp_path / "o", len(DOCS))
    kept = [r["kept"] for r in recs]
    assert kept[3] is False and recs[3]["cluster"] == 0      # the exact copy goes with every method
    assert kept[0] and kept[2] and kept[4]


def test_keep_longest_and_key(tmp_path):
    src = tmp_path / "in.jsonl"
    recs = [{"text": BASE, "score": 1}, {"text": BASE + " today", "score": 5}, {"text": BASE, "score": 3}]
    src.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "a"), config(keep="longest"))
    assert [r["kept"] for r in read_clusters(tmp_path / "a")] == [False, True, False]
    run_dedup([str(src)], str(tmp_path / "b"), config(keep="key", keep_field="score"))
    assert [r["kept"] for r in read_clusters(tmp_path / "b")] == [False, True, False]


def test_workers_give_identical_results(tmp_path):
    src = tmp_path / "in.jsonl"
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(300)]
    lines = []
    for i in range(400):
        base = list(rng.choice(words, 40))
        if i % 3 == 0 and i:
            base = lines[-1].split()[:-2] + ["x", "y"]
        lines.append(" ".join(base))
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in lines), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "w1"), DedupConfig(workers=1, batch_size=37))
    run_dedup([str(src)], str(tmp_path / "w2"), DedupConfig(workers=2, batch_size=37))
    assert read_clusters(tmp_path / "w1") == read_clusters(tmp_path / "w2")
    assert (tmp_path / "w1" / "kept" / "in.jsonl").read_bytes() == (tmp_path / "w2" / "kept" / "in.jsonl").read_bytes()


@pytest.mark.parametrize("verify", ["borderline", "exact", "none"])
def test_the_signature_file_of_several_workers_gives_the_rows_of_one(tmp_path, monkeypatch, verify):
    """With several workers the MinHash slots go straight from the workers into a file at their rows
    (engines.local.workers.SignatureFile): the same clusters and kept rows as one worker, with blank
    lines and skipped bad rows leaving holes that the documents' rows step over, across two inputs."""
    from neardup.engines.local.workers import SignatureFile

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(200)]
    paths = []
    for part in range(2):
        rows = []
        for i in range(300):
            if i % 41 == 7:
                rows.append("")                              # a blank line: skipped and counted
            elif i % 53 == 11:
                rows.append('{"text": ')                     # a bad row: skipped under --on-error skip
            else:
                base = list(rng.choice(words, 30))
                if i % 4 == 0 and rows and rows[-1].startswith('{"text": "'):
                    base = json.loads(rows[-1])["text"].split()[:-1] + ["z"]
                rows.append(json.dumps({"text": " ".join(base)}))
        path = tmp_path / f"in{part}.jsonl"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        paths.append(str(path))
    cfgs = {w: DedupConfig(workers=w, batch_size=29, on_error="skip", verify=verify, html=False, quiet=True)
            for w in (1, 2)}
    from neardup.io.formats import InputSpec

    specs = [InputSpec(p, "jsonl") for p in paths]
    assert SignatureFile.wanted(specs, cfgs[2].resolved(), str(tmp_path), None)
    assert not SignatureFile.wanted(specs, cfgs[1].resolved(), str(tmp_path), None)
    used = []
    real = SignatureFile.values
    monkeypatch.setattr(SignatureFile, "values", lambda self, corpus: used.append(1) or real(self, corpus))
    reports = {w: run_dedup(paths, str(tmp_path / f"w{w}"), cfg) for w, cfg in cfgs.items()}
    assert used == [1]                                  # the two-worker run read its slots from the file
    assert reports[1]["counts"] == reports[2]["counts"] and reports[2]["counts"]["skipped_records"] > 0
    assert reports[2]["counts"]["removed"] > 0
    assert read_clusters(tmp_path / "w1") == read_clusters(tmp_path / "w2")
    for p in ("in0.jsonl", "in1.jsonl"):
        assert (tmp_path / "w1" / "kept" / p).read_bytes() == (tmp_path / "w2" / "kept" / p).read_bytes()


def test_compare_json(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one two three four five six", encoding="utf-8")
    b.write_text("one two three four five six seven eight nine ten", encoding="utf-8")
    res = CliRunner().invoke(main, ["compare", str(a), str(b), "--ngram", "2", "--json"])
    out = json.loads(res.output)
    assert out["jaccard"] == pytest.approx(5 / 9)
    assert out["containment"]["a_in_b"] == 1.0
    assert {"jaccard", "containment", "minhash_jaccard", "simhash_distance", "sentences_match"} <= set(out)
    res = CliRunner().invoke(main, ["compare", "--text", "same text here", "same text here"])
    assert "exact Jaccard        1.0000" in res.output


def test_exact_verification_and_linkage_options(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    assert DedupConfig().resolved().verify == "borderline"        # the default
    for verify in ("minhash", "exact", "borderline"):
        for linkage in ("bounded", "components"):
            out = tmp_path / f"{verify}-{linkage}"
            run_dedup([str(src)], str(out), config(verify=verify, linkage=linkage))
            rep, recs = check_accounting(out, len(DOCS))
            assert [r["kept"] for r in recs] == EXPECTED_KEPT, (verify, linkage)
            assert rep["parameters"]["verify"] == verify and rep["parameters"]["linkage"] == linkage
    with pytest.raises(ValueError, match="verify"):
        DedupConfig(verify="maybe").resolved()


def test_bounded_linkage_stops_chains():
    """A chain a0 ~ a1 ~ ... ~ a9 where each step changes two words: components put all ten
    together; bounded linkage keeps every cluster's members within t − δ of each other."""
    import neardup
    from neardup.dedup import find_minhash_duplicates

    words = [f"w{i}" for i in range(60)]
    chain = []
    cur = list(words)
    for step in range(10):
        chain.append(" ".join(cur))
        cur = cur[:]
        cur[2 * step] = f"x{step}a"
        cur[2 * step + 1] = f"x{step}b"
    f = neardup.Shingler(ngram=2).features(chain)
    sigs = neardup.MinHasher(num_perm=512, ngram=2).sign_features(f)
    comp = find_minhash_duplicates(sigs, 0.85, linkage="components", max_drift=None, verify="exact", features=f)
    bnd = find_minhash_duplicates(sigs, 0.85, linkage="bounded", max_drift=0.05, verify="exact", features=f)
    assert len(set(comp.clusters.cluster.tolist())) == 1
    labels = bnd.clusters.cluster
    assert len(set(labels.tolist())) > 1
    for c in set(labels.tolist()):
        mem = np.flatnonzero(labels == c)
        ii, jj = np.triu_indices(len(mem), 1)
        if len(ii):
            assert neardup.exact_jaccard_pairs(f, mem[ii], mem[jj]).min() >= 0.80


def test_interrupted_rerun_leaves_the_previous_result_whole(tmp_path, monkeypatch):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    out = tmp_path / "out"
    run_dedup([str(src)], str(out), config())
    before = {p: (out / p).read_bytes() for p in ("report.json", "report.html", "clusters.jsonl", "kept/in.jsonl")}
    import neardup.dedup.records as records

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(records, "write_kept", boom)
    with pytest.raises(KeyboardInterrupt):
        run_dedup([str(src)], str(out), config(keep="longest"))
    assert {p: (out / p).read_bytes() for p in before} == before
    assert not [p for p in os.listdir(out) if p.startswith((".neardup-tmp", ".neardup-old"))]


def test_traditional_chinese_converted_before_signing(tmp_path, shared):
    pytest.importorskip("opencc", reason="the neardup[zh] extra (OpenCC) is not installed")
    base = shared / "corpora/manpages_zh_sample"
    names = sorted(p.name for p in (base / "zh_CN").iterdir())[:6]
    src = tmp_path / "pages.jsonl"
    with open(src, "w", encoding="utf-8") as fh:
        for variant in ("zh_CN", "zh_TW"):
            for name in names:
                text = (base / variant / name).read_text(encoding="utf-8")
                fh.write(json.dumps({"id": f"{variant}/{name}", "text": text}, ensure_ascii=False) + "\n")
    plain = tmp_path / "plain"
    conv = tmp_path / "conv"
    # after tw2sp these pairs have exact J 0.80-0.96 (word 5-grams); t = 0.7 leaves ~3 sigma of margin
    run_dedup([str(src)], str(plain), DedupConfig(workers=1, id_field="id", threshold=0.7))
    run_dedup([str(src)], str(conv), DedupConfig(workers=1, id_field="id", threshold=0.7, convert="tw2sp"))
    assert sum(r["kept"] for r in read_clusters(plain)) == 12          # scripts differ: nothing matches
    recs = read_clusters(conv)
    assert sum(r["kept"] for r in recs) == 6
    assert all(r["cluster"] == r["id"].replace("zh_TW", "zh_CN") for r in recs)


def test_utf8_bom_at_file_start(tmp_path):
    src = tmp_path / "bom.jsonl"
    body = "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCS)
    src.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    run_dedup([str(src)], str(tmp_path / "o"), config())
    rep, recs = check_accounting(tmp_path / "o", len(DOCS))
    assert [r["kept"] for r in recs] == EXPECTED_KEPT and rep["counts"]["skipped_records"] == 0
    assert (tmp_path / "o" / "kept" / "bom.jsonl").read_bytes().startswith(b"\xef\xbb\xbf")


def test_progress_bars_on_stderr(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "o"), DedupConfig(workers=1, progress="bar"))
    err = capsys.readouterr().err
    assert "read+sign" in err and "write" in err
    run_dedup([str(src)], str(tmp_path / "q"), DedupConfig(workers=1, progress="bar", quiet=True))
    assert capsys.readouterr().err == ""


def test_clusters_parquet_equals_jsonl(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": "x y z w v u"}\n{"text": bad}\n' +
                   "".join(json.dumps({"text": d}, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "j"), config(on_error="skip"))
    run_dedup([str(src)], str(tmp_path / "p"), config(on_error="skip", clusters_format="parquet"))
    as_json = read_clusters(tmp_path / "j")
    table = pq.read_table(tmp_path / "p" / "clusters.parquet").to_pylist()
    assert len(table) == len(as_json) == len(DOCS) + 2
    for a, b in zip(as_json, table):
        assert b["id"] == (None if a["id"] is None else str(a["id"]))
        assert b["cluster"] == (None if a["cluster"] is None else str(a["cluster"]))
        assert (b["kept"], b["status"], b["row"], b["similarity"]) == (a["kept"], a["status"], a["row"],
                                                                       a["similarity"])
        assert b["reason"] == a.get("reason") and b["empty"] == a.get("empty")


def test_clusters_jsonl_lines_are_json_dumps_of_the_records(tmp_path):
    """clusters.jsonl is formatted directly (not through json.dumps per row); every line must
    still be exactly json.dumps(record, ensure_ascii=False) for ids of every JSON type,
    strings that need escaping, skipped rows and similarities with many digits."""
    ids = ['q"uote', "back\\slash", "tab\there", "中文", "\u2028sep", 7, 2.5, True, None, {"k": [1, 2]}]
    rows = [json.dumps({"id": i, "text": DOCS[j % 3] + (" x" * j)}, ensure_ascii=False) for j, i in enumerate(ids)]
    rows.insert(3, "{broken")
    src = tmp_path / "ids.jsonl"
    src.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    run_dedup([str(src)], str(out), config(id_field="id", on_error="skip"))
    with open(out / "clusters.jsonl", encoding="utf-8") as fh:
        lines = fh.read().split("\n")[:-1]  # not splitlines(): U+2028 is a line break to it
    assert len(lines) == len(rows)
    for line in lines:
        assert line == json.dumps(json.loads(line), ensure_ascii=False)
    recs = [json.loads(x) for x in lines]
    assert recs[0]["id"] == 'q"uote' and recs[3]["status"] == "skipped" and recs[-1]["id"] == {"k": [1, 2]}
    assert any(r["status"] == "duplicate" and 0 < r["similarity"] < 1 for r in recs)


def test_byte_order_mark_inside_the_file_is_read_and_reported_alike(tmp_path):
    """A record after line 1 that starts with a BOM is accepted by the reader (json.loads of
    bytes drops it), so the report's re-read of sampled texts must accept it too."""
    lines = [json.dumps({"text": BASE}).encode(), b"\xef\xbb\xbf" + json.dumps({"text": BASE + " today"}).encode(),
             json.dumps({"text": DOCS[2]}).encode()]
    src = tmp_path / "bom_inside.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    run_dedup([str(src)], str(tmp_path / "o"), config(keep="longest"))
    rep, recs = check_accounting(tmp_path / "o", 3)
    assert [r["kept"] for r in recs] == [False, True, True]
    assert rep["samples"] and rep["samples"][0]["kept_text"].endswith("today")


@pytest.mark.parametrize("workers", [1, 2])
def test_an_earlier_bad_row_is_reported_before_a_later_read_error(tmp_path, workers):
    """Batches are read ahead of their accounting: a read error further on (a truncated .gz, a
    CSV without the text column) must not hide the first bad row, whatever the worker count."""
    from neardup.io.formats import InputFormatError

    data = b"\n".join([json.dumps({"text": f"doc {i} words"}).encode() for i in range(3)] + [b"{bad"]
                      + [json.dumps({"text": f"doc {i} more words"}).encode() for i in range(500)]) + b"\n"
    packed = gzip.compress(data)
    trunc = tmp_path / "trunc.jsonl.gz"
    trunc.write_bytes(packed[:len(packed) // 2])
    first = tmp_path / "a.jsonl"
    first.write_text('{"text": "ok doc"}\n{bad\n', encoding="utf-8")
    no_text = tmp_path / "b.csv"
    no_text.write_text("id,body\n1,hello\n", encoding="utf-8")
    for inputs, where in (([trunc], f"{trunc}:4:"), ([first, no_text], f"{first}:2:")):
        with pytest.raises(InputFormatError, match="malformed JSON") as exc:
            run_dedup([str(p) for p in inputs], str(tmp_path / "o"),
                      DedupConfig(workers=workers, batch_size=2, quiet=True))
        assert str(exc.value).startswith(where)


def test_concatenate_freeing_equals_concatenate():
    """Pass 1's results are gathered by concatenate_freeing (each chunk released once copied)."""
    from neardup._arrays import concatenate_freeing

    rng = np.random.default_rng(7)
    for shape in ((0,), (3,), (5, 4)):
        chunks = [rng.integers(0, 99, (rng.integers(0, 200), *shape[1:])).astype(np.uint32) for _ in range(150)]
        want = np.concatenate(chunks)
        got = concatenate_freeing(chunks)
        assert got.dtype == want.dtype and np.array_equal(got, want) and all(c is None for c in chunks)


def test_texts_are_read_back_from_pass_1s_blocks(tmp_path):
    """A few documents' texts (the report's samples) are read from the blocks pass 1 cut the file
    into, only those blocks: the same texts as parsing the whole file, with a byte-order mark on line
    1, a last line without its newline, and wanted lines in several blocks or none."""
    from neardup.engines.local.run import _texts_in_blocks
    from neardup.io.formats import InputSpec, file_blocks

    texts = [f"document {i} " + "word " * (i % 7) for i in range(57)]
    data = "\ufeff" + "\n".join(json.dumps({"text": t}) for t in texts)      # (no final newline)
    path = tmp_path / "in.jsonl"
    path.write_bytes(data.encode("utf-8"))
    spec = InputSpec(str(path), "jsonl")
    places = list(file_blocks(spec, 5))
    assert len(places) == 12
    cfg = DedupConfig().resolved()
    for wanted in ([0], [56], [0, 4, 5, 23, 55, 56], list(range(57)), []):
        got = dict(_texts_in_blocks(spec, cfg, places, {w: 1000 + w for w in wanted}))
        assert got == {1000 + w: texts[w] for w in wanted}


def test_pages_of_a_mapped_matrix_given_back_and_read_ahead(tmp_path):
    """_arrays.release_pages / read_ahead advise the map under an array (a private map of a file, as
    the signature matrix is): the values read the same afterwards; an array in memory is left alone
    (False)."""
    import mmap

    from neardup._arrays import read_ahead, release_pages

    want = np.arange(3 * 4096, dtype=np.uint32).reshape(-1, 128)
    path = tmp_path / "sigs.u32"
    path.write_bytes(want.tobytes())
    with open(path, "rb") as fh:
        mp = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    values = np.frombuffer(mp, dtype=np.uint32).reshape(-1, 128)[1:]
    assert release_pages(values) and np.array_equal(values, want[1:])
    assert read_ahead(values) and np.array_equal(values, want[1:])
    assert not release_pages(want) and not read_ahead(want.copy())
