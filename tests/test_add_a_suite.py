"""The "Add a suite" guide holds: a new suite is one new file plus one registry line, and
the runner gives it the run folder, cache, metrics.json, report and re-rendering."""

import json
import re
from pathlib import Path

import pytest

import biaslens
from biaslens.config import ConfigError

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
EXAMPLE = Path(__file__).resolve().parent / "examples" / "pronoun_gap.py"


@pytest.fixture
def registered(monkeypatch):
    from biaslens import suites

    # the guide's one registry line
    monkeypatch.setitem(suites.SUITES, "pronoun-gap", "examples.pronoun_gap:PronounGap")


def test_the_guide_shows_the_example_file_verbatim():
    guide = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.S)
    assert EXAMPLE.read_text(encoding="utf-8") in blocks, "docs/architecture.md must embed tests/examples/pronoun_gap.py"
    assert '"pronoun-gap": "examples.pronoun_gap:PronounGap"' in guide


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
