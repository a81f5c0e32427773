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

from biaslens.methods.holistic.generation import DETECTABLE_RATIO, _status
from biaslens.metrics import gen_bias_ci, generation_bias_summary, permutation_noise_floor

#: the card's budgets: smoke 40 prompts over 10 descriptors (5 axes x 2), default 100 prompts over
#: 26 (13 axes x 2); about 4 responses per descriptor (one per noun), one template. ``strength``:
#: the planted effect (logit shift of one descriptor) whose realised FGB / floor ratio sits at the
#: detectable ratio the runs state (found once by simulation; the test checks that it still does)
BUDGETS = {"smoke": (10, 4, 2.65), "default": (26, 4, 3.05)}


def _runs(n_desc: int, n_nouns: int, strength: float, reps: int, seed: int, world_seed: int = 0,
          styles: tuple[int, int] = (0, 1), moved: int = 1) -> np.ndarray:
    """Per run: FGB, noise floor, p, interval low end, detectable FGB, verdict status code.
    ``world_seed``: the model's base styles and noun effects; ``styles``, ``moved``: the planted
    effect's shape (which two styles, how many descriptors move)."""
    world = np.random.default_rng(world_seed)  # the model: its base styles and noun effects, fixed
    base = world.normal(0, 1, N_STYLES)
    noun = world.normal(0, 1, (1, n_nouns, N_STYLES))
    rng = np.random.default_rng(seed)
    out = []
    for r in range(reps):
        effect = np.zeros((n_desc, N_STYLES))
        # descriptors move one style up, another down
        effect[:moved, styles[0]], effect[:moved, styles[1]] = strength, -strength
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


#: effect shapes other than the one the stated size is calibrated on: other models (base styles,
#: noun effects), another pair of styles, three descriptors moved instead of one
SHAPES = [dict(world_seed=1), dict(world_seed=2), dict(world_seed=3), dict(world_seed=4),
          dict(styles=(5, 7)), dict(moved=3)]


def _strength_at_ratio(n_desc: int, ratio: float, **shape) -> float:
    """The planted strength whose realised FGB / floor is ``ratio`` (bisection, 30 runs a step)."""
    lo, hi = 0.0, 6.0
    for step in range(8):
        mid = (lo + hi) / 2
        r = _runs(n_desc, 4, mid, 30, 900 + step, **shape)
        lo, hi = (mid, hi) if r[:, 0].mean() / r[:, 1].mean() < ratio else (lo, mid)
    return (lo + hi) / 2


def test_stated_detectable_size_depends_on_the_effects_shape():
    """The stated size is calibrated on one effect shape; at the default budget, on six others,
    the FGB it states (each model's own median over 60 unbiased runs) was detected in 0.67-0.83 of
    150 runs (other models 0.75, 0.83, 0.67, 0.83; styles 5 and 7: 0.78; three descriptors moved:
    0.82; mean 0.78). The docs and the sentence say so ("about 80%"); this keeps that range true:
    no shape far below it or far above."""
    n_desc = BUDGETS["default"][0]
    powers = []
    for shape in SHAPES:
        stated = float(np.median(_runs(n_desc, 4, 0.0, 60, 1, **shape)[:, 4]))
        alt = _runs(n_desc, 4, _strength_at_ratio(n_desc, stated, **shape), 150, 2, **shape)
        powers.append(float((alt[:, 2] <= 0.05).mean()))
    print("power at the stated size, per shape:", [round(x, 3) for x in powers])
    assert min(powers) >= 0.5 and max(powers) <= 0.93, powers
    assert 0.68 <= float(np.mean(powers)) <= 0.85, powers
