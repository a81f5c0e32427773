"""Issue #41: a judge's errors per group and its skill against a score that knows only the group
(biaslens.metrics.classification), checked with hand-computed numbers, against scipy, and in
seeded simulations where the right answer is known."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from biaslens.metrics import wilson_interval
from biaslens.metrics.classification import (
    auroc,
    group_errors,
    group_prior_scores,
    group_skill,
    heterogeneity_test,
    paired_auroc_difference,
)


def test_group_errors_by_hand():
    # group a: negatives flagged 2 of 3 (0.9 is a positive found; 0.6, 0.7 flagged, 0.1 not)
    prob = [0.9, 0.6, 0.7, 0.1, 0.2, 0.8, 0.3]
    truth = [1, 0, 0, 0, 1, 0, 0]
    groups = ["a", "a", "a", "a", "b", "b", "b"]
    r = group_errors(prob, truth, groups)
    assert r["a"]["n"] == 4 and r["a"]["n_positive"] == 1
    assert r["a"]["false_positive_rate"] == pytest.approx(2 / 3) and r["a"]["false_negative_rate"] == 0.0
    assert r["b"]["false_positive_rate"] == 0.5 and r["b"]["false_negative_rate"] == 1.0
    assert r["b"]["mean_score"] == pytest.approx((0.2 + 0.8 + 0.3) / 3)
    lo, hi = wilson_interval(np.array([2]), np.array([3]))
    assert r["a"]["false_positive_ci"] == pytest.approx([lo[0], hi[0]])
    # a group without positives has no false-negative rate (not 0)
    assert group_errors([0.1, 0.9], [0, 0], ["c", "c"])["c"]["false_negative_rate"] is None


def test_chi_square_agrees_with_scipy():
    rng = np.random.default_rng(3)
    groups = np.repeat(["a", "b", "c"], 80)
    errors = rng.random(240) < np.repeat([0.2, 0.3, 0.45], 80)
    r = heterogeneity_test(errors, groups.tolist())
    table = np.array([[(errors & (groups == g)).sum(), (~errors & (groups == g)).sum()] for g in "abc"])
    stat, p, df, _ = chi2_contingency(table, correction=False)
    assert r["test"] == "chi-square" and r["df"] == df == 2
    assert r["statistic"] == pytest.approx(stat) and r["p_value"] == pytest.approx(p)


def test_exact_test_holds_its_size_with_small_counts():
    """15 groups of 6-40 negatives and a 15% false-positive rate alike in every group (expected
    counts below 5, where the chi-square reference is wrong): the permutation test rejects at 0.05
    in about 5% of seeded data sets, never far above."""
    rng = np.random.default_rng(41)
    sizes = rng.integers(6, 40, 15)
    groups = np.repeat(np.arange(15), sizes).astype(str).tolist()
    rejections = []
    for _ in range(200):
        errors = rng.random(len(groups)) < 0.15
        r = heterogeneity_test(errors, groups, key=f"size{_}", n_permutations=999)
        assert r["test"].startswith("exact")
        rejections.append(r["p_value"] <= 0.05)
    assert 0.02 <= np.mean(rejections) <= 0.085


def test_exact_test_finds_a_group_that_flags_more():
    """The community pattern: one group's harmless replies flagged at 0.40, the rest at 0.15."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(10, 45, 15)
    groups = np.repeat(np.arange(15), sizes)
    rate = np.where(groups == 0, 0.6, 0.12)
    hits = [heterogeneity_test(rng.random(len(groups)) < rate, groups.astype(str).tolist(), key=f"p{i}",
                               n_permutations=999)["p_value"] <= 0.05 for i in range(40)]
    assert np.mean(hits) >= 0.7


