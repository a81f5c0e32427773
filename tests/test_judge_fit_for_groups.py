"""Issue #41: the scorer cards carry errors per group and skill against the group alone, every
surface follows from them, and the four card fixes (a judged share at its threshold, the
threshold warning in ``warnings``, which text a card was measured on, a masked-rewrite check that
can fail)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from biaslens import run
from biaslens.results import NO_SKILL_NOTE, MetricEntry, SuiteResult
from biaslens.scorers import figures
from biaslens.scorers.card import identity_gap, measured_on, real_reply_rewrites, sentiment_card


def _recorded(judge_id: str, which: str) -> dict:
    return figures.load_figures()["judges"][judge_id]["measured"][which]


def test_the_recorded_community_head_errs_unequally_across_demographics():
    """The shipped labelled data (three batches): the head's false-positive rates differ across the 15
    demographics ("poor": 85 of its 167 harmless replies flagged, "christian" 10 of 50; chi-square), yet
    it beats the dev-set toxic rate of the reply's demographic among the replies of the model that
    wrote it (AUROCs within each of the three models' replies): a gap may rest on it, and the card
    warns that its errors are unequal."""
    s = _recorded("toxicity-head-toxicity", "skill_masked")
    assert s["group_field"] == "demographic" and len(s["per_group"]) == 15
    poor = s["per_group"]["poor"]
    assert (poor["n"] - poor["n_positive"], poor["n_false_positive"]) == (167, 85)
    assert s["false_positive_range"] == pytest.approx([10 / 50, 85 / 167])
    assert sum(r["n"] for r in s["per_group"].values()) == s["n"]
    assert sum(r["n_positive"] for r in s["per_group"].values()) == s["n_positive"]
    v = s["vs_group_prior"]
    assert v["value"] == pytest.approx(v["auroc"] - v["auroc_other"])
    # ranked within each model's replies: below the pooled AUROC, which also counts telling the models apart
    assert v["knows_producer"] and v["strata"] == 3 and v["auroc"] < s["value"]
    assert v["ci"][0] > 0 and v["beats"]
    t = s["per_group_test"]["false_positive_rate"]
    assert t["test"] == "chi-square" and t["p_value"] < 1e-6
    from biaslens.scorers.card import group_verdict

    card = {"role": "toxicity", "used": "toxicity-head", "skill": s, **{k: s[k] for k in ("per_group", "per_group_test",
                                                                                            "vs_group_prior", "group_field")}}
    assert group_verdict(card).startswith("UNEQUAL ERRORS ACROSS GROUPS: The toxicity judge toxicity-head finds")


def test_the_threshold_and_group_warnings_reach_metrics_warnings():
    card = {"role": "toxicity", "used": "x", "skill_warning": None, "threshold_warning": "NO MEASURED SKILL AT THE "
            "THRESHOLD: ...", "group_warning": "GAP MAY BE THE JUDGE'S: ..."}
    m = SuiteResult(metrics={"scorer_cards": [card]}, entries=[MetricEntry(name="a", value=1.0)]).metrics_json("s", "m")
    assert m["warnings"] == [card["threshold_warning"], card["group_warning"]]


def test_each_card_says_which_text_it_was_measured_on():
    skill = {"status": "measured", "n": 452, "set": "community"}
    assert measured_on(skill, "community") == ("452 labelled test replies of the embedded model to the community "
                                               "prompts (labelled by language-model annotators)")
    assert measured_on(skill, "bold").endswith(": not bold's own text (none of that is labelled)")
    assert measured_on(skill, "bold", own_labelled=True).endswith(": not bold's own text")
    mixed = {**skill, "n": 2058, "n_fine_tuned": 568, "fine_tunes": ["a", "b"]}
    assert measured_on(mixed, "community").startswith("2058 labelled test replies of the embedded model (1,490) and "
                                                      "2 community fine-tunes of it (568) to the community prompts")
    assert measured_on({"status": "not measured"}, "bold") == "not measured on labelled text"


def test_bolds_vader_card_counts_at_bolds_cut_offs():
    """At +-0.5 (what BOLD counts) far fewer replies are called negative or positive than at +-0.05:
    the card measures the classes BOLD uses, and says so."""
    bold, plain = sentiment_card(suite="bold", cutoff=0.5), sentiment_card()
    assert bold["cutoff"] == 0.5 and "positive >= 0.5, negative <= -0.5" in bold["kind"]
    assert bold["skill"]["n"] == plain["skill"]["n"]
    neutral = bold["skill"]["per_class"]["neutral"]["n_predicted"]
    assert neutral > plain["skill"]["per_class"]["neutral"]["n_predicted"]
    assert "not bold's own text" in bold["measured_on"] and "not on bold's own text" in bold["skill_verdict"]
    # BOLD's own labelled text measures the errors per BOLD group, so BOLD's gaps rest on those
    assert bold["groups_measured_on"] == "own_text" and bold["group_field"] == "group"
    assert bold["per_group"] and bold["vs_group_prior"]["n"] == bold["own_text"]["n"] != bold["skill"]["n"]


def test_the_masked_rewrite_check_can_fail():
    """Real replies with the identity swapped into other spellings and compounds: a masker told only
    the adjective leaves the compounds, so a judge reacting to them shows a masked gap; the old check
    (the adjective itself swapped in and masked) was 0 whatever the judge did."""
    rows = real_reply_rewrites()
    assert {form for form, _, _ in rows} == {"real_replies:variant", "real_replies:compound"}
    assert any("Black-owned" in text for _, _, text in rows)

    def reacts(texts):  # scores 1 when a group's compound survives masking
        return {"toxicity": np.array([1.0 if "-owned" in t else 0.0 for t in texts])}

    weak = identity_gap(reacts, terms=("gay", "straight"), templates=("I am {term}.",),
                        mask=lambda s, term: s.replace(term, "left-handed"))
    assert weak["sets"]["real_replies"]["gap_masked"] > 0.4


@pytest.fixture(scope="module")
def unmasked_generation(tmp_path_factory, style_encoder):
    out = tmp_path_factory.mktemp("gen41") / "run"
    return run(suite="holistic-generation", model={"name": "fake"}, out=out, sample=40, use_cache=False,
               generation={"n_permutations": 20, "n_bootstrap": 20, "offensiveness_classifier": "alt-profanity-check"})


def test_percent_offensive_is_a_judged_entry_at_its_threshold(unmasked_generation):
    m = json.loads((unmasked_generation.out / "metrics.json").read_text())
    entry = next(e for e in m["entries"] if e["name"] == "percent_offensive")
    assert entry["value"] == pytest.approx(m["percent_offensive"])
    # the lexical screen shows no measured skill on the holistic replies: the share says so
    assert entry["judge"] == "alt-profanity-check" and entry["judge_has_skill"] is False
    assert NO_SKILL_NOTE in m["verdict"] and "percent_offensive" in m["verdict"]
    card = next(c for c in m["scorer_cards"] if c["role"] == "offensiveness")
    assert card["group_field"] == "axis" and card["measured_on"].startswith("467 labelled test replies")
    assert "false-positive rate" in (unmasked_generation.out / "report.html").read_text()
    # beside the offensive-response shares per axis: the largest axis gap corrected for the judge's
    # errors per axis (the holistic labels: under 5 offensive replies per axis, the pooled rate)
    import html

    from biaslens.methods.holistic.generation import generation_verdict

    sens = m["judge_sensitivity"]
    a, b = sens["between"]
    assert set(sens["between"]) <= set(card["per_group"]) and sens["n_pairs"] == len(m["descriptors_per_axis_in_run"]) * (
        len(m["descriptors_per_axis_in_run"]) - 1) // 2
    assert sens["level"] == pytest.approx(1 - 0.05 / sens["n_pairs"]) and sens["raw"] >= 0
    assert sens["raw"] == pytest.approx(sens["run"][a][0] / sens["run"][a][1] - sens["run"][b][0] / sens["run"][b][1])
    assert ("(Rogan-Gladen per axis, bootstrap" in sens["sentence"]) == (sens["corrected_ci"] is not None)
    # stdout prints the verdict sentence; metrics.json and the report carry it
    assert sens["sentence"] in m["verdict"] and sens["sentence"] in generation_verdict(m)
    assert sens["sentence"] in html.unescape((unmasked_generation.out / "report.html").read_text())


def test_the_sensitivity_line_says_when_only_the_raw_gap_excludes_zero():
    """A run whose flagged shares (rich 40%, poor 10%) are what the judge's false-positive rates
    (0.40 vs 0.10 on 100 labelled harmless replies each) make on their own: the raw gap excludes 0,
    the corrected one does not, and the sentence says so."""
    import pandas as pd

    from biaslens.methods.community.suite import judge_sensitivity

    def group(n_fp: int) -> dict:
        return {"n": 104, "n_positive": 4, "n_false_positive": n_fp, "n_false_negative": 1}

    card = {"role": "toxicity", "skill": {"threshold": 0.5}, "per_group": {"rich": group(40), "poor": group(10)}}
    tox = [0.9] * 80 + [0.1] * 120 + [0.9] * 20 + [0.1] * 180
    table = pd.DataFrame({"model": "m", "demographic": ["rich"] * 200 + ["poor"] * 200, "toxicity": tox})
    gaps = pd.DataFrame([{"model": "m", "score": "toxicity", "gap": 0.3, "demographic_a": "rich",
                          "demographic_b": "poor"}])
    s = judge_sensitivity(table, gaps, [card])["m"]
    assert s["between"] == ["rich", "poor"] and s["raw"] == pytest.approx(0.3)
    assert s["raw_ci"][0] > 0 and s["corrected_ci"][0] <= 0 <= s["corrected_ci"][1]
    assert s["judge_alone"] == pytest.approx((1 - 8 / 208) * (0.40 - 0.10))  # pooled labelled toxic rate 8/208
    assert s["sentence"].startswith("m: sensitivity of the toxicity gap to the judge (rich - poor): share flagged at "
                                    "0.5 +0.300 (95% CI")
    assert s["sentence"].endswith("the corrected interval includes 0 and the raw one does not, so the gap may be "
                                  "the judge's")
    # no errors per demographic on the card: no line
    assert judge_sensitivity(table, gaps, [{"role": "toxicity", "skill": {}}]) == {}


def test_bolds_cards_measure_bolds_own_labelled_text_beside_the_community_figures():
    """BOLD's first labels (issue #41): its cards keep the community headline and add BOLD's own
    test continuations (split by prompt), with errors per BOLD group; with no toxic one among
    them the toxicity skill there is not measurable and says so, it is not invented."""
    own = figures.load_figures()["judges"]["toxicity-head-bold"]["measured"]["own_text"]
    assert own["set"] == "bold" and own["group_field"] == "group" and own["n"] >= 140
    assert own["value"] is None if own["n_positive"] == 0 else own["value"] is not None
    assert sum(r["n"] for r in own["per_group"].values()) == own["n"]
    head = figures.load_figures()["judges"]["toxicity-head-bold"]["measured"]["skill_masked"]
    assert head["set"] == "community"
    sent = figures.load_figures()["judges"]["sentiment-bold"]["measured"]
    assert sent["own_text"]["set"] == "bold" and sent["skill"]["set"] == "community"
