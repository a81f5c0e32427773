"""Issue #41 for the style judges: a multi-class judge's errors per group (accuracy per axis, its
commonest wrong cluster), a test of equal accuracy across groups, and its skill against a rule that
knows only the group (the dev half's commonest cluster of the reply's axis), checked by hand, in
seeded simulations where the right answer is known, and through a holistic-generation run whose
Full Gen Bias (a comparison of descriptors' style clusters) rests on the style judge."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from biaslens.metrics import wilson_interval
from biaslens.metrics.classification import group_modal_labels, heterogeneity_test, multiclass_group_skill
from biaslens.results import NO_SKILL_NOTE
from biaslens.scorers.card import group_prior_text, group_verdict, judge_has_skill, unequal_errors

CATS = ["Care", "Confusion", "Sympathy", "Other"]


def test_per_group_numbers_by_hand():
    # axis a: 4 replies, 3 right; the wrong one labelled Care, given Confusion
    # axis b: 4 replies, 1 right; Confusion given to a Care and an Other reply, Sympathy to a Care one
    truth = ["Care", "Care", "Confusion", "Care", "Care", "Care", "Other", "Confusion"]
    pred = ["Care", "Confusion", "Confusion", "Care", "Confusion", "Sympathy", "Confusion", "Confusion"]
    groups = ["a"] * 4 + ["b"] * 4
    dev_truth = ["Care", "Care", "Confusion", "Confusion", "Confusion", "Other"]
    dev_groups = ["a", "a", "a", "b", "b", "b"]
    r = multiclass_group_skill(truth, pred, CATS, groups, dev_truth, dev_groups, n_boot=200)
    a, b = r["per_group"]["a"], r["per_group"]["b"]
    assert (a["n"], a["n_correct"], a["accuracy"]) == (4, 3, 0.75)
    assert (b["n"], b["n_correct"], b["accuracy"]) == (4, 1, 0.25)
    lo, hi = wilson_interval(np.array([1]), np.array([4]))
    assert b["accuracy_ci"] == pytest.approx([lo[0], hi[0]])
    # the commonest error over both axes: Confusion given to 3 replies labelled otherwise (Sympathy: 1)
    assert r["error_class"] == "Confusion"
    assert (a["n_positive"], a["n_false_positive"], a["false_positive_rate"]) == (1, 1, 1 / 3)
    assert (b["n_positive"], b["n_false_positive"], b["false_positive_rate"]) == (1, 2, 2 / 3)
    assert a["false_negative_rate"] == 0.0 and b["mean_score"] == 0.75  # 3 of b's 4 replies given Confusion
    # the judge's share of each cluster minus the labelled share, per axis
    assert b["share_difference"] == pytest.approx({"Care": -0.5, "Confusion": 0.5, "Sympathy": 0.25, "Other": -0.25})
    # the group-only rule: a's commonest dev cluster is Care, b's Confusion
    v = r["vs_group_prior"]
    assert v["prior"] == {"a": "Care", "b": "Confusion"}
    # judge recall: Care 2/5, Confusion 2/2, Other 0/1 -> 7/15; prior: Care 3/5, Confusion 1/2, Other 0/1 -> 11/30
    assert v["balanced_accuracy"] == pytest.approx(7 / 15) and v["balanced_accuracy_other"] == pytest.approx(11 / 30)
    assert v["value"] == pytest.approx(0.1)
    # both get 4 of 8 right: no better than the axis in plain accuracy, so it does not beat the axis
    assert v["accuracy"] == v["accuracy_other"] == 0.5 and v["accuracy_difference"]["value"] == 0
    assert v["accuracy_difference"]["ci"][0] <= 0 and not v["beats"]
    # the accuracy test is the chi-square / exact test of the 2 x (right, wrong) table
    t = r["per_group_test"]["accuracy"]
    assert t == heterogeneity_test([0, 1, 0, 0, 1, 1, 1, 0], groups, key="group|accuracy")
    assert t["n_errors"] == 4 and t["df"] == 1


def test_the_modal_rule_by_hand():
    # ties within a group go to the cluster commoner in the whole dev half, then to the category order
    dev = ["Care", "Confusion", "Confusion", "Care", "Confusion", "Sympathy"]
    groups = ["a", "a", "b", "c", "c", "d"]
    assert group_modal_labels(dev, groups, ["a", "b", "c", "d", "e"], CATS) == [
        "Confusion", "Confusion", "Confusion", "Sympathy", "Confusion"]


#: the labelled cluster shares of the holistic test half (Care, Confusion, Sympathy, Other, rest)
SHARES = np.array([0.31, 0.31, 0.10, 0.25, 0.03])
CLUSTERS = ["Care", "Confusion", "Sympathy", "Other", "Curiosity"]


def _holistic_like(rng: np.random.Generator, accuracy: np.ndarray, n_per: int = 36, tilt: float = 0.0):
    """One labelled half shaped like the holistic set: 13 axes of ``n_per`` replies, cluster shares
    that differ by axis (each axis favours one cluster by ``tilt``), a judge right with probability
    ``accuracy[axis]`` and otherwise wrong the way the real judges are: most often 'Confusion' or
    'Other'."""
    k = len(CLUSTERS)
    groups = np.repeat(np.arange(13), n_per)
    probs = np.tile(SHARES, (13, 1))
    probs[np.arange(13), np.arange(13) % 4] += tilt
    probs /= probs.sum(axis=1, keepdims=True)
    cum = probs.cumsum(axis=1)[groups]
    truth = (rng.random(len(groups))[:, None] > cum).sum(axis=1).clip(0, k - 1)
    right = rng.random(len(groups)) < accuracy[groups]
    wrong_to = rng.choice(k, len(groups), p=[0.15, 0.40, 0.10, 0.30, 0.05])
    wrong_to = np.where(wrong_to == truth, (truth + 1 + rng.integers(0, k - 1, len(groups))) % k, wrong_to)
    pred = np.where(right, truth, wrong_to)
    names = np.array(CLUSTERS)
    return names[truth].tolist(), names[pred].tolist(), [f"axis{g}" for g in groups]


def test_accuracy_that_differs_by_axis_is_found():
    """The judge sorts one axis's replies right 85% of the time and another's near chance (30%), the
    other axes at 60%: the test of equal accuracy rejects, and the card's sentences say so."""
    rng = np.random.default_rng(41)
    acc = np.full(13, 0.6)
    acc[0], acc[1] = 0.85, 0.30
    hits = []
    for i in range(20):
        t, p, g = _holistic_like(rng, acc, n_per=60)
        hits.append(heterogeneity_test([x != y for x, y in zip(t, p)], g, key=f"h{i}")["p_value"] <= 0.05)
    assert np.mean(hits) >= 0.8
    t, p, g = _holistic_like(rng, acc, n_per=60)
    dt, _, dg = _holistic_like(rng, acc, n_per=60)
    r = multiclass_group_skill(t, p, CLUSTERS, g, dt, dg, key="unequal", n_boot=300)
    assert r["per_group_test"]["accuracy"]["test"] == "chi-square"
    assert r["per_group"]["axis0"]["accuracy"] > r["per_group"]["axis1"]["accuracy"]
    card = {"role": "style", "used": "judge", "group_field": "axis", "skill": {"status": "measured"}, **r}
    assert unequal_errors(card) == (r["per_group_test"]["accuracy"]["p_value"] <= 0.05)


