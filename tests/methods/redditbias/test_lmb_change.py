"""The paired before/after test of a change in RedditBias LMB (``biaslens compare``): by hand,
its size under the null by simulation, and in a comparison of two run folders."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biaslens.methods.redditbias.metrics import change_test, lmb_change


def _frame(phrases, ppl_min, ppl_dom, bias_type="race", view="target"):
    return pd.DataFrame({"phrase": phrases, "counterfactual": [p.replace("b", "w") for p in phrases],
                         "ppl_minoritized": ppl_min, "ppl_dominant": ppl_dom, "bias_type": bias_type, "view": view})


def test_change_is_paired_over_phrase_pairs_matched_by_text():
    before = _frame(["b1", "b2", "b3", "b4", "b5", "b2"], [10, 20, 30, 40, 50, 60], [20, 25, 50, 40, 80, 61])
    # after: another order, the repeated pair "b2" matched by order of appearance, b5 unscored
    after = _frame(["b4", "b2", "b3", "b1", "b2", "b5"], [41, 22, 31, 18, 60, np.nan], [40, 24, 40, 20, 60, 9])
    res = lmb_change(before, after)
    gaps_before = np.array([-10, -5, -20, 0, -1])       # b1, b2, b3, b4, b2 (second)
    gaps_after = np.array([-2, -2, -9, 1, 0])
    c = gaps_after - gaps_before                          # [8, 3, 11, 1, 1]
    assert res["n_pairs"] == 5 and res["mean_change"] == pytest.approx(4.8)
    ref = stats.ttest_1samp(c, 0.0)
    assert (res["t"], res["p"]) == pytest.approx((ref.statistic, ref.pvalue))
    half = stats.t.ppf(0.975, 4) * c.std(ddof=1) / np.sqrt(5)
    assert res["mean_change_ci"] == pytest.approx([4.8 - half, 4.8 + half])
    assert res["median_change"] == 3.0 and res["sign_test_p"] == pytest.approx(2 * 0.5**5)  # 5 of 5 positive
    assert res["mean_gap_before"] == pytest.approx(gaps_before.mean())
    # the verdict: signs before -, -, -, 0, -; after -, -, -, +, 0: two pairs moved up a side, none down
    assert res["verdict_basis"] == "sign effect (exact test of the pairs that changed side)"
    assert (res["sign_effect_before"], res["sign_effect_after"]) == pytest.approx((-0.8, -0.4))
    assert res["sign_effect_change"] == pytest.approx(0.4) and res["n_changed_side"] == 2
    assert res["sign_effect_change_p"] == pytest.approx(0.5)   # 2 of 2 up: 2 * 0.25
    # Clopper-Pearson for 2 of 2 at 95%: [0.025 ** (1/2), 1] -> effect [-0.684, 1], times sum|change| / n = 2/5
    assert res["sign_effect_change_ci"] == pytest.approx([(2 * 0.025 ** 0.5 - 1) * 0.4, 0.4])
    lr = np.log(np.array([18, 22, 31, 41, 60]) / [20, 24, 40, 40, 60]) - np.log(np.array([10, 20, 30, 40, 60]) / [20, 25, 50, 40, 61])
    ref = stats.ttest_1samp(lr, 0.0)
    assert res["log_ratio_change"] == pytest.approx(lr.mean())
    assert (res["log_ratio_t"], res["log_ratio_p"]) == pytest.approx((ref.statistic, ref.pvalue))
    assert res["verdict"] == "no detectable change"


def test_verdicts_towards_away_and_cannot_tell():
    rng = np.random.default_rng(0)
    n = 200
    base = rng.normal(100, 10, n)
    names = [f"b{i}" for i in range(n)]
    # the verdict reads the share of pairs on each side: gaps about -5 (sign effect about -0.68)
    before = _frame(names, base - 5 + rng.normal(0, 5, n), base)
    shrunk = _frame(names, base - 1 + rng.normal(0, 5, n), base)          # about -0.16
    grown = _frame(names, base - 20 + rng.normal(0, 5, n), base)          # about -1
    assert lmb_change(before, shrunk)["verdict"] == "towards 0"
    assert lmb_change(before, grown)["verdict"] == "away from 0"
    e = rng.normal(0, 5, n // 2)
    same = _frame(names, before["ppl_minoritized"] + np.concatenate([e, -e]), base)  # changes summing to 0
    res = lmb_change(before, same)
    assert res["verdict"] == "no detectable change" and res["t"] == pytest.approx(0, abs=1e-9)
    assert lmb_change(before.head(2), shrunk.head(2))["verdict"] == "cannot tell"


def test_heavily_skewed_changes_do_not_move_the_verdict():
    # 199 pairs unchanged but for tiny noise, one pair with a huge change: the mean test would rest on one pair
    rng = np.random.default_rng(1)
    n = 200
    names = [f"b{i}" for i in range(n)]
    before = _frame(names, np.full(n, 80.0), np.full(n, 100.0))
    after_min = 80.0 + rng.normal(0, 0.01, n)
    after_min[0] = 5000.0
    res = lmb_change(before, _frame(names, after_min, np.full(n, 100.0)))
    assert abs(res["change_skew"]) > 2
    assert res["verdict"] == "no detectable change" and res["sign_test_p"] > 0.05
    assert res["n_changed_side"] == 1 and res["sign_effect_change_p"] == 1.0  # the one huge pair changed side


@pytest.mark.parametrize("n", [10, 20, 235, 1000])
def test_size_under_the_null_by_simulation(n):
    """Before and after the same model up to scoring noise (exchangeable within each pair, the
    gaps skewed as perplexity gaps are): the 5% test rejects about 5% (at most), and the 95%
    interval of the mean change covers 0 as often. Design: the smallest useful and the run's
    sizes (RedditBias test splits: 235-254 pairs per bias type). 20,000 replicates, seeded."""
    rng = np.random.default_rng(n)
    reps = 20_000 if n <= 235 else 4_000
    mu = rng.normal(6.0, 0.6, (reps, n))      # log-perplexity of each phrase pair
    bias = rng.normal(-0.15, 0.3, (reps, n))  # its log-gap, shared by both scorings

    def gaps():
        return np.exp(mu + bias + rng.normal(0, 0.25, (reps, n))) - np.exp(mu + rng.normal(0, 0.25, (reps, n)))

    _, p, lo, hi = change_test(gaps(), gaps())
    size = float(np.mean(p < 0.05))
    se = np.sqrt(0.05 * 0.95 / reps)
    assert 0.03 <= size <= 0.05 + 3 * se, size   # measured: 0.036 (n=10), 0.041 (20), 0.050 (235), 0.049 (1000)
    assert np.mean((lo <= 0) & (hi >= 0)) == pytest.approx(1 - size)


def test_sign_test_size_on_skewed_changes():
    """Where the verdict switches to the median: skewed changes with median 0, n = 235; the sign
    test holds its level (exact, conservative for discrete counts) where the t-test would not."""
    rng = np.random.default_rng(3)
    reps, n = 2_000, 235
    c = rng.lognormal(0.0, 1.5, (reps, n)) - 1.0   # median exactly 0, mean > 0, heavy skew
    positives = (c > 0).sum(1)
    p = np.array([stats.binomtest(int(k), n).pvalue for k in positives])
    assert np.mean(p < 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    # the t-test on the same changes, centred to mean 0, rejects far more than 5% (measured 0.11)
    _, p_t, _, _ = change_test(np.zeros_like(c), c - np.exp(1.5**2 / 2) + 1.0)
    assert np.mean(p_t < 0.05) > 0.08
    one = lmb_change(pd.DataFrame({"phrase": [str(i) for i in range(n)], "counterfactual": "x",
                                   "ppl_minoritized": 100.0, "ppl_dominant": 100.0}),
                     pd.DataFrame({"phrase": [str(i) for i in range(n)], "counterfactual": "x",
                                   "ppl_minoritized": 100.0 + c[0], "ppl_dominant": 100.0}))
    # every gap before is tied (0), so the pairs that change side are the signs of c: the same exact test
    assert one["sign_test_p"] == pytest.approx(p[0]) and one["sign_effect_change_p"] == pytest.approx(p[0])


def test_compare_reports_the_paired_change(tmp_path):
    from biaslens.comparison.runs import compare_runs

    rng = np.random.default_rng(2)
    n = 120
    names = [f"b{i}" for i in range(n)]
    base = rng.normal(300, 30, n)
    for name, shift in (("orig", -60.0), ("deb", -10.0)):
        run = tmp_path / name
        run.mkdir()
        pairs = _frame(names, base + shift + rng.normal(0, 20, n), base, bias_type="orientation")
        pairs.to_parquet(run / "pairs.parquet")
        (run / "metrics.json").write_text(json.dumps({
            "suite": "redditbias", "model": name, "split": "test", "bias_types": ["orientation"],
            "orientation": {"t": -3.0, "p": 0.003, "n_pairs": n}}))
    metrics = compare_runs([str(tmp_path / "orig"), str(tmp_path / "deb")], tmp_path / "cmp")
    ch = metrics["redditbias"]["change"]["orientation"]["deb"]["target"]
    assert ch["n_pairs"] == n and ch["verdict"] == "towards 0" and ch["mean_change"] == pytest.approx(50, abs=8)
    assert "Change against the first model" in (tmp_path / "cmp" / "report.html").read_text()
