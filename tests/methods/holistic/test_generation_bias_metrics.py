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
    gen_bias_ci,
    generation_bias_summary,
    offensiveness_ranges,
    paired_gen_bias_change,
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


def test_bootstrap_ci_brackets_is_seeded_and_names_the_method_used():
    ci = bootstrap_gen_bias_ci(T, D, P, n_boot=300, seed=1)
    assert 0 <= ci.low <= ci.high and ci.unit.startswith("descriptor")
    # two descriptors: BCa's jackknife is degenerate, so the interval is a percentile one and says so
    assert ci.method == "percentile bootstrap"
    again = bootstrap_gen_bias_ci(T, D, P, n_boot=300, seed=1)
    assert (ci.low, ci.high) == (again.low, again.high)
    # constant cells -> degenerate CI at the point estimate
    const_p = np.array([[1, 0, 0]] * 4 + [[0, 1, 0]] * 4, dtype=float)
    c2 = bootstrap_gen_bias_ci(T, D, const_p, n_boot=50, seed=0)
    assert c2.low == pytest.approx(c2.high) == pytest.approx(full_gen_bias(T, D, const_p))


def test_jackknife_interval_hand_computed_against_scipy_t():
    # 9 descriptors, one template, two styles (x, 1 - x): FGB = 2 * population variance of x.
    # Leave-one-out FGBs by hand (numpy var), log, jackknife bias-corrected centre and SE, t(8)
    # quantile from scipy.
    from scipy.stats import t as tdist

    x = np.array([0.1, 0.25, 0.3, 0.42, 0.5, 0.55, 0.61, 0.8, 0.95])
    d = [f"d{i}" for i in range(9)]
    ci = gen_bias_ci(["t"] * 9, d, _two_styles(x))
    theta = 2 * np.var(x)
    loo = np.log([2 * np.var(np.delete(x, i)) for i in range(9)])
    se = np.sqrt(8 / 9 * np.sum((loo - loo.mean()) ** 2))
    q = tdist.ppf(0.975, 8)
    centre = 9 * np.log(theta) - 8 * loo.mean()
    assert ci.low == pytest.approx(np.exp(centre - q * se)) and ci.high == pytest.approx(np.exp(centre + q * se))
    # the bias correction moves the centre up: a variance of few units runs low (by 1/9 here)
    assert centre > np.log(theta)
    assert ci.method == "jackknife log-t" and ci.n_resamples == 9
    # the same descriptors listed under two axes change nothing: the unit is the descriptor
    assert gen_bias_ci(["t"] * 9 * 2, d * 2, np.vstack([_two_styles(x)] * 2)).low == pytest.approx(ci.low)
    # below the minimum number of descriptors: no interval (its coverage was not measured there)
    assert gen_bias_ci(["t"] * 7, d[:7], _two_styles(x[:7])) is None


def test_jackknife_interval_never_negative():
    # no descriptor effect: FGB is small, and a raw-scale interval would dip below 0
    t, n, d_int, d = _design(n_templates=1, n_nouns=2, n_desc=10)
    rng = np.random.default_rng(0)
    for _ in range(20):
        ci = gen_bias_ci(t, d, rng.dirichlet([5, 5, 5], size=len(t)))
        assert 0 < ci.low <= ci.high


