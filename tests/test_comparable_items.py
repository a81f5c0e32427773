"""Two runs that scored different items are different measurements: ``biaslens compare``, the card
comparison and the regression gate refuse them ("not comparable", the reason, exit 2) for every
suite that keeps a key per item, decided once in the shared comparison layer."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console
from typer.testing import CliRunner

import biaslens
from biaslens.cli.app import app
from biaslens.comparison.change import method_change
from biaslens.comparison.entries import load_entry, run_differences
from biaslens.gate import compare_gate


def _run(out, suite, **options):
    biaslens.run(suite=suite, model="fake", out=str(out), use_cache=False,
                 console=Console(file=io.StringIO(), width=120), **options)
    return out


@pytest.fixture(scope="module")
def crows(tmp_path_factory):
    root = tmp_path_factory.mktemp("crows-items")
    return (_run(root / "all", "crows-pairs", crows_pairs={"sample": 300}),
            _run(root / "sample", "crows-pairs", crows_pairs={"sample": 120}))


def test_crows_pairs_sample_against_more_pairs_is_not_comparable(crows, tmp_path):
    big, small = crows
    r = CliRunner().invoke(app, ["compare", str(big), str(small), "--out", str(tmp_path / "cmp"),
                                 "--fail-on", "worse"])
    assert r.exit_code == 2, r.output
    assert "not comparable" in r.output and "items scored: 300 against 120, "  in r.output, r.output
    m = json.loads((tmp_path / "cmp" / "metrics.json").read_text())
    change = m["changes"]["crows-pairs"][next(iter(m["changes"]["crows-pairs"]))]
    assert change["verdict"] == "not comparable" and change.get("change") is None
    # the suite's own section refuses too, and the page lists what differs
    assert all(c["verdict"] == "not comparable" for c in m["crows-pairs"]["change"].values())
    assert any(d["what"] == "items scored" for d in m["differences"])
    # the Python gate decides the same
    assert compare_gate(big, small, out=tmp_path / "cmp2").exit_code == 2


def test_same_items_stay_comparable(crows, tmp_path):
    big, _ = crows
    again = _run(tmp_path / "again", "crows-pairs", crows_pairs={"sample": 300})
    entries = [load_entry(big, "a"), load_entry(again, "b")]
    assert run_differences(entries, "crows-pairs") == []
    assert method_change("crows-pairs", *entries)["verdict"] != "not comparable"


def test_winobias_one_type_against_both_is_not_comparable(tmp_path):
    both = _run(tmp_path / "both", "winobias", winobias={"splits": ["dev"]})
    one = _run(tmp_path / "one", "winobias", winobias={"types": ["1"], "splits": ["dev"]})
    decision = compare_gate(both, one, out=tmp_path / "cmp")
    assert decision.exit_code == 2, decision.lines
    assert any("not comparable: winobias" in ln and "items scored: 792 against 396, 396 in both" in ln for ln in decision.lines), \
        decision.lines