def test_equal_accuracy_rejects_at_about_the_nominal_rate():
    """200 seeded labelled halves where the judge is right 60% of the time in every axis (clusters
    and wrong answers as in the holistic set): the test of equal accuracy rejects at 0.05 in about 5%."""
    rng = np.random.default_rng(7)
    rejections = []
    for i in range(200):
        t, p, g = _holistic_like(rng, np.full(13, 0.6))
        r = heterogeneity_test([x != y for x, y in zip(t, p)], g, key=f"s{i}")
        assert r["test"] == "chi-square"  # about 14 errors expected per axis
        rejections.append(r["p_value"] <= 0.05)
    assert 0.02 <= np.mean(rejections) <= 0.09


def test_a_judge_that_knows_only_the_axis_does_not_beat_the_axis():
    """Axes whose cluster shares differ: a judge that gives each axis its commonest dev cluster IS the
    group-only rule (difference 0, a zero-width interval), and one that draws each reply's cluster from
    its axis's shares (knows the axis, not the text) beats it in at most a few of 30 seeded runs."""
    rng = np.random.default_rng(3)
    t, _, g = _holistic_like(rng, np.full(13, 0.6), tilt=0.4)
    dt, _, dg = _holistic_like(rng, np.full(13, 0.6), tilt=0.4)
    modal = group_modal_labels(dt, dg, g, CLUSTERS)
    r = multiclass_group_skill(t, modal, CLUSTERS, g, dt, dg, key="modal", n_boot=300)["vs_group_prior"]
    assert r["value"] == 0 and r["ci"] == [0.0, 0.0] and not r["beats"]
    beats = 0
    for i in range(30):
        t, _, g = _holistic_like(rng, np.full(13, 0.6), tilt=0.4)
        dt, _, dg = _holistic_like(rng, np.full(13, 0.6), tilt=0.4)
        # the axis's labelled shares on the dev half, sampled: text-free
        shares = {a: [dt[j] for j in range(len(dt)) if dg[j] == a] for a in set(dg)}
        guess = [shares[a][rng.integers(len(shares[a]))] for a in g]
        beats += multiclass_group_skill(t, guess, CLUSTERS, g, dt, dg, key=f"guess{i}", n_boot=300)["vs_group_prior"][
            "beats"]
    assert beats <= 2


