"""`biaslens compare`: original vs debiased runs from their metrics.json files, no model calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app
from biaslens.comparison.runs import compare_runs


def _run(folder: Path, model: str, t: dict[str, float], ppl: float | None) -> Path:
    folder.mkdir(parents=True)
    m = {"suite": "redditbias", "model": model, "split": "test", "bias_types": list(t)}
    for bt, v in t.items():
        m[bt] = {"t": v, "p": 0.01 if abs(v) > 2 else 0.4, "n_pairs": 100, "stars": "*" if abs(v) > 2 else ""}
    if ppl is not None:
        m["lm_perplexity"] = {"perplexity": ppl, "file": "humanref6k.txt", "n_lines": 6000}
    (folder / "metrics.json").write_text(json.dumps(m))
    return folder


def test_compare_original_and_debiased(tmp_path):
    orig = _run(tmp_path / "orig", "smollm2-135m", {"religion1": -3.2, "gender": -1.0}, 40.0)
    model = tmp_path / "lmd"
    _run(model / "eval", str(model), {"religion1": -0.4}, 41.5)
    (model / "debias.json").write_text(json.dumps({"method": "lmd", "bias_type": "religion1"}))
    dst = model / "downstream-dst"
    dst.mkdir()
    (dst / "metrics.json").write_text(json.dumps({"suite": "downstream", "task": "dst", "scores": {"f1": 0.81}}))
    metrics = compare_runs([str(orig), str(model)], tmp_path / "cmp")
    assert metrics["redditbias"]["t"]["religion1"] == {"smollm2-135m": -3.2, "LMD (religion1)": -0.4}
    assert metrics["redditbias"]["t"]["gender"]["LMD (religion1)"] is None
    assert metrics["redditbias"]["lm_perplexity"] == {"smollm2-135m": 40.0, "LMD (religion1)": 41.5}
    assert metrics["downstream"]["dst"]["LMD (religion1)"] == {"f1": 0.81}
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "Figure 1a" in html and "Figure 1b" in html and "Downstream" in html
    assert json.loads((tmp_path / "cmp" / "metrics.json").read_text())["entries"][1]["debias"]["method"] == "lmd"


def test_sections_are_pluggable(tmp_path, monkeypatch):
    from biaslens.report.html import Section

    run = tmp_path / "gen"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"suite": "holistic-generation", "model": "m", "fgb": 0.2}))
    from biaslens.methods.holistic.generation import HolisticGeneration
    from biaslens.suites.base import SuiteComparison

    monkeypatch.setattr(HolisticGeneration, "compare", SuiteComparison(
        lambda es: ([Section("Generation bias")], {e.label: e.metrics["holistic-generation"]["fgb"]
                                                   for e in es if "holistic-generation" in e.metrics})))
    metrics = compare_runs([str(run)], tmp_path / "cmp")
    assert metrics["holistic-generation"] == {"m": 0.2}


def test_cli_compare_and_its_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    orig = _run(tmp_path / "orig", "base", {"race": -2.5}, None)
    deb = _run(tmp_path / "deb", "deb", {"race": 0.3}, None)
    r = CliRunner().invoke(app, ["compare", str(orig), str(deb), "--out", str(tmp_path / "c"), "--label", "original",
                                 "--label", "CDA"])
    assert r.exit_code == 0, r.output
    assert "race: t = original: -2.50, CDA: +0.300" in r.output
    r = CliRunner().invoke(app, ["compare", str(tmp_path / "missing"), "--out", str(tmp_path / "c")])
    assert r.exit_code == 2 and "no such run or model folder" in r.output and "Traceback" not in r.output
    empty = tmp_path / "model-only"
    empty.mkdir()
    r = CliRunner().invoke(app, ["compare", str(empty), "--out", str(tmp_path / "c")])
    assert r.exit_code == 2 and "biaslens run redditbias --model" in r.output
    r = CliRunner().invoke(app, ["compare", str(orig), "--out", str(tmp_path / "c"), "--label", "a", "--label", "b"])
    assert r.exit_code == 2 and "2 labels for 1 runs" in r.output


def test_compare_refuses_to_mix_perplexity_definitions(tmp_path):
    from biaslens.config import ConfigError

    a = _run(tmp_path / "a", "smollm2-135m", {"religion1": -3.2}, 40.0)
    b = _run(tmp_path / "b", "lmd", {"religion1": -0.4}, 41.5)
    for folder, definition in ((a, "start_token"), (b, "no_start_token")):
        m = json.loads((folder / "metrics.json").read_text())
        m["perplexity_definition"] = definition
        (folder / "metrics.json").write_text(json.dumps(m))
    with pytest.raises(ConfigError, match="different perplexity definitions"):
        compare_runs([str(a), str(b)], tmp_path / "cmp")
    m = json.loads((b / "metrics.json").read_text())
    m["perplexity_definition"] = "start_token"
    (b / "metrics.json").write_text(json.dumps(m))
    assert compare_runs([str(a), str(b)], tmp_path / "cmp")["redditbias"]["t"]["religion1"]["lmd"] == -0.4
