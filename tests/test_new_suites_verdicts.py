"""The verdict paths of Winogender, WinoBias, BBQ and BOLD end to end at the bias card's budgets
(smoke and default), on fake models with a known answer: ``fake-unbiased`` (every text an
independent draw: no bias by construction) and the same model with planted words (a known lean).
CrowS-Pairs' are in tests/methods/crows_pairs/test_crows_pairs.py. Each sentence says what its entries' verdicts say,
and each interval printed agrees with its verdict."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

import biaslens
from biaslens.methods.bbq.dataset import read_category
from biaslens.methods.bold.suite import MATERIAL
from biaslens.suites import suite_class

QUIET = Console(stderr=True, quiet=True)


def _run(tmp_path, suite, name, budget, *, planted=None, hostile_prompts=None, result=False, **options):
    model: dict = {"name": "fake-unbiased"}
    engine = {"planted": planted} if planted else {}
    if hostile_prompts:
        engine["hostile_prompts"] = hostile_prompts
    if engine:
        model.update(backend="fake", engine_options=engine)
    spec = dict(suite_class(suite).card.budgets[budget].get(suite, {}))
    spec.update(options)
    res = biaslens.run(suite=suite, model=model, out=str(tmp_path / name), cache_dir=str(tmp_path / "cache"),
                       console=QUIET, **({suite: spec} if spec else {}))
    return res if result else res.metrics


def _agree(entries):
    for e in entries:
        if e.get("verdict") is None or e.get("ci_low") is None:
            continue
        ideal = e.get("ideal") or 0.0
        excludes = e["ci_low"] > ideal or e["ci_high"] < ideal
        assert excludes == (e["verdict"] == "detected"), e


def test_winogender_unbiased_and_planted(tmp_path):
    """All 720 sentences at every budget: the unbiased fake reads 'cannot tell' for both tests;
    'she'/'her' planted 3 nats likelier reads the female sentence likelier, its share printed."""
    m = _run(tmp_path, "winogender", "wg", "default")
    assert m["verdict"].startswith("cannot tell whether the model's pronoun preference follows")
    assert "cannot tell whether the model prefers either pronoun" in m["verdict"]
    _agree(m["entries"][:2])
    p = _run(tmp_path, "winogender", "wg_planted", "default", planted={"she": 3.0, "her": 3.0})
    share = next(e for e in p["entries"] if e["name"] == "share_male")
    assert share["verdict"] == "detected" and share["ci_high"] < 50
    assert "; the female sentence is likelier in 6" in p["verdict"]
    _agree(p["entries"][:2])


@pytest.mark.parametrize("budget", ["smoke", "default"])
def test_winobias_unbiased_reads_no_preference(tmp_path, budget):
    """The unbiased fake: no type on the test split (default) or the pooled gap (smoke: type 1, dev
    only) reads 'detected'; a planted 'he' (a pronoun-frequency lean) cancels in the pro-anti gap,
    as WinoBias' design intends (each schema pairs a male- and a female-stereotyped occupation)."""
    for name, planted in (("u", None), ("he", {"he": 3.0, "his": 3.0, "him": 3.0})):
        m = _run(tmp_path, "winobias", f"wb_{budget}_{name}", budget, planted=planted)
        heads = [e for e in m["entries"] if e["name"].startswith("pro_anti_gap")]
        assert heads and all(e["verdict"] != "detected" for e in heads), [(e["name"], e["p_value"]) for e in heads]
        assert not m["verdict"].startswith("the model prefers")
        assert m["unit"] == "occupations"
        _agree(m["entries"])


def test_bbq_unbiased_at_the_smoke_budget_and_a_planted_answer_file(tmp_path):
    """Smoke budget on the unbiased fake: no category biased after Holm. An answers file that always
    picks the stereotyped person (Religion, full) is biased in both contexts, every interval
    agreeing with its verdict."""
    m = _run(tmp_path, "bbq", "bbq_u", "smoke")
    assert "0 of 2 categories biased in ambiguous contexts after Holm" in m["verdict"]
    _agree(m["entries"])
    items = read_category("Religion")
    rows = [{"example_id": int(r["example_id"]), "category": "Religion", "answer": int(r["target_loc"])}
            for r in items.to_dict("records")]
    path = tmp_path / "biased.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = biaslens.run(suite="bbq", out=str(tmp_path / "bbq_b"), bbq={"answers_file": str(path), "n_bootstrap": 500},
                       console=QUIET)
    b = res.metrics
    assert b["verdict"].startswith("answers with the stereotype in ambiguous contexts")
    assert "1 of 1 categories biased in ambiguous contexts after Holm" in b["verdict"] or \
        "1 of 1 category biased in ambiguous contexts after Holm" in b["verdict"]
    _agree(b["entries"])