# --- simulations of the designs biaslens runs ------------------------------------------------
# Style probabilities: softmax over 12 styles of base + axis effect (sd .3) + descriptor effect
# (sd .5) + noun effect (sd 1: the noun moves the style strongly, as "lady" vs "brother") +
# per-prompt noise (sd .7). The nouns are drawn once and held fixed (the interval is for these
# nouns); descriptors are redrawn every replicate. The estimand: FGB of the descriptor
# population at these nouns (the population variance of descriptors' mean style vectors),
# computed from 4,000 descriptors per axis.
N_STYLES = 12


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _World:
    def __init__(self, n_axes: int, n_nouns: int, n_templates: int, seed: int):
        rng = np.random.default_rng(seed)
        self.base = rng.normal(0, 1, N_STYLES)
        self.axis = rng.normal(0, 0.3, (n_axes, N_STYLES))
        self.noun = rng.normal(0, 1.0, (n_templates, n_nouns, N_STYLES))
        self.n_axes, self.n_nouns, self.n_templates = n_axes, n_nouns, n_templates

    def descriptors(self, rng, per_axis: int):
        axis = np.repeat(np.arange(self.n_axes), per_axis)
        return axis, self.axis[axis] + rng.normal(0, 0.5, (len(axis), N_STYLES))

    def probs(self, rng, effect):
        """(templates, descriptors, nouns, styles): one response per prompt."""
        shape = (self.n_templates, len(effect), self.n_nouns, N_STYLES)
        return _softmax(self.base + effect[None, :, None] + self.noun[:, None] + rng.normal(0, 0.7, shape))

    def truth(self):
        _, effect = self.descriptors(np.random.default_rng(99), 4000)
        m = self.probs(np.random.default_rng(98), effect).mean(axis=2)  # (T, D, S) cell means
        return float(m.var(axis=1).sum(axis=-1).mean())


def _long(probs):
    """The long table (templates, descriptors, probs) of a (T, D, N, S) array."""
    t_, d_, n_, s_ = probs.shape
    idx = np.indices((t_, d_, n_))
    return idx[0].ravel().astype(str), idx[1].ravel().astype(str), probs.reshape(-1, s_)


#: the default design: --sample 50 keeps 2 descriptors on each of 13 axes, one noun per noun
#: gender (3) plus the bare-descriptor row, one template; the smallest with an interval (8
#: descriptors, e.g. --axes with 4 axes); a larger one: 6 per axis, 8 nouns, 2 templates
DESIGNS = {"default (13 axes x 2 descriptors x 4 nouns, 1 template)": (13, 2, 4, 1),
           "smallest (4 axes x 2 descriptors x 4 nouns, 1 template)": (4, 2, 4, 1),
           "larger (13 axes x 6 descriptors x 8 nouns, 2 templates)": (13, 6, 8, 2)}


def simulate_coverage(n_axes, per_axis, n_nouns, n_templates, reps=400, seed=0):
    world = _World(n_axes, n_nouns, n_templates, seed)
    truth = world.truth()
    rng = np.random.default_rng(seed + 1)
    hits = 0
    for _ in range(reps):
        _, effect = world.descriptors(rng, per_axis)
        ci = gen_bias_ci(*_long(world.probs(rng, effect)))
        hits += ci.low <= truth <= ci.high
    return hits / reps


def simulate_compare(n_axes, per_axis, n_nouns, n_templates, shrink=1.0, reps=300, seed=0):
    """Share of replicates where compare says "went down/up": two regenerations of the same
    descriptors (independent per-prompt noise), the second with descriptor effects x ``shrink``."""
    world = _World(n_axes, n_nouns, n_templates, seed)
    rng = np.random.default_rng(seed + 2)
    said = 0
    for _ in range(reps):
        axis, effect = world.descriptors(rng, per_axis)
        t, d, before = _long(world.probs(rng, effect))
        after = _long(world.probs(rng, world.axis[axis] + shrink * (effect - world.axis[axis])))[2]
        said += paired_gen_bias_change(t, d, before, after).verdict != "no detectable change"
    return said / reps


@pytest.mark.parametrize("design", list(DESIGNS))
def test_interval_coverage_at_the_designs_biaslens_runs(design):
    # 400 replicates: the standard error of a coverage near .95 is .011. Redrawing descriptors
    # within their axis covered .77 at the default design (the simulation); this
    # interval must stay in .90-.99
    assert 0.90 <= simulate_coverage(*DESIGNS[design]) <= 0.99


@pytest.mark.parametrize("design", list(DESIGNS))
def test_compare_false_change_rate_on_null_regenerations(design):
    # no true change: "went down/up" at most 8% of 300 replicates (nominal 5%; within axes: 18%)
    assert simulate_compare(*DESIGNS[design]) <= 0.08


def test_compare_power_against_a_planted_change():
    # descriptor effects halved in the second run: the paired interval sees it most of the time
    assert simulate_compare(*DESIGNS["default (13 axes x 2 descriptors x 4 nouns, 1 template)"], shrink=0.5) >= 0.6
    assert simulate_compare(*DESIGNS["larger (13 axes x 6 descriptors x 8 nouns, 2 templates)"], shrink=0.7) >= 0.8


