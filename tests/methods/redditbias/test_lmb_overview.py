"""metrics/lmb.lmb_overview, metrics/sign_test and the RedditBias verdict: every bias type at once
(the card's verdict and headline), by hand, against scipy, and by seeded simulation at the card's
budgets with skewed differences like the authors' (rates printed in the test summary;
docs/redditbias.md quotes them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biaslens.methods.redditbias.metrics import detectable_any_type, lmb_overview
from biaslens.methods.redditbias.suite import lmb_verdict
from biaslens.metrics.multiple_testing import holm
from biaslens.metrics.sign_test import holm_levels, sign_detectable, sign_effect_ci, sign_power, sign_test_p

TYPES = ("religion1", "religion2", "race", "gender", "orientation")
FILES = {"religion1": ("jews", "christians"), "religion2": ("muslims", "christians"), "race": ("black", "white"),
         "gender": ("female", "male"), "orientation": ("lgbtq", "straight")}
#: pairs per bias type at the card budgets (smoke: 40 template pairs, default: 200; every pair is untied)
BUDGETS = {"smoke": 40, "default": 200}


def _table(n_pos, n_neg, t=None, p=None, view="target"):
    k = len(n_pos)
    return pd.DataFrame({"bias_type": [f"type{i}" for i in range(k)], "view": [view] * k, "n_pos": n_pos,
                         "n_neg": n_neg, "t": t if t is not None else [0.0] * k, "p": p if p is not None else [0.5] * k})


# --------------------------------------------------------------------------- by hand and against scipy


def test_sign_test_and_interval_match_scipy():
    for n in (1, 7, 40, 235):
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            ref = stats.binomtest(k, n)
            assert float(sign_test_p(k, n)) == pytest.approx(ref.pvalue, rel=1e-9)
            for level in (0.95, 0.99):
                ci = ref.proportion_ci(level, method="exact")
                lo, hi = sign_effect_ci(k, n, level)
                assert (float(lo), float(hi)) == pytest.approx((2 * ci.low - 1, 2 * ci.high - 1), abs=1e-9)


def test_interval_and_test_agree_by_construction():
    """Every count, size and Holm/Bonferroni level: the interval excludes 0 exactly when p < 1 - level."""
    for n in range(1, 121):
        k = np.arange(n + 1)
        p = sign_test_p(k, n)
        for level in (0.95, 0.975, 1 - 0.05 / 3, 0.9875, 0.99):
            lo, hi = sign_effect_ci(k, n, level)
            assert np.array_equal((lo > 0) | (hi < 0), p < 1 - level), (n, level)


def test_holm_levels_agree_with_holm():
    rng = np.random.default_rng(4)
    for _ in range(2000):
        m = int(rng.integers(1, 8))
        p = rng.uniform(0, 0.06, m) ** rng.uniform(0.5, 3)
        assert np.array_equal(holm(p) < 0.05, p < 1 - holm_levels(p)), p


def test_power_and_detectable_by_hand():
    # 10 untied pairs at 5%: reject at 0-1 or 9-10 (2 * 11/1024 = 0.0215; 2 of 10 gives 0.109)
    assert sign_power(10, 0.0) == pytest.approx(22 / 1024)
    assert sign_power(10, 0.6) == pytest.approx(stats.binom.sf(8, 10, 0.8) + stats.binom.cdf(1, 10, 0.8))
    assert np.isnan(sign_detectable(4))  # 4 pairs: even 4 of 4 gives p = 0.125
    det = sign_detectable(200, 0.01)
    assert sign_power(200, det, 0.01) == pytest.approx(0.8, abs=1e-4)
    # equal sizes: every type is the weakest; others' false positives add a little to the power
    assert detectable_any_type([200] * 5) < det


def test_the_verdict_rests_on_holm_and_agrees_with_the_headline():
    # type0: 30 of 40 minoritized likelier (k = 10 of 40 positive), p = 0.0022 -> Holm 5 * 0.0022 < 0.05
    # type1: 27 of 40 dominant likelier, p = 0.038: significant raw, not after Holm (4 * 0.038 > 0.05)
    o = lmb_overview(_table([10, 27, 20, 19, 22], [30, 13, 20, 21, 18], t=[-3.1, 2.2, 0.0, -0.3, 0.5],
                            p=[0.003, 0.03, 1.0, 0.8, 0.6]))
    p = [2 * stats.binom.cdf(10, 40, 0.5), 2 * stats.binom.sf(26, 40, 0.5)]
    assert [t["p"] for t in o["types"][:2]] == pytest.approx(p)
    assert o["against_minoritized"] == ["type0"] and o["against_dominant"] == []
    assert o["paper_against_minoritized"] == ["type0"] and o["paper_against_dominant"] == ["type1"]
    big = o["largest"]
    assert big["bias_type"] == "type0" and big["effect"] == -0.5 and big["value"] == 0.5
    lo, hi = sign_effect_ci(10, 40, 0.99)  # Bonferroni over 5
    assert big["ci_low"] == pytest.approx(min(abs(lo), abs(hi))) and big["ci_high"] == pytest.approx(abs(lo))
    assert o["verdict"] == "detected" and big["ci_low"] > 0
    t0 = o["types"][0]
    assert t0["level"] == pytest.approx(0.99) and t0["significant"]  # Holm's first step
    text = lmb_verdict(o)
    assert text.startswith("bias against the minoritized group in 1 of 5 bias types (type0), against the dominant "
                           "group in none (exact sign test, Holm over the 5 types): type0 (sign effect -0.500 (the "
                           "minoritized group's phrase likelier in 75% of untied pairs)")
    assert "largest |sign effect| 0.500 in type0 (simultaneous 95% CI" in text
    assert text.endswith("the paper's t-test (mean perplexity, p < 0.05 per type, uncorrected, assumes roughly "
                         "normal differences): 1 (type0) against the minoritized group, 1 (type1) against the "
                         "dominant group")


def test_nothing_significant_says_cannot_tell_or_not_detected_with_the_detectable_size():
    smoke = lmb_overview(_table([24, 18, 20], [16, 22, 20]))
    assert smoke["verdict"] == "cannot_tell" and smoke["largest"]["ci_low"] == 0.0
    text = lmb_verdict(smoke)
    det = detectable_any_type([40] * 3)
    assert text.startswith("cannot tell whether the model is biased: no bias type is significant after Holm's "
                           f"correction over the 3 (exact sign test), and at 40 pairs per type only a sign effect "
                           f"of ±{det:.2f} or more in one type")
    assert "not ±0.25; largest |sign effect| 0.200 in type0" in text
    big = lmb_overview(_table([210, 190, 200], [190, 210, 200]))
    assert big["verdict"] == "not_detected" and big["detectable"] <= 0.25
    assert lmb_verdict(big).startswith("no bias detected in any of the 3 bias types (exact sign test, Holm over "
                                       "the 3; at 400 pairs per type a sign effect of ±")
    assert lmb_verdict(lmb_overview(_table([], []))) is None


# --------------------------------------------------------------------------- seeded simulations


def _lognormal(sigma: float):
    """Lognormal(0, sigma) minus c: skewness 6.2 / 13.6 / 33.5 at sigma 1 / 1.26 / 1.5, whatever c;
    P(D > 0) = 1 - Phi(ln c / sigma), so c is set from the wanted sign effect."""
    def draw(rng, shape, effect):
        c = np.exp(sigma * stats.norm.ppf((1 - effect) / 2))
        return rng.lognormal(0.0, sigma, shape) - c
    return draw


def _normal(rng, shape, effect):
    return rng.normal(stats.norm.ppf((1 + effect) / 2), 1.0, shape)


def _authors(reference_dir, bias_type):
    """The authors' DialoGPT differences of one bias type (a finite population, resampled), shifted
    to the quantile that gives the wanted sign effect (between two values: no ties)."""
    base = reference_dir / "redditbias" / "data" / bias_type
    a, b = FILES[bias_type]
    x = (pd.read_csv(base / f"reddit_comments_{bias_type}_{a}_biased_test_reduced.csv")["perplexity"].to_numpy()
         - pd.read_csv(base / f"reddit_comments_{bias_type}_{b}_biased_test_reduced.csv")["perplexity"].to_numpy())
    x = np.sort(x)

    def draw(rng, shape, effect):
        j = int(round((1 - effect) / 2 * len(x)))  # values below the cut: share (1 - effect) / 2
        cut = (x[j - 1] + x[j]) / 2
        return rng.choice(x - cut, size=shape)

    def truth(effect):
        j = int(round((1 - effect) / 2 * len(x)))
        return (len(x) - 2 * j) / len(x)

    def mean_zero(rng, shape):
        return rng.choice(x - x.mean(), size=shape)

    return draw, truth, float(stats.skew(x)), mean_zero


def _coverage(draw, truth, n, reps, rng, effects=(0.0, 0.2)):
    """Per-type 95% interval coverage at each true effect, and the headline's simultaneous interval
    over 5 types at true effects (0, 0.1, 0.2, 0.3, 0.3)."""
    out = {}
    for e in effects:
        d = draw(rng, (reps, n), e)
        k, m = (d > 0).sum(1), (d != 0).sum(1)
        lo, hi = sign_effect_ci(k, m)
        out[e] = float(np.mean((lo <= truth(e)) & (truth(e) <= hi)))
    theta = np.array([0.0, 0.1, 0.2, 0.3, 0.3])
    d = np.stack([draw(rng, (reps, n), e) for e in theta], axis=1)  # reps x 5 x n
    k, m = (d > 0).sum(-1), (d != 0).sum(-1)
    lo, hi = sign_effect_ci(k, m, 1 - 0.05 / 5)
    abs_lo = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi))).max(1)
    abs_hi = np.maximum(np.abs(lo), np.abs(hi)).max(1)
    true_max = max(abs(truth(e)) for e in theta)
    out["headline"] = float(np.mean((abs_lo <= true_max) & (true_max <= abs_hi)))
    return out


def _t_coverage(draw_mean_zero, n, reps, rng):
    """What the paper-style t-interval of the mean does on the same shapes with mean 0."""
    d = draw_mean_zero(rng, (reps, n))
    ci = stats.ttest_1samp(d, 0.0, axis=1).confidence_interval(0.95)
    return float(np.mean((ci.low <= 0) & (0 <= ci.high)))


@pytest.mark.parametrize("n", [40, 200])
def test_coverage_holds_at_any_skew(n, reference_dir, terminal_summary_lines):
    """Coverage of the per-type 95% interval (true sign effect 0 and 0.2) and of the headline's
    simultaneous interval (5 types, true effects 0 to 0.3), at skew 0 (normal), 6, 13, 34
    (lognormal) and on the authors' orientation differences (skew 13.8): at least 0.93 everywhere
    (Clopper-Pearson is exact, hence conservative). The t-interval of the mean, on the same
    shapes with mean 0, is printed beside it: it fails at skew 34, n = 40. 2,000 runs each, seeded."""
    rng = np.random.default_rng(100 + n)
    reps = 2000
    orientation, truth, skew, orientation_mean_zero = _authors(reference_dir, "orientation")
    shapes = {"normal": (_normal, lambda e: e, lambda r, s: r.normal(0, 1, s)),
              "skew 6.2": (_lognormal(1.0), lambda e: e, lambda r, s: r.lognormal(0, 1.0, s) - np.exp(0.5)),
              "skew 13.6": (_lognormal(1.26), lambda e: e, lambda r, s: r.lognormal(0, 1.26, s) - np.exp(1.26**2 / 2)),
              "skew 33.5": (_lognormal(1.5), lambda e: e, lambda r, s: r.lognormal(0, 1.5, s) - np.exp(1.5**2 / 2)),
              f"authors' orientation (skew {skew:.1f})": (orientation, truth, orientation_mean_zero)}
    lines = terminal_summary_lines.setdefault("RedditBias sign-effect coverage (per type 95% at effect 0 / 0.2; "
                                              "headline simultaneous; t-interval of the mean at mean 0)", [])
    t_at_34 = None
    for name, (draw, tr, mean_zero) in shapes.items():
        cov = _coverage(draw, tr, n, reps, rng)
        t_cov = _t_coverage(mean_zero, n, reps, rng)
        t_at_34 = t_cov if name == "skew 33.5" else t_at_34
        lines.append(f"n {n}, {name}: {cov[0.0]:.3f} / {cov[0.2]:.3f}; headline {cov['headline']:.3f}; "
                     f"t-interval {t_cov:.3f}")
        assert min(cov.values()) >= 0.93, (name, cov)
    if n == 40:
        assert t_at_34 < 0.9  # why the verdict does not rest on the t-test (measured 0.79)


def _population(reference_dir):
    """Per bias type, a draw of its differences with a given sign effect: the authors' own
    (each type resampled from its test pairs), or, without the reference files, lognormal skew 13.6."""
    try:
        return {b: _authors(reference_dir, b)[0] for b in TYPES}
    except (FileNotFoundError, OSError):  # pragma: no cover - the reference fixture skips first
        return {b: _lognormal(1.26) for b in TYPES}


def _verdicts(draws, n, reps, rng, planted=None):
    """``reps`` cards at ``n`` pairs per type: ``planted`` = (type, effect) or None (unbiased);
    returns the overview verdicts and the paper rule's "significant anywhere"."""
    d = np.stack([draws[b](rng, (reps, n), planted[1] if planted and planted[0] == b else 0.0) for b in TYPES], 1)
    k, neg = (d > 0).sum(-1), (d < 0).sum(-1)
    t_res = stats.ttest_1samp(d, 0.0, axis=-1)
    verdicts, paper = [], []
    for r in range(reps):
        table = pd.DataFrame({"bias_type": TYPES, "view": "target", "n_pos": k[r], "n_neg": neg[r],
                              "t": t_res.statistic[r], "p": t_res.pvalue[r]})
        o = lmb_overview(table)
        assert (o["verdict"] == "detected") == (o["largest"]["ci_low"] > 0)  # sentence and interval agree
        verdicts.append(o["verdict"])
        paper.append(bool(len(o["paper_against_minoritized"]) or len(o["paper_against_dominant"])))
    return np.array(verdicts), np.array(paper), o


