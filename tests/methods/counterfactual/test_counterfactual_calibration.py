"""The counterfactual gap tests in seeded simulations on a real score distribution (VADER compound
of the 329 real SmolLM2 replies of tests/data/labelled_responses.jsonl: bimodal, a spike at 0):
with identical continuation distributions across variants the per-pair and the family-wise
(Holm, per axis) rejection rates stay at or below 5%; a group given hostile continuations is
detected."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.counterfactual.metrics import MATERIAL, pair_gaps

REPS, PROMPTS, GROUPS, SAMPLES = 300, 30, 4, 5
DOCS = Path(__file__).resolve().parents[3] / "docs" / "counterfactual.md"


def _quoted(key, value):
    """docs/counterfactual.md quotes this seeded simulation's figure (marked ``<!-- cfs KEY -->``)."""
    marks = dict(re.findall(r"<!-- cfs ([\w.]+) -->(.*?)<!-- /cfs -->", DOCS.read_text()))
    print(key, value)
    text = marks.get(key, "nan")
    assert abs(float(text) - value) <= 0.5 * 10 ** -len(text.split(".")[1]) if "." in text else \
        float(text) == value, (key, value, text)


@pytest.fixture(scope="module")
def real_scores():
    from biaslens.scorers import VaderSentiment

    path = Path(__file__).parents[2] / "data" / "labelled_responses.jsonl"
    texts = [json.loads(line)["response"] for line in path.read_text().splitlines() if line.strip()]
    return np.sort(np.asarray(VaderSentiment().compound(texts), dtype=float))


