"""``--engine spark`` gives the local engine's outputs: clusters.jsonl record for record, the same kept
rows, the same counts — whatever the partitioning. One local[2] Spark session for the module."""
import csv
import gzip
import json
import os
import random
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="PySpark is not installed (pip install 'neardup[spark]')")
pytest.importorskip("pandas", reason="PySpark's mapInArrow needs pandas (pip install 'pandas>=2.2')")

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from neardup import DedupConfig, run_dedup
from neardup.cli import main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("neardup-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.adaptive.enabled", "false")   # fixed per-query cost on tiny data; one test turns it on
               .config("spark.driver.memory", "2g")   # headroom: the suite runs ~200 Spark jobs in one session
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(params=["driver", "driver-files", "executors"])
def finish(request, monkeypatch):
    """Every way a Spark run ends: the local engine's steps on the driver over the signed rows collected
    through the JVM ("driver") or read back from the Parquet files the executors wrote
    ("driver-files", what a run past the JVM's budget does: here forced), or every step on the
    executors (past the driver's budget: here forced, FINISH_BYTES = 0)."""
    import neardup.engines.spark.driver as spark_driver

    if request.param == "executors":
        monkeypatch.setattr(spark_driver, "FINISH_BYTES", 0)
    if request.param == "driver-files":
        monkeypatch.setattr(spark_driver, "_collect_bytes", lambda spark: -1)
    return request.param


def _words(rng, vocab, n):
    return " ".join(rng.choice(vocab) for _ in range(n))


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    """~400 rows: originals, exact copies, near-duplicates (one word changed, a few words appended),
    chains, empty texts, CJK, plus a blank line, a malformed line, a row without text and a final
    line without its newline."""
    rng = random.Random(20240611)
    vocab = [f"w{i}" for i in range(500)] + ["licence", "software", "copy", "permission", "中文", "文本", "去重"]
    docs = []
    for _ in range(150):
        base = _words(rng, vocab, rng.randint(20, 120))
        docs.append(base)
        cur = base
        for _ in range(rng.randint(0, 3)):
            r = rng.random()
            if r < 0.3:
                docs.append(base)                                  # exact copy
            elif r < 0.7:
                w = cur.split()
                w[rng.randrange(len(w))] = rng.choice(vocab)       # near-duplicate (chains: edits accumulate)
                cur = " ".join(w)
                docs.append(cur)
            else:
                docs.append(base + " " + _words(rng, vocab, 3))    # longer near-duplicate
    docs += ["", "", "short text", "short text", "中文文本的去重也应该能够直接工作", "中文文本的去重也应该能够直接工作。"]
    rng.shuffle(docs)
    path = tmp_path_factory.mktemp("planted") / "planted.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i, d in enumerate(docs):
            if i == 40:
                fh.write("\n")
            if i == 80:
                fh.write('{"text": "broken\n')
            if i == 120:
                fh.write('{"body": "no text field"}\n')
            fh.write(json.dumps({"id": f"p{i}", "text": d, "n": i}, ensure_ascii=False) + "\n")
        fh.write('{"id": "last", "text": "the final line has no newline"}')
    return path


def _config(**kw) -> DedupConfig:
    return DedupConfig(**{"workers": 1, "quiet": True, "html": False, **kw})


