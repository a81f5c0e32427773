"""Community-bias metrics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biaslens.metrics import demographic_gaps, demographic_mean_cis, extreme_generations, group_means, mean_table


def _table() -> pd.DataFrame:
    # model m, dimension "class": poor has prompts p1 (2 replies) and p2 (1 reply); rich has p3, p4
    rows = [
        ("m", "class", "poor", "poor", "adjective", "p1", -0.5, 0.2),
        ("m", "class", "poor", "poor", "adjective", "p1", 0.1, 0.4),
        ("m", "class", "poor", "beggars", "plural", "p2", -0.4, 0.9),
        ("m", "class", "rich", "rich", "adjective", "p3", 0.6, 0.0),
        ("m", "class", "rich", "rich", "adjective", "p3", 0.2, 0.2),
        ("m", "class", "rich", "millionaires", "plural", "p4", 0.4, 0.1),
        ("m", "class", "rich", "millionaires", "plural", "p4", 0.0, 0.1),
        ("m2", "class", "poor", "poor", "adjective", "p1", 0.0, 0.0),
        ("m2", "class", "rich", "rich", "adjective", "p3", 0.0, 0.0),
    ]
    df = pd.DataFrame(rows, columns=["model", "dimension", "demographic", "keyword", "form", "prompt_id",
                                     "sentiment", "toxicity"])
    df["response"] = [f"reply {i}" for i in range(len(df))]
    df["prompt"] = df["prompt_id"]
    df["template"] = "t"
    return df


def test_s_and_t_means_are_means_of_prompt_means():
    m = group_means(_table()).set_index(["model", "demographic"])
    # poor: prompt means p1 = (-0.5 + 0.1) / 2 = -0.2, p2 = -0.4 -> S_mean = -0.3 (not the reply mean -0.2667)
    assert m.loc[("m", "poor"), "S_mean"] == pytest.approx(-0.3)
    assert m.loc[("m", "poor"), "T_mean"] == pytest.approx(((0.2 + 0.4) / 2 + 0.9) / 2)
    assert m.loc[("m", "rich"), "S_mean"] == pytest.approx(((0.6 + 0.2) / 2 + (0.4 + 0.0) / 2) / 2)
    assert m.loc[("m", "rich"), "T_mean"] == pytest.approx((0.1 + 0.1) / 2)
    assert m.loc[("m", "poor"), "n_prompts"] == 2 and m.loc[("m", "poor"), "n_generations"] == 3
    # negative share counts replies with compound <= -0.05
    assert m.loc[("m", "poor"), "negative_share"] == pytest.approx(2 / 3)
    t = mean_table(group_means(_table()), "S_mean")
    assert list(t.columns) == ["dimension", "demographic", "m", "m2"]
    assert t.loc[t["demographic"] == "rich", "m"].item() == pytest.approx(0.3)


def test_keyword_and_form_means():
    k = group_means(_table(), by=("model", "keyword")).set_index(["model", "keyword"])
    assert k.loc[("m", "millionaires"), "S_mean"] == pytest.approx(0.2)
    f = group_means(_table(), by=("model", "form")).set_index(["model", "form"])
    assert f.loc[("m", "plural"), "S_mean"] == pytest.approx((-0.4 + 0.2) / 2)


def test_gap_keyword_level_equals_welch_when_each_keyword_has_one_prompt():
    g = demographic_gaps(_table(), "sentiment")
    r = g[g["model"] == "m"].iloc[0]
    assert (r["demographic_a"], r["demographic_b"]) == ("poor", "rich")
    assert r["gap"] == pytest.approx(-0.3 - 0.3)
    # one prompt per keyword: the CR2 variance is Welch's, and with equal spreads the
    # Bell-McCaffrey df equal Welch's (2), so the keyword-level test is Welch's test
    ref = stats.ttest_ind([-0.2, -0.4], [0.4, 0.2], equal_var=False)
    assert r["t"] == pytest.approx(ref.statistic) and r["p_value"] == pytest.approx(ref.pvalue)
    assert r["df"] == pytest.approx(2.0)
    half = stats.t.ppf(0.975, 2) * math.sqrt(0.02)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((-0.6 - half, -0.6 + half))
    assert r["p_value_prompt"] == pytest.approx(ref.pvalue)
    assert (r["ci_low_prompt"], r["ci_high_prompt"]) == pytest.approx(tuple(ref.confidence_interval()))
    assert (r["n_keywords_a"], r["n_keywords_b"]) == (2, 2)
    # one pair: Holm and the simultaneous interval are the plain ones
    assert r["p_holm"] == pytest.approx(r["p_value"])
    assert (r["ci_low_simultaneous"], r["ci_high_simultaneous"]) == pytest.approx((r["ci_low"], r["ci_high"]))
    # one keyword a side: a gap, but no keyword-level variance -> no interval, no test
    r2 = g[g["model"] == "m2"].iloc[0]
    assert r2["gap"] == 0 and math.isnan(r2["p_value"]) and math.isnan(r2["ci_low"])


def _cr2_table() -> pd.DataFrame:
    # demographic a: keyword k1 has prompts 1 and 3, k2 has 2, k3 has 6; b: three keywords of one prompt
    rows = [("a", "k1", "p1", 1.0, "t1"), ("a", "k1", "p2", 3.0, "t2"), ("a", "k2", "p3", 2.0, "t1"),
            ("a", "k3", "p4", 6.0, "t1"), ("b", "j1", "p5", 0.0, "t1"), ("b", "j2", "p6", 1.0, "t1"),
            ("b", "j3", "p7", 2.0, "t2")]
    df = pd.DataFrame(rows, columns=["demographic", "keyword", "prompt_id", "sentiment", "template_id"])
    return df.assign(model="m", dimension="d", form="plural")


def test_cr2_variance_and_bell_mccaffrey_df_by_hand():
    from biaslens.metrics.group_gaps import Design

    df = _cr2_table()
    design, labels = Design.from_labels(df["demographic"].tolist(), df["keyword"].tolist())
    mean, var = design.means(df["sentiment"].to_numpy())
    # a: mean 3, residuals -2, 0 | -1 | 3; u = (-0.5, -0.25, 0.75), leverage (1/2, 1/4, 1/4)
    assert mean[0] == pytest.approx(3.0)
    assert var[0] == pytest.approx(0.25 * 2 + 0.0625 * 4 / 3 + 0.5625 * 4 / 3)
    # b: one prompt per keyword -> s^2 / n
    assert var[1] == pytest.approx(1.0 / 3)
    # Bell-McCaffrey df of a's mean under independence: tr(A)^2 / tr(A^2) with A = sum_k w_k (I-H) a_k a_k' (I-H)
    m = 4
    ih = np.eye(m) - 1 / m
    a_mat = np.zeros((m, m))
    for idx, h in (([0, 1], 0.5), ([2], 0.25), ([3], 0.25)):
        ak = np.zeros(m)
        ak[idx] = 1 / m
        v = ih @ ak
        a_mat += np.outer(v, v) / (1 - h)
    ref = np.trace(a_mat) ** 2 / np.trace(a_mat @ a_mat)
    assert design.df(np.array([0]), None, 0.0)[0] == pytest.approx(ref)
    # with keyword effects in the working model (rho = 2): tr(A S)^2 / tr((A S)^2), S = I + 2 ZZ'
    z = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    a_s = a_mat @ (np.eye(m) + 2 * z @ z.T)
    assert design.df(np.array([0]), None, 2.0)[0] == pytest.approx(np.trace(a_s) ** 2 / np.trace(a_s @ a_s))
    # equal keyword sizes: df = keywords - 1, whatever rho
    assert design.df(np.array([1]), None, 0.0)[0] == pytest.approx(2.0)
    # keyword variance ratio (one-way ANOVA moments): within-keyword MS = ((1-2)^2 + (3-2)^2) / (7 - 6) = 2;
    # between keywords within demographics: a: 2*(2-3)^2 + (2-3)^2 + (6-3)^2 = 12, b: 2 -> 14 / (6 - 2);
    # n0 = (7 - (4+1+1)/4 - 3/3) / 4 = 1.125; rho = (3.5 - 2) / 1.125 / 2
    assert design.rho(df["sentiment"].to_numpy()) == pytest.approx((3.5 - 2) / 1.125 / 2)


def test_template_gaps_and_template_adjusted_gap_by_hand():
    from biaslens.metrics import group_gaps as cm

    df = _cr2_table()
    tg = cm.template_gaps(df, "sentiment").set_index("template")
    # t1: a has 1, 2, 6 (mean 3), b has 0, 1 (mean 0.5); t2: a 3, b 2 (one prompt each: no test)
    assert tg.loc["t1", "gap"] == pytest.approx(2.5)
    assert tg.loc["t1", "p_value"] == pytest.approx(stats.ttest_ind([1, 2, 6], [0, 1], equal_var=False).pvalue)
    assert tg.loc["t2", "gap"] == pytest.approx(1.0) and math.isnan(tg.loc["t2", "p_value"])
    # template offsets: t1 mean 2, t2 mean 2.5, all 15/7
    g = cm.demographic_gaps(df, "sentiment").iloc[0]
    off = {"t1": 2.0 - 15 / 7, "t2": 2.5 - 15 / 7}
    ya = [1 - off["t1"], 3 - off["t2"], 2 - off["t1"], 6 - off["t1"]]
    yb = [0 - off["t1"], 1 - off["t1"], 2 - off["t2"]]
    assert g["gap"] == pytest.approx(3.0 - 1.0)
    assert g["gap_template_adjusted"] == pytest.approx(np.mean(ya) - np.mean(yb))


def test_keyword_form_tests_and_paired_gap_change():
    from biaslens.metrics import group_gaps as cm

    kt = cm.keyword_tests(_table(), "sentiment")
    r = kt[(kt["model"] == "m") & (kt["keyword"] == "poor")].iloc[0]
    # one prompt (p1, replies -0.5 and 0.1): t interval over its replies; vs the rest (one prompt): no test
    half = stats.t.ppf(0.975, 1) * np.std([-0.5, 0.1], ddof=1) / math.sqrt(2)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((-0.2 - half, -0.2 + half))
    assert r["interval_over"] == "replies of its one prompt" and math.isnan(r["p_value"])
    df = _cr2_table()
    kt = cm.keyword_tests(df, "sentiment").set_index("keyword")
    assert kt.loc["k1", "diff_vs_rest"] == pytest.approx(2.0 - 4.0)
    assert kt.loc["k1", "p_value"] == pytest.approx(stats.ttest_ind([1, 3], [2, 6], equal_var=False).pvalue)
    half = stats.t.ppf(0.975, 1) * math.sqrt(2) / math.sqrt(2)
    assert (kt.loc["k1", "ci_low"], kt.loc["k1", "ci_high"]) == pytest.approx((2 - half, 2 + half))
    ft = cm.form_tests(df.assign(form=np.where(df["keyword"].isin(["k1", "j1"]), "adjective", "plural")),
                       "sentiment").set_index("form")
    assert ft.loc["adjective", "mean"] == pytest.approx((1 + 3 + 0) / 3)
    assert ft.loc["adjective", "n_keywords"] == 2 and ft.loc["plural", "n_keywords"] == 4
    assert ft.loc["adjective", "diff_vs_rest"] == pytest.approx(4 / 3 - (2 + 6 + 1 + 2) / 4)
    assert 0 <= ft.loc["adjective", "p_value"] <= 1
    # paired change: the community model adds 1 to every prompt of a and 0.5 to p5 -> change per prompt
    other = df.assign(model="c", sentiment=df["sentiment"] + np.where(df["demographic"] == "a", 1.0, 0.0)
                      + np.where(df["prompt_id"] == "p5", 0.5, 0.0))
    ch = cm.gap_changes(pd.concat([df, other], ignore_index=True), "sentiment").iloc[0]
    assert (ch["model"], ch["base"]) == ("c", "m")
    assert ch["gap_base"] == pytest.approx(2.0) and ch["change"] == pytest.approx(1.0 - 0.5 / 3)
    assert ch["gap_model"] == pytest.approx(2.0 + 1.0 - 0.5 / 3)
    # the change is a keyword-level contrast of the per-prompt differences
    from biaslens.metrics.group_gaps import Design, keyword_level_contrasts

    d = other["sentiment"].to_numpy() - df["sentiment"].to_numpy()
    design, _ = Design.from_labels(df["demographic"].tolist(), df["keyword"].tolist())
    ref = keyword_level_contrasts(d, design, np.array([0]), np.array([1]))
    assert ch["p_value"] == pytest.approx(ref["p"][0]) and ch["ci_low"] == pytest.approx(ref["lo"][0])


def test_mean_cis_and_extremes():
    c = demographic_mean_cis(_table(), "sentiment").set_index(["model", "demographic"])
    assert c.loc[("m", "poor"), "mean"] == pytest.approx(-0.3)
    # two keywords of one prompt each: the t interval with 1 df over the prompt means -0.2, -0.4
    half = stats.t.ppf(0.975, 1) * np.std([-0.2, -0.4], ddof=1) / math.sqrt(2)
    assert (c.loc[("m", "poor"), "ci_low"], c.loc[("m", "poor"), "ci_high"]) == pytest.approx((-0.3 - half, -0.3 + half))
    assert c.loc[("m", "poor"), "n_keywords"] == 2
    assert math.isnan(c.loc[("m2", "poor"), "ci_low"])  # one keyword
    neg = extreme_generations(_table(), "sentiment", k=2)
    assert neg[neg["model"] == "m"]["sentiment"].tolist() == [-0.5, -0.4]
    tox = extreme_generations(_table(), "toxicity", k=1, largest=True)
    assert tox[tox["model"] == "m"]["keyword"].item() == "beggars"


def test_headline_uses_the_simultaneous_interval_and_says_what_it_can_tell():
    from biaslens.methods.community.suite import _gap_entries

    def gaps(rows):
        cols = ["gap", "ci_low_simultaneous", "ci_high_simultaneous", "p_value", "p_holm", "n_keywords_a",
                "n_keywords_b"]
        df = pd.DataFrame(rows, columns=["demographic_a", "demographic_b", *cols])
        return df.assign(model="m", score="sentiment", dimension="d", ci_low=-9.0, ci_high=9.0, n_prompts_a=10,
                         n_prompts_b=10, n_prompts_missing=0, gap_template_adjusted=np.nan,
                         p_holm_template_adjusted=np.nan)

    # the largest gap's simultaneous interval includes 0 and nothing is Holm-significant; the design
    # detects 0.15 in every pair (<= 0.2): "no gap", with what it could detect
    e, v = _gap_entries(gaps([("a", "b", -0.4, -0.9, 0.1, 0.01, 0.06, 3, 3), ("a", "c", 0.1, -0.1, 0.3, 0.5, 1.0, 3, 5)])
                        .assign(df=[4.0, 6.0], detectable_simultaneous=[0.15, 0.12]))
    assert (e[0].value, e[0].ci_low, e[0].ci_high) == (-0.4, -0.9, 0.1) and "simultaneous 95% over 2" in e[0].interval
    assert (e[0].level, e[0].df, e[0].detectable, e[0].verdict, e[0].p_value) == (1 - 0.025, 4.0, 0.15, "not_detected", 0.06)
    assert v[0].startswith("m: no sentiment gap distinguishable from zero (largest -0.4, a - b; "
                        "simultaneous 95% CI -0.9 to +0.1 over 2 gaps, 3 / 3 keywords, Holm p = 0.060); the design "
                        "detects a gap of 0.150 in any pair with 80% power")
    # the same, but the design cannot detect 0.2 in a - b: "cannot tell", with the range it could detect
    e, v = _gap_entries(gaps([("a", "b", -0.4, -0.9, 0.1, 0.01, 0.06, 3, 3), ("a", "c", 0.1, -0.1, 0.3, 0.5, 1.0, 3, 5)])
                        .assign(df=[4.0, 6.0], detectable_simultaneous=[0.9, 0.12]))
    assert e[0].verdict == "cannot_tell" and e[0].detectable == 0.9
    assert v[0].startswith("m: cannot tell whether there is a sentiment gap: none is distinguishable from zero")
    assert "only from 0.120 (a - c) to 0.900 (a - b): 1 of 2 pairs would detect a gap of 0.2" in v[0]
    # the largest is too uncertain, a smaller one is Holm-significant: the verdict names it
    _, v = _gap_entries(gaps([("a", "b", -0.4, -0.9, 0.1, 0.01, 0.06, 3, 3), ("a", "c", 0.3, 0.1, 0.5, 0.001, 0.002, 8, 9)]))
    assert "not distinguishable from zero" in v[0] and "1 of 2 gaps are (Holm), the largest +0.30 (a - c" in v[0]
    # excludes 0
    _, v = _gap_entries(gaps([("a", "b", -0.4, -0.7, -0.1, 0.001, 0.002, 3, 3)]))
    assert v[0].startswith("m: largest sentiment gap -0.40 (a - b; simultaneous 95% CI -0.70 to -0.10")
    # one keyword a side: no keyword-level interval -> cannot tell
    _, v = _gap_entries(gaps([("a", "b", -0.4, np.nan, np.nan, np.nan, np.nan, 1, 1)]))
    assert "cannot tell" in v[0]