def _table(rng, scores, hostile_share=0.0):
    """One simulated run: each prompt draws its continuations from its own window of the real
    scores (prompts differ), every group of a prompt from the same window (no bias); group 0's
    continuations are, with probability ``hostile_share``, drawn from the most negative tenth."""
    n = len(scores)
    start = rng.integers(0, n - 120, PROMPTS)
    idx = start[:, None, None] + rng.integers(0, 120, (PROMPTS, GROUPS, SAMPLES))
    s = scores[idx]
    if hostile_share:
        hostile = rng.random((PROMPTS, SAMPLES)) < hostile_share
        s[:, 0, :] = np.where(hostile, scores[rng.integers(0, n // 10, (PROMPTS, SAMPLES))], s[:, 0, :])
    p, g, k = np.meshgrid(np.arange(PROMPTS), np.arange(GROUPS), np.arange(SAMPLES), indexing="ij")
    return pd.DataFrame({"axis": "x", "prompt_id": p.ravel(), "group": g.ravel().astype(str),
                         "sample_index": k.ravel(), "sentiment": s.ravel()})


def test_identical_variants_hold_the_size_per_pair_and_family_wise(real_scores):
    rng = np.random.default_rng(45)
    pair_rej, family_rej = [], []
    for _ in range(REPS):
        g = pair_gaps(_table(rng, real_scores), "sentiment")
        detected = (g["verdict"] == "detected").to_numpy()
        # the interval agrees with Holm: detected exactly where the Holm-adjusted p is below 5%
        assert np.array_equal(detected, (g["p_holm"] < 0.05).to_numpy())
        pair_rej.append((g["p_value"] < 0.05).mean())
        family_rej.append(detected.any())
    se = np.sqrt(0.05 * 0.95 / REPS)
    assert np.mean(pair_rej) <= 0.05 + 2.5 * se, np.mean(pair_rej)
    assert np.mean(family_rej) <= 0.05 + 2.5 * se, np.mean(family_rej)
    _quoted("vader.size_pair", 100 * np.mean(pair_rej))
    _quoted("vader.size_family", 100 * np.mean(family_rej))


def test_a_group_given_hostile_continuations_is_detected(real_scores):
    rng = np.random.default_rng(46)
    power, wrong = [], []
    for _ in range(REPS // 3):
        g = pair_gaps(_table(rng, real_scores, hostile_share=0.4), "sentiment")
        with0 = (g["group_a"] == "0") | (g["group_b"] == "0")
        power.append((g.loc[with0, "verdict"] == "detected").any())
        wrong.append((g.loc[~with0, "verdict"] == "detected").any())
        top = g.loc[g["gap"].abs().idxmax()]
        assert "0" in (top["group_a"], top["group_b"]) or top["verdict"] != "detected"
    assert np.mean(power) >= 0.8, np.mean(power)
    assert np.mean(wrong) <= 0.1  # the unbiased groups' pairs keep their family-wise size
    _quoted("vader.hostile_power", int(np.sum(power)))
    _quoted("vader.hostile_wrong", int(np.sum(wrong)))


# -- power at the stated detectable size, and the toxicity judge's distribution -------------------

M_PAIRS = GROUPS * (GROUPS - 1) // 2


@pytest.fixture(scope="module")
def toxicity_quantiles():
    """201 quantiles of the default toxicity judge's probability on 3,400 real continuations of the
    embedded model (benchmarks/counterfactual_toxicity_quantiles.py): mostly near 0, a tail."""
    rec = json.loads((Path(__file__).parents[2] / "data" / "counterfactual_toxicity_quantiles.json").read_text())
    return np.asarray(rec["probs"]), np.asarray(rec["quantiles"])


def _draw(rng, kind, real, tox, shape):
    """Continuation scores of one run (prompts x groups x samples), every group of a prompt from
    the same distribution: ``vader`` (each prompt its window of the real VADER compounds, as
    :func:`_table`), ``heavy`` (Student t with 3 degrees of freedom for the prompt, for each prompt's
    own variant effect, which averages to 0 over prompts, and for the continuation: prompt-clustered
    and heavy-tailed), ``toxicity`` (each prompt its window of the judge's quantiles, 0.4 wide)."""
    p, g, k = shape
    if kind == "vader":
        start = rng.integers(0, len(real) - 120, p)
        return real[start[:, None, None] + rng.integers(0, 120, shape)]
    if kind == "heavy":
        return (0.3 * rng.standard_t(3, (p, 1, 1)) + 0.05 * rng.standard_t(3, (p, g, 1))
                + 0.3 * rng.standard_t(3, shape))
    probs, qs = tox
    u = rng.uniform(0, 0.6, (p, 1, 1)) + rng.uniform(0, 0.4, shape)
    return np.interp(u, probs, qs)


def _frame(s):
    p, g, k = np.meshgrid(*(np.arange(n) for n in s.shape), indexing="ij")
    return pd.DataFrame({"axis": "x", "prompt_id": p.ravel(), "group": g.ravel().astype(str),
                         "sample_index": k.ravel(), "score": s.ravel()})


def _runs(rng, kind, real, tox, n, shift=0.0):
    """``n`` runs through :func:`pair_gaps`, group 0 moved by ``shift`` (a planted gap of exactly
    that size against every other group): per run, pair (0, 1)'s verdict, its stated detectable
    size, and whether any pair of two unshifted groups was called different."""
    verdicts, detectable, wrong = [], [], []
    for _ in range(n):
        s = _draw(rng, kind, real, tox, (PROMPTS, GROUPS, SAMPLES))
        s[:, 0, :] += shift
        g = pair_gaps(_frame(s), "score", material=MATERIAL["toxicity" if kind == "toxicity" else "sentiment"])
        first = g[(g["group_a"] == "0") & (g["group_b"] == "1")].iloc[0]
        verdicts.append(first["verdict"])
        detectable.append(first["detectable"])
        wrong.append((g.loc[(g["group_a"] != "0") & (g["group_b"] != "0"), "verdict"] == "detected").any())
    return np.array(verdicts), np.array(detectable), np.array(wrong)


SIM_RUNS = 400


@pytest.mark.parametrize("kind", ["vader", "heavy", "toxicity"])
def test_a_gap_of_the_stated_detectable_size_is_detected_with_about_80_percent_power(kind, real_scores,
                                                                                     toxicity_quantiles):
    """The detectable size a run states (80% power at the pair's Holm level, t over prompts) is the
    one the runs of that design detect at about 80%: the median size stated by null runs, planted in
    group 0 of fresh runs, is detected in about 80% of them (Holm's later steps add a little); a third
    of it mostly is not, and the verdict there is "cannot tell" or "no detectable difference"."""
    rng = np.random.default_rng({"vader": 47, "heavy": 48, "toxicity": 49}[kind])
    null_v, null_det, null_wrong = _runs(rng, kind, real_scores, toxicity_quantiles, SIM_RUNS)
    stated = float(np.median(null_det))
    at, _, wrong = _runs(rng, kind, real_scores, toxicity_quantiles, SIM_RUNS, shift=stated)
    below, _, _ = _runs(rng, kind, real_scores, toxicity_quantiles, SIM_RUNS, shift=stated / 3)
    power, power_below = float(np.mean(at == "detected")), float(np.mean(below == "detected"))
    _quoted(f"{kind}.stated", stated)
    _quoted(f"{kind}.power", 100 * power)
    _quoted(f"{kind}.power_third", 100 * power_below)
    assert 0.72 <= power <= 0.9, (kind, stated, power)
    assert power_below <= 0.25, (kind, power_below)
    assert set(below[below != "detected"]) <= {"cannot_tell", "not_detected"}
    assert np.mean(null_v == "detected") <= 0.05  # pair (0, 1) under the null: within its family's 5%
    assert np.mean(wrong) <= 0.08  # the three pairs of unshifted groups keep their size




@pytest.mark.parametrize("kind", ["heavy", "toxicity"])
def test_identical_groups_hold_the_size_on_heavy_tails_and_the_toxicity_judges_scores(kind, real_scores,
                                                                                      toxicity_quantiles):
    rng = np.random.default_rng({"heavy": 50, "toxicity": 51}[kind])
    pair_rej, family_rej = [], []
    for _ in range(REPS):
        s = _draw(rng, kind, real_scores, toxicity_quantiles, (PROMPTS, GROUPS, SAMPLES))
        g = pair_gaps(_frame(s), "score")
        pair_rej.append((g["p_value"] < 0.05).mean())
        family_rej.append((g["verdict"] == "detected").any())
    se = np.sqrt(0.05 * 0.95 / REPS)
    assert np.mean(pair_rej) <= 0.05 + 2.5 * se, np.mean(pair_rej)
    assert np.mean(family_rej) <= 0.05 + 2.5 * se, np.mean(family_rej)
    _quoted(f"{kind}.size_pair", 100 * np.mean(pair_rej))
    _quoted(f"{kind}.size_family", 100 * np.mean(family_rej))


def test_a_group_given_toxic_continuations_is_detected_by_the_toxicity_gap(toxicity_quantiles):
    """A fifth of group 0's continuations drawn from the judge's top tenth (real toxic replies score
    there): detected against some group in at least 80% of runs, never in the wrong direction."""
    probs, qs = toxicity_quantiles
    rng = np.random.default_rng(52)
    power, wrong = [], []
    for _ in range(REPS // 3):
        s = _draw(rng, "toxicity", None, toxicity_quantiles, (PROMPTS, GROUPS, SAMPLES))
        toxic = rng.random((PROMPTS, SAMPLES)) < 0.2
        s[:, 0, :] = np.where(toxic, np.interp(rng.uniform(0.9, 1, (PROMPTS, SAMPLES)), probs, qs), s[:, 0, :])
        g = pair_gaps(_frame(s), "score", material=MATERIAL["toxicity"])
        hit = g[(g["group_a"] == "0") & (g["verdict"] == "detected")]
        power.append(len(hit) > 0)
        assert (hit["gap"] > 0).all()
        wrong.append((g.loc[g["group_a"] != "0", "verdict"] == "detected").any())
    assert np.mean(power) >= 0.8, np.mean(power)
    assert np.mean(wrong) <= 0.1
    _quoted("toxicity.toxic_power", int(np.sum(power)))
    _quoted("toxicity.toxic_wrong", int(np.sum(wrong)))

