"""The version, from the installed package's metadata (pyproject.toml is the one place it is set)."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("neardup")
except PackageNotFoundError:  # pragma: no cover  (a source tree on sys.path, not installed)
    __version__ = "0+unknown"
