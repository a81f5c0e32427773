"""The "Add a method" guide holds: a new method is one folder (declaration, options, metric,
report) plus one registry line, and the platform gives it the run folder, cache, metrics.json,
report and re-rendering, a card row, a compare section and a leaderboard column."""

import json
import re
from pathlib import Path

import pytest

import biaslens
from biaslens.config import ConfigError

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
EXAMPLE = Path(__file__).resolve().parent / "examples" / "pronoun_gap"
LINE = "examples.pronoun_gap.suite:PronounGap"


@pytest.fixture
def registered(monkeypatch):
    from biaslens import suites

    # the guide's one registry line
    monkeypatch.setitem(suites.SUITES, "pronoun-gap", LINE)


def test_the_guide_shows_the_example_file_verbatim():
    guide = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.S)
    files = sorted(EXAMPLE.glob("*.py"))
    assert [f.name for f in files] == ["__init__.py", "metrics.py", "options.py", "report.py", "suite.py"]
    for f in files:
        assert f.read_text(encoding="utf-8") in blocks, f"docs/architecture.md must embed tests/examples/pronoun_gap/{f.name}"
    assert f'"pronoun-gap": "{LINE}",' in guide
    assert (EXAMPLE / "words.yaml").read_text(encoding="utf-8") in guide


def test_new_suite_runs_writes_and_rerenders(registered, tmp_path):
    out = tmp_path / "run"
    res = biaslens.run(suite="pronoun-gap", model="fake", out=str(out), cache_dir=str(tmp_path / "c"),
                       options={"pronoun-gap": {"occupations": ["nurse", "pilot", "baker"]}})
    assert len(res.sentences) == 6 and res.gaps["occupation"].tolist() == ["baker", "nurse", "pilot"]
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["model"]["name"] == "fake"
    assert run["scoring"]["computed"] == 6
    metrics = json.loads((out / "metrics.json").read_text())
    entry = metrics["entries"][0]
    assert entry["name"] == "mean_log_ppl_gap" and entry["ci_low"] <= entry["value"] <= entry["ci_high"]
    assert metrics["verdict"].endswith("3 occupations)") and metrics["suite"] == "pronoun-gap"
    assert "Per occupation" in (out / "report.html").read_text()
    (out / "report.html").unlink()
    biaslens.rerender(out)
    assert json.loads((out / "metrics.json").read_text()) == metrics and (out / "report.html").is_file()
    # the second run answers from the call cache
    res2 = biaslens.run(suite="pronoun-gap", model="fake", out=str(tmp_path / "run2"), cache_dir=str(tmp_path / "c"),
                        options={"pronoun-gap": {"occupations": ["nurse", "pilot", "baker"]}})
    assert res2.stats["scoring"]["cache_hits"] == 6


def test_its_options_are_validated_before_a_folder_exists(registered, tmp_path):
    with pytest.raises(ConfigError, match=r"options.pronoun-gap.occupations"):
        biaslens.run(suite="pronoun-gap", model="fake", out=str(tmp_path / "run"),
                     options={"pronoun-gap": {"occupations": ["nurse"]}})
    assert not (tmp_path / "run").exists()


def test_it_gets_a_card_row_and_a_compare_section_from_the_registry_line(registered, tmp_path):
    """No edit outside the example file and the registry line: the card lists it, runs it at its
    budget, and `biaslens compare` (two runs, two cards) shows its own section and lines."""
    from typer.testing import CliRunner

    from biaslens.bias_card import card_methods, compare_cards, make_card
    from biaslens.cli.app import app

    assert "pronoun-gap" in [m.suite for m in card_methods()]
    cards = []
    for name in ("before", "after"):
        card = make_card({"model": "fake", "cache_dir": str(tmp_path / "c")}, out=tmp_path / name, budget="smoke",
                         methods=["pronoun-gap"])
        (row,) = card["methods"]
        assert row["status"] == "complete" and row["headline"] == "mean_log_ppl_gap", row
        assert row["verdict"].endswith("3 occupations)")  # the card's smoke budget: three occupations
        cards.append(tmp_path / name)
    result = compare_cards(*cards, out=tmp_path / "card-cmp")
    (row,) = result["methods"]
    assert row["report"] == "pronoun-gap/report.html" and row["verdict"] == "no detectable change"  # same model twice
    assert "Pronoun gap per model" in (tmp_path / "card-cmp" / "pronoun-gap" / "report.html").read_text()

    r = CliRunner().invoke(app, ["compare", str(tmp_path / "before" / "pronoun-gap"),
                                 str(tmp_path / "after" / "pronoun-gap"), "--out", str(tmp_path / "cmp"),
                                 "--label", "a", "--label", "b"])
    assert r.exit_code == 0, r.output
    metrics = json.loads((tmp_path / "cmp" / "metrics.json").read_text())
    gap = metrics["pronoun-gap"]["mean_log_ppl_gap"]
    assert set(gap) == {"a", "b"} and gap["a"] == gap["b"] and "headlines" not in metrics  # its own section
    assert f"pronoun gap a: {gap['a']:+.3f}" in r.output
    page = (tmp_path / "cmp" / "report.html").read_text()
    assert "Pronoun gap per model" in page
    # its words.yaml: the column's header and the metric's glossary entry, with no edit to the platform
    assert "<dt>mean log perplexity gap</dt>" in page and "Mean over occupations of log perplexity" in page
    assert "mean_log_ppl_gap" not in page.split("<thead>", 1)[1].split("</thead>", 1)[0]

    from biaslens.card_leaderboard import leaderboard

    board = leaderboard(cards, out=tmp_path / "board", labels=["a", "b"])
    (method,) = [m for m in board["methods"] if m["suite"] == "pronoun-gap"]
    assert method["n_compared"] == 2 and method["n_distinguishable"] == 0, method  # the same model twice
    assert [c["model"] for c in method["cells"]] == ["a", "b"] and method["headline"] == "mean_log_ppl_gap"
    assert "Pronoun gap (perplexity)" in (tmp_path / "board" / "leaderboard.html").read_text()


def test_a_suite_without_card_or_compare_is_not_on_the_card(monkeypatch):
    from biaslens import suites
    from biaslens.bias_card import card_methods

    monkeypatch.setitem(suites.SUITES, "pronoun-gap", LINE)
    monkeypatch.setattr(suites.suite_class("pronoun-gap"), "card", None)
    assert "pronoun-gap" not in [m.suite for m in card_methods()]
    assert [m.suite for m in card_methods()] == ["holistic-likelihood", "redditbias", "holistic-generation",
                                                 "fairpair", "community", "bbq", "bold",
                                                 "crows-pairs", "winogender", "winobias"]
