"""``neardup dedup --engine spark``: the local engine's clusters, computed on Apache Spark.

The local engine (:mod:`neardup.engines.local`) holds every signature in one process. This
engine runs the same algorithm as DataFrame operations, so a corpus is limited by the cluster,
not by one machine; for the same input and parameters it writes the same ``clusters.jsonl``,
the same kept rows and the same report counts.

**Two ways to finish.** Spark always reads, numbers and signs the rows (stages 1–2 below: the work
that grows with the text). When the OUTDIR and the inputs are local paths and the signatures fit the
driver's budget (a quarter of ``spark.driver.memory``, at most 4 GB: a million documents at k = 128
take 0.5 GB), they are collected in one job and the local engine's own steps finish the run on the
driver (:mod:`.driver`, :func:`neardup.engines.local.run.finish_run`) — no rule after signing is
written twice, and a run is two Spark jobs. Past the budget (or for a URI OUTDIR, or
:func:`dedup_dataframe`) stages 3–8 run on the executors:

Stages (every step is a DataFrame operation; only counts, a few histograms and the report's
sample pairs reach the driver):

1. **Read and number.** Each input is read by Spark (JSONL and text lines with the text source,
   line separator ``\\n``; Parquet with the Parquet source) or, for formats whose rows Spark
   cannot cut the way Python does (CSV with quoted newlines, directories of files, ``.zst``), by
   neardup's own reader inside one task per file. Row numbers are those of the local engine:
   0, 1, 2, … over all rows of all inputs in input order (blank and broken lines included).
   Each row carries (input, start of its file split, ``monotonically_increasing_id``); the ids
   of one split are consecutive, the splits of a file are ordered by their byte offset, so one
   small aggregation (rows and smallest id per split, one record per split) gives every split
   its first row number and a broadcast join numbers the rows — no sort, no dependence on how
   Spark packs splits into partitions, the same numbers on every run and partitioning.
2. **Sign** (``mapInArrow``): each Arrow batch of texts goes through the same signing function
   as the local engine's workers (:func:`neardup.dedup.signing.make_signer`: the compiled
   shingling and MinHash kernels), giving the signature (binary: k little-endian uint32), the empty
   flag, the length and the row key of the whole signature.
   The signed table is hash-partitioned by row and persisted; later joins on a row number
   shuffle only the other side.
3. **Identical signatures**: grouped by their 64-bit row key (the local kernel
   :func:`neardup.kernels.lsh.row_keys`), linked to the smallest row of the group after
   confirming byte equality — the local engine's rule, collisions included.
4. **LSH candidates** among the distinct non-empty rows: band keys (the local kernel
   ``band_keys``) exploded to (band, key, row); per (band, key) bucket of m rows, all pairs when
   m ≤ 64, otherwise a star from the smallest row (the local ``bucket_pairs`` rule); deduplicated.
5. **Verification**: both signatures joined to each candidate; the estimate is computed with
   the local :func:`neardup.sketches.minhash.jaccard_rows` (or containment from it) in
   ``mapInArrow``; pairs ≥ t are kept.
6. **Connected components** by alternating large-star / small-star rounds (Kiveris et al.,
   *Connected Components in MapReduce and Beyond*, 2014) until the edge set is a forest of
   stars around the smallest row of each component; label = smallest row, like the local
   union–find.
7. **Representatives.** ``--linkage components``: per component the largest keep-policy score
   (ties: smallest row), the similarity of each member to it with the same kernel, and the
   ``--max-drift`` split-off (members below t − δ re-clustered among themselves, repeatedly) as
   DataFrame rounds. ``--linkage bounded`` (the local default) merges pairs most-similar first
   inside one component, never across: each multi-row component is finished by the local
   :func:`neardup.clusters.build_clusters` itself in ``applyInArrow`` (a component must fit in
   one task's memory: its rows' signatures and pairs).
8. **Outputs**: ``clusters.jsonl`` records formatted on the executors, sorted by row; kept rows
   re-read from each input, anti-joined with the removed rows, sorted and written in the
   input's format. For a local OUTDIR the part files are merged into the local engine's single
   files (``kept/<input name>``, ``clusters.jsonl``); for a URI OUTDIR (``hdfs://``, ``s3a://``,
   ``abfss://``, ``dbfs:/``, ``file://``) they stay Spark part-file folders (a CSV's header row in
   ``_header.csv`` beside its parts).

With ``--index IDX`` (a local or mounted folder): after signing, each executor opens IDX read-only
and probes its rows (the local engine's probe); the matched documents (at most one per new row,
signatures only) are gathered on the driver and join the clustering as rows −m … −1 — first in row
order, never linked to each other, winning the keep policy — exactly the local engine's fixed
rows. After the outputs are staged, the kept rows' ids and signatures are gathered on the driver
and added to IDX as one segment with the run's record (:mod:`neardup.dedup.incremental`).

Entry points: :func:`run_spark_dedup` (what the CLI calls), :func:`dedup_dataframe` (a DataFrame
in, the DataFrame with cluster columns out), the building blocks :func:`sign_dataframe` and
:func:`find_clusters`, and ``python -m neardup.cli.spark_submit INPUT... -o OUT [options]``
(the options of ``neardup dedup``; also a file for ``spark-submit``). See
``benchmarks/SPARK.md`` for cluster deployment.

Each input path is one file (or a local directory); for corpora of many shards read them into one
DataFrame and call :func:`dedup_dataframe`. Known textual differences: Spark's line reader drops a UTF-8
byte-order mark at the start of a file (restored for local plain and .gz files, not for URIs), and
the JSON error position of a truncated final line of a *compressed* file may be reported one line
later (the driver cannot see whether such a file ends with a newline without decompressing it).

Modules: :mod:`.read` (1–2), :mod:`.driver` (the finish on the driver), :mod:`.graph` (3–7),
:mod:`.write` (8), :mod:`.index` (``--index``), :mod:`.run` (the run, the report), over
:mod:`.columns` (Arrow ↔ NumPy on the executors) and :mod:`.session`. Every rule they apply is a
function of :mod:`neardup.dedup`.
"""
try:
    import pyarrow  # noqa: F401  (probes: is the spark extra installed)
    import pyspark.sql  # noqa: F401  (as above)
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"the Spark engine needs PySpark >= 4.0 ({_exc})") from _exc
try:
    import pandas  # noqa: F401  (PySpark's mapInArrow refuses to run without it)
except ImportError as _exc:  # pragma: no cover
    raise ImportError(f"PySpark's Arrow functions (mapInArrow) need pandas >= 2.2 ({_exc})") from _exc

# isort: split
from .graph import SparkClusters, find_clusters
from .read import number_rows, sign_dataframe
from .run import dedup_dataframe, run_spark_dedup

__all__ = ["SparkClusters", "dedup_dataframe", "find_clusters", "number_rows", "run_spark_dedup",
           "sign_dataframe"]
