"""Likelihood Bias statistics on hand-made tables, checked against the reference recipe."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

try:
    import biaslens  # noqa: F401
except ImportError:  # running from a clone without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "src"))

from biaslens.methods.holistic.likelihood_metrics import LOVE_HATE_COLUMNS, SIGNIFICANCE_COLUMNS, wilson_interval
from biaslens.metrics import (
    LOVE_HATE_TEMPLATES,
    LikelihoodBiasResult,
    benjamini_hochberg,
    holm,
    likelihood_bias,
    low_high_descriptors,
)

LOVE = LOVE_HATE_TEMPLATES["love"]
HATE = LOVE_HATE_TEMPLATES["hate"]


def _rows(axis: str, template: str, descriptor: str, values: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"axis": axis, "template": template, "descriptor": descriptor, "perplexity": values})


def _known_table() -> pd.DataFrame:
    """Axis 'ability': d_a and d_b interleaved (no difference), d_c far above both.

    Template 't2' also has a single-descriptor block in axis 'age' (no pairs).
    """
    base = np.arange(30, dtype=np.float64)
    parts = [
        _rows("ability", "t1", "d_c", base + 1000.0),
        _rows("ability", "t1", "d_a", base),
        _rows("ability", "t1", "d_b", base + 0.5),
        _rows("age", "t2", "old", base),
        # template where every pair is different
        _rows("ability", "t0", "d_a", base),
        _rows("ability", "t0", "d_b", base + 100.0),
        _rows("ability", "t0", "d_c", base + 1000.0),
    ]
    return pd.concat(parts, ignore_index=True)


def test_known_fraction_and_order() -> None:
    res = likelihood_bias(_known_table())
    sig = res.significances
    assert list(sig.columns) == SIGNIFICANCE_COLUMNS
    # axis sorted, template sorted (t0 before t1), combinations of sorted descriptors
    assert sig[["template", "descriptor_0", "descriptor_1"]].values.tolist() == [
        ["t0", "d_a", "d_b"],
        ["t0", "d_a", "d_c"],
        ["t0", "d_b", "d_c"],
        ["t1", "d_a", "d_b"],
        ["t1", "d_a", "d_c"],
        ["t1", "d_b", "d_c"],
    ]
    assert sig["significant_difference"].tolist() == [1, 1, 1, 0, 1, 1]
    # d_a = k, d_b = k + 0.5: d_a beats d_b's values below it, k per value -> sum 0..29
    assert sig["mann_whitney_u"].iloc[3] == 435.0
    assert sig["rank_biserial"].iloc[4] == -1.0  # d_a always below d_c
    by_axis = res.by_axis.set_index("axis")
    assert list(by_axis.index) == ["ability"]  # 'age' has one descriptor: no pairs
    assert by_axis.loc["ability", "likelihood_bias"] == pytest.approx(5 / 6)
    assert by_axis.loc["ability", "n_pairs"] == 6
    lo, hi = by_axis.loc["ability", ["ci_low", "ci_high"]]
    assert lo < 5 / 6 < hi
    bt = res.by_template.set_index("template")["likelihood_bias"]
    assert bt.to_dict() == pytest.approx({"t0": 1.0, "t1": 2 / 3})
    bat = res.by_axis_and_template
    assert bat[["axis", "template"]].values.tolist() == [["ability", "t0"], ["ability", "t1"]]
    pairs = res.by_axis_and_descriptor_pair.set_index(["axis", "descriptor_0", "descriptor_1"])
    assert pairs.loc[("ability", "d_a", "d_b"), "likelihood_bias"] == 0.5
    assert pairs.loc[("ability", "d_a", "d_c"), "likelihood_bias"] == 1.0
    assert res.n_used == 210 and res.n_missing == 0
    assert isinstance(res, LikelihoodBiasResult) and res.alpha == 0.05


def test_corrections_are_over_the_whole_run() -> None:
    res = likelihood_bias(_known_table())
    sig = res.significances
    np.testing.assert_allclose(sig["p_bh"], benjamini_hochberg(sig["p_value"].to_numpy()))
    np.testing.assert_allclose(sig["p_holm"], holm(sig["p_value"].to_numpy()))
    assert (sig["significant_bh"] == (sig["p_bh"] < 0.05).astype(int)).all()
    assert (sig["significant_holm"] == (sig["p_holm"] < 0.05).astype(int)).all()
    assert res.by_axis["likelihood_bias_holm"].iloc[0] == pytest.approx(sig["significant_holm"].mean())


def test_missing_values_counted_not_dropped_silently() -> None:
    df = _known_table()
    df.loc[[0, 1, 2], "perplexity"] = np.nan
    df.loc[3, "perplexity"] = np.inf
    df.loc[4, "descriptor"] = None
    res = likelihood_bias(df)
    assert res.n_missing == 5
    assert res.n_used == len(df) - 5
    row = res.significances.query("template == 't1' and descriptor_0 == 'd_b' and descriptor_1 == 'd_c'")
    assert int(row["n_1"].iloc[0]) == 25  # d_c of t1 lost 5 rows


def test_matches_reference_recipe_random_table() -> None:
    rng = np.random.default_rng(11)
    parts = []
    for axis in ["race", "age"]:
        descs = [f"{axis}_{k}" for k in rng.permutation(7)]
        for template in ["z {x}", "a {x}", "m {x}"]:
            for k, desc in enumerate(descs):
                n = 30 if k % 3 else int(rng.integers(3, 12))
                vals = rng.lognormal(3 + 0.1 * k, 0.4, size=n)
                if k == 2:
                    vals = np.round(vals)
                parts.append(_rows(axis, template, desc, vals))
    df = pd.concat(parts, ignore_index=True).sample(frac=1.0, random_state=1)  # shuffled rows
    res = likelihood_bias(df)

    # The authors' recipe: axis -> template -> descriptor lists, scipy per pair.
    ref_rows = []
    for axis in sorted(df["axis"].unique()):
        for template in sorted(df.loc[df["axis"] == axis, "template"].unique()):
            block = df[(df["axis"] == axis) & (df["template"] == template)]
            descs = sorted(block["descriptor"].unique())
            for d0, d1 in itertools.combinations(descs, 2):
                x = block.loc[block["descriptor"] == d0, "perplexity"].to_numpy()
                y = block.loc[block["descriptor"] == d1, "perplexity"].to_numpy()
                r = stats.mannwhitneyu(x, y)
                ref_rows.append((axis, template, d0, d1, float(r.statistic), float(r.pvalue), int(r.pvalue < 0.05)))
    ref = pd.DataFrame(
        ref_rows,
        columns=["axis", "template", "descriptor_0", "descriptor_1", "mann_whitney_u", "p_value", "sig"],
    )
    sig = res.significances
    assert sig[["axis", "template", "descriptor_0", "descriptor_1"]].values.tolist() == ref[
        ["axis", "template", "descriptor_0", "descriptor_1"]
    ].values.tolist()
    np.testing.assert_array_equal(sig["mann_whitney_u"].to_numpy(), ref["mann_whitney_u"].to_numpy())
    np.testing.assert_allclose(sig["p_value"].to_numpy(), ref["p_value"].to_numpy(), rtol=1e-12, atol=0)
    assert sig["significant_difference"].tolist() == ref["sig"].tolist()
    ref_by_axis = ref.groupby("axis")["sig"].mean()
    np.testing.assert_allclose(res.by_axis.set_index("axis")["likelihood_bias"], ref_by_axis)
    ref_by_at = ref.groupby(["axis", "template"])["sig"].mean()
    np.testing.assert_allclose(res.by_axis_and_template.set_index(["axis", "template"])["likelihood_bias"], ref_by_at)

    # medians per (axis, descriptor, template)
    ref_med = df.groupby(["axis", "descriptor", "template"])["perplexity"].median()
    got_med = res.median_perplexities.set_index(["axis", "descriptor", "template"])["median_ppl"]
    np.testing.assert_array_equal(got_med.to_numpy(), ref_med.to_numpy())
    assert list(got_med.index) == list(ref_med.index)

    # categorical input (category order deliberately not lexical) gives the same result
    cat = df.copy()
    for col in ("axis", "template", "descriptor"):
        cats = sorted(cat[col].unique(), reverse=True)
        cat[col] = pd.Categorical(cat[col], categories=cats)
    res_cat = likelihood_bias(cat)
    pd.testing.assert_frame_equal(
        res_cat.significances.astype({c: object for c in ("axis", "template", "descriptor_0", "descriptor_1")}),
        sig.astype({c: object for c in ("axis", "template", "descriptor_0", "descriptor_1")}),
    )


def test_love_hate_fractions() -> None:
    # love: x = 1..4, y = 5..8 -> median of the 8 values 4.5 -> x: 4/4 below, y: 0/4
    # hate: x = 5..8, y = [1, 2, 3, 5.5] -> median (5 + 5.5) / 2 = 5.25 -> x: 1/4 (5), y: 3/4
    # 'I love being' is not one of the four templates and is ignored.
    df = pd.concat(
        [
            _rows("a", LOVE, "x", np.array([1.0, 2.0, 3.0, 4.0])),
            _rows("a", LOVE, "y", np.array([5.0, 6.0, 7.0, 8.0])),
            _rows("a", HATE, "x", np.array([5.0, 6.0, 7.0, 8.0])),
            _rows("a", HATE, "y", np.array([1.0, 2.0, 3.0, 5.5])),
            _rows("a", "I love being {noun_phrase}.", "x", np.array([100.0, 200.0])),
        ],
        ignore_index=True,
    )
    lh = likelihood_bias(df).love_hate
    assert list(lh.columns) == LOVE_HATE_COLUMNS
    assert lh["descriptor"].tolist() == ["y", "x"]  # sorted by love_hate_diff
    row = lh.set_index("descriptor")
    assert row.loc["x", LOVE] == 1.0 and row.loc["y", LOVE] == 0.0
    assert row.loc["x", HATE] == 0.25 and row.loc["y", HATE] == 0.75
    assert row.loc["x", "love_hate_diff"] == 0.75 and row.loc["y", "love_hate_diff"] == -0.75
    assert row[LOVE_HATE_TEMPLATES["best"]].isna().all()


def test_love_hate_strictly_below_and_empty() -> None:
    # odd count: median is 2.0 itself, which is not strictly below
    df = _rows("a", LOVE, "x", np.array([1.0, 2.0, 3.0]))
    lh = likelihood_bias(df).love_hate
    assert lh[LOVE].tolist() == [pytest.approx(1 / 3)]
    empty = likelihood_bias(_known_table()).love_hate
    assert empty.empty and list(empty.columns) == LOVE_HATE_COLUMNS


def _low_high_table() -> pd.DataFrame:
    parts = []
    # descriptor -> (median ppl, n tokens)
    spec = {
        "tiny": (1.0, 1),  # 4 chars: removed by the length filter
        "alpha-one": (2.0, 2),
        "bravo-two": (3.0, 2),
        "charlie-three": (4.0, 3),  # token count 3: removed by the equal-token filter
        "delta-four": (5.0, 2),
        "echo-five-is-much-too-long": (8.0, 2),  # 26 chars: removed by the length filter
        "foxtrot-six": (7.0, 2),
    }
    for desc, (med, _) in spec.items():
        parts.append(_rows("ax", "t1", desc, np.array([med - 0.5, med, med + 0.5])))
        parts.append(_rows("ax", "t2", desc, np.array([100 - med] * 3)))  # reversed order in t2
    return pd.concat(parts, ignore_index=True), {k: v[1] for k, v in spec.items()}


def test_low_high_descriptors_filters() -> None:
    df, ntok = _low_high_table()
    res = likelihood_bias(df)
    out = low_high_descriptors(res, template="t1", n=2)
    assert out.columns.tolist() == ["axis", "side", "rank", "descriptor", "median_ppl", "n_eligible"]
    assert (out["n_eligible"] == 5).all()  # tiny and echo-five-... fail the 6-19 character filter
    low = out[out["side"] == "low"]["descriptor"].tolist()
    high = out[out["side"] == "high"]["descriptor"].tolist()
    assert low == ["alpha-one", "bravo-two"]
    assert high == ["foxtrot-six", "delta-four"]

    # 5 eligible, 3 asked per side: 2 per side, the middle one (charlie-three) on neither,
    # never one descriptor on both sides (the old lists put charlie-three on both)
    out = low_high_descriptors(res, template="t1", n=3)
    assert out[out["side"] == "low"]["descriptor"].tolist() == ["alpha-one", "bravo-two"]
    assert out[out["side"] == "high"]["descriptor"].tolist() == ["foxtrot-six", "delta-four"]
    assert not out["descriptor"].duplicated().any()
    # token counts left by the length filter: 2, 2, 3, 2, 2 -> mode 2 drops charlie-three
    out = low_high_descriptors(res, template="t1", n=3, equal_token_count=True, token_counts=ntok)
    assert out[out["side"] == "low"]["descriptor"].tolist() == ["alpha-one", "bravo-two"]
    assert out[out["side"] == "high"]["descriptor"].tolist() == ["foxtrot-six", "delta-four"]
    assert (out["n_eligible"] == 4).all()
    assert "charlie-three" not in out["descriptor"].tolist()
    # one eligible descriptor: listed on neither side
    one = low_high_descriptors(res, template="t1", n=2, min_chars=20, max_chars=None)
    assert one.empty and "n_eligible" in one.columns

    # no length filter: 'tiny' is the lowest; table input equals result input
    out_df = low_high_descriptors(df, template="t1", n=1, min_chars=None, max_chars=None)
    out_res = low_high_descriptors(res, template="t1", n=1, min_chars=None, max_chars=None)
    pd.testing.assert_frame_equal(out_df, out_res)
    assert out_df["descriptor"].tolist() == ["tiny", "echo-five-is-much-too-long"]

    # over all templates: medians of 6 values mix t1 and t2
    all_t = low_high_descriptors(res, n=1, min_chars=None, max_chars=None)
    meds = df.groupby("descriptor")["perplexity"].median()
    assert all_t["median_ppl"].tolist() == [meds.min(), meds.max()]
    pd.testing.assert_frame_equal(all_t, low_high_descriptors(df, n=1, min_chars=None, max_chars=None))

    with pytest.raises(ValueError):
        low_high_descriptors(res, equal_token_count=True)
    with pytest.raises(KeyError):
        low_high_descriptors(res, equal_token_count=True, token_counts={"alpha-one": 2})
    with pytest.raises(ValueError):
        low_high_descriptors(res, template="nope")


def test_missing_column_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="perplexity"):
        likelihood_bias(pd.DataFrame({"axis": ["a"], "template": ["t"], "descriptor": ["d"]}))


def test_empty_result_has_columns() -> None:
    res = likelihood_bias(_rows("a", "t", "d", np.arange(5.0)))
    assert res.significances.empty and list(res.significances.columns) == SIGNIFICANCE_COLUMNS
    assert res.by_axis.empty and "likelihood_bias" in res.by_axis.columns
    assert res.n_used == 5


# ---------------------------------------------------------------- interval coverage by simulation


def _simulated_values(rng, k: int, n_templates: int, noun_effects: np.ndarray, tau: float, gamma: float):
    """One axis: k descriptors with effects ~ N(0, tau^2) (+ a template interaction ~ N(0,
    gamma^2)), each with one sentence per noun (fixed noun effects: the design fixes the
    nouns) and unit noise. Returns log-perplexities, shape (n_templates, k, n_nouns)."""
    delta = rng.normal(0.0, tau, k)
    eff = delta[None, :] + rng.normal(0.0, gamma, (n_templates, k))
    return eff[:, :, None] + noun_effects[None, None, :] + rng.normal(0.0, 1.0, (n_templates, k, noun_effects.shape[0]))


def test_descriptor_bootstrap_covers_the_population_likelihood_bias() -> None:
    """Coverage of the nominal 95% on data with known descriptor effects.

    The population Likelihood Bias is the probability that two descriptors drawn from the
    effect distribution differ significantly: approximated here by 200 axes of 60
    descriptors (354,000 pairs). The old Wilson interval treats an axis's 2 x 66 pairs as
    independent trials and covers that value in only about 63% of runs (so the old code
    fails this test); the bootstrap over descriptors covers it about 96% of the time.
    """
    from biaslens.metrics.mannwhitney import pairwise_mannwhitney

    noun_effects = np.random.default_rng(1).normal(0.0, 0.5, 30)
    tau, gamma, k = 0.5, 0.2, 12
    truth_rng = np.random.default_rng(2)
    n_sig = n_all = 0
    for _ in range(200):
        r = pairwise_mannwhitney(list(_simulated_values(truth_rng, 60, 1, noun_effects, tau, gamma)[0]))
        n_sig += int((r.p_value < 0.05).sum())
        n_all += len(r)
    truth = n_sig / n_all
    assert 0.3 < truth < 0.7  # a middle value, where the dependence matters most

    rng = np.random.default_rng(3)
    templates = np.repeat(["t1", "t2"], k * 30)
    descriptors = np.tile(np.repeat([f"d{i:02d}" for i in range(k)], 30), 2)
    runs = 300
    covered = covered_wilson = 0
    for r in range(runs):
        ppl = np.exp(_simulated_values(rng, k, 2, noun_effects, tau, gamma).reshape(-1))
        df = pd.DataFrame({"axis": "ax", "template": templates, "descriptor": descriptors, "perplexity": ppl})
        row = likelihood_bias(df, n_resamples=1000, seed=r).by_axis.iloc[0]
        covered += row["ci_low"] <= truth <= row["ci_high"]
        wl, wh = wilson_interval(np.array([row["n_significant"]]), np.array([row["n_pairs"]]))
        covered_wilson += wl[0] <= truth <= wh[0]
    coverage, coverage_wilson = covered / runs, covered_wilson / runs
    print(f"truth {truth:.4f} coverage bootstrap {coverage:.3f} wilson {coverage_wilson:.3f}")
    # 300 runs: a binomial standard error of 1.3 points at 95%
    assert 0.91 <= coverage <= 0.99, coverage
    assert coverage_wilson < 0.80, coverage_wilson


def test_likelihood_bias_intervals_come_from_the_descriptor_bootstrap() -> None:
    """The result's columns are the bootstrap's, seeded: same seed same numbers; the
    point estimate stays the paper's fraction; the overall interval pools the axes."""
    rng = np.random.default_rng(7)
    parts = []
    for axis, k in (("ax1", 8), ("ax2", 6)):
        effects = rng.normal(0, 0.6, k)
        for t in ("t1", "t2"):
            for d in range(k):
                parts.append(_rows(axis, t, f"{axis}-d{d}", np.exp(effects[d] + rng.normal(0, 1, 30))))
    df = pd.concat(parts, ignore_index=True)
    res = likelihood_bias(df, seed=5)
    again = likelihood_bias(df, seed=5)
    pd.testing.assert_frame_equal(res.by_axis, again.by_axis)
    other = likelihood_bias(df, seed=6)
    assert not np.allclose(res.by_axis["ci_low"], other.by_axis["ci_low"]) or not np.allclose(
        res.by_axis["ci_high"], other.by_axis["ci_high"])
    ax = res.by_axis.set_index("axis")
    sig = res.significances
    for name, k in (("ax1", 8), ("ax2", 6)):
        s = sig[sig["axis"] == name]
        assert ax.loc[name, "likelihood_bias"] == s["significant_difference"].mean()  # the paper's number
        assert ax.loc[name, "n_pairs"] == 2 * k * (k - 1) // 2 and ax.loc[name, "n_descriptors"] == k
        assert ax.loc[name, "ci_low"] <= ax.loc[name, "likelihood_bias"] <= ax.loc[name, "ci_high"]
        assert ax.loc[name, "ci_method"] == "bootstrap" and not ax.loc[name, "few_descriptors"]
    lo, hi, how = res.overall_interval
    assert how == "bootstrap" and lo <= sig["significant_difference"].mean() <= hi
    assert "bootstrap over descriptors" in res.interval
    assert {"ci_low", "ci_high"}.isdisjoint(res.by_axis_and_descriptor_pair.columns)


