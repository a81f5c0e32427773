"""The bias card (card.py, report/card.py, `biaslens card`, `biaslens compare CARD CARD`)."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from biaslens.bias_card import card_methods, compare_cards, make_card, read_card
from biaslens.cli import app
from biaslens.comparison.entries import interval_change_verdict
from biaslens.config import ConfigError


def _quiet():
    from rich.console import Console

    return Console(stderr=True, quiet=True)


@pytest.fixture(scope="module")
def fake_card(tmp_path_factory, style_encoder):
    out = tmp_path_factory.mktemp("card") / "fake"
    cache = tmp_path_factory.mktemp("card-cache")
    card = make_card({"model": "fake", "cache_dir": str(cache)}, out=out, budget="smoke", console=_quiet())
    return out, card


def test_fake_card_runs_every_method_with_verdicts(fake_card):
    out, card = fake_card
    assert [r["suite"] for r in card["methods"]] == [m.suite for m in card_methods()]
    for r in card["methods"]:
        assert r["status"] == "complete", r
        assert r["verdict"] and not r["verdict"].startswith("no verdict"), r
        assert r["headline"] and r["report"] == f"{r['suite']}/report.html"
        assert (out / r["report"]).is_file()
    lb = next(r for r in card["methods"] if r["suite"] == "holistic-likelihood")
    assert lb["ci_low"] <= lb["value"] <= lb["ci_high"] and lb["higher_is_better"] is False
    gen = next(r for r in card["methods"] if r["suite"] == "holistic-generation")
    assert "noise" in gen["verdict"] and gen["scorer_cards"]
    saved = read_card(out)
    assert saved["budget"] == "smoke" and saved["machine"]["cpus"] >= 1
    page = (out / "card.html").read_text(encoding="utf-8")
    assert page.index("Verdicts") < page.index("HolisticBias Likelihood Bias</h2>")
    for r in card["methods"]:
        assert f'href="{r["report"]}"' in page


def test_a_failing_method_is_shown_failed_and_the_card_goes_on(tmp_path, style_encoder):
    bad = tmp_path / "missing-spec.yaml"
    card = make_card({"model": "fake", "cache_dir": str(tmp_path / "c"), "redditbias": {"spec_files": [str(bad)]}},
                     out=tmp_path / "card", budget="smoke", methods=["holistic-likelihood", "redditbias"],
                     console=_quiet())
    lb, rb = card["methods"]
    assert lb["status"] == "complete" and rb["status"] == "failed"
    assert "missing-spec.yaml" in rb["verdict"] and "value" not in rb
    page = (tmp_path / "card" / "card.html").read_text(encoding="utf-8")
    assert "Warning:" in page and "failed" in page


def test_unknown_budget_and_method_are_named():
    with pytest.raises(ConfigError, match="--budget: unknown budget 'huge'"):
        make_card({"model": "fake"}, budget="huge")
    with pytest.raises(ConfigError, match="--methods: unknown method 'lmb'"):
        make_card({"model": "fake"}, methods=["lmb"])


def test_change_verdict_needs_separated_intervals():
    before = {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6}
    assert interval_change_verdict(before, {"value": 0.2, "ci_low": 0.1, "ci_high": 0.3})["verdict"] == "went down"
    assert interval_change_verdict(before, {"value": 0.8, "ci_low": 0.7, "ci_high": 0.9})["verdict"] == "went up"
    assert interval_change_verdict(before, {"value": 0.45, "ci_low": 0.35, "ci_high": 0.55})["verdict"] == "no detectable change"
    no_ci = interval_change_verdict(before, {"value": 0.1, "ci_low": None, "ci_high": None})
    assert no_ci["verdict"] == "no verdict" and "without uncertainty" in no_ci["reason"]


def test_compare_two_cards_guards_each_method(fake_card, tmp_path):
    out, _ = fake_card
    same = tmp_path / "same"
    shutil.copytree(out, same)
    # the "after" card sampled other likelihood sentences: that method is not comparable
    run_json = same / "holistic-likelihood" / "run.json"
    record = json.loads(run_json.read_text())
    record["config"]["sample"] = 999
    run_json.write_text(json.dumps(record))
    result = compare_cards(out, same, out=tmp_path / "cmp")
    rows = {r["suite"]: r for r in result["methods"]}
    assert rows["holistic-likelihood"]["verdict"] == "not comparable"
    assert "prompt selection" in rows["holistic-likelihood"]["reason"]
    for suite in ("redditbias", "fairpair", "community"):
        assert rows[suite]["verdict"] in ("no detectable change", "no verdict"), rows[suite]
    # generation: the suite's paired comparison of identical responses
    assert rows["holistic-generation"]["verdict"] == "no detectable change"
    assert (tmp_path / "cmp" / "holistic-generation" / "report.html").is_file()
    assert (tmp_path / "cmp" / "card-compare.html").is_file()


def test_cli_card_and_compare(fake_card, tmp_path):
    out, _ = fake_card
    runner = CliRunner()
    res = runner.invoke(app, ["compare", str(out), str(out), "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    assert "holistic-likelihood: no detectable change" in res.output and "card-compare.html" in res.output
    res = runner.invoke(app, ["card", "--model", "fake", "--budget", "tiny"])
    assert res.exit_code == 2 and "unknown budget 'tiny'" in res.output


@pytest.mark.slow
def test_embedded_model_card_end_to_end(tmp_path, style_encoder, embedded_model):
    card = make_card({"model": "smollm2-135m", "cache_dir": str(tmp_path / "c")}, out=tmp_path / "card",
                     budget="smoke", console=_quiet(), backend=embedded_model)
    for r in card["methods"]:
        assert r["status"] == "complete", r
        assert r["value"] is not None and r["verdict"]
    assert read_card(tmp_path / "card")["model"] == "smollm2-135m"
