import math
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
