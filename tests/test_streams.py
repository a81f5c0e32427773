"""Output a person and a script can use: results on standard output, progress and errors on
standard error, and ``--json`` as one JSON object with nothing else on standard output."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app


@pytest.fixture
def cli(monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()  # click >= 8.2: result.stdout and result.stderr are kept apart

    def invoke(*args: str):
        return runner.invoke(app, list(args))

    return invoke


def _fake_run(cli, out, *extra):
    return cli("run", "-m", "fake", "--sample", "300", "--out", str(out), *extra)


def test_run_results_on_stdout_progress_on_stderr(cli, tmp_path):
    out = tmp_path / "run"
    r = _fake_run(cli, out)
    assert r.exit_code == 0, r.output
    # the summary table and the report path are results
    assert "Likelihood Bias (fake)" in r.stdout
    assert f"report: {out / 'report.html'}" in r.stdout
    # what the run did while it ran is progress: standard error only
    assert "sentences (" in r.stderr and "scoring sentences" in r.stderr
    assert "scoring sentences" not in r.stdout and "report:" not in r.stderr


def test_a_repeated_run_says_what_came_from_the_cache(cli, tmp_path):
    assert _fake_run(cli, tmp_path / "first").exit_code == 0
    r = _fake_run(cli, tmp_path / "again")
    assert r.exit_code == 0, r.output
    n = len(__import__("pandas").read_parquet(tmp_path / "again" / "sentences.parquet")["text"].unique())
    assert f"scoring sentences: {n:,} of {n:,} from the cache (all of them)" in " ".join(r.stderr.split())
    assert "from the cache" not in r.stdout


def test_run_json_is_one_object_with_the_headline(cli, tmp_path):
    out = tmp_path / "run"
    r = _fake_run(cli, out, "--json")
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)  # the whole of standard output is one JSON object
    metrics = json.loads((out / "metrics.json").read_text())
    assert obj["command"] == "run" and obj["status"] == "complete"
    assert obj["run"] == str(out) and obj["report"] == str(out / "report.html")
    assert obj["suite"] == "holistic-likelihood" and obj["model"] == "fake"
    head = metrics["entries"][0]
    assert obj["headline"]["name"] == head["name"] == "likelihood_bias"
    assert obj["headline"]["value"] == pytest.approx(head["value"])
    assert (obj["headline"]["ci_low"], obj["headline"]["ci_high"]) == (head["ci_low"], head["ci_high"])
    assert obj["headline"]["interval"] == head["interval"]
    assert obj["verdict"] == metrics["verdict"]
    assert [e["name"] for e in obj["entries"]] == [e["name"] for e in metrics["entries"]]
    # the human summary still reaches the terminal, on standard error
    assert "Likelihood Bias (fake)" in r.stderr and "report:" in r.stderr


def test_error_exits_non_zero_with_one_line_on_stderr(cli, tmp_path):
    for extra in ((), ("--json",)):
        r = cli("run", "-m", "fake", "--sample", "-3", "--out", str(tmp_path / "bad"), *extra)
        assert r.exit_code == 2
        assert r.stdout == ""
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:") and "--sample" in lines[0], r.stderr
        assert not (tmp_path / "bad").exists()


def test_card_and_compare_json(cli, tmp_path):
    cards = []
    for name in ("a", "b"):
        out = tmp_path / f"card-{name}"
        r = cli("card", "-m", "fake", "--budget", "smoke", "--methods", "holistic-likelihood", "--out", str(out),
                "--json")
        assert r.exit_code == 0, r.output
        obj = json.loads(r.stdout)
        assert obj["command"] == "card" and obj["status"] == "complete" and obj["card"] == str(out)
        (m,) = obj["methods"]
        metrics = json.loads((out / "holistic-likelihood" / "metrics.json").read_text())
        assert m["suite"] == "holistic-likelihood" and m["status"] == "complete"
        assert m["run"] == str(out / "holistic-likelihood")
        assert m["headline"]["name"] == "likelihood_bias"
        assert m["headline"]["value"] == pytest.approx(metrics["entries"][0]["value"])
        assert "(1/1) HolisticBias Likelihood Bias" in r.stderr  # progress stays on standard error
        cards.append(out)

    # without --json the verdicts and the card path are results
    r = cli("card", "-m", "fake", "--budget", "smoke", "--methods", "holistic-likelihood", "--out",
            str(tmp_path / "card-c"))
    assert r.exit_code == 0, r.output
    assert "HolisticBias likelihood: " in r.stdout and f"card: {tmp_path / 'card-c' / 'card.html'}" in r.stdout
    assert "(1/1)" not in r.stdout

    r = cli("compare", *map(str, cards), "--out", str(tmp_path / "cmp-cards"), "--json")
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)
    assert obj["kind"] == "cards" and obj["report"] == str(tmp_path / "cmp-cards" / "card-compare.html")
    assert obj["methods"][0]["suite"] == "holistic-likelihood" and obj["methods"][0]["verdict"]

    runs = [str(c / "holistic-likelihood") for c in cards]
    r = cli("compare", *runs, "--out", str(tmp_path / "cmp-runs"), "--json")
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)
    assert obj["kind"] == "runs" and len(obj["models"]) == 2
    first = obj["models"][0]["runs"]["holistic-likelihood"]
    assert first["run"] == runs[0] and first["status"] == "complete"
    assert first["headline"]["name"] == "likelihood_bias"
    assert obj["changes"]["holistic-likelihood"]["headline"] == "likelihood_bias"

    r = cli("compare", *runs, "--out", str(tmp_path / "cmp-runs2"))
    assert r.exit_code == 0, r.output
    assert f"report: {tmp_path / 'cmp-runs2' / 'report.html'}" in r.stdout


def test_partial_card_json_then_its_error(cli, tmp_path, monkeypatch):
    """A card with a failed method still gives a script its JSON (status partial) on standard
    output, then exits 1 with its one error line on standard error."""
    import dataclasses

    from biaslens.methods.redditbias.suite import RedditBias

    card = RedditBias.card
    monkeypatch.setattr(RedditBias, "card", dataclasses.replace(card, budgets={**card.budgets, "smoke": {
        **card.budgets["smoke"], "redditbias": {"spec_files": [str(tmp_path / "missing-spec.yaml")]}}}))
    r = cli("card", "-m", "fake", "--budget", "smoke", "--methods", "holistic-likelihood,redditbias",
            "--out", str(tmp_path / "card"), "--json")
    assert r.exit_code == 1
    obj = json.loads(r.stdout)
    assert obj["status"] == "partial"
    assert [(m["suite"], m["status"]) for m in obj["methods"]] == [("holistic-likelihood", "complete"),
                                                                    ("redditbias", "failed")]
    assert obj["methods"][1]["headline"] is None and obj["methods"][1]["run"] is None
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "partial" in errors[0]