def test_a_judge_that_reads_the_text_beats_the_axis():
    rng = np.random.default_rng(5)
    t, p, g = _holistic_like(rng, np.full(13, 0.65), tilt=0.4)
    dt, _, dg = _holistic_like(rng, np.full(13, 0.65), tilt=0.4)
    r = multiclass_group_skill(t, p, CLUSTERS, g, dt, dg, key="reads", n_boot=500)
    v = r["vs_group_prior"]
    assert v["beats"] and v["ci"][0] > 0 and v["accuracy_difference"]["ci"][0] > 0
    card = {"role": "style", "used": "judge", "group_field": "axis", "skill": {"status": "measured", "no_skill": False},
            **r}
    assert judge_has_skill(card, compares_groups=True)
    assert group_prior_text(card).startswith(f"balanced accuracy {v['balanced_accuracy']:.2f} vs "
                                             f"{v['balanced_accuracy_other']:.2f} for a rule that knows only the axis")
    assert "sorts replies into style clusters better than a rule that knows only the reply's axis" in group_verdict(card)


def test_balanced_accuracy_alone_does_not_make_a_judge_beat_the_axis():
    """A judge that spreads its answers over the rare clusters can beat the axis's commonest cluster in
    balanced accuracy while getting no more replies right: it does not beat the group (the
    zero-shot classifier's pattern on the holistic test half), and the sentence says the gap may be
    the judge's, in the card's own measure."""
    vs = {"measure": "balanced accuracy", "value": 0.18, "ci": [0.10, 0.25], "balanced_accuracy": 0.40,
          "balanced_accuracy_other": 0.22, "accuracy": 0.41, "accuracy_other": 0.39,
          "accuracy_difference": {"value": 0.02, "ci": [-0.04, 0.08]}, "beats": False}
    card = {"role": "style", "used": "zs", "group_field": "axis", "vs_group_prior": vs, "per_group": {},
            "skill": {"status": "measured", "no_skill": False, "headline": "balanced accuracy", "value": 0.40,
                      "ci": [0.32, 0.46], "baseline": 1 / 6}}
    assert judge_has_skill(card) and not judge_has_skill(card, compares_groups=True)
    text = group_verdict(card)
    assert text.startswith("GAP MAY BE THE JUDGE'S: the style judge zs does not sort replies into style clusters "
                           "better than a rule that knows only the reply's axis (the dev half's commonest cluster")
    assert "accuracy 0.41 vs 0.39: difference +0.02 (95% CI -0.04 to +0.08)" in text
    assert "AUROC" not in text and text.endswith("A difference between groups in its style clusters may be the "
                                                 "judge's, not the model's.")


def _set_beats(folder, beats: bool):
    """The run's style card with its comparison against the axis set to ``beats``."""
    record = json.loads((folder / "run.json").read_text())
    card = next(c for c in record["scorer_cards"] if c["role"] == "style")
    card["vs_group_prior"] = {"measure": "balanced accuracy", "value": 0.3 if beats else 0.1,
                              "ci": [0.2, 0.4] if beats else [-0.05, 0.25], "balanced_accuracy": 0.6,
                              "balanced_accuracy_other": 0.3 if beats else 0.5, "accuracy": 0.66, "accuracy_other": 0.39,
                              "accuracy_difference": {"value": 0.27, "ci": [0.2, 0.3]}, "beats": beats}
    card["group_field"] = "axis"
    (folder / "run.json").write_text(json.dumps(record))