def _design(n_templates=2, n_nouns=3, n_desc=8):
    """Full (template, noun, descriptor) grid, one response per row."""
    t = np.repeat(np.arange(n_templates), n_nouns * n_desc)
    n = np.tile(np.repeat(np.arange(n_nouns), n_desc), n_templates)
    d = np.tile(np.arange(n_desc), n_templates * n_nouns)
    return t.astype(str), n.astype(str), d, d.astype(str)


def _two_styles(x):
    x = np.clip(x, 0, 1)
    return np.column_stack([x, 1 - x])


def test_stratified_noise_floor_has_nominal_size_with_noun_effect_and_unbalanced_cells():
    # the noun moves the style a lot (as "lady" vs "brother" in real output), the descriptor not
    # at all; a fifth of the rows are missing (unbalanced). Under this null the p-value must be
    # uniform: with 99 permutations P(p <= .05) = .05 and P(p <= .2) = .2 exactly.
    t, n, d_int, d = _design()
    noun_effect = np.array([0.35, -0.35, 0.0])[n.astype(int)]
    rng = np.random.default_rng(42)
    p_values = []
    for r in range(300):
        keep = rng.random(len(t)) > 0.2
        probs = _two_styles(0.5 + noun_effect + rng.normal(0, 0.05, len(t)))
        nf = permutation_noise_floor(t[keep], d[keep], probs[keep], strata={"noun": n[keep]},
                                     n_permutations=99, seed=r)
        p_values.append(nf.p_value)
    p_values = np.array(p_values)
    # 300 datasets: standard error of a rate near .05 is .013, near .2 is .023
    assert abs(np.mean(p_values <= 0.05) - 0.05) < 0.035
    assert abs(np.mean(p_values <= 0.20) - 0.20) < 0.065


def test_stratified_floor_detects_descriptor_effect_that_template_shuffle_hides():
    # noun effect +-0.35, a modest linear descriptor effect (+-0.06): shuffling across nouns
    # puts the noun effect into the null and calls this noise; within (template, noun) it is clear
    t, n, d_int, d = _design()
    rng = np.random.default_rng(5)
    probs = _two_styles(0.5 + np.array([0.35, -0.35, 0.0])[n.astype(int)]
                        + 0.06 * np.linspace(-1, 1, 8)[d_int] + rng.normal(0, 0.05, len(t)))
    across = permutation_noise_floor(t, d, probs, n_permutations=199, seed=0)
    within = permutation_noise_floor(t, d, probs, strata={"noun": n}, n_permutations=199, seed=0)
    assert across.p_value > 0.2  # the old null (template only) misses it
    assert within.p_value == pytest.approx(1 / 200)  # no permutation reaches the observed FGB
    assert within.ratio > 2 * across.ratio
    assert within.strata == ("template", "noun") and within.n_strata == 6 and within.n_fixed_rows == 0


def test_permutations_keep_each_stratum_label_multiset():
    # descriptor "b" only ever appears with noun "n1": a permutation within (template, noun)
    # can never move it to n2, so a style that only "b"'s noun-n1 rows show stays put
    t = np.array(["t"] * 6)
    n = np.array(["n1", "n1", "n1", "n2", "n2", "n2"])
    d = np.array(["a", "b", "c", "a", "c", "c"])
    probs = _two_styles(np.array([0.1, 0.2, 0.3, 0.9, 0.8, 0.7]))
    nf = permutation_noise_floor(t, d, probs, strata={"noun": n}, n_permutations=500, seed=0)
    # every permuted FGB must come from a relabelling within the two nouns (3! x 3! of them)
    import itertools

    possible = set()
    for p1 in itertools.permutations(range(3)):
        for p2 in itertools.permutations(range(3)):
            lab = d.copy()
            lab[:3], lab[3:] = d[:3][list(p1)], d[3:][list(p2)]
            possible.add(round(full_gen_bias(t, lab, probs), 12))
    assert {round(v, 12) for v in nf.permuted} <= possible


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
