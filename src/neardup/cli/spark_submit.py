"""The file to give ``spark-submit`` (or run as ``python -m neardup.cli.spark_submit``):

    spark-submit --master yarn "$(python -c 'import neardup.cli.spark_submit as m; print(m.__file__)')" \
        hdfs:///corpus/part-*.jsonl.gz -o hdfs:///corpus-dedup/ [the options of neardup dedup]

runs ``neardup dedup --engine spark`` on the session spark-submit provides. It is a file of its own,
importing only the command line, so that the engine module is loaded once (run as ``__main__``, a
module importing the CLI that imports it back would be loaded twice).
"""
import sys

from neardup.cli import main


def run(argv: list[str] | None = None):
    args = list(sys.argv[1:] if argv is None else argv)
    return main(["dedup", "--engine", "spark", *args], prog_name="neardup.cli.spark_submit")


if __name__ == "__main__":  # pragma: no cover
    run()
