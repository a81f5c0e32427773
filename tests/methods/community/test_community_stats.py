"""Community-bias statistics at the design the suite runs: seeded, vectorised simulations on the
real prompt table (310 prompts, 92 keywords, 3 to 10 keywords per demographic), replies nested in
prompts nested in keywords nested in demographics. Each test can fail: it asserts the size of a test
under the null, the coverage of an interval, or the power at a known effect.

``python tests/methods/community/test_community_stats.py`` prints the size/power table quoted in docs/community.md
(20,000 simulated runs per cell)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from biaslens.methods.community.dataset import build_prompts
from biaslens.metrics.group_gaps import (
    Design,
    keyword_level_contrasts,
    keyword_level_means,
    remove_template_offsets,
    simulated_detectable,
    welch,
)
from biaslens.metrics.multiple_testing import holm

REPLY_SD = 0.45  # VADER compound per reply
KEYWORD_SD = 0.05  # keyword-to-keyword variation of the mean reply


class RealDesign:
    """The built-in prompt table as codes: demographic, keyword, template of each prompt, and the
    16 within-dimension pairs."""

    def __init__(self) -> None:
        p = build_prompts()
        self.prompts = p
        self.design, self.labels = Design.from_labels(p["demographic"].tolist(), p["keyword"].tolist())
        self.demo = {lab: i for i, lab in enumerate(self.labels)}
        self.template = np.asarray(p["template_id"].astype("category").cat.codes, dtype=np.int64)
        pairs = [(a, b) for d in dict.fromkeys(p["dimension"])
                 for a, b in itertools.combinations(list(dict.fromkeys(p.loc[p["dimension"] == d, "demographic"])), 2)]
        self.pairs = pairs
        self.ia = np.array([self.demo[a] for a, _ in pairs])
        self.ib = np.array([self.demo[b] for _, b in pairs])

    def simulate(self, rng: np.random.Generator, sims: int, n: int, keyword_sd: float = KEYWORD_SD,
                 effects: dict[str, float] | None = None, template_sd: float = 0.0) -> np.ndarray:
        """Prompt means (sims, prompts): keyword effect + the mean of n replies (+ demographic effects,
        + template offsets drawn once per simulated run)."""
        d = self.design
        y = rng.normal(0, keyword_sd, (sims, d.n_clusters))[:, d.cluster]
        y += rng.normal(0, REPLY_SD / np.sqrt(n), (sims, len(d.cluster)))
        for demo, eff in (effects or {}).items():
            y[:, d.group == self.demo[demo]] += eff
        if template_sd:
            y += rng.normal(0, template_sd, (sims, int(self.template.max()) + 1))[:, self.template]
        return y

    def gaps(self, y: np.ndarray, level: float = 0.95) -> dict[str, np.ndarray]:
        return keyword_level_contrasts(y, self.design, self.ia, self.ib, level=level)

    def prompt_level(self, y: np.ndarray, a: str, b: str) -> tuple[np.ndarray, ...]:
        g = self.design.group
        return welch(y[:, g == self.demo[a]], y[:, g == self.demo[b]])


@pytest.fixture(scope="module")
def real() -> RealDesign:
    return RealDesign()


def headline_excludes_zero(real: RealDesign, y: np.ndarray) -> np.ndarray:
    """Per simulated run: does the simultaneous interval of the largest |gap| exclude 0? (The suite's
    headline: each pair at level 1 - 0.05/16.)"""
    m = len(real.pairs)
    g = real.gaps(y, level=1 - 0.05 / m)
    pick = np.abs(g["est"]).argmax(axis=1)
    r = np.arange(len(y))
    return (g["lo"][r, pick] > 0) | (g["hi"][r, pick] < 0)


def any_holm(p: np.ndarray) -> np.ndarray:
    return (np.apply_along_axis(holm, 1, p) < 0.05).any(axis=1)


@pytest.mark.parametrize("n", [5, 50])
def test_keyword_level_gap_tests_hold_their_size_at_the_real_design(real, n):
    rng = np.random.default_rng(100 + n)
    y = real.simulate(rng, 4000, n)
    p = real.gaps(y)["p"]
    size = (p < 0.05).mean(axis=0)
    # 4000 runs: a pair's rate has a Monte Carlo sd of 0.0034
    assert size.mean() <= 0.052 and size.max() <= 0.062, size
    assert any_holm(p).mean() <= 0.055  # before: a Holm-significant gap in 45% of null runs
    assert headline_excludes_zero(real, y).mean() <= 0.05  # before: 57% of runs


def test_prompt_level_test_is_wrong_when_keywords_differ(real):
    """The reason for the keyword level: prompts of a keyword share its tone. At the paper's 50
    replies per prompt the prompt-level Welch test rejects far too often (and this test fails if
    the simulation lost its keyword effect)."""
    y = real.simulate(np.random.default_rng(7), 4000, 50)
    p = np.stack([real.prompt_level(y, a, b)[1] for a, b in real.pairs], axis=1)
    assert (p < 0.05).mean() > 0.15
    assert (real.gaps(y)["p"] < 0.05).mean() < 0.055


def test_keyword_level_size_without_keyword_effects_and_with_large_ones(real):
    rng = np.random.default_rng(11)
    for sd in (0.0, 0.2):
        p = real.gaps(real.simulate(rng, 3000, 5, keyword_sd=sd))["p"]
        assert (p < 0.05).mean() <= 0.052 and (p < 0.05).mean(axis=0).max() <= 0.065


@pytest.mark.parametrize("a,b", [("christian", "muslim"), ("asexual", "bisexual"), ("asexual", "homosexual")])
def test_interval_coverage_at_the_smallest_demographics(real, a, b):
    """10-prompt demographics (3 keywords each): the prompt-level Welch interval covers 0 at 95%
    when there are no effects at all (the old percentile bootstrap: 92.6%), and the keyword-level
    interval does with keyword effects."""
    rng = np.random.default_rng(3)
    y = real.simulate(rng, 4000, 5, keyword_sd=0.0)
    _, _, lo, hi = real.prompt_level(y, a, b)
    assert ((lo <= 0) & (0 <= hi)).mean() >= 0.94
    y = real.simulate(rng, 4000, 5)
    j = real.pairs.index((a, b))
    g = real.gaps(y)
    cover = (g["lo"][:, j] <= 0) & (0 <= g["hi"][:, j])
    assert cover.mean() >= 0.94


def test_demographic_mean_interval_coverage(real):
    y = real.simulate(np.random.default_rng(5), 4000, 5)
    m = keyword_level_means(y, real.design)
    cover = (m["lo"] <= 0) & (0 <= m["hi"])
    assert cover.mean() >= 0.945 and cover.mean(axis=0).min() >= 0.935


def test_power_at_a_real_effect(real):
    """Not only conservative: a sentiment gap of 0.2 between the 3-keyword Christian and Muslim
    is found in most runs at 50 replies per prompt; the headline (largest of 16, simultaneous)
    finds a gap of 0.3 in a good share of runs."""
    j = real.pairs.index(("christian", "muslim"))
    y = real.simulate(np.random.default_rng(9), 2000, 50, effects={"muslim": -0.2})
    # 0.61 (0.78 with one pooled keyword-variance ratio, whose df are too generous when the
    # demographics' keywords spread unequally; 0.64 with per-demographic df not capped at what 3
    # keywords allow: the size at every pair cost this power)
    assert (real.gaps(y)["p"][:, j] < 0.05).mean() > 0.56
    y = real.simulate(np.random.default_rng(10), 2000, 50, effects={"muslim": -0.3})
    assert (real.gaps(y)["p"][:, j] < 0.05).mean() > 0.82  # 0.86 (uncapped 0.89)
    assert headline_excludes_zero(real, y).mean() > 0.16  # 0.20 (uncapped 0.25, pooled df 0.36)


def test_template_offsets_neither_fool_the_test_nor_hide_a_gap_once_removed(real):
    """Templates with their own tone (offsets sd 0.3) and demographics with different template
    mixes: no demographic effect -> neither the plain nor the template-adjusted keyword-level test
    exceeds its size; a real gap of 0.2 -> removing the template offsets finds it far more often
    (template tone spreads the keywords of one demographic apart)."""
    rng = np.random.default_rng(13)
    y = real.simulate(rng, 3000, 50, template_sd=0.3)
    assert (real.gaps(y)["p"] < 0.05).mean() <= 0.05
    assert (real.gaps(remove_template_offsets(y, real.template))["p"] < 0.05).mean() <= 0.052
    j = real.pairs.index(("christian", "muslim"))
    y = real.simulate(rng, 3000, 50, template_sd=0.3, effects={"muslim": -0.2})
    plain = (real.gaps(y)["p"][:, j] < 0.05).mean()
    adjusted = (real.gaps(remove_template_offsets(y, real.template))["p"][:, j] < 0.05).mean()
    # 0.596 with the per-demographic df capped at what their keywords allow (0.64 uncapped)
    assert adjusted > 1.5 * plain and adjusted > 0.55


def test_paired_change_between_models(real):
    """The same prompts for two models: the change of a gap is tested on per-prompt differences.
    Null: the community model shifts every reply and each keyword a little (sd 0.05), gaps unchanged.
    Paired test: nominal size; a change of 0.15 in one gap is found far more often than by comparing
    two independent keyword-level intervals side by side."""
    rng = np.random.default_rng(17)
    n, sims = 5, 3000
    base = real.simulate(rng, sims, n)
    shared = rng.normal(0, KEYWORD_SD, (sims, real.design.n_clusters))[:, real.design.cluster]
    null_model = base + 0.3 + shared + rng.normal(0, REPLY_SD / np.sqrt(n), base.shape)
    p = real.gaps(null_model - base)["p"]
    assert (p < 0.05).mean() <= 0.052
    moved = null_model.copy()
    moved[:, real.design.group == real.demo["muslim"]] -= 0.15
    j = real.pairs.index(("christian", "muslim"))
    paired = (real.gaps(moved - base)["p"][:, j] < 0.05).mean()
    gb, gm = real.gaps(base), real.gaps(moved)
    side_by_side = ((gm["lo"][:, j] > gb["hi"][:, j]) | (gm["hi"][:, j] < gb["lo"][:, j])).mean()
    assert paired > 2 * side_by_side


def _table(sims: int = 20000) -> list[str]:
    real = RealDesign()
    rng = np.random.default_rng(2026)
    rows = ["| design | test | null rate (size) | power |", "| --- | --- | --- | --- |"]
    j = real.pairs.index(("christian", "muslim"))
    k = real.pairs.index(("heterosexual", "homosexual"))
    for n in (5, 50):
        y0 = real.simulate(rng, sims, n)
        p0 = real.gaps(y0)["p"]
        pp = np.stack([real.prompt_level(y0, a, b)[1] for a, b in real.pairs], axis=1)
        y1 = real.simulate(rng, sims, n, effects={"muslim": -0.2, "homosexual": -0.1})
        p1 = real.gaps(y1)["p"]
        pp1 = np.stack([real.prompt_level(y1, a, b)[1] for a, b in real.pairs], axis=1)
        rows += [
            f"| n={n} | keyword-level gap test, per pair | {(p0 < .05).mean():.3f} (worst pair "
            f"{(p0 < .05).mean(0).max():.3f}) | christian-muslim 0.2: {(p1[:, j] < .05).mean():.2f}; "
            f"heterosexual-homosexual 0.1: {(p1[:, k] < .05).mean():.2f} |",
            f"| n={n} | any Holm-significant gap (16 pairs) | {any_holm(p0).mean():.3f} | {any_holm(p1).mean():.2f} |",
            f"| n={n} | headline: simultaneous CI of the largest gap excludes 0 | "
            f"{headline_excludes_zero(real, y0).mean():.3f} | {headline_excludes_zero(real, y1).mean():.2f} |",
            f"| n={n} | prompt-level Welch (beside it), per pair | {(pp < .05).mean():.3f} | christian-muslim 0.2: "
            f"{(pp1[:, j] < .05).mean():.2f} |",
        ]
        y00 = real.simulate(rng, sims, n, keyword_sd=0.0)
        cov = np.stack([(lambda r: (r[2] <= 0) & (0 <= r[3]))(real.prompt_level(y00, a, b)) for a, b in real.pairs], 1)
        small = [real.pairs.index(q) for q in (("christian", "muslim"), ("asexual", "bisexual"))]
        rows.append(f"| n={n}, no keyword effect | prompt-level Welch 95% interval: coverage | {cov.mean():.3f} "
                    f"(smallest: christian-muslim {cov[:, small[0]].mean():.3f}, asexual-bisexual "
                    f"{cov[:, small[1]].mean():.3f}) | |")
        base = real.simulate(rng, sims, n)
        # the community model: shifted, its own keyword tones (sd 0.05) and replies; gaps unchanged
        other = base + 0.3 + real.simulate(rng, sims, n)
        pc = real.gaps(other - base)["p"]
        other[:, real.design.group == real.demo["muslim"]] -= 0.2
        pc1 = real.gaps(other - base)["p"]
        rows.append(f"| n={n} | paired gap change (base vs community model) | {(pc < .05).mean():.3f} | "
                    f"christian-muslim 0.2: {(pc1[:, j] < .05).mean():.2f} |")
    return rows


if __name__ == "__main__":
    print("\n".join(_table()))


# --- issue #32: heterogeneous keyword spread, and the verdict at the bias card's budgets ---------

SMALL = ("christian", "muslim", "asexual")


def _heterogeneous(real: RealDesign, rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """Keyword sd 0.3 in the 3-keyword demographics, 0.02 elsewhere: the small demographics carry
    most of their gaps' variance and only about 2 degrees of freedom."""
    d = real.design
    sd = np.full(d.n_groups, 0.02)
    sd[[real.demo[x] for x in SMALL]] = 0.3
    kg = np.zeros(d.n_clusters, dtype=np.int64)
    kg[d.cluster] = d.group
    y = (rng.normal(0, 1, (sims, d.n_clusters)) * sd[kg])[:, d.cluster]
    return y + rng.normal(0, REPLY_SD / np.sqrt(n), (sims, len(d.cluster)))


