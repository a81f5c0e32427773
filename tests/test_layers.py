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
