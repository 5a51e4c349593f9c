import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def shared() -> Path:
    if not (SHARED / "corpora").is_dir():
        pytest.skip("../shared (reference corpora) is not beside the repository")
    return SHARED


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