@pytest.mark.parametrize("budget", ["smoke", "default"])
def test_bold_unbiased_says_what_the_budget_detects(tmp_path, budget):
    """The unbiased fake: no largest gap detected, no pair after Holm; each 'cannot tell' sentence
    gives the gap the budget detects, each 'no gap' one is backed by a detectable gap within the
    material size; every interval agrees with its verdict."""
    res = _run(tmp_path, "bold", "bold_u", budget, result=True)
    m, gaps = res.metrics, res.tables["gaps"]
    sentences = _bold_sentences(m)
    for e in m["entries"]:
        score = e["name"].removeprefix("largest_").removesuffix("_gap")
        assert e["verdict"] != "detected", e
        said = sentences[score]
        if e["verdict"] == "cannot_tell":
            assert said.startswith(f"cannot tell whether {score}") and "at this budget can only detect" in said
        else:
            assert said.startswith(f"no {score} gap distinguishable from zero") and e["detectable"] <= MATERIAL[score]
    assert not (gaps["p_holm"] < 0.05).any()
    _agree(m["entries"])
    _pairs_agree(gaps)


def _bold_sentences(m):
    """The verdict's sentence per score (each starts with the model's name)."""
    parts = [p.rstrip("; ") for p in m["verdict"].split("fake-unbiased: ")[1:]]
    return {score: next(p for p in parts if score in p.split("(")[0]) for score in ("sentiment", "toxicity")}


def _pairs_agree(gaps):
    """Each pair's interval at its Holm step level excludes 0 exactly when Holm rejects it."""
    ok = gaps["p_holm"].notna()
    g = gaps[ok]
    excludes = (g["ci_low_holm"] > 0) | (g["ci_high_holm"] < 0)
    assert (excludes == (g["p_holm"] < 0.05)).all(), g[excludes != (g["p_holm"] < 0.05)]
    assert ((g["level_holm"] >= 0.95) & (g["level_holm"] < 1)).all()


#: the group the planted fake is hostile to (one of race's four: three pairs name it)
HOSTILE_GROUP = "Hispanic_and_Latino_Americans"


@pytest.mark.parametrize("budget", ["smoke", "default"])
def test_bold_planted_hostility_towards_one_group(tmp_path, budget):
    """A fake whose continuations of every prompt about one race group are hostile words (VADER
    compound about -0.9) and whose other continuations are the unbiased fake's: after Holm, only
    that group's sentiment pairs differ (all three at the default budget); the largest gap names it
    and is detected; every entry's interval agrees
    with its verdict; each pair's interval at its Holm step level excludes 0 exactly when Holm
    rejects it. The toxicity entry carries the judge's skill flags as its scorer card says."""
    from biaslens.methods.bold.dataset import load_prompts
    from biaslens.scorers.card import judge_has_skill

    prompts = load_prompts(["race"])
    hostile = sorted(set(prompts.loc[prompts["group"] == HOSTILE_GROUP, "prompt"]))
    res = _run(tmp_path, "bold", f"bold_{budget}", budget, hostile_prompts=hostile, result=True)
    m, gaps = res.metrics, res.tables["gaps"]
    sent = gaps[gaps["score"] == "sentiment"]
    named = (sent["group_a"] == HOSTILE_GROUP) | (sent["group_b"] == HOSTILE_GROUP)
    print(budget, m["verdict"])
    detected = sent["p_holm"] < 0.05
    head = next(e for e in m["entries"] if e["name"] == "largest_sentiment_gap")
    # no pair without the group is called; at the default budget (25 pages per race group) all three
    # of its pairs are, at the smoke budget (5 pages) those whose gap clears the unbiased groups' spread
    assert HOSTILE_GROUP in head["description"] and detected.any() and not (detected & ~named).any()
    if budget == "default":
        assert (detected == named).all(), sent[detected != named]
    else:  # docs/bold.md says so
        assert int(detected.sum()) == 1
    assert head["verdict"] == "detected" and head["value"] > 0  # group_b is the hostile group
    assert m["verdict"].startswith("fake-unbiased: largest sentiment gap") and HOSTILE_GROUP in m["verdict"]
    assert f"{int(detected.sum())} of {int(sent['p_holm'].notna().sum())} pairs differ after Holm" in _bold_sentences(m)["sentiment"]
    _agree(m["entries"])
    _pairs_agree(gaps)
    tox = next(e for e in m["entries"] if e["name"] == "largest_toxicity_gap")
    card = next(c for c in m["scorer_cards"] if c.get("role") == "toxicity")
    skill = judge_has_skill(card, compares_groups=True)
    said = _bold_sentences(m)["toxicity"]
    assert tox["judge_has_skill"] is skill and tox["judge"] == card.get("used")
    print(budget, "toxicity:", tox["verdict"], "skill", skill, "|", said)
    if not skill:
        assert "the gap may be the judge's" in said or "NO MEASURED SKILL" in said
    else:
        assert "the gap may be the judge's" not in said and "NO MEASURED SKILL" not in said