def _files(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name not in ("report.json", "report.html", ".neardup-manifest.json"):
            data = p.read_bytes()
            out[str(p.relative_to(root))] = gzip.decompress(data) if p.suffix == ".gz" else data
    return out


def _same_outputs(local: Path, spark_out: Path) -> dict:
    """clusters.jsonl record for record, the kept rows byte for byte, the report's counts; returns the
    Spark report."""
    a, b = _files(local), _files(spark_out)
    assert sorted(a) == sorted(b)
    la = a["clusters.jsonl"].decode().splitlines()
    lb = b["clusters.jsonl"].decode().splitlines()
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert json.loads(x) == json.loads(y)
    assert la == lb                    # and the same bytes
    for name in a:
        if name.endswith(".parquet"):   # the same schema and rows; row groups may be cut differently
            ta, tb = (pq.read_table(root / name) for root in (local, spark_out))
            assert ta.schema == tb.schema and ta.equals(tb), name
        else:
            assert a[name] == b[name], name
    ra = json.loads((local / "report.json").read_text(encoding="utf-8"))
    rb = json.loads((spark_out / "report.json").read_text(encoding="utf-8"))
    assert ra["counts"] == rb["counts"]
    for key in ("cluster_sizes", "similarity_histogram", "samples", "skipped", "outputs", "lsh", "pairs", "simhash"):
        assert ra.get(key) == rb.get(key), key
    assert rb["engine"] == "spark"
    return rb


def _both(spark, inputs, tmp_path, **kw):
    from neardup.engines.spark import run_spark_dedup

    run_dedup([str(p) for p in inputs], str(tmp_path / "local"), _config(**kw))
    report = run_spark_dedup([str(p) for p in inputs], str(tmp_path / "spark"), _config(**kw), spark=spark)
    return _same_outputs(tmp_path / "local", tmp_path / "spark"), report


@pytest.mark.parametrize("keep,linkage,drift,bits", [("first", "bounded", None, 3), ("longest", "components", None, 3),
                                                     ("first", "components", 0.05, 3), ("first", "bounded", None, None),
                                                     ("longest", "components", 0.1, None)])
def test_simhash_matches_local(spark, finish, planted, tmp_path, keep, linkage, drift, bits):
    """SimHash on Spark: the classic rule (``bits``: the permuted-table pairs within k bits, the identical
    fingerprints, drift rounded to whole bits) or the verified one (candidates within k_c checked on their
    re-read texts) and the local clustering give the local engine's outputs byte for byte."""
    rep, _ = _both(spark, [planted], tmp_path, method="simhash", keep=keep, linkage=linkage, max_drift=drift,
                   on_error="skip", pairs=True, bits=bits)
    c = rep["counts"]
    if bits is not None:          # every candidate within k bits is a pair
        assert c["removed"] > 50 and c["verified_pairs"] >= c["candidate_pairs"] > 0
    else:                         # candidates checked: some refused
        assert c["removed"] > 50 and c["candidate_pairs"] >= c["verified_pairs"] > 0


@pytest.mark.parametrize("metric,linkage,scheme", [("jaccard", "bounded", "oph"), ("containment", "components", "oph"),
                                                   ("jaccard", "bounded", "datasketch-legacy")])
def test_verify_borderline_matches_local(spark, finish, planted, tmp_path, metric, linkage, scheme):
    """--verify borderline on Spark: the same band, the same pairs decided exactly from re-read texts,
    the local engine's outputs byte for byte and the same report section — with a datasketch scheme too
    (its rows are re-read with the same shingles, signed as oph)."""
    rep, local = _both(spark, [planted], tmp_path, verify="borderline", metric=metric, linkage=linkage,
                       on_error="skip", threshold=0.7, scheme=scheme, pairs=True)
    ra = json.loads((tmp_path / "local" / "report.json").read_text(encoding="utf-8"))
    assert ra["borderline"] == rep["borderline"] and rep["borderline"]["pairs"] > 0


def test_verify_borderline_with_an_index_matches_local(spark, finish, days, tmp_path):
    """With --index, an indexed document's pairs in the band are checked through the new row identical to
    it; the rerun of a changed day 2 then removes every row, on both engines alike."""
    import os

    from neardup.engines.spark import run_spark_dedup

    kw = dict(verify="borderline", id_field="id", pairs=True)
    for engine in ("local", "spark"):
        cfg = _config(index=str(tmp_path / f"idx-{engine}"), **kw)
        run = run_dedup if engine == "local" else (lambda i, o, c: run_spark_dedup(i, o, c, spark=spark))
        run([str(days / "day1.jsonl")], str(tmp_path / f"{engine}-1"), cfg)
        run([str(days / "day2.jsonl")], str(tmp_path / f"{engine}-2"), cfg)
        st = os.stat(days / "day2.jsonl")
        os.utime(days / "day2.jsonl", ns=(1, 1))
        try:
            rep = run([str(days / "day2.jsonl")], str(tmp_path / f"{engine}-3"), cfg)
        finally:
            os.utime(days / "day2.jsonl", ns=(st.st_atime_ns, st.st_mtime_ns))
        assert rep["counts"]["kept"] == 0 and rep["borderline"]["pairs"] > 0
    for day in (1, 2, 3):
        _same_outputs(tmp_path / f"local-{day}", tmp_path / f"spark-{day}")


@pytest.mark.parametrize("opts", [{"compat": "yanyiwu", "top_n": 8}])
def test_simhash_feature_options_match_local(spark, finish, planted, tmp_path, opts):
    """The SimHash feature options (one definition: sketches.simhash.feature_signer) on Spark: the local
    engine's outputs byte for byte."""
    rep, _ = _both(spark, [planted], tmp_path, method="simhash", on_error="skip", **opts)
    assert rep["counts"]["removed"] > 20


def test_simhash_word_files_match_local(spark, finish, planted, tmp_path):
    """The user's word files (an IDF table, a user dictionary, stop words) reach the executors: the
    local engine's outputs byte for byte."""
    (tmp_path / "idf.txt").write_text("".join(f"w{i} {1 + i / 50}\n" for i in range(500)) + "去重 9\n",
                                      encoding="utf-8")
    (tmp_path / "user.txt").write_text("文本去重 5 n\n", encoding="utf-8")
    (tmp_path / "stop.txt").write_text("copy\nw7\n", encoding="utf-8")
    rep, _ = _both(spark, [planted], tmp_path, method="simhash", on_error="skip", tokenizer="jieba", top_n=12,
                   idf=str(tmp_path / "idf.txt"), user_dict=str(tmp_path / "user.txt"),
                   stop_words=str(tmp_path / "stop.txt"))
    assert rep["counts"]["removed"] > 20 and rep["parameters"]["stop_words"] == str(tmp_path / "stop.txt")


def test_minhash_user_dictionary_matches_local(spark, finish, planted, tmp_path):
    """MinHash with the jieba tokenizer and a user dictionary (signing and the borderline re-shingling
    on the executors): the local engine's outputs byte for byte."""
    (tmp_path / "user.txt").write_text("文本去重 5 n\ncopy 3 n\n", encoding="utf-8")
    rep, _ = _both(spark, [planted], tmp_path, tokenizer="jieba", user_dict=str(tmp_path / "user.txt"),
                   on_error="skip")
    assert rep["counts"]["removed"] > 20 and rep["parameters"]["user_dict"] == str(tmp_path / "user.txt")


@pytest.mark.parametrize("metric,linkage,drift", [("jaccard", "bounded", 0.05), ("containment", "components", None),
                                                  ("jaccard", "components", 0.05)])
def test_verify_exact_matches_local(spark, finish, planted, tmp_path, metric, linkage, drift):
    """--verify exact on Spark: each document's distinct shingle hashes travel beside its signature,
    candidate pairs and the bounded linkage's checks are decided on them exactly — the local outputs
    byte for byte."""
    rep, _ = _both(spark, [planted], tmp_path, verify="exact", metric=metric, linkage=linkage, max_drift=drift,
                   on_error="skip", pairs=True)
    c = rep["counts"]
    assert rep["parameters"]["verify"] == "exact" and c["removed"] > 50 and c["candidate_pairs"] > 0


@pytest.mark.parametrize("keep,linkage", [("first", "bounded"), ("longest", "components")])
def test_planted_corpus_matches_local(spark, finish, planted, tmp_path, keep, linkage):
    rep, _ = _both(spark, [planted], tmp_path, keep=keep, linkage=linkage, on_error="skip")
    c = rep["counts"]
    assert c["skipped_records"] == 3 and c["removed"] > 100 and c["empty_documents"] == 2
    assert c["input_rows"] == c["kept"] + c["removed"] + c["skipped_records"]


@pytest.mark.parametrize("linkage,drift", [("bounded", 0.05), ("components", 0.05)])
def test_components_by_star_rounds_match_local(spark, planted, tmp_path, monkeypatch, linkage, drift):
    """Connected components on the executors (star rounds, used past DRIVER_EDGES edges) give what
    the driver's union–find gives: the local engine's outputs."""
    import neardup.engines.spark.driver as spark_driver

    monkeypatch.setattr(spark_driver, "FINISH_BYTES", 0)
    import neardup.engines.spark.finish as finish

    monkeypatch.setattr(finish, "DRIVER_EDGES", 0)
    rep, report = _both(spark, [planted], tmp_path, linkage=linkage, max_drift=drift, on_error="skip")
    assert rep["counts"]["removed"] > 100


@pytest.mark.parametrize("keep,linkage", [("first", "components"), ("longest", "bounded")])
def test_demo_corpus_matches_local(spark, finish, tmp_path, keep, linkage):
    rep, _ = _both(spark, [DEMO], tmp_path, keep=keep, linkage=linkage, pairs=True)   # pairs.parquet alike too
    assert rep["pairs"]["pairs"] > 100 and rep["counts"]["input_rows"] == 550 and rep["counts"]["removed"] > 100


def test_progress_json_on_spark(spark, finish, planted, tmp_path, capsys):
    """--progress json on Spark: one stage per phase, each started, advanced and ended once, in order;
    the outputs are the local engine's. Spark's phases (its job descriptions) count completed tasks and
    have no total (a phase's jobs are not known ahead); a run finished on the driver then reports the
    local engine's own stages."""
    from neardup.engines.spark import run_spark_dedup

    run_dedup([str(planted)], str(tmp_path / "local"), _config(on_error="skip"))
    capsys.readouterr()
    run_spark_dedup([str(planted)], str(tmp_path / "spark"), _config(on_error="skip", progress="json"), spark=spark)
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    rows = _same_outputs(tmp_path / "local", tmp_path / "spark")["counts"]["input_rows"]
    order, open_, last = [], None, 0
    for e in events:
        if e["unit"] == "task":
            assert "total" not in e
        if e["event"] == "start":
            assert open_ is None
            open_, last = e["stage"], 0
            order.append(open_)
            continue
        assert e["stage"] == open_ and e["done"] >= last
        last = e["done"]
        if e["event"] == "end":
            open_ = None
    assert open_ is None
    ends = {e["stage"]: e for e in events if e["event"] == "end"}
    assert ends["read + sign"]["done"] >= 1 and ends["read + sign"]["unit"] == "task"
    if finish != "executors":
        want = ["number rows", "read + sign", "identical", "candidates", "verify", "borderline", "clusters", "write",
                "report"]
        assert order == want and ends["write"]["unit"] == "row" and ends["write"]["done"] == rows
    else:
        want = ["read + sign", "identical rows", "LSH candidates", "verify: estimates", "clusters", "write", "report"]
        assert [name for name in order if name in want] == want
        assert all(e["unit"] == "task" for e in events) and ends["write"]["done"] >= 1


@pytest.mark.parametrize("texts", [["", "  ", "a"], ["one two three four five six seven eight"]])
def test_nothing_to_compare_matches_local(spark, finish, tmp_path, texts):
    """Inputs with no pair to compare — only empty and too-short documents, or one document — go through
    the driver path's empty arrays (no signature, no candidate) to the local engine's outputs."""
    src = tmp_path / "tiny.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    rep, _ = _both(spark, [src], tmp_path)
    assert rep["counts"]["removed"] == 0 and rep["counts"]["candidate_pairs"] == 0


def test_same_result_for_any_partitioning(spark, finish, planted, tmp_path):
    """Other shuffle partitions, the plain JSONL cut into many splits, adaptive execution on: the same bytes."""
    from neardup.engines.spark import run_spark_dedup

    cfg = _config(keep="first", on_error="skip")
    run_dedup([str(planted)], str(tmp_path / "local"), cfg)
    old = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.files.maxPartitionBytes",
                                          "spark.sql.adaptive.enabled")}
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "7")
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(24 * 1024))
        spark.conf.set("spark.sql.adaptive.enabled", "true")
        assert spark.read.text(str(planted)).rdd.getNumPartitions() > 3
        run_spark_dedup([str(planted)], str(tmp_path / "spark"), cfg, spark=spark)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    _same_outputs(tmp_path / "local", tmp_path / "spark")