def test_bootstrap_resample_counts_are_the_pairs_among_drawn_descriptors() -> None:
    """Hand check of the quadratic form: drawing descriptors (0, 0, 1, 2) from a 3-descriptor
    axis gives pairs 0-1 twice, 0-2 twice, 1-2 once (0-0 is not a pair): 5 pairs."""
    from biaslens.methods.holistic.likelihood_metrics import _AxisPairs

    # one template; 0-1 significant, 0-2 not, 1-2 significant
    g = _AxisPairs(np.array([0, 0, 0]), np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1.0, 0.0, 1.0]))
    s, n = g.counts(np.array([[0, 0, 1, 2], [0, 1, 2, 2]]))
    assert n[0].tolist() == [5.0, 5.0]
    assert s[0].tolist() == [2.0 + 1.0, 1.0 + 2.0]  # (0-1 x2, 1-2 x1) and (0-1 x1, 1-2 x2)
    s, n = g.counts(np.array([1, 1, 1, 1]))  # one descriptor drawn four times: no pair
    assert n.tolist() == [0.0] and s.tolist() == [0.0]


def test_few_descriptors_are_flagged_and_all_agree_gets_the_exact_interval() -> None:
    """2 descriptors per axis (what --sample 300 gives): one pair per template, LB 0 or 1,
    flagged; the bootstrap cannot show spread when all pairs agree, so the interval is the
    exact one on the floor(k/2) independent pairs (k=2: one pair -> [0.025, 1])."""
    base = np.arange(30, dtype=np.float64)
    df = pd.concat([_rows("ax", t, d, base + off) for t in ("t1", "t2") for d, off in (("lo", 0.0), ("hi", 500.0))],
                   ignore_index=True)
    res = likelihood_bias(df)
    row = res.by_axis.iloc[0]
    assert row["likelihood_bias"] == 1.0 and row["n_descriptors"] == 2 and row["few_descriptors"]
    assert row["ci_method"] == "exact"
    assert row["ci_low"] == pytest.approx(0.025) and row["ci_high"] == 1.0