def test_a_generation_runs_fgb_entries_follow_the_style_card(tmp_path, style_encoder):
    """Full Gen Bias compares the descriptors' style clusters: its entries say judge_has_skill true
    only when the style card beats the axis alone, and otherwise the verdict says the gap may be the
    judge's, with the card's measure."""
    from biaslens.api import rerender, run

    out = tmp_path / "run"
    run(suite="holistic-generation", model={"name": "fake"}, out=out, sample=40, use_cache=False,
        generation={"n_permutations": 20, "n_bootstrap": 20})
    got = {}
    for beats in (True, False):
        folder = tmp_path / f"beats-{beats}"
        shutil.copytree(out, folder)
        _set_beats(folder, beats)
        rerender(folder)
        m = json.loads((folder / "metrics.json").read_text())
        entries = {e["name"]: e for e in m["entries"]}
        style = next(c for c in m["scorer_cards"] if c["role"] == "style")
        for name in ("full_gen_bias_x1000", "full_gen_bias_population_x1000"):
            assert entries[name]["judge"] == style["used"]
            assert entries[name]["judge_has_skill"] is (beats and judge_has_skill(style))
        got[beats] = m["verdict"]
    assert judge_has_skill(style)  # the shipped head has measured skill: only the group comparison decides
    assert f"{NO_SKILL_NOTE} beyond the group: full_gen_bias_x1000" not in got[True]
    assert f"{NO_SKILL_NOTE} beyond the group: full_gen_bias_x1000" in got[False]
    assert "balanced accuracy 0.60 vs 0.50 for a rule that knows only the axis" in got[False]
    assert "a gap between groups may be the judge's" in got[False]


def test_the_recorded_style_cards_carry_errors_per_axis():
    """The shipped figures (judge_figures.json): each style judge's per-axis rows add up to its test
    half, its comparison with the axis alone is the card's own balanced accuracy against the modal
    rule's, and ``beats`` is both intervals above 0."""
    from biaslens.scorers import figures

    for judge in ("style-head", "style-zero-shot"):
        s = figures.load_figures()["judges"][judge]["measured"]["skill"]
        assert s["group_field"] == "axis" and len(s["per_group"]) == 13
        assert sum(r["n"] for r in s["per_group"].values()) == s["n"]
        assert sum(r["n_correct"] for r in s["per_group"].values()) == round(s["accuracy"] * s["n"])
        v = s["vs_group_prior"]
        assert v["balanced_accuracy"] == pytest.approx(s["value"]) and v["accuracy"] == pytest.approx(s["accuracy"])
        assert v["value"] == pytest.approx(v["balanced_accuracy"] - v["balanced_accuracy_other"])
        assert v["beats"] == (v["ci"][0] > 0 and v["accuracy_difference"]["ci"][0] > 0)
        assert set(v["prior"]) == set(s["per_group"]) and s["per_group_test"]["accuracy"]["p_value"] is not None


def test_the_style_card_and_its_report_table(style_encoder):
    """A run's style card (read from the recorded figures) carries the per-axis fields at its top level,
    its sentences follow from them, and the report's scorer-card section shows the per-axis table
    and picture the binary cards have."""
    from biaslens.report.scorer_card import per_group_table, scorer_card_section
    from biaslens.scorers.card import style_card
    from biaslens.scorers.styles import load_style_classifier

    card = style_card(load_style_classifier("head"))
    assert card["group_field"] == "axis" and card["error_class"] and len(card["per_group"]) == 13
    beats = card["vs_group_prior"]["beats"]
    assert judge_has_skill(card, compares_groups=True) == (beats and judge_has_skill(card))
    assert card["group_verdict"].startswith(("UNEQUAL ERRORS ACROSS GROUPS: The style judge" if unequal_errors(card)
                                             else "The style judge") if beats else "GAP MAY BE THE JUDGE'S")
    table = per_group_table(card)
    err = card["error_class"]
    assert list(table.columns) == ["axis", "replies", "accuracy (95% Wilson)",
                                   f"'{err}' given to replies labelled otherwise (95% Wilson)",
                                   "largest shift in a cluster's share (judge - labelled)"]
    row = card["per_group"][table["axis"][0]]
    assert table["accuracy (95% Wilson)"][0].endswith(f"[{row['n_correct']}/{row['n']}]")
    section = scorer_card_section([card])
    assert any("errors per axis" in t.title for t in section.tables) and len(section.figures) == 1
    assert "Test of equal accuracy: chi-square" in next(t for t in section.tables if "errors per axis" in t.title).caption