def test_group_prior_and_paired_difference_by_hand():
    prior = group_prior_scores([1, 1, 0, 0, 0, 0], ["a", "a", "a", "b", "b", "b"], ["a", "b", "a", "b"])
    assert prior.tolist() == pytest.approx([2 / 3, 0.0, 2 / 3, 0.0])
    # a judge that ranks every positive first vs the prior that ties within groups
    truth = [1, 0, 0, 0]
    judge = [0.9, 0.1, 0.2, 0.3]
    r = paired_auroc_difference(judge, prior, truth, n_boot=200)
    assert r["auroc"] == 1.0 and r["auroc_other"] == pytest.approx(auroc(prior, truth)) == pytest.approx(5 / 6)
    assert r["value"] == pytest.approx(1 / 6)
    # the same score against itself: zero, with a zero-width interval (the draws are paired)
    same = paired_auroc_difference(judge, judge, truth, n_boot=200)
    assert same["value"] == 0 and same["ci"] == [0.0, 0.0]


def _community_like(rng: np.random.Generator, n: int, informative: float):
    """Replies of 15 groups whose toxic rates differ (2-12%), scored by a judge that knows each
    group's rate and, with weight ``informative``, something about the reply itself."""
    groups = rng.integers(0, 15, n)
    base = np.linspace(0.02, 0.12, 15)[groups]
    truth = rng.random(n) < base
    noise = rng.standard_t(3, n) * 0.05  # heavy tails, as real judge scores
    score = base + informative * truth + noise
    return score, truth.astype(int), groups.astype(str).tolist()


def test_a_judge_that_knows_only_the_group_does_not_beat_the_prior():
    rng = np.random.default_rng(0)
    beats, covered = 0, 0
    for i in range(30):
        dev_s, dev_y, dev_g = _community_like(rng, 900, 0.0)
        s, y, g = _community_like(rng, 900, 0.0)
        r = group_skill(s, y, g, dev_y, dev_g, threshold=0.1, key=f"sim{i}", n_boot=300)["vs_group_prior"]
        beats += r["beats"]
        covered += r["ci"][0] <= 0 <= r["ci"][1] or r["ci"][1] < 0
    assert beats <= 3  # the interval lies above 0 in about 2.5% of runs, never often
    assert covered >= 27


def test_a_judge_that_reads_the_text_beats_the_prior():
    rng = np.random.default_rng(1)
    dev_s, dev_y, dev_g = _community_like(rng, 900, 0.3)
    s, y, g = _community_like(rng, 900, 0.3)
    r = group_skill(s, y, g, dev_y, dev_g, threshold=0.2, key="beats", n_boot=500)
    assert r["vs_group_prior"]["beats"] and r["vs_group_prior"]["ci"][0] > 0
    assert set(r["per_group"]) == set(g) and r["per_group_test"]["false_positive_rate"]["p_value"] is not None
    lo, hi = r["false_positive_range"]
    assert lo == min(v["false_positive_rate"] for v in r["per_group"].values()) and hi >= lo


def _simulated_pair(rng: np.random.Generator, fpr_a: float, fpr_b: float, *, true_rate: float = 0.05,
                    fnr: float = 0.4, n_lab: int = 30, n_run: int = 200, n_groups: int = 15):
    """One labelled design: ``n_groups`` groups of ``n_lab`` labelled test replies (``true_rate``
    toxic), two of them compared in a run of ``n_run`` replies each; the judge misses ``fnr`` of
    toxic replies everywhere and flags harmless ones at ``fpr_a`` / ``fpr_b`` in the two groups
    (the others between 0.1 and 0.4), and the model's true toxic rate is the same. Measured through
    the line every suite prints (:func:`biaslens.scorers.card.gap_sensitivity`): the labelled
    replies as a card's errors per group, the run as scores at the 0.5 threshold."""
    from biaslens.metrics.classification import group_errors
    from biaslens.scorers.card import gap_sensitivity

    fprs = np.r_[fpr_a, fpr_b, rng.uniform(0.1, 0.4, n_groups - 2)]
    y = rng.random((n_groups, n_lab)) < true_rate
    flag = np.where(y, rng.random(y.shape) >= fnr, rng.random(y.shape) < fprs[:, None])
    names = np.repeat(["a", "b"] + [f"g{i}" for i in range(n_groups - 2)], n_lab)
    per = group_errors(np.where(flag, 0.9, 0.1).ravel(), y.ravel(), names.tolist())
    run_y = rng.random((2, n_run)) < true_rate
    run_flag = np.where(run_y, rng.random(run_y.shape) >= fnr, rng.random(run_y.shape) < np.c_[[fpr_a, fpr_b]])
    return gap_sensitivity(np.where(run_flag, 0.9, 0.1).ravel(), np.repeat(["a", "b"], n_run), per, threshold=0.5,
                           label="m", score_name="toxicity", group_word="group", pair=("a", "b"),
                           key=f"sim{rng.integers(1 << 30)}", n_boot=1000)


