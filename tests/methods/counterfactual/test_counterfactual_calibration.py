"""The counterfactual gap tests in seeded simulations on a real score distribution (VADER compound
of the 329 real SmolLM2 replies of tests/data/labelled_responses.jsonl: bimodal, a spike at 0):
with identical continuation distributions across variants the per-pair and the family-wise
(Holm, per axis) rejection rates stay at or below 5%; a group given hostile continuations is
detected."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.counterfactual.metrics import pair_gaps

REPS, PROMPTS, GROUPS, SAMPLES = 300, 30, 4, 5


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
