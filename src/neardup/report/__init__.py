"""HTML report for ``neardup dedup``: ``render_html(report)`` and ``write_html(report, path)``.

The page is self-contained (inline CSS and SVG charts drawn here, no scripts, fonts or links to
fetch), so it opens offline and prints as it shows.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .html import render_html

__all__ = ["render_html", "write_html"]


def write_html(report: dict, path) -> None:
    """Render ``report`` and write it to ``path`` atomically (temp file in the same folder, then replace)."""
    path = Path(path)
    page = render_html(report)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # a lone surrogate (from a JSON escape or an undecodable file name) is shown as \uXXXX
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as f:
            f.write(page)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
