"""A griffe extension for the API reference: neardup's docstrings are written with Sphinx's
cross-reference roles (:func:`~neardup.x.y`, :class:`Foo`, :mod:`.bar`) and reStructuredText's
literal blocks (a paragraph ending in ``::``). mkdocstrings renders Markdown, where those roles
would show as raw text, so each role becomes a code span of its target (the last name for ``~``)
and ``::`` a plain colon before the (already indented) block. Loaded by mkdocs.yml's mkdocstrings
options; not part of the package."""
from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref|term):`(~?)([^`]+)`")


def _target(match: re.Match) -> str:
    short, text = match.group(1), match.group(2).strip()
    explicit = re.fullmatch(r"(.+?)\s*<([^>]+)>", text)      # :ref:`words <target>`: the words
    if explicit:
        return f"`{explicit.group(1)}`"
    text = text.lstrip("!")
    if short:
        text = text.rsplit(".", 1)[-1]
    return f"`{text}`"


def markdown(text: str) -> str:
    """A docstring's reStructuredText roles and literal-block markers as Markdown."""
    text = _ROLE.sub(_target, text)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.rstrip().endswith("::") and not line.rstrip().endswith(":::"):
            stripped = line.rstrip()[:-2].rstrip()
            lines[i] = (stripped + ":") if stripped else ""
    return "\n".join(lines)


class SphinxRoles(griffe.Extension):
    """Rewrite every loaded object's docstring (before mkdocstrings parses it)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
