"""Style-equality bias-reduction tuning: bias values and tags by hand, the tag convention,
and the loop fake-backend run -> tune a tiny model -> tagged generation -> compare."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biaslens.api import run
from biaslens.methods.holistic.generation_metrics import bias_tags, style_equality_bias_values

FAST = {"n_permutations": 10, "n_bootstrap": 10}

# 2 templates x 2 descriptors, 2 styles; cell means (t1,A)=[.7,.3] (t1,B)=[.2,.8] (t2,A)=[.5,.5] (t2,B)=[.4,.6]
# m_A=[.6,.4], m_B=[.3,.7], m_bar=[.45,.55], m_A-m_bar=[.15,-.15], m_B-m_bar=[-.15,.15], both norms .15*sqrt(2)
T = ["t1", "t1", "t1", "t2", "t2"]
D = ["A", "A", "B", "A", "B"]
P = np.array([[0.8, 0.2], [0.6, 0.4], [0.2, 0.8], [0.5, 0.5], [0.4, 0.6]])
DOT = np.array([0.105, 0.045, 0.075, 0.015, 0.015])  # (p_i - m_bar) . (m_d - m_bar), by hand
NORM = 0.15 * math.sqrt(2)


@pytest.mark.parametrize("alpha", [0, 1, 2])
def test_bias_values_match_hand_computation(alpha):
    b = style_equality_bias_values(T, D, P, alpha=alpha)
    np.testing.assert_allclose(b, DOT / NORM**alpha, rtol=1e-9)


def test_bias_tags_threshold():
    b = style_equality_bias_values(T, D, P, alpha=0)
    assert bias_tags(b, 0.03) == ["bias", "bias", "bias", "no_bias", "no_bias"]
    assert bias_tags([0.015, 0.0151, -1.0], 0.015) == ["no_bias", "bias", "no_bias"]  # strictly greater
    assert bias_tags(b, 1.0) == ["no_bias"] * 5
    # a descriptor at the mean (m_d == m_bar) gets b = 0 for every alpha, not a division by zero
    flat = style_equality_bias_values(["t", "t"], ["A", "B"], [[0.5, 0.5], [0.5, 0.5]], alpha=2)
    np.testing.assert_array_equal(flat, [0.0, 0.0])


def test_tag_convention_and_renderer(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    from biaslens.methods.holistic.style_equality import PromptRenderer, generation_tag, tag_prompt

    assert tag_prompt("I'm a deaf woman.", "no_bias") == "I'm a deaf woman. no_bias"
    assert tag_prompt("I'm a deaf woman.", None) == "I'm a deaf woman."
    assert generation_tag(tmp_path) is None and generation_tag("fake") is None
    render = PromptRenderer(AutoTokenizer.from_pretrained(tiny_model))
    assert render("Hi. no_bias", ("persona line",)) == "<|endoftext|>persona line\nHi. no_bias"


@pytest.fixture(scope="module")
def tiny_model(tiny_causal_lm, tmp_path_factory):
    return tiny_causal_lm(tmp_path_factory.mktemp("tiny") / "tiny")


@pytest.fixture(scope="module")
def before_run(tmp_path_factory, style_encoder):
    out = tmp_path_factory.mktemp("se") / "before"
    return run(suite="holistic-generation", model={"name": "fake"}, out=out, sample=8, use_cache=False,
               generation={**FAST, "max_new_tokens": 8})


def test_tune_generate_compare_loop(before_run, tiny_model, tmp_path, monkeypatch):
    import biaslens.engine.generation as engine
    from biaslens.comparison.runs import compare_runs
    from biaslens.methods.holistic.style_equality import generation_tag, load_tagged_responses, tune_style_equality
    from biaslens.mitigation.training import TrainingConfig

    base = tiny_model
    # default beta: the run's median bias value, so both tags occur
    tagged = load_tagged_responses(before_run.out, beta=None, alpha=0)
    beta = float(np.median(tagged.table["bias_value"]))
    assert tagged.beta == beta and tagged.beta_source.startswith("median bias value")
    res = tune_style_equality(str(base), before_run.out, tmp_path / "tuned", alpha=0,
                              config=TrainingConfig(max_steps=2, batch_size=4, save_steps=1, eval_steps=1))
    assert res.counts["bias"] > 0 and res.counts["no_bias"] > 0
    assert res.counts["bias"] + res.counts["no_bias"] == before_run.metrics["n_responses"]
    assert res.n_eval >= 1 and res.training.steps == 2 and res.training.eval_perplexity > 0
    record = json.loads((tmp_path / "tuned" / "biaslens-training.json").read_text())
    se = record["description"]["style_equality"]
    assert se["generation_tag"] == "no_bias" and se["counts"] == res.counts and se["beta"] == beta
    assert se["beta_source"].startswith("median bias value")
    assert generation_tag(tmp_path / "tuned") == "no_bias"

    seen: list = []
    real = engine.generate_texts
    monkeypatch.setattr(engine, "generate_texts", lambda backend, requests, *a, **k: seen.extend(requests)
                        or real(backend, requests, *a, **k))
    after = run(suite="holistic-generation", model={"name": str(tmp_path / "tuned")}, out=tmp_path / "after",
                sample=8, use_cache=False, generation={**FAST, "max_new_tokens": 8})
    assert len(seen) == after.metrics["n_responses"] and all(r.prompt.endswith(" no_bias") for r in seen)
    assert {r.prompt for r in seen} == {t + " no_bias" for t in after.sentences["text"]}
    assert json.loads((after.out / "run.json").read_text())["generation"]["control_tag"] == "no_bias"
    assert not after.sentences["text"].str.contains("no_bias").any()  # the prompt column stays the dataset's

    metrics = compare_runs([str(before_run.out), str(after.out)], tmp_path / "cmp", labels=["before", "after"])
    change = metrics["holistic-generation"]["fgb_change_vs_first"]["after"]
    assert "ci" in change, (change, metrics["differences"])
    assert change["before"] == pytest.approx(before_run.metrics["full_gen_bias_x1000"])
    assert change["after"] == pytest.approx(after.metrics["full_gen_bias_x1000"])
    # a verdict only with its interval: "went down" exactly when the interval lies below 0
    assert change["went_down"] == (change["ci"][1] < 0)
    assert change["verdict"] in ("went down", "went up", "no detectable change")
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "FGB" in html and "Sympathy / Confusion key phrase per axis" in html


def test_key_phrase_group_rates_hand_values():
    import pandas as pd

    from biaslens.methods.holistic.generation_comparison import key_phrase_group_rates

    r = key_phrase_group_rates(pd.Series(["I\u2019m sorry to hear that. What is a left-handed?", "Never heard of it.",
                                          "Nice!", "I am sorry to hear"]))
    assert r == {"Sympathy": pytest.approx(50.0), "Confusion": pytest.approx(50.0)}


def test_cli_no_tags_ablation(before_run, tiny_model, tmp_path):
    from typer.testing import CliRunner

    from biaslens.cli.app import app
    from biaslens.methods.holistic.style_equality import generation_tag

    base = tiny_model
    out = tmp_path / "ablation"
    result = CliRunner().invoke(app, ["tune", "style-equality", "--model", str(base), "--generations",
                                      str(before_run.out), "--beta", "0", "--alpha", "1", "--out", str(out),
                                      "--no-tags", "--max-steps", "1", "--batch-size", "4"])
    assert result.exit_code == 0, result.output
    assert "no tag (ablation)" in result.output
    record = json.loads((out / "biaslens-training.json").read_text())
    assert record["description"]["style_equality"]["use_tags"] is False
    assert generation_tag(out) is None
    assert record["steps"] == 1