@pytest.mark.parametrize("n", [5, 50])
def test_size_holds_per_pair_when_the_small_demographics_are_the_heterogeneous_ones(real, n):
    # one pooled keyword-variance ratio gave the worst pair 0.086 (n = 5) and 0.105 (n = 50); the
    # per-demographic df without their keyword-count cap 0.0645 (jewish - muslim, n = 5) / 0.054
    p = real.gaps(_heterogeneous(real, np.random.default_rng(200 + n), 4000, n))["p"]
    size = (p < 0.05).mean(axis=0)
    # measured: mean 0.038 / 0.040, worst pair 0.055 / 0.050; Monte Carlo sd 0.0034 (20,000 runs:
    # worst 0.056 asexual - bisexual, n = 5)
    assert size.mean() <= 0.052 and size.max() <= 0.06, size


def _verdicts(real: RealDesign, y: np.ndarray, ia: np.ndarray, ib: np.ndarray, target: float, sims: int = 500):
    """The suite's verdict rule (methods/community/suite.py `_gap_entries`), per simulated run: detected =
    some pair's simultaneous interval excludes 0; else not detected when every pair detects
    ``target`` with 80% power (:func:`simulated_detectable`, ``sims`` runs each); else cannot tell.
    Returns (detected, cannot_tell, detectable per pair, the gaps)."""
    m = len(ia)
    g = keyword_level_contrasts(y, real.design, ia, ib, level=1 - 0.05 / m)
    detected = ((g["lo"] > 0) | (g["hi"] < 0)).any(axis=1)
    det = np.stack([simulated_detectable(row, real.design, ia, ib, (0.05 / m,), sims=sims)[0] for row in y])
    cannot = ~detected & ~(det <= target).all(axis=1)
    return detected, cannot, det, g


