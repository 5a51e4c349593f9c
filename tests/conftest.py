import gzip
import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# runs compile their kernels inside themselves, as before the first-run warm-up existed: a test that
# breaks a stage on purpose must meet its own run, never the warm-up's (tests/test_warmup.py turns it on)
os.environ["NEARDUP_WARMUP"] = "0"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "corpora").is_dir():
        pytest.skip("../shared (reference corpora) is not beside the repository")
    return SHARED


@pytest.fixture(scope="session")
def chinese_pages(shared) -> list[tuple[str, str]]:
    """(name, text) of every Chinese document of ../shared: the man pages (simplified and
    traditional) and yanyiwu/simhash's test documents."""
    root = shared / "corpora"
    files = sorted((root / "manpages_zh_sample").glob("zh_*/*")) + sorted(
        (root / "yanyiwu_simhash_testdata").glob("news_content*"))
    return [(str(p.relative_to(root)), p.read_text(encoding="utf-8")) for p in files]


@pytest.fixture(scope="session")
def days(tmp_path_factory) -> Path:
    """The demo corpus (550 real copyright files with many near-copies) cut into two days, and whole."""
    folder = tmp_path_factory.mktemp("days")
    demo = ROOT / "examples" / "data" / "debian_copyright.jsonl.gz"
    lines = gzip.open(demo, "rt", encoding="utf-8").read().splitlines(keepends=True)
    (folder / "day1.jsonl").write_text("".join(lines[:275]), encoding="utf-8")
    (folder / "day2.jsonl").write_text("".join(lines[275:]), encoding="utf-8")
    (folder / "all.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def skip_unless_table_unicode() -> None:
    """Skip a test that compares the shipped Unicode tables (the kernels' normalisation) with the
    running Python's ``unicodedata`` when the two Unicode versions differ: the kernels follow the
    tables' version on every Python, on purpose."""
    import unicodedata
    from importlib.resources import files

    import numpy as np

    with np.load(files("neardup.data").joinpath("unicode_casefold.npz").open("rb")) as data:
        version = str(data["unicode_version"])
    if unicodedata.unidata_version != version:
        pytest.skip(f"Python's Unicode {unicodedata.unidata_version} is not the tables' {version}")


def chi2_quantile(p_z: float, dof: int) -> float:
    """Wilson–Hilferty approximation of the chi-square quantile at standard-normal score z."""
    return dof * (1 - 2 / (9 * dof) + p_z * math.sqrt(2 / (9 * dof))) ** 3


@pytest.fixture
def open_tmp():
    """A temporary folder every user can traverse (pytest's own is private to its owner), for tests
    that drop root to see file permissions enforced."""
    d = Path(tempfile.mkdtemp(prefix="neardup-test-"))
    os.chmod(d, 0o755)
    yield d
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            try:
                os.chmod(os.path.join(root, name), 0o755, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    shutil.rmtree(d, ignore_errors=True)
