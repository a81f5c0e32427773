"""Every name ``biaslens`` exports has a docstring (ruff's D1 rules hold api.py and metrics/;
the exports defined elsewhere are checked here, from the source: nothing is imported)."""

import ast
from pathlib import Path

import pytest

import biaslens

SRC = Path(biaslens.__file__).parent.parent


def _definition(module: str, name: str, hops: int = 3) -> ast.AST | None:
    """The def/class of ``name`` in ``module``, following ``from X import name`` re-exports."""
    path = SRC / module.replace(".", "/")
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # top-level definitions, and those under a top-level ``if`` (``if TYPE_CHECKING: class X``
    # for a class built at run time)
    nested = [n for node in tree.body if isinstance(node, ast.If) for n in (*node.body, *node.orelse)]
    for node in [*tree.body, *nested]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and hops and any(a.name == name and a.asname is None for a in node.names):
            base = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = node.module if not node.level else ".".join(p for p in (base, node.module) if p)
            return _definition(source, name, hops - 1)
    return None


@pytest.mark.parametrize("public", sorted(biaslens._LAZY))
def test_export_has_docstring(public: str) -> None:
    module, name = biaslens._LAZY[public].split(":")
    node = _definition(module, name)
    assert node is not None, f"biaslens.{public}: {name} not found in {module}"
    assert ast.get_docstring(node), f"biaslens.{public} ({module}.{name}) has no docstring"