def _card_pairs(real: RealDesign, budget: str) -> tuple[np.ndarray, np.ndarray, list]:
    dims = CARD[budget]
    keep = [j for j, (a, b) in enumerate(real.pairs) if dims is None or real.prompts.loc[
        real.prompts["demographic"] == a, "dimension"].iloc[0] in dims]
    return real.ia[keep], real.ib[keep], [real.pairs[k] for k in keep]


#: the card's budgets for community: smoke = gender only, 1 reply; default = all 16 pairs, 1 reply
CARD = {"smoke": ("gender",), "default": None}


@pytest.mark.parametrize("budget", list(CARD))
def test_card_budget_verdicts_unbiased_and_planted(real, budget):
    ia, ib, pairs = _card_pairs(real, budget)
    rng = np.random.default_rng(300 + len(pairs))
    # unbiased model: "a gap" in at most 6% of cards (family-wise), never "no gap" at this size
    g = keyword_level_contrasts(real.simulate(rng, 3000, 1), real.design, ia, ib, level=1 - 0.05 / len(ia))
    assert ((g["lo"] > 0) | (g["hi"] < 0)).any(axis=1).mean() <= 0.06
    detected, cannot, _, _ = _verdicts(real, real.simulate(rng, 200, 1), ia, ib, 0.2)
    assert cannot[~detected].all()  # 1 reply per prompt cannot rule out a 0.2 gap: "cannot tell", not "no gap"
    # the case: a true 0.1 gap between woman and man reads "cannot tell" (before: "no gap ...")
    detected, cannot, _, _ = _verdicts(real, real.simulate(rng, 200, 1, effects={"woman": 0.1}), ia, ib, 0.2)
    assert (cannot | detected).all() and detected.mean() <= 0.08


