"""The bias card (card.py, report/card.py, `biaslens card`, `biaslens compare CARD CARD`)."""

import html
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from biaslens.bias_card import card_methods, compare_cards, make_card, read_card
from biaslens.cli import app
from biaslens.comparison.entries import interval_change_verdict
from biaslens.config import ConfigError
from biaslens.report.card import method_sentence
from biaslens.rounding import estimate, number


def _quiet():
    from rich.console import Console

    return Console(stderr=True, quiet=True)


@pytest.fixture(scope="module")
def fake_card(fake_smoke_card):
    return fake_smoke_card  # conftest: made once per session


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
    for r in card["methods"]:
        assert f'href="{r["report"]}"' in page


def test_card_opens_with_sentences_and_a_picture_and_ends_with_the_budget(fake_card):
    out, card = fake_card
    page = (out / "card.html").read_text(encoding="utf-8")
    # the order: one sentence per method, the picture, the table, each method, the budget's sizes last
    order = [page.index('<ul class="sentences">'), page.index('<img alt="Each method&#39;s headline against what its sentence reads it against'),
             page.index("One line per method"), page.index("HolisticBias Likelihood Bias</h2>"),
             page.index("Community bias (sentiment and toxicity)</h2>"), page.index("Budget and machine</h2>"),
             page.index("sample=900")]
    assert order == sorted(order), order
    assert page.index("<h1>") < page.index("At a glance</h2>") < order[0]
    glance = page[page.index("At a glance</h2>"):page.index("Headline numbers</h2>")]
    assert 'src="data:image/png;base64,' in glance
    sentences = re.findall(r"<li>(.*?)</li>", glance[glance.index('<ul class="sentences">'):], flags=re.S)
    assert [html.unescape(t) for t in sentences] == [method_sentence(r) for r in card["methods"]]
    assert [t.split(":")[0] for t in sentences] == ["HolisticBias likelihood", "RedditBias", "HolisticBias generation",
                                                    "FairPair", "Community bias", "BBQ (question answering)",
                                                    "BOLD (open generation)",
                                                    "CrowS-Pairs (stereotyping sentence likelier)",
                                                    "Winogender (pronoun preference vs occupation statistics)",
                                                    "WinoBias (pro- vs anti-stereotypical twin)"]
    # no number with more digits than its interval justifies, in the sentences or the tables
    assert not re.search(r"\d\.\d{5,}", page), re.findall(r".{40}\d\.\d{5,}.{10}", page)[:3]
    gen = next(r for r in card["methods"] if r["suite"] == "holistic-generation")
    floor = json.loads((out / "holistic-generation" / "metrics.json").read_text())["noise_floor"]
    said = ("bias detected" if floor["p_value"] <= 0.05 else "no bias detected" if gen["entries"][0]["verdict"] ==
            "not_detected" else "cannot tell whether the model is biased")
    # the card's interval is the one the sentence shows and the verdict tests (its low end above the floor iff p <= 0.05)
    shown = estimate(gen["value"], gen["ci_low"], gen["ci_high"], label="90% permutation interval")
    assert gen["verdict"].startswith(f"{said}: Full Gen Bias x1000 {shown}")
    assert (gen["ci_low"] > floor["fgb_permuted_mean"]) == (floor["p_value"] <= 0.05)


def test_redditbias_headline_covers_every_bias_type(fake_card):
    out, card = fake_card
    rb = next(r for r in card["methods"] if r["suite"] == "redditbias")
    per_type = {e["name"].split(".", 1)[1]: e for e in rb["entries"] if e["name"].startswith("sign_effect.")}
    assert len(per_type) == 5 and rb["headline"] == "largest_abs_sign_effect" and rb["higher_is_better"] is False
    assert len([e for e in rb["entries"] if e["name"].startswith("cohens_d.")]) == 5  # the paper's, beside it
    biggest = max(per_type, key=lambda b: abs(per_type[b]["value"]))
    assert rb["value"] == abs(per_type[biggest]["value"]) and rb["n_used"] == sum(x["n_used"] for x in per_type.values())
    # the largest |effect| each type's Bonferroni interval (1 - 0.05/5) allows, over the types
    lmb = pd.read_csv(out / "redditbias" / "lmb.csv")
    target = lmb[lmb["view"] == "target"]
    n = target["n_pos"] + target["n_neg"]
    lo = 2 * stats.beta.ppf(0.005, target["n_pos"], n - target["n_pos"] + 1) - 1
    hi = 2 * stats.beta.ppf(0.995, target["n_pos"] + 1, n - target["n_pos"]) - 1
    assert rb["ci_high"] == pytest.approx(max(np.abs(lo).max(), np.abs(hi).max())) and "simultaneous" in rb["interval"]
    clear = ~((lo <= 0) & (hi >= 0))
    assert rb["ci_low"] == pytest.approx(np.where(clear, np.minimum(np.abs(lo), np.abs(hi)), 0).max())
    head = rb["entries"][0]
    assert head["level"] == pytest.approx(0.99) and head["verdict"] in ("detected", "not_detected", "cannot_tell")
    # the verdict agrees with the headline interval: detected exactly when it excludes 0
    assert (head["verdict"] == "detected") == (rb["ci_low"] > 0)
    sentence = method_sentence(rb)
    if head["verdict"] == "cannot_tell":  # smoke: about 40 pairs per type
        assert sentence.startswith("RedditBias: cannot tell whether the model is biased")
    assert f"largest |sign effect| {number(rb['value'])} in {biggest}" in sentence


def test_sentences_for_methods_without_a_number():
    failed = {"suite": "redditbias", "title": "RedditBias LMB", "status": "failed",
              "verdict": "failed: RedditBiasError: missing-spec.yaml: no such file\nmore"}
    assert method_sentence(failed) == ("RedditBias: failed, so it gives no number (RedditBiasError: missing-spec.yaml: "
                                       "no such file).")
    masked = {"suite": "fairpair", "status": "not applicable",
              "verdict": "not applicable: a masked LM does not generate text"}
    assert method_sentence(masked) == "FairPair: not applicable: a masked LM does not generate text; no number."
    assert method_sentence({"suite": "x", "title": "X", "status": "skipped"}) == "X: skipped (skipped); no number."
    # a run with no verdict sentence: its headline against the ideal, "cannot tell" when the interval holds both
    row = {"suite": "x", "title": "X", "status": "complete", "verdict": None, "headline": "gap", "value": 0.123,
           "ci_low": -0.05, "ci_high": 0.31, "ideal": 0.0}
    assert method_sentence(row) == ("X: cannot tell: gap 0.12 (95% CI -0.05 to 0.31) includes the value of an "
                                    "unbiased model, 0.")
    assert method_sentence(row | {"ci_low": 0.02}) == "X: gap 0.12 (95% CI 0.02 to 0.31) excludes the value of an unbiased model, 0."
    assert method_sentence(row | {"ci_low": None}) == "X: cannot tell: gap 0.123 has no interval."


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
    assert f"<li>{html.escape(method_sentence(rb))}</li>" in page and "RedditBias: failed, so it gives no number" in page


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