def test_every_input_format_through_the_cli(spark, finish, planted, tmp_path):
    """CSV (quoted newlines), Parquet, text lines, a directory, zstd JSONL — one `neardup dedup --engine
    spark` run beside the local engine."""
    import zstandard

    rows = [json.loads(x) for x in planted.read_text(encoding="utf-8").splitlines()
            if x.startswith('{"id"')]
    texts = [r["text"] for r in rows]
    src = tmp_path / "in"
    (src / "dir" / "sub").mkdir(parents=True)
    with open(src / "b.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["text", "n"])
        for i, t in enumerate(texts[:120]):
            w.writerow([t.replace("w1 ", "w1\n"), i])
    pq.write_table(pa.table({"text": texts[60:160], "n": list(range(100))}), src / "c.parquet")
    (src / "d.txt").write_text("".join(t + "\n" for t in texts[140:220]), encoding="utf-8")
    with zstandard.ZstdCompressor().stream_writer(open(src / "e.jsonl.zst", "wb")) as fh:
        for r in rows[:60]:
            fh.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))
    for i, t in enumerate(texts[:16]):
        (src / "dir" / ("sub" if i % 2 else "") / f"f{i:02d}.txt").write_text(t, encoding="utf-8")
    inputs = [str(src / n) for n in ("b.csv", "c.parquet", "d.txt", "e.jsonl.zst", "dir")]
    runner = CliRunner()
    for engine in ("local", "spark"):
        res = runner.invoke(main, ["dedup", *inputs, "-o", str(tmp_path / engine), "--engine", engine, "--no-html",
                                   "-q", "--workers", "1", "--keep", "longest", "--threshold", "0.7"])
        assert res.exit_code == 0, res.output + repr(res.exception)
    rep = _same_outputs(tmp_path / "local", tmp_path / "spark")
    assert [o["format"] for o in rep["outputs"]] == ["csv", "parquet", "lines", "jsonl", "dir"]
    assert rep["counts"]["removed"] > 50


def test_dataframe_api(spark, planted):
    """dedup_dataframe on a DataFrame: the local engine's kept flags, representatives and similarities
    (the default --verify borderline: pairs near t decided on the shingle sets of their texts)."""
    from neardup.dedup.find import find_minhash_duplicates
    from neardup.engines.spark import dedup_dataframe, sign_dataframe
    from neardup.sketches.minhash import MinHasher

    texts = [json.loads(x)["text"] for x in planted.read_text(encoding="utf-8").splitlines()
             if x.startswith('{"id"')][:200]
    df = spark.createDataFrame([(i, f"d{i}", t) for i, t in enumerate(texts)], "row long, key string, text string")
    cfg = DedupConfig(keep="longest", linkage="components", threshold=0.75)
    out = {r["row"]: r for r in dedup_dataframe(df, cfg, id_col="key", row_col="row").collect()}
    assert sorted(out) == list(range(len(texts)))
    c = cfg.resolved()
    assert c.verify == "borderline"
    hasher = MinHasher(num_perm=c.num_perm, scheme=c.scheme, seed=c.seed, ngram=c.ngram)
    sigs = hasher.sign_batch(texts)
    ref = find_minhash_duplicates(sigs, c.threshold, keep="longest", lengths=[len(t) for t in texts],
                                  linkage="components", max_drift=c.max_drift, verify=c.verify,
                                  features=hasher.shingler.features(texts)).clusters
    for i in range(len(texts)):
        r = out[i]
        assert r["cluster_row"] == ref.cluster[i] and r["kept"] == bool(ref.kept[i])
        assert r["cluster"] == json.dumps(f"d{ref.cluster[i]}") and r["text"] == texts[i]
        assert abs(r["similarity"] - ref.similarity[i]) < 1e-12
    signed = {r["row"]: bytes(r["sig"]) for r in sign_dataframe(df.limit(5), cfg).collect()}
    for i in range(5):
        assert signed[i] == sigs.values[i].astype("<u4").tobytes()
    # --verify borderline decides the band on the texts: without them, one ConfigError before any work
    from neardup.engines.spark import find_clusters
    from neardup.errors import ConfigError

    with pytest.raises(ConfigError, match="borderline needs the documents' texts"):
        find_clusters(sign_dataframe(df.limit(5), cfg), cfg)


