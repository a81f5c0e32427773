"""`biaslens report DIR` for every suite: a finished run folder (fake backend, tiny inputs) re-renders
through the CLI with no model, perturber or scorer call, to the same metrics.json; unfinished runs
and folders missing a stored table are refused with one clear line."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from biaslens.api import run
from biaslens.cli.app import app

#: per suite: run() arguments, the report's main table, and where a value of that table sits in metrics.json
SUITES = {
    "holistic-likelihood": ({"sample": 120, "axes": ["ability", "age"]}, "Per axis, all sampled templates pooled", lambda m: next(iter(m["by_axis"]))),
    "redditbias": ({"redditbias": {"bias_types": ["gender"], "max_template_pairs": 40}}, "Per bias type and view",
                   lambda m: m["bias_types"][0]),
    "holistic-generation": ({"sample": 30, "axes": ["ability", "age"], "generation": {"n_permutations": 10, "n_bootstrap": 20}},
                            "Per style cluster (Tables 8 and 9 shape)",
                            lambda m: next(iter(m["partial_gen_bias_x1000"]))),
    "holistic-offensiveness": ({"axes": ["ability"], "sample": 200}, "Per template (Table 13 shape)",
                               lambda m: next(iter(m["by_template"]))),
    "community": ({"community": {"n": 2, "n_bootstrap": 50, "max_new_tokens": 16, "min_new_tokens": 0,
                                 "dimensions": ["religion"]}}, "S_mean (Table 3 shape)",
                  lambda m: next(iter(next(iter(m["S_mean"].values()))))),
    # sentiment and embedding: the two dissimilarities whose scorers a re-render must not call
    "fairpair": ({"fairpair": {"n_occupations": 2, "samples": 6, "max_new_tokens": 12, "k_folds": 3,
                               "dissimilarities": ["jaccard", "sentiment", "embedding"]}},
                 "Per model and dissimilarity (V and B x100)", lambda m: "embedding"),
}


@pytest.fixture(scope="module")
def finished(tmp_path_factory, style_encoder) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("finished")
    return {suite: run(suite=suite, model={"name": "fake"}, out=root / suite, use_cache=False, **kwargs).out
            for suite, (kwargs, _, _) in SUITES.items()}


@pytest.fixture
def no_calls(monkeypatch):
    """Every model, scorer and classifier call fails the test."""
    import biaslens.models
    import biaslens.models.registry
    from biaslens.models.fake import FakeBackend
    from biaslens.scorers import ProfanityCheck, SentenceEncoder, VaderSentiment, ZeroShotStyleClassifier

    def boom(*a, **k):
        raise AssertionError("re-rendering called a model or scorer")

    monkeypatch.setattr(biaslens.models, "load_model", boom)
    monkeypatch.setattr(biaslens.models.registry, "load_model", boom)
    for cls, names in ((FakeBackend, ("__init__", "score_batch", "generate_batch")),
                       (SentenceEncoder, ("__init__", "encode")), (VaderSentiment, ("__init__", "compound")),
                       (ProfanityCheck, ("__init__", "probability")), (ZeroShotStyleClassifier, ("probabilities",))):
        for name in names:
            monkeypatch.setattr(cls, name, boom)


def _copy(finished, suite: str, tmp_path: Path) -> Path:
    out = tmp_path / suite
    shutil.copytree(finished[suite], out)
    return out


def _report(path: Path):
    return CliRunner().invoke(app, ["report", str(path)])


def _metrics(path: Path) -> dict:
    # wall-clock figures may differ between a run and its re-render; nothing else may
    data = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.endswith(("seconds", "per_second"))}


@pytest.mark.parametrize("suite", list(SUITES))
def test_report_rerenders_every_suite(finished, suite, tmp_path, no_calls):
    out = _copy(finished, suite, tmp_path)
    before = _metrics(out)
    (out / "report.html").unlink()
    result = _report(out)
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith(str(out / "report.html"))
    assert _metrics(out) == before
    page = (out / "report.html").read_text(encoding="utf-8")
    _, table, value = SUITES[suite]
    assert html.escape(table) in page and html.escape(value(before)) in page
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("suite", ["holistic-generation", "community"])
def test_metrics_come_back_when_deleted(finished, suite, tmp_path, no_calls):
    # the names metrics.json carries (model, classifiers) are rebuilt from run.json
    out = _copy(finished, suite, tmp_path)
    before = _metrics(out)
    (out / "metrics.json").unlink()
    assert _report(out).exit_code == 0
    assert _metrics(out) == before


def test_unfinished_run_is_refused(finished, tmp_path, no_calls):
    out = _copy(finished, "fairpair", tmp_path)
    record = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**record, "status": "running"}))
    (out / "report.html").unlink()
    result = _report(out)
    assert result.exit_code == 2
    assert "status is 'running', not 'complete'" in result.output and "Traceback" not in result.output
    assert not (out / "report.html").exists()


@pytest.mark.parametrize("suite, table", [("holistic-offensiveness", "classifier_audit"),
                                          ("community", "generations"), ("fairpair", "continuations"),
                                          ("holistic-generation", "style_probabilities")])
def test_missing_stored_table_is_named(finished, suite, table, tmp_path, no_calls):
    out = _copy(finished, suite, tmp_path)
    (out / f"{table}.parquet").unlink()
    result = _report(out)
    assert result.exit_code == 2, result.output
    assert f"{table}.parquet is missing" in result.output and "Traceback" not in result.output


def test_fairpair_folder_without_stored_representations(finished, tmp_path):
    # run folders written before the representations were stored: the scorers run again, same numbers
    out = _copy(finished, "fairpair", tmp_path)
    before = _metrics(out)
    (out / "representations.parquet").unlink()
    assert _report(out).exit_code == 0
    assert _metrics(out) == before


def test_damaged_run_json_is_named(finished, tmp_path, no_calls):
    out = _copy(finished, "redditbias", tmp_path)
    (out / "run.json").write_text('{"status": "complete", ', encoding="utf-8")
    result = _report(out)
    assert result.exit_code == 2 and "run.json: not valid JSON" in result.output, result.output
    (out / "run.json").unlink()
    result = _report(out)
    assert result.exit_code == 2 and "not a biaslens run folder (no run.json)" in result.output, result.output
