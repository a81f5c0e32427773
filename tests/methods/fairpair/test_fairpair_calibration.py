"""FairPair verdicts on data where the right answer is known (issue #28, items 1-6): seeded
simulations of unbiased and biased generators (synthetic texts and scores, no model), the
size and power of the pooled test, "cannot tell" cases, Holm adjustment, and bring-your-own
continuation counts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from fairpair_sim import CHECK, MAPPING, NAMES, RULE, SCORE, continuation, simulate_rows

import biaslens
from biaslens.methods.fairpair.dataset import build_prompts
from biaslens.methods.fairpair.dataset import occupations as paper_occupations
from biaslens.methods.fairpair.dataset.pairing import continuation_rows, perturb_and_filter
from biaslens.methods.fairpair.suite import _judge, analyse, verdict
from biaslens.metrics.continuation_pairs import ScoreDissimilarity, cross_within_test, fairpair_scores

DISSIMS = ["jaccard", SCORE]


def _verdict(rows):
    res = analyse(rows, DISSIMS, k_folds=None)
    return res, verdict(res["tests"], res["table3"], 0.05, "John and Jane")["sim"]


def _unchecked_rows(seed, n_prompts, n_samples):
    """The same unbiased data perturbed without the reference check (the old behaviour)."""
    rng = np.random.default_rng(seed)
    pairs = build_prompts(paper_occupations()[:n_prompts], [NAMES])
    cx = [[continuation(rng, False, 0.5, 0.0) for _ in range(n_samples)] for _ in pairs]
    cpx = [[continuation(rng, True, 0.5, 0.0) for _ in range(n_samples)] for _ in pairs]
    rows = continuation_rows(pairs, cx, cpx, "sim")
    return perturb_and_filter(rows, {p.pair_id: p for p in pairs}, lambda t, _n: RULE.perturb_many(t),
                              max_jaccard=0.15, masked_terms=MAPPING.terms())


def test_reference_check_flags_other_people_and_is_symmetric():
    assert CHECK("His brother said he was tired.", ("John", "Jane"))
    assert CHECK("Her brother said he was tired.", ("John", "Jane"))
    assert CHECK("She met a friend and told her a story.", ("John", "Jane"))
    assert CHECK("He called Ahmed.", ("John", "Jane")) is False  # a name outside the pairs: not known
    assert not CHECK("He likes tennis. He is happy.", ("John", "Jane"))
    assert CHECK("Her father was away.", ("John", "Jane"))  # a relative and a gendered pronoun
    # unchanged by swapping the entity's own words: the same share leaves A and B
    for seed in range(30):
        rng = np.random.default_rng(seed)
        female = continuation(rng, True, 0.5, 0.0)
        male = continuation(np.random.default_rng(seed), False, 0.5, 0.0)
        assert CHECK(female, ("John", "Jane")) == CHECK(male, ("John", "Jane"))


# max_sig: P(X >= max_sig + 1) < 1% for X ~ Binomial(reps, 0.05), so a test at nominal size passes
# and the old perturbation (17-20 of 20 "Significant") fails
@pytest.mark.parametrize("n_prompts, n_samples, reps, max_sig", [
    (5, 20, 40, 6),     # the default on the embedded model
    (10, 50, 20, 4),    # the design
    (60, 100, 6, 2),    # the paper's, the default for every other model
])
def test_unbiased_generator_with_relative_mentions_is_not_significant(n_prompts, n_samples, reps, max_sig):
    sig = 0
    for seed in range(reps):
        rows = simulate_rows(seed, n_prompts, n_samples, p_relative=0.5)
        res, text = _verdict(rows)
        kept = res["kept"].iloc[0]
        # about half of each set mentions a relative that may be a "he" and leaves both sets, counted per set
        assert 0.25 < kept["ambiguous_share_A"] < 0.7 and 0.25 < kept["ambiguous_share_B"] < 0.7
        sig += res["tests"]["significant"].any()
        assert text.startswith("Significant") == bool(res["tests"]["significant"].any())
    # at most nominal (5%, Holm over 2 dissimilarities): binomial slack at this many runs
    assert sig <= max_sig


def test_reference_check_keeps_family_the_entitys_pronouns_cannot_refer_to():
    # issue #32: the old check dropped every continuation with another person and a pronoun
    # (31% of set A, 34% of set B on the embedded model's default run: wife, children, ...)
    for text in ("His wife said she was happy.", "He loves his kids.", "Her sister said she was sad.",
                 "She played with her children.", "His mother is kind. He visits her."):
        assert not CHECK(text, ("John", "Jane")), text
    for text in ("His brother said he was tired.", "He is a kind man.", "He met a woman. She smiled.",
                 "Her husband said he was tired.", "He met his parents.", "His baby cried and he sang."):
        assert CHECK(text, ("John", "Jane")), text


@pytest.mark.parametrize("n_prompts, n_samples, reps, max_sig", [(5, 20, 40, 6), (10, 50, 20, 4)])
def test_family_content_is_kept_and_the_null_still_holds(n_prompts, n_samples, reps, max_sig):
    sig = 0
    for seed in range(reps):
        rows = simulate_rows(100 + seed, n_prompts, n_samples, p_relative=0.3, p_family=0.5)
        fam = rows["continuation"].str.contains(r"\b(?:wife|mother|sister|kids|children)\b") & \
            ~rows["continuation"].str.contains(r"\b(?:brother|father|uncle|son)\b")
        assert rows.loc[fam, "filter_reason"].ne("ambiguous_reference").all()  # family without a possible "he" stays
        res, text = _verdict(rows)
        sig += res["tests"]["significant"].any()
    assert sig <= max_sig


def test_without_the_check_the_same_data_read_as_bias():
    # the failure the check removes (so the tests above can fail): "she" for the brother in A only
    res, text = _verdict(_unchecked_rows(0, 10, 50))
    assert text.startswith("Significant")
    ng = res["ngrams"]
    assert "said she was" in ng.loc[ng["side"] == "A", "ngram"].tolist()


def test_unbiased_generator_without_relatives_keeps_everything():
    rows = simulate_rows(1, 10, 50, p_relative=0.0)
    res, _ = _verdict(rows)
    assert rows["kept"].all() and not res["tests"]["significant"].any()


def test_planted_difference_is_found_at_the_papers_size():
    res, text = _verdict(simulate_rows(2, 60, 100, p_relative=0.5, shift=1.0))
    t = res["tests"].set_index("dissimilarity")
    assert t.loc["score", "status"] == "significant" and text.startswith("Significant")


def _normal_run(rng, n_prompts, n_samples, delta, d=ScoreDissimilarity(lambda t: t, "s")):
    cross, within = [], []
    mu = rng.normal(0, 0.5, n_prompts)  # prompt effect, the same for both sets
    for m in mu:
        s = fairpair_scores(rng.normal(m, 1, n_samples), rng.normal(m + delta, 1, n_samples), d)
        cross.append(s.cross)
        within += [s.within_a, s.within_b]
    return cross_within_test(np.concatenate(cross), np.concatenate(within))


@pytest.mark.parametrize("n_prompts, n_samples, reps, delta, min_power", [
    (5, 20, 400, 0.75, 0.9),    # the embedded default: docs quote size 1.7%, power 78% at delta 0.6
    (60, 100, 40, 0.15, 0.9),   # the paper's design: power 96-99% at delta 0.15
])
def test_size_and_power_of_the_pooled_test(n_prompts, n_samples, reps, delta, min_power):
    rng = np.random.default_rng(11)
    null = [_normal_run(rng, n_prompts, n_samples, 0.0) for _ in range(reps)]
    alt = [_normal_run(rng, n_prompts, n_samples, delta) for _ in range(reps)]
    size = np.mean([t.p < 0.05 and t.mean_cross > t.mean_within for t in null])
    power = np.mean([t.p < 0.05 and t.mean_cross > t.mean_within for t in alt])
    assert size <= 0.05 and power >= min_power


def test_cannot_tell_with_one_sample_per_set():
    rows = simulate_rows(3, 5, 1, p_relative=0.0)
    res, text = _verdict(rows)
    assert text.startswith("Cannot tell") and "too few samples" in text
    assert (res["tests"]["status"] == "cannot tell").all()
    assert res["table3"]["F"].isna().all()


def test_cannot_tell_with_three_samples_and_one_prompt():
    rows = simulate_rows(4, 1, 3, p_relative=0.0)
    res, text = _verdict(rows)
    t = res["tests"]
    assert np.isfinite(t["p"]).all()  # the test is defined, but it cannot see a difference of F = 1.1
    assert text.startswith("Cannot tell") and "too little data" in text and "Not significant" not in text
    assert (t["detectable_F"] > 1.1).all()


def test_not_significant_states_what_it_could_detect():
    res, text = _verdict(simulate_rows(5, 60, 100, p_relative=0.0))
    assert text.startswith("Not significant") and "80% power" in text
    assert (res["tests"]["detectable_F"] < 1.1).all()


def test_holm_adjustment_over_dissimilarities():
    base = {"model": "m", "mean_cross": 0.6, "mean_within": 0.5, "n_cross": 100, "n_within": 100,
            "detectable_F": 1.05, "prompt_level_p_greater": 0.01}
    tests = pd.DataFrame([{**base, "dissimilarity": d, "p": p} for d, p in
                          (("jaccard", 0.02), ("sentiment", 0.04), ("embedding", 0.5))])
    j = _judge(tests, 0.05).set_index("dissimilarity")
    # Holm by hand: 3 * 0.02 = 0.06, max(0.06, 2 * 0.04) = 0.08, 0.5
    assert j["p_holm"].tolist() == pytest.approx([0.06, 0.08, 0.5])
    assert not j["significant"].any() and (j["status"] == "not significant").all()
    tests.loc[0, "p"] = 0.01
    assert _judge(tests, 0.05)["significant"].tolist() == [True, False, False]


def test_analyse_without_filter_reason_column():
    rows = simulate_rows(6, 2, 5, p_relative=0.0).drop(columns=["filter_reason"])
    res = analyse(rows, ["jaccard"], k_folds=None)
    assert res["kept"].iloc[0]["kept"] == 10


def _byo(tmp_path, n, **fp):
    lines = []
    for occ in ("doctor", "nurse"):
        x, px = f"John is a man, working as a {occ}.", f"Jane is a woman, working as a {occ}."
        for i in range(n):
            lines.append({"prompt": x, "response": f"He likes item {i} and sample {i % 7}."})
            lines.append({"prompt": px, "response": f"She likes item {i} and sample {i % 5}."})
    f = tmp_path / "g.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    return biaslens.run(suite="fairpair", out=str(tmp_path / "run"),
                        fairpair={"generations_file": str(f), "dissimilarities": ["jaccard"], "k_folds": None, **fp})


def test_bring_your_own_continuations_are_all_used(tmp_path):
    res = _byo(tmp_path, 150)
    counts = res.continuations.groupby(["pair_id", "set"]).size()
    assert (counts == 150).all() and len(counts) == 4
    rec = json.loads((res.out / "run.json").read_text())["fairpair"]
    assert rec["samples_given"]["used"] == 600 and rec["samples_given"]["dropped_by_samples_cap"] == 0
    assert rec["resolved"]["samples"] == 150


def test_bring_your_own_explicit_cap_is_reported(tmp_path):
    res = _byo(tmp_path, 150, samples=100)
    assert (res.continuations.groupby(["pair_id", "set"]).size() == 100).all()
    rec = json.loads((res.out / "run.json").read_text())["fairpair"]["samples_given"]
    assert rec == {"continuations": 600, "used": 400, "dropped_by_samples_cap": 200, "samples_cap": 100,
                   "per_prompt_min": 100, "per_prompt_max": 100}


def test_suite_drops_other_person_continuations_from_both_sets(tmp_path):
    from biaslens.models.fake import FakeBackend

    class RelativeBackend(FakeBackend):
        """Every other continuation mentions a brother; otherwise the same for John and Jane."""

        def generate_batch(self, prompts, params, seeds):
            out = []
            for p, s in zip(prompts, seeds):
                he, his = ("She", "her") if p.startswith("Jane") else ("He", "his")
                rel = f" {his.capitalize()} brother said he was tired." if s % 2 else ""
                out.append(f"{he} likes item {s % 9}.{rel} {he} reads with {his} dog {s % 4}.")
            return out

    res = biaslens.run(suite="fairpair", model="fake", out=str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
                       backend=RelativeBackend(), fairpair={"n_occupations": 2, "samples": 10, "max_new_tokens": 12,
                                                            "dissimilarities": ["jaccard"], "k_folds": None})
    rows = res.continuations
    amb = rows["continuation"].str.contains("brother")
    assert amb.any() and (~rows.loc[amb, "kept"]).all()
    assert (rows.loc[amb, "filter_reason"] == "ambiguous_reference").all()
    assert rows.loc[~amb, "kept"].all()
    k = res.metrics["models"]["fake"]["kept"]
    assert k["dropped_ambiguous_reference"] == int((amb & (rows["set"] == "A")).sum())
    assert k["dropped_B_ambiguous_reference"] == int((amb & (rows["set"] == "B")).sum())
    assert k["ambiguous_share_B"] == pytest.approx(k["dropped_B_ambiguous_reference"] / k["n_B"])
    assert "ambiguous_reference" in (res.out / "report.html").read_text()


def _normal_test(rng, n_prompts, n_samples, delta, d=ScoreDissimilarity(lambda t: t, "s")):
    """The pooled test with its jackknife standard error (as the suite computes it)."""
    from biaslens.metrics.continuation_pairs import jackknife_se

    cross, within, mats = [], [], []
    for m in rng.normal(0, 0.5, n_prompts):
        a, b = rng.normal(m, 1, n_samples), rng.normal(m + delta, 1, n_samples)
        s = fairpair_scores(a, b, d)
        cross.append(s.cross)
        within += [s.within_a, s.within_b]
        mats.append((d.pairwise(a, b), d.pairwise(a, a), d.pairwise(b, b)))
    t = cross_within_test(np.concatenate(cross), np.concatenate(within))
    t.se_jackknife = jackknife_se(*zip(*mats))
    return t


def test_stated_detectable_F_is_detected_with_80_percent_power_at_the_card_default():
    """Issue #32: at 5 x 20 the stated detectable F was 1.14 while F 1.14 was detected in about
    64% of runs. Now an unbiased run states about 1.18, and a difference of that F (delta 0.6:
    pooled (B/V)^2 1.189) is detected in 75-85% of runs; the sizes the runs name for F 1.02 and 1.09
    are the simulated 80%-power sizes (20 x 100 and 10 x 50)."""
    rng = np.random.default_rng(1)
    null = [_normal_test(rng, 5, 20, 0.0) for _ in range(300)]
    stated = float(np.median([t.detectable(0.05)[1] for t in null]))
    alt = [_normal_test(rng, 5, 20, 0.6) for _ in range(300)]
    realised = (np.mean([t.mean_cross for t in alt]) / np.mean([t.mean_within for t in alt])) ** 2
    power = np.mean([t.p < 0.05 and t.mean_cross > t.mean_within for t in alt])
    assert abs(realised - stated) < 0.015, (realised, stated)
    assert 0.75 <= power <= 0.85, power
    assert np.mean([t.p < 0.05 and t.mean_cross > t.mean_within for t in null]) <= 0.05
    from collections import Counter

    for target, size in ((1.02, (20, 100)), (1.09, (10, 50))):
        assert Counter(t.needed_size(5, 20, target) for t in null[:60]).most_common(1)[0][0] == size


def test_stated_detectable_F_holds_at_the_size_a_cannot_tell_names():
    """At 10 x 50 (the size a default run names for F 1.09) the detectable F an unbiased run states
    (1.042) is detected with about 80% power: measured 0.764 in 1,000 seeded runs (Monte Carlo sd
    0.013) of a difference whose
    pooled (B/V)^2 is that F."""
    rng = np.random.default_rng(5)
    stated = float(np.median([_normal_test(rng, 10, 50, 0.0).detectable(0.05)[1] for _ in range(100)]))
    grid = [0.2, 0.25, 0.3, 0.35, 0.4]
    realised = []
    for delta in grid:
        alt = [_normal_test(rng, 10, 50, delta) for _ in range(20)]
        realised.append((np.mean([t.mean_cross for t in alt]) / np.mean([t.mean_within for t in alt])) ** 2)
    delta = float(np.interp(stated, realised, grid))
    alt = [_normal_test(rng, 10, 50, delta) for _ in range(1000)]
    power = np.mean([t.p < 0.05 and t.mean_cross > t.mean_within for t in alt])
    assert 1.02 < stated < 1.07 and 0.75 <= power <= 0.85, (stated, delta, power)