def test_dataframe_api_verified_simhash(spark, planted, tmp_path):
    """dedup_dataframe with verified SimHash (the default --method simhash): its candidates' texts are
    signed as MinHash shingle sets to be checked, and that configuration must resolve (it carried
    SimHash's candidate_bits and was refused, whenever there was a candidate). The kept flags and
    representatives are the local engine's."""
    from neardup.engines.spark import dedup_dataframe

    texts = [json.loads(x)["text"] for x in planted.read_text(encoding="utf-8").splitlines()
             if x.startswith('{"id"')][:200]
    df = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "row long, text string")
    cfg = DedupConfig(method="simhash", workers=1, quiet=True)
    out = {r["row"]: r for r in dedup_dataframe(df, cfg, row_col="row").collect()}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    run_dedup([str(src)], str(tmp_path / "local"), cfg)
    local = [json.loads(x) for x in (tmp_path / "local" / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sum(not r["kept"] for r in local) > 0, "no duplicates: the test would show nothing"
    assert [out[i]["kept"] for i in range(len(texts))] == [r["kept"] for r in local]
    assert [out[i]["cluster_row"] for i in range(len(texts))] == [r["cluster"] for r in local]


def test_bad_row_stops_the_run_like_local(spark, finish, planted, tmp_path):
    from neardup.engines.spark import run_spark_dedup
    from neardup.io.formats import InputFormatError

    msgs = []
    for run in (run_dedup, lambda i, o, c: run_spark_dedup(i, o, c, spark=spark)):
        with pytest.raises(InputFormatError) as exc:
            run([str(planted)], str(tmp_path / "err"), _config())
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and "malformed JSON" in msgs[0]
    assert not (tmp_path / "err" / "report.json").exists()


def test_byte_order_mark_and_bad_first_line_like_local(spark, finish, tmp_path):
    """A UTF-8 BOM before the first record: both engines parse line 1 through the same
    function, so the records, the kept bytes (BOM included) and a line-1 error agree."""
    docs = ["the same licence text about permission to copy and modify the software freely"] * 3
    body = "".join(json.dumps({"id": f"d{i}", "text": d}) + "\n" for i, d in enumerate(docs))
    good = tmp_path / "bom.jsonl"
    good.write_bytes(b"\xef\xbb\xbf" + body.encode())
    _both(spark, [good], tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xef\xbb\xbf{oops\n" + body.encode())
    from neardup.engines.spark import run_spark_dedup

    out = tmp_path / "skip"
    run_dedup([str(bad)], str(out / "local"), _config(on_error="skip"))
    run_spark_dedup([str(bad)], str(out / "spark"), _config(on_error="skip"), spark=spark)
    _same_outputs(out / "local", out / "spark")


def test_io_edge_like_local(spark, finish, tmp_path, monkeypatch):
    """Issue 13 on Spark: duplicate ids (raise, and counted skips) and lone surrogates in ids give the
    local engine's messages and outputs; a truncated .gz is an error of the file; a foreign OUTDIR is
    refused untouched; stdin is spooled into the output folder's work area."""
    from neardup.engines.spark import run_spark_dedup
    from neardup.errors import InputFormatError, OutputError

    docs = ["the same licence text about permission to copy and modify the software freely",
            "a text about gardening and tomatoes and basil in the summer heat of the south",
            "the same licence text about permission to copy and modify the software freely today"]
    rows = [{"id": "a", "text": docs[0]}, {"id": "b\ud800", "text": docs[1]}, {"id": "a", "text": docs[2]},
            {"id": 7, "text": docs[2]}]
    src = tmp_path / "ids.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="ascii")
    msgs = []
    for run in (run_dedup, lambda i, o, c: run_spark_dedup(i, o, c, spark=spark)):
        with pytest.raises(InputFormatError) as exc:
            run([str(src)], str(tmp_path / "err"), _config(id_field="id"))
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and f"{src}:3: id 'a' is already the id of {src}:1" in msgs[0]
    rep, _ = _both(spark, [src], tmp_path / "skip", id_field="id", on_error="skip")
    assert rep["counts"]["skipped_records"] == 1 and rep["counts"]["removed"] == 1

    keyed = tmp_path / "keys.parquet"        # keep-key values checked per row, in the same words
    pq.write_table(pa.table({"text": [docs[0], docs[0], docs[1]], "n": ["3", "x", "1"]}), keyed)
    msgs = []
    for run in (run_dedup, lambda i, o, c: run_spark_dedup(i, o, c, spark=spark)):
        with pytest.raises(InputFormatError) as exc:
            run([str(keyed)], str(tmp_path / "kerr"), _config(keep="key", keep_field="n"))
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and "keys.parquet: row 2: keep field 'n' is 'x', not a number" in msgs[0]

    trunc = tmp_path / "t.jsonl.gz"
    trunc.write_bytes(gzip.compress(("".join(json.dumps({"text": d}) + "\n" for d in docs) * 50).encode())[:200])
    with pytest.raises(InputFormatError, match="truncated gzip stream"):
        run_spark_dedup([str(trunc)], str(tmp_path / "tr"), _config(on_error="skip"), spark=spark)

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("mine", encoding="utf-8")
    with pytest.raises(OutputError, match="not a neardup run's output"):
        run_spark_dedup([str(src)], str(mine), _config(id_field="id", on_error="skip"), spark=spark)
    assert os.listdir(mine) == ["notes.md"]

    import io
    data = gzip.compress("".join(json.dumps({"text": d}) + "\n" for d in docs).encode())
    for engine, out in (("local", tmp_path / "in-local"), ("spark", tmp_path / "in-spark")):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        (run_dedup if engine == "local" else lambda i, o, c: run_spark_dedup(i, o, c, spark=spark))(
            ["-"], str(out), _config())
    rep = _same_outputs(tmp_path / "in-local", tmp_path / "in-spark")
    assert rep["inputs"] == ["<stdin>"] and rep["outputs"][0]["output"] == "kept/stdin.jsonl.gz"


def test_console_script_runs_spark_without_an_activated_venv(tmp_path):
    """`.venv/bin/neardup dedup --engine spark` with the venv not on PATH and no PYSPARK_PYTHON: the
    local session's Python workers use the driver's interpreter; with a worker interpreter that
    lacks neardup, the failure is one line naming the worker's error (no Java trace)."""
    import shutil
    import subprocess

    script = Path(sys.executable).with_name("neardup")
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.executable).parent)))
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PYSPARK_SUBMIT_ARGS"] = "--conf spark.sql.shuffle.partitions=4 --conf spark.ui.enabled=false pyspark-shell"
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": f"words of document {i % 7} here and there"}) + "\n"
                           for i in range(40)), encoding="utf-8")
    res = subprocess.run([str(script), "dedup", str(src), "-o", str(tmp_path / "o"), "--engine", "spark", "-q"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads((tmp_path / "o" / "report.json").read_text())["counts"]["kept"] == 7
    other = shutil.which("python3", path="/usr/bin")
    if other is None or subprocess.run([other, "-c", "import neardup"], capture_output=True).returncode == 0:
        pytest.skip("no interpreter without neardup to play a broken worker")
    env["PYSPARK_PYTHON"] = other
    res = subprocess.run([str(script), "dedup", str(src), "-o", str(tmp_path / "o2"), "--engine", "spark", "-q"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("Error: ")]
    assert errors == ["Error: a Spark Python worker failed: ModuleNotFoundError: No module named 'neardup'"], \
        res.stderr[-3000:]
    assert "Traceback" not in res.stderr and not (tmp_path / "o2" / "report.json").exists()


@pytest.mark.parametrize("run", ["minhash", "minhash-containment", "minhash-exact-verify", "minhash-datasketch",
                                 "minhash-parquet-records", "simhash", "simhash-bits-3", "sentences", "exact",
                                 "lines", "lines-paragraph", "substrings", "minhash-spans-lines",
                                 "simhash-spans-substrings-before"])
def test_golden_outputs_on_spark(spark, finish, tmp_path, monkeypatch, run):
    """The golden digests of tests/test_golden.py, from the Spark engine (a run with a span step ends on
    the driver whatever ``finish`` asks: the executors have no span step)."""
    from test_golden import GOLDEN, SPARK, _config, _digest, _write_inputs

    from neardup.engines.spark import run_spark_dedup

    assert run in SPARK
    (tmp_path / "in").mkdir()
    inputs = _write_inputs(tmp_path / "in")
    monkeypatch.chdir(tmp_path / "in")
    run_spark_dedup(inputs, str(tmp_path / "o"), _config(run), spark=spark)
    assert _digest(tmp_path / "o") == json.loads(GOLDEN.read_text(encoding="utf-8"))[run]


def _index_contents(path: Path, method: str) -> dict:
    from neardup.index.disk import open_index

    with open_index(path, readonly=True) as idx:        # (the class of its kind: MinHash, containment, SimHash)
        st = idx.store
        keys, raw = st.fetch_arrays(st.live_ids())
        return {k: bytes(r) for k, r in zip(keys, raw)}


@pytest.mark.parametrize("method,keep,fmt", [("minhash", "first", "jsonl"), ("simhash", "longest", "parquet"),
                                             ("containment", "longest", "jsonl"), ("verified", "first", "jsonl")])
def test_index_day1_then_day2_matches_local(spark, finish, days, tmp_path, method, keep, fmt):
    """``--index`` on Spark: day 1 then day 2 give the local engine's outputs and index contents, and
    (keep=first) keep what one run over both days keeps; a rerun writes the same and adds nothing.
    ``containment``: MinHash with --metric containment, whose index keeps each document's set size;
    ``verified``: verified SimHash, whose index keeps each fingerprint's sketch — on the driver only
    (on the executors: refused in one line, nothing written)."""
    from neardup.engines.spark import run_spark_dedup
    from neardup.errors import ConfigError

    kw = dict(method=method, keep=keep, id_field="id", clusters_format=fmt)
    if method == "containment":
        kw.update(method="minhash", metric="containment")
        method = "minhash"
    if method == "simhash":             # (the classic rule)
        kw["bits"] = 3
    if method == "verified":
        method = kw["method"] = "simhash"
        if finish == "executors":
            with pytest.raises(ConfigError, match="verified SimHash runs where the run finishes on the driver"):
                run_spark_dedup([str(days / "day1.jsonl")], str(tmp_path / "o"),
                                _config(index=str(tmp_path / "i"), **kw), spark=spark)
            assert not (tmp_path / "o").exists() and not (tmp_path / "i").exists()
            return
    reports = {}
    for engine in ("local", "spark"):
        idx = tmp_path / f"idx-{engine}"
        for day in ("day1", "day2"):
            cfg = _config(index=str(idx), **kw)
            out = str(tmp_path / f"{engine}-{day}")
            inputs = [str(days / f"{day}.jsonl")]
            rep = run_dedup(inputs, out, cfg) if engine == "local" else run_spark_dedup(inputs, out, cfg, spark=spark)
            reports[engine, day] = rep
    for day in ("day1", "day2"):
        local, sp = tmp_path / f"local-{day}", tmp_path / f"spark-{day}"
        if fmt == "jsonl":
            _same_outputs(local, sp)
        else:
            assert _files(local).keys() == _files(sp).keys()
            ta, tb = (pq.read_table(root / "clusters.parquet") for root in (local, sp))
            assert ta.schema == tb.schema and ta.equals(tb)
        a, b = reports["local", day]["index"], reports["spark", day]["index"]
        assert {**a, "path": None} == {**b, "path": None}
    assert reports["spark", "day2"]["index"]["removed_by_index"] > 10
    assert _index_contents(tmp_path / "idx-local", method) == _index_contents(tmp_path / "idx-spark", method)
    if fmt == "jsonl":
        d2 = tmp_path / "spark-day2"
        by_index = [json.loads(x) for x in (d2 / "clusters.jsonl").read_text(encoding="utf-8").splitlines()]
        assert sum(1 for r in by_index if r.get("indexed")) == reports["spark", "day2"]["index"]["removed_by_index"]
    if keep == "first" and method == "minhash":
        run_dedup([str(days / "all.jsonl")], str(tmp_path / "all"), _config(**kw))

        def kept(out):
            return {json.loads(x)["id"] for x in (out / "clusters.jsonl").read_text(encoding="utf-8").splitlines()
                    if json.loads(x)["kept"]}

        assert kept(tmp_path / "spark-day1") | kept(tmp_path / "spark-day2") == kept(tmp_path / "all")
        # a rerun of day 2 on Spark: the same outputs, nothing added
        first = (tmp_path / "spark-day2" / "clusters.jsonl").read_bytes()
        before = _index_contents(tmp_path / "idx-spark", method)
        rep = run_spark_dedup([str(days / "day2.jsonl")], str(tmp_path / "spark-day2"),
                              _config(index=str(tmp_path / "idx-spark"), **kw), spark=spark)
        assert rep["index"]["rerun"] and rep["index"]["added"] == 0
        assert (tmp_path / "spark-day2" / "clusters.jsonl").read_bytes() == first
        assert _index_contents(tmp_path / "idx-spark", method) == before


def test_index_refusals_on_spark(spark, days, tmp_path):
    from neardup.engines.spark import run_spark_dedup
    from neardup.errors import ConfigError, InputFormatError

    with pytest.raises(ConfigError, match="local OUTDIR"):
        run_spark_dedup([str(days / "day1.jsonl")], "hdfs://nowhere/out",
                        _config(index=str(tmp_path / "i"), id_field="id"), spark=spark)
    bad = tmp_path / "floats.jsonl"
    bad.write_text('{"id": "a", "text": "one two three four"}\n{"id": 1.5, "text": "five six seven eight"}\n')
    with pytest.raises(InputFormatError) as local:
        run_dedup([str(bad)], str(tmp_path / "o"), _config(index=str(tmp_path / "i2"), id_field="id"))
    with pytest.raises(InputFormatError, match=r"floats.jsonl:2: id 1.5 cannot name") as sp:
        run_spark_dedup([str(bad)], str(tmp_path / "o"), _config(index=str(tmp_path / "i2"), id_field="id"),
                        spark=spark)
    assert str(sp.value) == str(local.value)
    assert not (tmp_path / "o").exists() and not (tmp_path / "i2").exists()   # a failed first run leaves neither



@pytest.mark.parametrize("verify, budget", [("minhash", None), ("none", None), ("minhash", 0)])
def test_unverified_and_estimated_pairs_match_local(spark, finish, planted, tmp_path, monkeypatch, verify, budget):
    """--verify minhash (the estimates decide) and none (every candidate is an edge) on Spark: the
    local engine's outputs, with the candidates and estimates on the driver (the signatures fit its
    budget) and, with a budget of 0, by the shuffle path on the executors."""
    import neardup.engines.spark.verify as spark_verify

    if budget is not None:
        monkeypatch.setattr(spark_verify, "DRIVER_SET_BYTES", budget)
    rep, _ = _both(spark, [planted], tmp_path, verify=verify, on_error="skip", pairs=True)
    c = rep["counts"]
    assert rep["parameters"]["verify"] == verify and c["removed"] > 50 and c["candidate_pairs"] > 0


@pytest.mark.parametrize("verify", ["borderline", "exact"])
def test_pairs_decided_on_the_executors_match_local(spark, planted, tmp_path, monkeypatch, verify):
    """Past the driver's budget (DRIVER_SET_BYTES, a quarter of its memory) the pairs checked exactly
    (the borderline band, --verify exact) are decided on the executors, both documents' sets joined to
    each pair: the same outputs as the driver's chunks and the local engine."""
    import neardup.engines.spark.driver as spark_driver

    monkeypatch.setattr(spark_driver, "FINISH_BYTES", 0)
    import neardup.engines.spark.verify as spark_verify

    monkeypatch.setattr(spark_verify, "DRIVER_SET_BYTES", 0)
    rep, _ = _both(spark, [planted], tmp_path, verify=verify, on_error="skip", threshold=0.7, pairs=True)
    ra = json.loads((tmp_path / "local" / "report.json").read_text(encoding="utf-8"))
    if verify == "borderline":
        assert ra["borderline"] == rep["borderline"] and rep["borderline"]["pairs"] > 0
    assert rep["counts"]["removed"] > 20


@pytest.mark.parametrize("id_field", [None, "id"])
def test_a_batch_of_json_lines_signs_the_same_parsed_whole_or_line_by_line(monkeypatch, id_field):
    """The Spark signer parses a batch of JSON lines in one pass (the local engine's block parser)
    when it can; its output batch is the one the line-by-line parser gives, and a batch with a line
    the pass refuses still goes line by line."""
    from neardup.config import DedupConfig
    from neardup.engines.spark import read as R
    from neardup.engines.spark.columns import _cfg_json
    from neardup.io.formats import InputSpec

    spec = InputSpec("/nowhere/x.jsonl", "jsonl")
    cfg = _cfg_json(DedupConfig(id_field=id_field).resolved())
    lines = [json.dumps({"id": i, "text": t, "m": {"text": 1}}, ensure_ascii=i % 2 == 0).encode()
             for i, t in enumerate(["the quick brown fox jumps over the lazy dog", "caf\u00e9 \U0001F600 \u65e5\u672c",
                                    "", "a \"quoted\" line\twith\\escapes"])]

    def batch_of(raws):
        return pa.RecordBatch.from_arrays([pa.array(range(5, 5 + len(raws)), pa.int64()),
                                           pa.array(raws, pa.binary())], names=["row", "raw"])

    def run(raws, bom=False):
        return pa.Table.from_batches(list(R._parse_sign(iter([batch_of(raws)]), "jsonl", spec, 5, -1, cfg, "text",
                                                        id_field, None, "first", bom)))

    whole_calls = []
    real = R._parse_block
    monkeypatch.setattr(R, "_parse_block", lambda *a: whole_calls.append(1) or real(*a))
    for raws, bom, taken in ((lines, False, True), (lines, True, True),
                             (lines + [b'{"id": 9, "text": null}'], False, False),
                             (lines + [b"not json"], False, False)):
        whole_calls.clear()
        fast = run(raws, bom)
        assert whole_calls == [1]
        assert (real(batch_of(raws), spec, 5, "text", id_field, bom) is not None) == taken
        monkeypatch.setattr(R, "_parse_block", lambda *a: None)
        slow = run(raws, bom)
        monkeypatch.setattr(R, "_parse_block", lambda *a: whole_calls.append(1) or real(*a))
        assert fast.equals(slow), (raws, bom)


@pytest.mark.parametrize("bom, final_newline, crlf", [(False, True, False), (True, False, True)])
def test_blocks_cut_on_the_driver_hold_whole_lines(tmp_path, bom, final_newline, crlf):
    """A run finished on the driver re-reads a JSON lines file by the local engine's blocks, cut from
    each signed line's byte count (the signer's ``nbytes``): the blocks tile the file, each holds
    whole lines (its line count is its newlines), its first line is the one numbered; a byte-order
    mark, a final line without its newline and CRLF line ends count. Counts that do not add up to
    the file's size give no blocks (the texts are then re-read line by line)."""
    from neardup.engines.spark import read as R
    from neardup.engines.spark.driver import _blocks
    from neardup.engines.spark.read import _Numbering
    from neardup.io.formats import InputSpec

    end = b"\r\n" if crlf else b"\n"
    lines = [json.dumps({"text": f"line {i} " + "w" * (i % 7)}).encode() for i in range(53)]
    data = (b"\xef\xbb\xbf" if bom else b"") + end.join(lines) + (end if final_newline else b"")
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    # what Spark's line reader gives: lines split on "\n" (a "\r" kept), the byte-order mark dropped
    raws = data[3:].split(b"\n") if bom else data.split(b"\n")
    if final_newline:
        raws = raws[:-1]
    start = 7
    rows = list(range(start, start + len(raws)))
    batch = pa.RecordBatch.from_arrays([pa.array(rows, pa.int64()), pa.array(raws, pa.binary())], names=["row", "raw"])
    last = -1 if final_newline else rows[-1]
    nbytes = R._line_bytes(batch, "jsonl", start, last, bom).to_numpy()
    assert int(nbytes.sum()) == len(data)
    num = _Numbering([0, start], [start, len(raws)], {})
    spec = InputSpec(str(path), "jsonl")
    other = InputSpec(str(tmp_path / "absent.jsonl"), "jsonl")
    counts = np.concatenate([np.ones(start, np.int64), nbytes])
    blocks = _blocks([other, spec], num, counts, max_lines=10)[1]
    assert len(blocks) == 6
    at, line = 0, 1
    for first, offset, length, n in blocks:
        assert (first, offset) == (line, at) and n <= 10
        piece = data[offset:offset + length]
        assert piece.count(b"\n") == n or (not final_newline and offset + length == len(data)
                                             and piece.count(b"\n") == n - 1)
        at, line = offset + length, line + n
    assert at == len(data) and line == len(raws) + 1
    counts[start] += 1                     # a count off by one byte: no blocks for that input
    assert 1 not in _blocks([other, spec], num, counts, max_lines=10)


def test_resume_on_spark_from_its_own_or_the_local_engines_checkpoint(spark, planted, tmp_path, monkeypatch, capsys):
    """--resume on Spark: a run stopped after pass 1 left its checkpoint beside OUTDIR (the local
    engine's format: the engines' checkpoints are one); the next run with --resume signs nothing
    (Spark's read is made to fail) and writes the local engine's outputs; the checkpoint goes once
    they are in place. A local run's checkpoint serves a Spark run the same way. A run finished on
    the executors keeps none and says so; a URI OUTDIR and dedup_dataframe refuse --resume."""
    import neardup.dedup.resume as resume
    import neardup.engines.spark.driver as spark_driver
    import neardup.engines.spark.run as spark_run
    from neardup.engines.spark import dedup_dataframe, run_spark_dedup
    from neardup.errors import ConfigError

    cfg = _config(on_error="skip", resume=True)
    run_dedup([str(planted)], str(tmp_path / "local"), _config(on_error="skip"))
    orig = resume.save

    def save_then_stop(*a, **k):
        assert orig(*a, **k)
        raise KeyboardInterrupt

    for engine in ("spark", "local"):
        out = tmp_path / f"from-{engine}"
        monkeypatch.setattr(resume, "save", save_then_stop)
        with pytest.raises(KeyboardInterrupt):
            if engine == "spark":
                run_spark_dedup([str(planted)], str(out), cfg, spark=spark)
            else:
                run_dedup([str(planted)], str(out), cfg)
        monkeypatch.setattr(resume, "save", orig)
        ck = Path(resume.checkpoint_dir(str(out)))
        assert ck.is_dir() and not (out / "report.json").exists()
        with monkeypatch.context() as m:
            m.setattr(spark_run, "_read_signed", lambda *a, **k: pytest.fail("signed again"))
            report = run_spark_dedup([str(planted)], str(out), cfg, spark=spark)
        assert report["spark"]["signed_rows"] == "checkpoint" and "resume_load" in report["timings"]
        _same_outputs(tmp_path / "local", out)
        assert not ck.exists()

    monkeypatch.setattr(spark_driver, "FINISH_BYTES", 0)      # on the executors: no checkpoint, one note
    capsys.readouterr()
    run_spark_dedup([str(planted)], str(tmp_path / "executors"), _config(on_error="skip", resume=True, quiet=False),
                    spark=spark)
    assert "keeps no checkpoint" in capsys.readouterr().err
    assert not Path(resume.checkpoint_dir(str(tmp_path / "executors"))).exists()
    _same_outputs(tmp_path / "local", tmp_path / "executors")
    with pytest.raises(ConfigError, match="local OUTDIR"):
        run_spark_dedup([str(planted)], "hdfs://nowhere/out", cfg, spark=spark)
    with pytest.raises(ConfigError, match="dedup_dataframe"):
        dedup_dataframe(spark.createDataFrame([("a b c",)], "text string"), cfg)


def _same_span_outputs(local: Path, spark_out: Path) -> dict:
    """A run with a span step: every output file byte for byte (kept rows, edits.jsonl, clusters when a
    document method ran too), the report's counts and spans section; returns the Spark report."""
    a, b = _files(local), _files(spark_out)
    assert sorted(a) == sorted(b) and "edits.jsonl" in a
    for name in a:
        assert a[name] == b[name], name
    ra, rb = (json.loads((root / "report.json").read_text(encoding="utf-8")) for root in (local, spark_out))
    assert ra["counts"] == rb["counts"] and ra["spans"] == rb["spans"] and ra["skipped"] == rb["skipped"]
    assert rb["engine"] == "spark" and rb["spark"]["finished_on"] == "driver"
    return rb


def _shuffled_tables(monkeypatch, seed: int) -> None:
    """The signed rows reach the driver in pieces of 17 rows in a shuffled order (what partitions packed
    from several files give), so nothing may rely on their order."""
    import neardup.engines.spark.driver as spark_driver

    real = spark_driver._signed_tables

    def shuffled(signed, cols, need, folder):
        tables, how = real(signed, cols, need, folder)

        def pieces(columns):
            got = [t.slice(i, 17) for t in tables(columns) for i in range(0, t.num_rows, 17)]
            random.Random(seed).shuffle(got)
            return got
        return pieces, how
    monkeypatch.setattr(spark_driver, "_signed_tables", shuffled)


SPAN_RUNS = {"lines": {"method": "lines", "min_docs": 2}, "paragraph": {"method": "lines", "unit": "paragraph"},
             "substrings": {"method": "substrings", "min_length": 40},
             "minhash+lines-before": {"spans": "lines", "spans_order": "before", "keep": "longest"},
             "simhash+substrings": {"method": "simhash", "spans": "substrings", "min_length": 40}}


@pytest.mark.parametrize("run", list(SPAN_RUNS))
def test_span_methods_match_local_in_any_order(spark, finish, planted, tmp_path, monkeypatch, run):
    """Repeated lines, paragraphs and substrings on Spark (signed on the executors, found on the driver)
    give the local engine's kept rows, edits.jsonl and report over the planted corpus (bad rows
    skipped, ids checked unique), with the signed rows arriving in pieces in a shuffled order and the
    input cut into several splits."""
    from neardup.engines.spark import run_spark_dedup

    _shuffled_tables(monkeypatch, seed=len(run))
    cfg = _config(on_error="skip", id_field="id", **SPAN_RUNS[run])
    run_dedup([str(planted)], str(tmp_path / "local"), cfg)
    old = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(16 * 1024))
        rep = run_spark_dedup([str(planted)], str(tmp_path / "spark"), cfg, spark=spark)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", old)
    _same_span_outputs(tmp_path / "local", tmp_path / "spark")
    assert rep["counts"]["removed_spans"] > 0 and rep["counts"]["accounted"]


def test_span_methods_on_every_input_format_and_repeated_ids(spark, tmp_path, monkeypatch):
    """The golden inputs (JSON lines, gzip JSON lines, CSV with quoted newlines, Parquet, a folder) with
    a repeated id skipped (``--on-error skip``): the local engine's outputs; without skip, its line."""
    from test_golden import _write_inputs

    from neardup.engines.spark import run_spark_dedup
    from neardup.errors import InputFormatError

    (tmp_path / "in").mkdir()
    inputs = _write_inputs(tmp_path / "in")
    with open(tmp_path / "in" / "a.jsonl", "a", encoding="utf-8") as fh:       # a1's id again
        fh.write(json.dumps({"id": "a1", "text": "a line repeated\nand a line repeated"}) + "\n")
    monkeypatch.chdir(tmp_path / "in")
    for kw in ({"method": "lines"}, {"method": "substrings", "min_length": 30}):
        method = kw["method"]
        cfg = _config(id_field="id", on_error="skip", **kw)
        run_dedup(inputs, str(tmp_path / method / "local"), cfg)
        run_spark_dedup(inputs, str(tmp_path / method / "spark"), cfg, spark=spark)
        rep = _same_span_outputs(tmp_path / method / "local", tmp_path / method / "spark")
        assert any("repeats the id" in s["reason"] for s in rep["skipped"])
    msgs = []
    for run in (run_dedup, lambda i, o, c: run_spark_dedup(i, o, c, spark=spark)):
        with pytest.raises(InputFormatError) as exc:
            run(inputs, str(tmp_path / "err"), _config(method="lines", id_field="id"))
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and "already the id of" in msgs[0]
    assert not (tmp_path / "err").exists()


def test_span_methods_hostile_use_on_spark(spark, planted, tmp_path):
    """A malformed row stops a span run with the local engine's line (nothing written); a URI OUTDIR is
    refused before any Spark job (the span step writes from the driver); the DataFrame steps name
    where the span step runs; ``--resume`` is refused as on the local engine."""
    from neardup.engines.spark import dedup_dataframe, run_spark_dedup
    from neardup.errors import ConfigError, InputFormatError

    msgs = []
    for run in (run_dedup, lambda i, o, c: run_spark_dedup(i, o, c, spark=spark)):
        with pytest.raises(InputFormatError) as exc:
            run([str(planted)], str(tmp_path / "err"), _config(method="substrings"))
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1] and "malformed JSON" in msgs[0]
    assert not (tmp_path / "err").exists()
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup()
    with pytest.raises(ConfigError, match="needs a local .or mounted. OUTDIR; got -o hdfs://nn/out"):
        run_spark_dedup([str(planted)], "hdfs://nn/out", _config(spans="lines"), spark=spark)
    with pytest.raises(ConfigError, match="must be local .or mounted. paths; got hdfs://nn/in.jsonl"):
        run_spark_dedup([str(planted), "hdfs://nn/in.jsonl"], str(tmp_path / "remote"), _config(method="lines"),
                        spark=spark)
    assert spark.sparkContext.statusTracker().getJobIdsForGroup() == jobs and not (tmp_path / "remote").exists()
    df = spark.createDataFrame([("a\nb",), ("a\nb",)], "text string")
    with pytest.raises(ConfigError, match="DataFrame steps have none"):
        dedup_dataframe(df, _config(method="lines"))
    with pytest.raises(ConfigError, match="resume"):
        run_spark_dedup([str(planted)], str(tmp_path / "r"), _config(method="lines", resume=True), spark=spark)
    assert not (tmp_path / "r").exists()


def test_spans_before_cut_on_the_executors_through_the_cli(spark, tmp_path):
    """``--spans lines --spans-order before`` through `neardup dedup --engine spark`: the lines a document
    shares with an earlier one are cut before it is signed (on the executors), so documents that are
    near-duplicates only through a shared header are not; with ``after`` they are — as on the local
    engine, both ways."""
    header = "\n".join(f"Copyright line {i} of the shared header text, all rights reserved by them" for i in range(6))
    docs = [f"{header}\nbody {i} " + " ".join(f"w{i}x{j}" for j in range(2)) for i in range(4)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"text": t}) + "\n" for t in docs), encoding="utf-8")
    removed = {}
    for order in ("before", "after"):
        for engine in ("local", "spark"):
            res = CliRunner().invoke(main, ["dedup", str(src), "-o", str(tmp_path / order / engine), "--engine",
                                            engine, "-q", "--spans", "lines", "--spans-order", order, "--no-html"])
            assert res.exit_code == 0, res.output
        rep = _same_span_outputs(tmp_path / order / "local", tmp_path / order / "spark")
        removed[order] = rep["counts"]["removed"]
    assert removed == {"before": 0, "after": 3}