def test_report_table3_uses_i_love_and_pairs_rank_by_effect_size() -> None:
    """Paper Table 3 is the 'I love' template only; the pooled table says it pools. The
    strongest pairs are ranked by |rank-biserial|, not by (tied) p-values."""
    from biaslens.methods.holistic.likelihood_report import per_axis_table, strongest_pairs, table3

    other = "I like {plural_noun_phrase}."
    base = np.arange(30, dtype=np.float64)
    names = ["alpha-one", "bravo-two", "charlie-three", "delta-four", "foxtrot-six", "golf-seven"]
    parts = []
    for i, d in enumerate(names):
        parts.append(_rows("ax", LOVE, d, base + 100.0 * i))  # love: all pairs separated, alpha lowest
        parts.append(_rows("ax", other, d, base + 0.01 * (len(names) - i)))  # like: no pair differs, order reversed
    res = likelihood_bias(pd.concat(parts, ignore_index=True))
    t3, caption = table3(res, n=3)
    row = t3.iloc[0]
    assert row["likelihood_bias"] == 1.0 and row["n_pairs"] == 15  # love only
    assert row["low ppl descriptors"] == "alpha-one, bravo-two, charlie-three"
    assert row["high ppl descriptors"] == "golf-seven, foxtrot-six, delta-four"
    assert "I love" in caption
    pooled = per_axis_table(res, n=3).iloc[0]
    assert pooled["likelihood_bias"] == 0.5 and pooled["n_pairs"] == 30
    # without 'I love' rows there is no Table 3 shape (the report then shows the pooled table only)
    assert table3(likelihood_bias(pd.concat(parts[1::2], ignore_index=True))) is None

    top = strongest_pairs(res, n=10)
    assert (np.diff(top["abs_rank_biserial"].to_numpy()) <= 0).all()
    assert top["abs_rank_biserial"].iloc[0] == 1.0
    assert (top["abs_rank_biserial"] == top["rank_biserial"].abs()).all()


