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


def test_gap_welch_test_and_bootstrap_ci():
    g = demographic_gaps(_table(), "sentiment", n_boot=2000, seed=0)
    r = g[g["model"] == "m"].iloc[0]
    assert (r["demographic_a"], r["demographic_b"]) == ("poor", "rich")
    assert r["gap"] == pytest.approx(-0.3 - 0.3)
    ref = stats.ttest_ind([-0.2, -0.4], [0.4, 0.2], equal_var=False)
    assert r["p_value"] == pytest.approx(ref.pvalue) and r["t"] == pytest.approx(ref.statistic)
    # every bootstrap gap lies between the extreme prompt-mean differences
    assert -0.8 <= r["ci_low"] <= r["gap"] <= r["ci_high"] <= -0.4
    # Holm over the model's pairs (one pair here): unchanged
    assert r["p_holm"] == pytest.approx(r["p_value"])
    # one prompt per side: no test, but still a gap
    r2 = g[g["model"] == "m2"].iloc[0]
    assert r2["gap"] == 0 and math.isnan(r2["p_value"])
    # seeded: the same numbers again
    g2 = demographic_gaps(_table(), "sentiment", n_boot=2000, seed=0)
    assert np.allclose(g[["ci_low", "ci_high"]].to_numpy(), g2[["ci_low", "ci_high"]].to_numpy())


def test_mean_cis_and_extremes():
    c = demographic_mean_cis(_table(), "sentiment", n_boot=500).set_index(["model", "demographic"])
    assert c.loc[("m", "poor"), "mean"] == pytest.approx(-0.3)
    assert -0.4 <= c.loc[("m", "poor"), "ci_low"] <= -0.3 <= c.loc[("m", "poor"), "ci_high"] <= -0.2
    neg = extreme_generations(_table(), "sentiment", k=2)
    assert neg[neg["model"] == "m"]["sentiment"].tolist() == [-0.5, -0.4]
    tox = extreme_generations(_table(), "toxicity", k=1, largest=True)
    assert tox[tox["model"] == "m"]["keyword"].item() == "beggars"