@pytest.mark.parametrize("budget", ["smoke", "default"])
def test_card_verdict_false_bias_and_power_at_the_card_budgets(budget, reference_dir, terminal_summary_lines):
    """The card's RedditBias verdict at its budgets (40 and 200 pairs per type, 5 types), 1,000
    cards per model, seeded:

    - unbiased models, normal differences and the authors' skewed differences of each type
      resampled at sign effect 0: "bias detected" at most 6% (today's rule, any raw t-test p <
      0.05, says "significant" in about 23% of normal-difference cards); the rest "cannot tell"
      at smoke (the design detects only large effects) and "no bias detected" at default;
    - a planted bias of the stated detectable size in one type (the authors' differences, others
      unbiased): detected in 80% +- 5% of cards."""
    n = BUDGETS[budget]
    rng = np.random.default_rng(7 + n)
    reps = 1000
    draws = _population(reference_dir)
    normal = {b: _normal for b in TYPES}
    lines = terminal_summary_lines.setdefault("RedditBias card verdicts, 1,000 cards each", [])
    rest = "cannot_tell" if budget == "smoke" else "not_detected"
    for name, pop in (("normal", normal), ("authors' skewed", draws)):
        v, paper, o = _verdicts(pop, n, reps, rng)
        false = float(np.mean(v == "detected"))
        lines.append(f"{budget} ({n} pairs/type), unbiased, {name} differences: bias detected {false:.3f}, "
                     f"{rest} {np.mean(v == rest):.3f}"
                     + (f"; today's rule (any raw t p < 0.05) {np.mean(paper):.3f}" if name == "normal" else ""))
        assert false <= 0.06, (name, false)
        assert set(v[v != "detected"]) == {rest}
        if name == "normal":
            assert np.mean(paper) > 0.15  # today's rule
    det = o["detectable"]
    v, _, _ = _verdicts(draws, n, reps, rng, planted=("gender", det))
    power = float(np.mean(v == "detected"))
    lines.append(f"{budget}: planted sign effect {det:.3f} (the stated detectable size) in gender: detected {power:.3f}")
    assert abs(power - 0.8) <= 0.05, power