def test_report_low_high_note_when_filter_leaves_too_few() -> None:
    from biaslens.methods.holistic.likelihood_report import per_axis_table

    base = np.arange(30, dtype=np.float64)
    # 'scrawny' is the only descriptor of 6-19 characters: listed on neither side, and said so
    df = pd.concat([_rows("body_type", LOVE, d, base + off) for d, off in (("scrawny", 0.0), ("fat", 5.0), ("tall", 9.0))],
                   ignore_index=True)
    t = per_axis_table(likelihood_bias(df), n=3).iloc[0]
    assert t["low ppl descriptors"] == "" and t["high ppl descriptors"] == ""
    assert "fewer than 2 descriptors" in t["list note"]
    assert "only 3 descriptors" in t["note"]


def test_headline_says_what_it_rests_on_when_its_axes_have_too_few_descriptors() -> None:
    """--sample 300: every axis rests on 2 descriptors and is starred; the overall figure and its
    interval must carry the mark too, and the terminal's "all" row."""
    from rich.console import Console

    from biaslens.methods.holistic.likelihood import _print_summary, analyse, verdict

    base = np.arange(30, dtype=np.float64)
    two = pd.concat([_rows(ax, t, d, base + off + i) for i, ax in enumerate(("a1", "a2")) for t in ("t1", "t2")
                     for d, off in (("lo" + ax, 0.0), ("hi" + ax, 500.0))], ignore_index=True)
    _, m = analyse(two)
    m["model"] = "m"
    text = verdict(m)
    # 2 descriptors per axis: each axis 0 or 1, so "cannot tell" first, whatever the interval says
    assert text.startswith("cannot tell: Likelihood Bias 1.00 (95% exact CI") and ") *: 100% of 4 descriptor pairs" in text
    assert "but every axis has fewer than 5 descriptors (2 each), too few for its interval to be read" in text
    assert m["headline_caveat"] in text and f"rests on every axis with fewer than {m['min_descriptors']} descriptors (2 each)" in text
    console = Console(record=True, width=200)
    _print_summary(console, m)
    rows = [line.replace("\u2502", " ").split() for line in console.export_text().splitlines()]
    assert ["all", "4", "1.000", "*"] in [r[:4] for r in rows]
    # enough descriptors: no mark, no caveat
    six = pd.concat([_rows("ax", t, f"d{i}", base + 100.0 * i) for t in ("t1", "t2") for i in range(m["min_descriptors"])],
                    ignore_index=True)
    _, m6 = analyse(six)
    assert "*" not in verdict(m6) and "rests on" not in verdict(m6) and m6["headline_caveat"] is None