@pytest.mark.parametrize("budget,n,pair,spread", [
    ("smoke", 1, ("woman", "man"), "alike"), ("default", 1, ("woman", "man"), "alike"),
    ("default", 1, ("christian", "muslim"), "alike"), ("default", 5, ("poor", "rich"), "alike"),
    ("default", 5, ("woman", "man"), "alike"), ("default", 5, ("asexual", "bisexual"), "alike"),
    ("default", 5, ("christian", "muslim"), "small ones wider"), ("default", 5, ("woman", "man"), "small ones wider")])
def test_stated_detectable_gap_is_detected_in_80_percent_of_runs(real, budget, n, pair, spread):
    """The size a sentence states for a pair (the median over 40 simulated runs of what each run
    states) is found by that pair's simultaneous test in at least about 80% of runs with that true
    gap, whether the keywords of every demographic spread alike (keyword sd 0.05) or the 3-keyword
    ones spread 15 times wider than the others (sd 0.3 against 0.02). Measured (4,000 runs each):
    0.78-0.86 alike, 0.84 and 0.89 wider (docs/community.md quotes each). With one keyword variance
    pooled over the demographics the wider case gave 0.38 for christian - muslim (the stated size
    far too small) and 0.95 for woman - man; the noncentral t at the estimated df, before, 0.86 for
    woman - man and 0.29 for christian - muslim at the default card."""
    ia, ib, pairs = _card_pairs(real, budget)
    j, m = pairs.index(pair), len(pairs)
    rng = np.random.default_rng(400 + n + m)

    def simulate(sims: int, gap: float) -> np.ndarray:
        y = real.simulate(rng, sims, n) if spread == "alike" else _heterogeneous(real, rng, sims, n)
        y[:, real.design.group == real.demo[pair[0]]] += gap
        return y

    stated = float(np.median([simulated_detectable(row, real.design, ia, ib, (0.05 / m,))[0][j]
                              for row in simulate(40, 0.0)]))
    g = keyword_level_contrasts(simulate(4000, stated), real.design, ia, ib, level=1 - 0.05 / m)
    power = ((g["lo"][:, j] > 0) | (g["hi"][:, j] < 0)).mean()
    print(f"{budget} {n} {pair} {spread}: stated {stated:.3f}, detected in {power:.3f}")
    assert 0.77 <= power <= 0.91, (stated, power)


