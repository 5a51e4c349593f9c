"""No import circles among neardup's modules (done-means of the redesign): lint-imports holds the
layers (scripts/test.sh runs it); this holds the modules inside each layer. Every import counts,
those inside functions and under ``TYPE_CHECKING`` too — a lazy import does not make a circle go
away. The strongly connected components of the import graph (Tarjan) must all be single modules."""
from __future__ import annotations

import sys

import pytest

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the test extra)")


def _cycles(imports: dict) -> list[list[str]]:
    """The strongly connected components of more than one module of the graph ``imports`` (module →
    the modules it imports)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    out: list = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in imports.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(imports):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set(), "c": {"c"}}) == []


def test_no_import_circles():
    graph = grimp.build_graph("neardup")
    imports = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    assert _cycles(imports) == []
