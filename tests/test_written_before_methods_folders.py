"""Run folders and bias cards written before the methods moved into their own folders still
re-render with the same numbers (tests/data/written_before_methods_folders: a card of four methods
and one run folder, made with the fake model at the card's smoke budget by the code before the move;
reports and CSV copies left out)."""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

DATA = Path(__file__).resolve().parent / "data" / "written_before_methods_folders"


def _entries(path: Path) -> list:
    metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
    return [{k: e[k] for k in ("name", "value", "ci_low", "ci_high")} for e in metrics["entries"]], metrics["verdict"]


@pytest.fixture
def copied(tmp_path):
    shutil.copytree(DATA, tmp_path / "old")
    return tmp_path / "old"


def test_an_old_run_folder_rerenders_with_its_numbers(copied):
    import biaslens

    run = copied / "run-winobias"
    before = _entries(run)
    biaslens.rerender(run)
    assert _entries(run) == before
    assert "WinoBias" in (run / "report.html").read_text(encoding="utf-8")


def test_an_old_card_rerenders_every_method(copied):
    from biaslens.cli.app import app

    card = copied / "card"
    before = {m: _entries(card / m) for m in ("holistic-likelihood", "redditbias", "bbq", "winobias")}
    result = CliRunner().invoke(app, ["report", str(card)])
    assert result.exit_code == 0, result.output
    assert (card / "card.html").is_file()
    for method, numbers in before.items():
        assert _entries(card / method) == numbers, method
        assert (card / method / "report.html").is_file()
