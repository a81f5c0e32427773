"""One atomic-write helper (``biaslens.fileio``) for every file biaslens writes."""

from __future__ import annotations

import ast
import errno
from pathlib import Path

import pytest

import biaslens
from biaslens.fileio import atomic_path, write_atomic
from biaslens.paths import NoSpaceLeft

SRC = Path(biaslens.__file__).parent
#: whole directories renamed into place (a converted model, an unpacked scorer), not files
DIRECTORY_RENAMES = {"models/embedded.py", "scorers/encoder.py"}


def test_write_atomic_writes_text_and_bytes_and_leaves_no_temporary(tmp_path):
    assert write_atomic(tmp_path / "a.txt", "é\n") == tmp_path / "a.txt"
    assert (tmp_path / "a.txt").read_bytes() == "é\n".encode()
    write_atomic(tmp_path / "b.bin", b"\0\1")
    assert (tmp_path / "b.bin").read_bytes() == b"\0\1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.bin"]


def test_a_failed_write_keeps_the_old_file_and_names_a_full_disk(tmp_path):
    target = tmp_path / "metrics.json"
    write_atomic(target, "old")
    with pytest.raises(ValueError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise ValueError("writer failed")
    assert target.read_text() == "old"
    with pytest.raises(NoSpaceLeft, match=str(target)), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary file left


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            yield node, (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""), f


def test_every_file_write_goes_through_the_helper():
    """No module but ``fileio`` renames files into place or writes a path directly: ``os.replace``,
    ``Path(...).write_text/write_bytes`` and ``open(..., "w")`` appear nowhere else."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "fileio.py":
            continue
        for node, name, func in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{rel}:{node.lineno}"
            if name == "replace" and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "os":
                if rel not in DIRECTORY_RENAMES:
                    offenders.append(f"{where} os.replace")
            elif name in ("write_text", "write_bytes") and isinstance(func, ast.Attribute) and (
                    isinstance(func.value, (ast.BinOp, ast.Call)) or any(k.arg == "encoding" for k in node.keywords)):
                offenders.append(f"{where} {name} on a path")
            elif name == "open" and isinstance(func, ast.Name):
                modes = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
                modes += [k.value.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
                if any(set(str(m)) & set("wax+") for m in modes):
                    offenders.append(f"{where} open for writing")
    assert not offenders, offenders
