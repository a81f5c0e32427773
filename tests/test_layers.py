"""Layer rules that import-linter cannot state: no private helper is imported across modules."""

from __future__ import annotations

import ast
from pathlib import Path

import biaslens

SRC = Path(biaslens.__file__).parent


def test_no_private_helper_is_imported_from_another_module():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("biaslens"):
                found += [f"{path.relative_to(SRC)}:{node.lineno} {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, found


def test_model_folder_maps_the_embedded_name_only(monkeypatch, tmp_path):
    import biaslens.models.embedded as embedded
    from biaslens.models import EMBEDDED_NAME, model_folder

    monkeypatch.setattr(embedded, "embedded_model_dir", lambda: tmp_path / "converted")
    assert model_folder(EMBEDDED_NAME) == str(tmp_path / "converted")
    assert model_folder("org/some-model") == "org/some-model"


def test_suites_draw_no_figures_and_write_no_html():
    """Figures and pages are the report layer's (report/compare.py for ``biaslens compare``)."""
    drawing = {"subplots", "figure_from_matplotlib", "render_report", "render_card"}
    found = []
    for path in sorted((SRC / "suites").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("biaslens", "matplotlib"):
                found += [f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names
                          if a.name in drawing or (node.module or "").startswith("matplotlib")]
            elif isinstance(node, ast.Import):
                found += [f"{path.name}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("matplotlib")]
    assert not found, found


def test_compare_writes_its_files_atomically(tmp_path, monkeypatch):
    """metrics.json and report.html go through the atomic-write helper."""
    import json

    import biaslens.fileio as fileio
    from biaslens.comparison.runs import compare_runs

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"suite": "redditbias", "model": "m", "split": "test",
                                                  "bias_types": ["gender"], "gender": {"t": -1.0, "p": 0.3,
                                                                                      "n_pairs": 10}}))
    written = []
    real = fileio.atomic_path

    def spy(target):
        written.append(Path(target).name)
        return real(target)

    monkeypatch.setattr(fileio, "atomic_path", spy)
    compare_runs([str(run)], tmp_path / "cmp")
    assert {"metrics.json", "report.html"} <= set(written)


def import_cycles() -> list[list[str]]:
    """Each group of src/ modules that import one another in a circle (module-level, function-level
    and TYPE_CHECKING imports alike), found with grimp (import-linter's graph) and Tarjan's strongly
    connected components; each group named by one circle through it, with the importing lines."""
    import grimp

    graph = grimp.build_graph("biaslens", cache_dir=None)
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in sorted(graph.modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in adj:  # iterative Tarjan: no recursion limit on a deep graph
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(adj[node]):
                work.append((node, i + 1))
                nxt = adj[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    named = []
    for group in groups:
        first = group[0]
        back = next(m for m in adj[first] if m in group)
        chain = [first, *graph.find_shortest_chain(importer=back, imported=first)]
        lines = [f"{a}:{graph.get_import_details(importer=a, imported=b)[0]['line_number']}" if
                 graph.get_import_details(importer=a, imported=b) else a for a, b in zip(chain, chain[1:])]
        named.append([" -> ".join(chain), *lines])
    return named


def test_no_import_cycle_between_modules():
    """No two modules of src/ import each other, directly or round a longer circle."""
    cycles = import_cycles()
    assert not cycles, "import cycles (circle, then the importing lines):\n" + "\n".join(
        "  " + "\n    ".join(c) for c in cycles)


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch):
    """The check can fail: a package whose two modules import each other (one inside a function)."""
    import sys

    pkg = tmp_path / "circular_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from circular_pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from circular_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import grimp

    graph = grimp.build_graph("circular_pkg", cache_dir=None)
    assert graph.find_shortest_chain(importer="circular_pkg.a", imported="circular_pkg.b")
    assert graph.find_shortest_chain(importer="circular_pkg.b", imported="circular_pkg.a")
    monkeypatch.setattr(grimp, "build_graph", lambda name, cache_dir=None: graph)
    (cycle,) = import_cycles()
    assert cycle[0] in ("circular_pkg.a -> circular_pkg.b -> circular_pkg.a",
                        "circular_pkg.b -> circular_pkg.a -> circular_pkg.b")
    sys.modules.pop("circular_pkg", None)


def _folder(module: str) -> str:
    """A module's node in the folder graph: the top-level module or package of biaslens, each method
    its own node (``biaslens.methods.bbq.metrics`` -> ``methods.bbq``)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "methods":
        return "methods." + parts[2]
    return parts[1] if len(parts) > 1 else parts[0]


def folder_graph() -> dict[str, set[str]]:
    import grimp

    graph = grimp.build_graph("biaslens", cache_dir=None, exclude_type_checking_imports=True)
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = _folder(module), _folder(imported)
            if a != b and "biaslens" not in (a, b):
                edges.setdefault(a, set()).add(b)
    return edges


def test_folders_form_layers():
    """Each folder imports only folders below it (no import runs up a layer, at module or function
    level), the platform imports no method and no method another: a topological order exists."""
    import graphlib

    edges = folder_graph()
    assert "methods.bbq" in edges and "engine" in edges, "the graph must see the package"
    order = list(graphlib.TopologicalSorter(edges).static_order())  # raises CycleError on an upward import
    assert len(order) >= 30
    methods = {n for n in order if n.startswith("methods.")}
    assert len(methods) == 10
    for a, targets in edges.items():
        crossing = {b for b in targets if b in methods}
        assert not crossing or (a in methods and not crossing - {a}), f"{a} imports {sorted(crossing)}"
