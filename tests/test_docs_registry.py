"""The docs and --help are checked against the registry: every method the card runs is in
docs/card.md (with the false-alarm figure recomputed for their number), every suite has rows in
docs/reliability.md, `biaslens --help` names every suite, `biaslens dataset` writes the shipped
data of the newer suites, and help texts say what the code does."""

from __future__ import annotations

import math
import re
from pathlib import Path

from scipy import stats
from typer.testing import CliRunner

from biaslens.bias_card import card_methods
from biaslens.cli.app import app
from biaslens.registry import SUITES

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: the methods whose gate decision is a paired test at 5% (two-sided); the others compare two 95% intervals
PAIRED = {"holistic-generation", "crows-pairs", "winobias", "redditbias"}


def _help(*args: str) -> str:
    return CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "300"}).output


def test_card_doc_lists_every_card_method_and_its_false_alarm_figure():
    text = (DOCS / "card.md").read_text(encoding="utf-8")
    methods = card_methods()
    table = text.split("## What runs", 1)[1].split("\n\n", 2)[1]
    for m in methods:
        assert f"| {m.title} |" in table, m.title
    paired = sum(m.suite in PAIRED for m in methods)
    one_side = stats.norm.sf(1.96 * math.sqrt(2))  # two 95% intervals that do not overlap, one direction
    bound = 100 * (paired * 0.025 + (len(methods) - paired) * one_side)
    words = {10: "ten"}
    assert f"card's {words.get(len(methods), len(methods))} methods" in text
    assert f"at most about {bound:.1f}%" in text and f"{100 * one_side:.2f}%" in text


def test_reliability_doc_has_rows_for_every_suite():
    rows = [ln for ln in (DOCS / "reliability.md").read_text(encoding="utf-8").splitlines() if ln.startswith("| ")]
    for suite in SUITES:
        assert any(re.search(rf"(^\| |, |\(){re.escape(suite)}\b", ln.split(" | ")[0]) for ln in rows), suite


def test_help_names_every_method_and_dataset_covers_the_newer_suites():
    top = " ".join(_help().split())
    for suite in SUITES:
        assert suite in top, suite
    dataset = _help("dataset")
    for name in ("bbq", "bold", "crows-pairs", "winogender", "winobias"):
        assert re.search(rf"^\s+{re.escape(name)}\s", dataset, re.M), name


def test_help_texts_say_what_the_code_does():
    run = " ".join(_help("run").split())
    assert "--winogender-n-bootstrap" in run and "occupations resampled, each with its templates" in run
    card = " ".join(_help("card").split())
    assert "smoke (checks the wiring" in card and "min)" not in card


def test_dataset_writes_a_shipped_table(tmp_path):
    out = tmp_path / "winobias.csv"
    r = CliRunner().invoke(app, ["dataset", "winobias", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert len(out.read_text(encoding="utf-8").splitlines()) > 1584
    r = CliRunner().invoke(app, ["dataset", "winobias", "-o", str(tmp_path / "w"), "--format", "hf"])
    assert r.exit_code == 2 and "no dataset card" in r.output