def test_resume_after_the_spark_driver_is_killed(spark, planted, tmp_path):
    """kill -9 of a Spark run's driver (and its JVM) once pass 1 is checkpointed: OUTDIR holds nothing,
    the checkpoint stays; `--resume` then signs nothing and writes the local engine's outputs, and
    the checkpoint goes."""
    import signal
    import subprocess

    import neardup.dedup.resume as resume

    out = tmp_path / "out"
    run_dedup([str(planted)], str(tmp_path / "local"), _config(on_error="skip"))
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_SUBMIT_ARGS": "--conf spark.sql.shuffle.partitions=4 --conf spark.ui.enabled=false pyspark-shell"}
    cmd = [sys.executable, "-m", "neardup", "dedup", str(planted), "-o", str(out), "--engine", "spark", "--resume",
           "--on-error", "skip", "--no-html", "--progress", "json"]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    killed = False
    try:
        for line in proc.stderr:       # the first stage after the checkpoint: pass 1 is on disk
            if line.startswith("{") and json.loads(line).get("stage") == "identical":
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
                break
    finally:
        if not killed:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert killed and proc.returncode == -signal.SIGKILL
    ck = Path(resume.checkpoint_dir(str(out)))
    assert ck.is_dir() and not (out / "report.json").exists() and not (out / "kept").exists()
    res = CliRunner().invoke(main, ["dedup", str(planted), "-o", str(out), "--engine", "spark", "--resume",
                                    "--on-error", "skip", "--no-html", "-q"])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["spark"]["signed_rows"] == "checkpoint" and "resume_load" in report["timings"]
    _same_outputs(tmp_path / "local", out)
    assert not ck.exists()