#: labelled designs the suites compare groups on (no true gap; the judge's false-positive rates
#: differ): community (15 demographics of about 30 labelled replies, about 5% toxic, the head's
#: 0.11 to 0.40 range) and holistic (13 axes of about 36 labelled replies, about 3.5% offensive,
#: so every axis borrows the pooled false-negative rate)
DESIGNS = {"community": {"fpr": (0.10, 0.40), "true_rate": 0.05, "n_lab": 30, "n_run": 200, "n_groups": 15},
           "holistic": {"fpr": (0.05, 0.25), "true_rate": 0.035, "n_lab": 36, "n_run": 150, "n_groups": 13}}


@pytest.mark.parametrize("design", list(DESIGNS))
def test_the_corrected_gap_covers_zero_when_only_the_judge_differs(design):
    """A judge whose false-positive rate differs by group and no true gap: the raw gap in flagged
    shares excludes 0 in almost every run, the corrected interval covers 0 in at least 93% of runs
    at its 95% level, and the judge-alone gap is about (1 - rate) (FPR_a - FPR_b)."""
    d = DESIGNS[design]
    rng = np.random.default_rng(41)
    results = [_simulated_pair(rng, *d["fpr"], true_rate=d["true_rate"], n_lab=d["n_lab"], n_run=d["n_run"],
                               n_groups=d["n_groups"]) for _ in range(300)]
    assert all("reason" not in r for r in results)  # both groups always have labelled harmless replies
    raw_excludes = np.mean([r["raw_ci"][1] < 0 or r["raw_ci"][0] > 0 for r in results])
    defined = [r for r in results if r["corrected_ci"] is not None]
    covers = np.mean([r["corrected_ci"][0] <= 0 <= r["corrected_ci"][1] for r in defined])
    assert raw_excludes > 0.95
    # where 1 - FPR - FNR comes near 0 (0.2 in the community design) a run can have no correction:
    # it says so (None), in under a fifth of runs at these designs (a draw below MIN_YOUDEN_J has none)
    assert len(defined) >= 0.8 * len(results) and covers >= 0.93, (len(defined), covers)
    assert all(r["n_undefined"] > r["n_boot"] / 2 for r in results if r["corrected_ci"] is None)
    expected = (1 - d["true_rate"]) * (d["fpr"][0] - d["fpr"][1])
    assert np.mean([r["judge_alone"] for r in results]) == pytest.approx(expected, abs=0.03)


def test_the_corrected_gap_keeps_a_true_gap():
    """Same judge error in both groups (false-positive rate 0.2, 30% of toxic replies missed),
    150 labelled replies per group, and a true gap of 0.25 in toxic rates: the corrected gap is
    centred on the true one (the correction does not erase what the model did), and its interval
    excludes 0 in about 40% of runs: the correction costs width (the labelled false-positive rates'
    own error enters it), which is what more labels buy back."""
    from biaslens.metrics.classification import misclassification_corrected_gap

    rng = np.random.default_rng(7)
    hits, estimates = 0, []
    for i in range(100):
        counts = [{"fp": int(rng.binomial(140, 0.2)), "negatives": 140, "fn": int(rng.binomial(10, 0.3)),
                   "positives": 10} for _ in range(15)]
        pooled = {k: sum(c[k] for c in counts) for k in counts[0]}
        runs = []
        for rate in (0.30, 0.05):
            y = rng.random(400) < rate
            runs.append((int(np.where(y, rng.random(400) >= 0.3, rng.random(400) < 0.2).sum()), 400))
        r = misclassification_corrected_gap(runs[0], runs[1], counts[0], counts[1], pooled, key=f"t{i}", n_boot=500)
        hits += r["corrected_ci"] is not None and r["corrected_ci"][0] > 0
        estimates.append(r["corrected"])
    assert np.median(estimates) == pytest.approx(0.25, abs=0.03)
    assert 30 <= hits <= 60