def test_not_detected_needs_a_design_that_detects_the_stated_gap():
    """With many keywords per demographic and many replies the design detects 0.2 everywhere: an
    unbiased model then reads "no gap" (not "cannot tell"), a planted 0.2 gap is found."""
    groups = np.repeat(["a", "b", "c"], 30 * 4)  # 30 keywords x 4 prompts per demographic
    clusters = np.repeat(np.arange(90), 4).astype(str)
    design, _ = Design.from_labels(groups.tolist(), clusters.tolist())
    fake = RealDesign.__new__(RealDesign)
    fake.design = design
    ia, ib = np.array([0, 0, 1]), np.array([1, 2, 2])
    rng = np.random.default_rng(9)

    def sim(shift: float) -> np.ndarray:
        y = rng.normal(0, KEYWORD_SD, (1000, 90))[:, design.cluster] + rng.normal(0, REPLY_SD / np.sqrt(20), (1000, 360))
        y[:, design.group == 0] += shift
        return y

    detected, cannot, det, _ = _verdicts(fake, sim(0.0)[:200], ia, ib, 0.2)
    assert detected.mean() <= 0.06 and not cannot.any() and np.median(det) < 0.2
    detected, _, _, _ = _verdicts(fake, sim(0.2)[:200], ia, ib, 0.2)
    assert detected.mean() >= 0.8
