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
    from biaslens.suites.compare import compare_runs

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
