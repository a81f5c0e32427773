"""HolisticBias generation verdicts at the bias card's budgets, on simulated style probabilities
where the answer is known (issue #32, section 5): an unbiased model (no descriptor effect) and a
model with one planted descriptor effect. The sentence's verdict and the interval shown beside it
agree in every run; an unbiased model reads "bias detected" at most at the test's size; the FGB the
sentence says the test detects with 80% power is detected in 75-85% of runs. Also the coverage of
the descriptor-population interval where the docs say it falls short (heavy-tailed descriptor
effects), so that statement stays true."""

from __future__ import annotations

import numpy as np
import pytest
from test_generation_bias_metrics import N_STYLES, _long, _softmax, _World

from biaslens.metrics import gen_bias_ci, generation_bias_summary, permutation_noise_floor
from biaslens.suites.holistic_generation import DETECTABLE_RATIO, _status

#: the card's budgets: smoke 40 prompts over 10 descriptors (5 axes x 2), default 100 prompts over
#: 26 (13 axes x 2); about 4 responses per descriptor (one per noun), one template. ``strength``:
#: the planted effect (logit shift of one descriptor) whose realised FGB / floor ratio sits at the
#: detectable ratio the runs state (found once by simulation; the test checks that it still does)
BUDGETS = {"smoke": (10, 4, 2.65), "default": (26, 4, 3.05)}


def _runs(n_desc: int, n_nouns: int, strength: float, reps: int, seed: int) -> np.ndarray:
    """Per run: FGB, noise floor, p, interval low end, detectable FGB, verdict status code."""
    world = np.random.default_rng(0)  # the model: its base styles and noun effects, fixed
    base = world.normal(0, 1, N_STYLES)
    noun = world.normal(0, 1, (1, n_nouns, N_STYLES))
    rng = np.random.default_rng(seed)
    out = []
    for r in range(reps):
        effect = np.zeros((n_desc, N_STYLES))
        effect[0, :2] = strength, -strength  # one descriptor moves one style up, another down
        probs = _softmax(base + effect[None, :, None] + noun[:, None]
                         + rng.normal(0, 0.7, (1, n_desc, n_nouns, N_STYLES)))
        t, d, p = _long(probs)
        nouns = np.tile(np.arange(n_nouns), n_desc).astype(str)
        nf = permutation_noise_floor(t, d, p, strata={"noun": nouns}, n_permutations=200, seed=r)
        lo, _ = nf.interval()
        ratio = nf.detectable() / nf.permuted_mean
        status = _status({"noise_floor": {"p_value": nf.p_value, "detectable_ratio": ratio}})
        out.append((nf.observed, nf.permuted_mean, nf.p_value, lo, ratio, status == "detected"))
    return np.array(out)


@pytest.fixture(scope="module", params=list(BUDGETS))
def budget(request):
    n_desc, n_nouns, strength = BUDGETS[request.param]
    return (request.param, _runs(n_desc, n_nouns, 0.0, 300, 1), _runs(n_desc, n_nouns, strength, 300, 2))


def test_sentence_and_interval_agree_in_every_run(budget):
    # the old card printed "bias detected: ... 34 (95% CI 17 to 88) is above the ... floor 26.9": the
    # interval shown was FGB's own, and reached below the floor in 80% of such runs
    _, null, alt = budget
    for runs in (null, alt):
        detected = runs[:, 5].astype(bool)
        assert np.array_equal(detected, runs[:, 2] <= 0.05)
        assert np.array_equal(detected, runs[:, 3] > runs[:, 1])


def test_unbiased_model_reads_bias_detected_at_most_at_the_tests_size(budget):
    _, null, _ = budget
    assert null[:, 5].mean() <= 0.06  # 300 runs: Monte Carlo sd 0.013 at 0.05


def test_stated_detectable_size_is_detected_with_80_percent_power(budget):
    name, null, alt = budget
    stated = float(np.median(null[:, 4]))  # what an unbiased run's sentence states, as FGB / floor
    realised = alt[:, 0].mean() / alt[:, 1].mean()  # the planted model's FGB / floor
    assert abs(realised - stated) < 0.03 * stated, (name, realised, stated)
    power = alt[:, 5].mean()
    assert 0.75 <= power <= 0.85, (name, power)  # 300 runs: Monte Carlo sd 0.023
    # at these budgets the test can detect half again the noise floor, so "no bias detected" is a finding
    assert stated <= DETECTABLE_RATIO


def test_summary_carries_the_interval_the_verdict_tests():
    world = _World(4, 4, 1, seed=3)
    rng = np.random.default_rng(4)
    _, effect = world.descriptors(rng, 3)
    t, d, p = _long(world.probs(rng, effect))
    s = generation_bias_summary(t, d, p, [f"s{i}" for i in range(N_STYLES)], {}, n_permutations=99, n_boot=0)
    nf = s["noise_floor"]
    lo, hi = nf["interval_x1000"]
    assert lo <= s["fgb"] <= hi + 1e-9 or lo > nf["fgb_permuted_mean"]
    assert (lo > nf["fgb_permuted_mean"]) == (nf["p_value"] <= 0.05)
    assert nf["interval_level"] == pytest.approx(0.9) and nf["detectable_x1000"] > nf["fgb_permuted_mean"]


def test_population_interval_coverage_with_heavy_tailed_descriptor_effects():
    """The descriptor-population interval's stated shortfall (docs, the entry's description): with
    heavy-tailed descriptor effects (t with 2 degrees of freedom) its coverage falls below 0.95."""
    world = _World(13, 4, 1, seed=0)
    big = np.random.default_rng(99)
    axis = np.repeat(np.arange(13), 4000)
    effect_pop = world.axis[axis] + 0.35 * big.standard_t(2, (len(axis), N_STYLES))
    truth = float(world.probs(np.random.default_rng(98), effect_pop).mean(axis=2).var(axis=1).sum(-1).mean())
    rng = np.random.default_rng(1)
    hits = []
    for _ in range(300):
        ax = np.repeat(np.arange(13), 2)
        effect = world.axis[ax] + 0.35 * rng.standard_t(2, (len(ax), N_STYLES))
        ci = gen_bias_ci(*_long(world.probs(rng, effect)))
        hits.append(ci.low <= truth <= ci.high)
    assert 0.80 <= np.mean(hits) <= 0.93, np.mean(hits)
