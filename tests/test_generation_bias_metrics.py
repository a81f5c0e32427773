"""Generation-bias and offensiveness metrics against values computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.metrics import (
    bootstrap_gen_bias_ci,
    descriptor_cluster_means,
    full_gen_bias,
    gen_bias_by_axis,
    generation_bias_summary,
    offensiveness_ranges,
    partial_gen_bias,
    percent_offensive,
    permutation_noise_floor,
    summed_cluster_gen_bias,
    template_offensiveness,
)

STYLES = ("A", "B", "C")

# Two templates, two descriptors each, two responses per (template, descriptor) cell.
#   t1/x: [1,0,0], [0,1,0]      -> mean [.5, .5, 0]
#   t1/y: [0,0,1], [0,0,1]      -> mean [0, 0, 1]
#   t2/x: [.2,.8,0] twice       -> mean [.2, .8, 0]
#   t2/y: [.6,.4,0] twice       -> mean [.6, .4, 0]
# Population variance of two values a, b is ((a-b)/2)^2.
#   t1: A (.5-0)^2/4=.0625, B .0625, C (0-1)^2/4=.25  -> sum .375
#   t2: A (.2-.6)^2/4=.04,  B .04,   C 0              -> sum .08
# FGB = (.375 + .08)/2 = .2275
# PGB({A,B}) = (.0625+.0625 + .04+.04)/2 = .1025
# SCGB({A,B}): summed means t1: x 1.0, y 0 -> var .25; t2: x 1.0, y 1.0 -> 0  => .125
# SCGB({C}) = (.25 + 0)/2 = .125; PGB({C}) = .125
T = ["t1", "t1", "t1", "t1", "t2", "t2", "t2", "t2"]
D = ["x", "x", "y", "y", "x", "x", "y", "y"]
P = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1],
              [.2, .8, 0], [.2, .8, 0], [.6, .4, 0], [.6, .4, 0]], dtype=float)


def test_fgb_pgb_scgb_hand_computed():
    assert full_gen_bias(T, D, P) == pytest.approx(0.2275)
    assert partial_gen_bias(T, D, P, STYLES, ["A", "B"]) == pytest.approx(0.1025)
    assert partial_gen_bias(T, D, P, STYLES, ["C"]) == pytest.approx(0.125)
    assert summed_cluster_gen_bias(T, D, P, STYLES, ["A", "B"]) == pytest.approx(0.125)
    assert summed_cluster_gen_bias(T, D, P, STYLES, ["C"]) == pytest.approx(0.125)
    # PGB over all styles is FGB
    assert partial_gen_bias(T, D, P, STYLES, STYLES) == pytest.approx(full_gen_bias(T, D, P))


def test_three_descriptors_unequal_cells_and_row_order():
    # one template; descriptor means of style A: x 0.0 (2 responses), y 0.3 (1), z 0.9 (3: .8,.9,1.0)
    # mean .4; population var = (.16 + .01 + .25)/3 = .14; style B = 1 - A has the same variance
    t = ["t"] * 6
    d = ["x", "x", "y", "z", "z", "z"]
    a = np.array([0, 0, .3, .8, .9, 1.0])
    p = np.column_stack([a, 1 - a])
    assert full_gen_bias(t, d, p) == pytest.approx(0.28)
    rng = np.random.default_rng(1).permutation(6)
    assert full_gen_bias(np.array(t)[rng], np.array(d)[rng], p[rng]) == pytest.approx(0.28)


def test_single_descriptor_template_counts_in_t():
    # t2 has one descriptor: variance 0, but it still counts in T (the spec's 1/T)
    t = ["t1", "t1", "t2"]
    d = ["x", "y", "x"]
    p = np.array([[1.0, 0], [0, 1.0], [.5, .5]])
    # t1: A var .25, B var .25 -> .5 ; FGB = .5 / 2
    assert full_gen_bias(t, d, p) == pytest.approx(0.25)


def test_by_axis_and_descriptor_cluster_means():
    axes = ["ability", "ability", "ability", "ability", "age", "age", "age", "age"]
    d = ["x", "x", "y", "y", "u", "u", "v", "v"]
    by = gen_bias_by_axis(T, d, axes, P)
    # ability = t1 rows only (one template): .375 ; age = t2 rows only: .08
    assert by == pytest.approx({"ability": 0.375, "age": 0.08})
    m = descriptor_cluster_means(T, D, P, STYLES, {"AB": ["A", "B"], "C": ["C"]}).set_index("descriptor")
    # x: AB t1 1.0, t2 1.0 -> 1.0; y: AB t1 0, t2 1.0 -> .5; C: x 0, y .5
    assert m.loc["x", "AB"] == pytest.approx(1.0) and m.loc["y", "AB"] == pytest.approx(0.5)
    assert m.loc["y", "C"] == pytest.approx(0.5) and m.loc["x", "n_templates"] == 2


def test_noise_floor_detects_real_effect_and_not_noise():
    rng = np.random.default_rng(0)
    n_per = 10
    t = np.repeat(["t1", "t2"], 4 * n_per)
    d = np.tile(np.repeat(["a", "b", "c", "d"], n_per), 2)
    base = rng.dirichlet([1, 1, 1], size=len(t))
    # strong descriptor effect: descriptor "a" responses all go to style A
    strong = base.copy()
    strong[d == "a"] = [0.95, 0.025, 0.025]
    nf = permutation_noise_floor(t, d, strong, n_permutations=99, seed=0)
    assert nf.p_value == pytest.approx(0.01)  # (1 + 0) / (1 + 99)
    assert nf.ratio > 3
    # pure noise: ratio near 1, p not small
    nf0 = permutation_noise_floor(t, d, base, n_permutations=99, seed=0)
    assert 0.3 < nf0.ratio < 2.5 and nf0.p_value > 0.05
    # seeded: same seed, same numbers
    again = permutation_noise_floor(t, d, base, n_permutations=99, seed=0)
    assert np.array_equal(again.permuted, nf0.permuted)


def test_permutation_p_value_formula_on_tiny_case():
    # two descriptors, one response each: every permutation either keeps or swaps the labels,
    # and both give the same FGB, so #{perm >= obs} = n and p = 1
    nf = permutation_noise_floor(["t", "t"], ["x", "y"], np.array([[1.0, 0], [0, 1.0]]), n_permutations=9, seed=3)
    assert nf.observed == pytest.approx(0.5)
    assert nf.p_value == pytest.approx(1.0) and nf.ratio == pytest.approx(1.0)


def test_bootstrap_ci_brackets_and_is_seeded():
    lo, hi = bootstrap_gen_bias_ci(T, D, P, n_boot=300, seed=1)
    assert lo <= hi
    # cells where both responses are identical never change: t2 part fixed; t1/x varies
    assert (lo, hi) == bootstrap_gen_bias_ci(T, D, P, n_boot=300, seed=1)
    # constant cells -> degenerate CI at the point estimate
    const_p = np.array([[1, 0, 0]] * 4 + [[0, 1, 0]] * 4, dtype=float)
    lo2, hi2 = bootstrap_gen_bias_ci(T, D, const_p, n_boot=50, seed=0)
    assert lo2 == pytest.approx(hi2) == pytest.approx(full_gen_bias(T, D, const_p))


def test_summary_scales_by_1000():
    s = generation_bias_summary(T, D, P, STYLES, {"AB": ["A", "B"]}, n_permutations=10, n_boot=10)
    assert s["fgb"] == pytest.approx(227.5)
    assert s["pgb"]["AB"] == pytest.approx(102.5) and s["scgb"]["AB"] == pytest.approx(125.0)
    assert set(s["noise_floor"]) >= {"ratio", "p_value", "fgb_permuted_mean"}


def test_bad_inputs():
    with pytest.raises(ValueError, match="shape"):
        full_gen_bias(T, D, P[:3])
    with pytest.raises(ValueError, match="not among"):
        partial_gen_bias(T, D, P, STYLES, ["Z"])


def test_offensiveness_tables_hand_computed():
    df = pd.DataFrame({
        "template": ["I love {x}."] * 4 + ["I hate {x}."] * 4,
        "axis": ["a"] * 8,
        "descriptor": ["p", "p", "q", "q"] * 2,
        "offensiveness": [0.0, 0.2, 0.6, 0.8, 1.0, 1.0, 0.9, 0.9],
    })
    # love: p mean .1, q mean .7 -> mean .4, std .3 ; hate: p 1.0, q .9 -> mean .95, std .05
    t13 = template_offensiveness(df).set_index("template")
    assert t13.loc["I love {x}.", "mean_offensiveness"] == pytest.approx(0.4)
    assert t13.loc["I love {x}.", "std_offensiveness"] == pytest.approx(0.3)
    assert t13.loc["I hate {x}.", "std_offensiveness"] == pytest.approx(0.05)
    assert t13.index[0] == "I love {x}."  # sorted by declining std
    t12 = offensiveness_ranges(df, edges=(0, 0.5, 1.0))
    love = t12[t12["template"] == "I love {x}."].set_index("range")
    assert love.loc["0% to 50%", "descriptors"] == "p" and love.loc["50% to 100%", "descriptors"] == "q"
    assert percent_offensive(df["offensiveness"]) == pytest.approx(75.0)  # 6 of 8 >= .5


def test_style_equality_bias_values_hand_computed():
    from biaslens.metrics import bias_tags, style_equality_bias_values

    # cell means (see the module docstring's table): m_x = mean(t1 [.5,.5,0], t2 [.2,.8,0]) = [.35,.65,0]
    # m_y = mean([0,0,1], [.6,.4,0]) = [.3,.2,.5]; m_bar = [.325,.425,.25]
    # m_x - m_bar = [.025,.225,-.25]; response 0 (t1/x, p=[1,0,0]): p - m_bar = [.675,-.425,-.25]
    #   b0 = .675*.025 - .425*.225 + .25*.25 = .016875 - .095625 + .0625 = -.01625 (alpha 0)
    # ||m_x - m_bar||^2 = .000625 + .050625 + .0625 = .11375
    b = style_equality_bias_values(T, D, P, alpha=0)
    assert b[0] == pytest.approx(-0.01625)
    # response 1 (t1/x, p=[0,1,0]): p - m_bar = [-.325,.575,-.25] -> -.008125 + .129375 + .0625 = .18375
    assert b[1] == pytest.approx(0.18375)
    b2 = style_equality_bias_values(T, D, P, alpha=2)
    assert b2[1] == pytest.approx(0.18375 / 0.11375)
    assert bias_tags(b, beta=0.0)[:2] == ["no_bias", "bias"]
    # a descriptor at the mean of all descriptors gets 0
    same = style_equality_bias_values(["t", "t"], ["x", "y"], np.array([[.5, .5], [.5, .5]]))
    assert np.allclose(same, 0)