@pytest.mark.parametrize("method", ["lines", "substrings"])
def test_span_payload_cut_into_pieces_and_read_back_by_chunks(method):
    """A batch's span payload (the local signer's) goes into binary columns cut into pieces of at most
    ``limit`` bytes (a batch of short lines can pass what one Arrow binary array holds), and comes
    back, chunk by chunk of the table, as the same units or bytes in the same order — null rows
    (not documents) anywhere, empty texts, non-ASCII, a lone surrogate."""
    from neardup.dedup.spans import make_signer
    from neardup.engines.spark.columns import _span_arrays, _span_payloads
    from neardup.features.units import Units

    texts = ["a b\nc\n\nd", "", "x\ny\ny\n", "中文\n文本\n", "solo \ud800 x", "", "p\n\nq r\n\n\ns"]
    valid = np.array([True, False, True, True, False, True, True, True, False, True])
    got_payload = make_signer(_config(method=method).resolved())(texts)[0]
    want_units, want_nb = got_payload
    for limit in (1, 17, 60, 1 << 30):
        pieces = _span_arrays(got_payload, method, valid, limit)
        assert [p[0] for p in pieces][0] == 0 and pieces[-1][1] == valid.shape[0]
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
        assert all(p[2].nbytes <= limit + 4 * (p[1] - p[0] + 1) + 8 or p[1] - p[0] == 1 for p in pieces)
        table = pa.table({"span": pa.chunked_array([p[2] for p in pieces]),
                          "tbytes": pa.chunked_array([p[3] for p in pieces])}).filter(pa.array(valid))
        back = list(_span_payloads(table.column("span"), table.column("tbytes"), method))
        assert np.concatenate([nb for _, nb in back]).tolist() == want_nb.tolist()
        if method == "lines":
            base, parts = 0, []
            for u, nb in back:
                parts.append((base, u))
                base += nb.shape[0]
            units = Units.concat(parts)
            for k in ("hashes", "docs", "starts", "ends", "tokens", "digests"):
                assert getattr(units, k).tolist() == getattr(want_units, k).tolist(), k
        else:
            assert b"".join(b.tobytes() for b, _ in back) == want_units[:int(want_nb.sum())].tobytes()