def test_a_judge_near_chance_gives_no_huge_correction():
    """A bootstrap draw where 1 - FPR - FNR comes near 0 would blow the correction up (a
    corrected-gap interval of about +-1e15 was seen before the floor): below MIN_YOUDEN_J a draw
    has no correction, and with most draws so there is no interval, only the share said."""
    from biaslens.metrics.classification import MIN_YOUDEN_J, misclassification_corrected_gap

    assert MIN_YOUDEN_J == 0.05
    errors_b = {"fp": 2, "negatives": 40, "fn": 1, "positives": 8}
    pooled = {"fp": 11, "negatives": 60, "fn": 3, "positives": 12}
    # group a: FPR 0.75 on 20 items and (fewer than 5 positives) the pooled FNR 0.25, so J is about
    # 0: most draws have no correction
    near = {"fp": 15, "negatives": 20, "fn": 2, "positives": 4}
    r = misclassification_corrected_gap((50, 100), (10, 100), near, errors_b, pooled, n_boot=2000)
    assert r["corrected_ci"] is None and r["n_undefined"] > 1000
    # J of about 0.2 on few items: some draws fall below the floor, the interval of the rest stays
    # within a few units, never +-1e15
    some = {"fp": 8, "negatives": 20, "fn": 2, "positives": 5}
    r = misclassification_corrected_gap((50, 100), (10, 100), some, errors_b, pooled, n_boot=2000)
    assert 0 < r["n_undefined"] < 1000 and r["corrected_ci"] is not None
    assert -25 < r["corrected_ci"][0] < r["corrected_ci"][1] < 25


def test_telling_the_models_apart_is_not_reading_the_text():
    """Two models, one far more often toxic: a score that only knows which model wrote a reply has
    a high pooled AUROC, but within each model's replies it is at chance, and the stratified
    comparison against the group-and-model prior credits it nothing; a judge that reads the text
    within each model beats that prior."""
    from biaslens.metrics.classification import group_skill

    rng = np.random.default_rng(5)
    n = 600
    model = np.repeat(["base", "tuned"], n)
    y = rng.random(2 * n) < np.where(model == "tuned", 0.5, 0.05)
    groups = rng.choice(["g1", "g2", "g3"], 2 * n)
    dev_y = rng.random(2 * n) < np.where(model == "tuned", 0.5, 0.05)
    knows_model = np.where(model == "tuned", 0.8, 0.2) + rng.normal(0, 0.01, 2 * n)
    reads = np.where(y, 0.7, 0.3) + rng.normal(0, 0.2, 2 * n)
    common = {"dev_truth": dev_y.astype(int), "dev_groups": groups.tolist(), "producers": model.tolist(),
              "dev_producers": model.tolist(), "n_boot": 500}
    blind = group_skill(knows_model, y, groups.tolist(), key="blind", **common)["vs_group_prior"]
    assert blind["knows_producer"] and blind["strata"] == 2 and not blind["beats"]
    assert abs(blind["auroc"] - 0.5) < 0.06
    assert group_skill(reads, y, groups.tolist(), key="reads", **common)["vs_group_prior"]["beats"]
    # without the producers the same blind score beats the group alone (what the stratification prevents)
    pooled = group_skill(knows_model, y, groups.tolist(), dev_y.astype(int), groups.tolist(), key="pooled",
                         n_boot=500)["vs_group_prior"]
    assert pooled["beats"] and not pooled["knows_producer"]
