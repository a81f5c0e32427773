"""FairPair metrics on hand-made sets where the values are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.metrics import (
    CallableDissimilarity,
    EmbeddingDissimilarity,
    JaccardDissimilarity,
    ScoreDissimilarity,
    aggregate_scores,
    cross_within_test,
    fairpair_scores,
    kfold_scores,
    make_dissimilarity,
    ngram_differences,
    prompt_level_test,
)
from biaslens.metrics.continuation_pairs import kfold_groups

IDENTITY = ScoreDissimilarity(lambda texts: [float(t) for t in texts], "score")


def test_hand_computed_scores():
    # A = {0, 1}, B = {2, 4}: cross |0-2|,|0-4|,|1-2|,|1-4| = 2,4,1,3 -> B = 2.5;
    # V_A = 1 (|0-1| both orders), V_B = 2; F = 6.25 / 2
    s = fairpair_scores(np.array([0.0, 1.0]), np.array([2.0, 4.0]), IDENTITY)
    assert (s.B, s.V_A, s.V_B) == (2.5, 1.0, 2.0)
    assert s.F == pytest.approx(3.125)
    assert sorted(s.cross) == [1, 2, 3, 4]
    assert list(s.within_a) == [1.0] and list(s.within_b) == [2.0]


def test_hand_computed_jaccard():
    j = JaccardDissimilarity()
    a = j.represent(["the cat sat", "the cat ran"])
    b = j.represent(["a dog sat", "The CAT sat!"])
    m = j.pairwise(a, b)
    # {the,cat,sat} vs {a,dog,sat}: 1 shared of 5 -> 0.8; vs itself (case, punctuation ignored) -> 0
    assert m[0, 0] == pytest.approx(0.8) and m[0, 1] == pytest.approx(0.0)
    assert m[1, 0] == pytest.approx(1.0) and m[1, 1] == pytest.approx(0.5)
    s = fairpair_scores(a, b, j)
    assert s.B == pytest.approx((0.8 + 0 + 1 + 0.5) / 4)
    assert s.V_A == pytest.approx(0.5) and s.V_B == pytest.approx(0.8)
    assert s.F == pytest.approx(s.B**2 / 0.4)
    assert j.pairwise(j.represent([""]), j.represent([""]))[0, 0] == 0.0


def test_identical_distributions_give_f_close_to_one():
    rng = np.random.default_rng(0)
    f = [fairpair_scores(rng.normal(size=100), rng.normal(size=100), IDENTITY).F for _ in range(40)]
    assert np.mean(f) == pytest.approx(1.0, abs=0.03)
    # Jaccard on texts drawn from the same vocabulary
    vocab = [f"w{i}" for i in range(150)]
    j = JaccardDissimilarity()
    texts = lambda: [" ".join(rng.choice(vocab, 30)) for _ in range(60)]  # noqa: E731
    s = fairpair_scores(j.represent(texts()), j.represent(texts()), j)
    assert s.F == pytest.approx(1.0, abs=0.01)
    t = cross_within_test(s.cross, np.r_[s.within_a, s.within_b])
    assert t.p > 0.01


def test_shifted_distributions_give_f_above_one_and_significance():
    rng = np.random.default_rng(1)
    s = fairpair_scores(rng.normal(0, 1, 100), rng.normal(1.5, 1, 100), IDENTITY)
    assert s.F > 1.5
    t = cross_within_test(s.cross, np.r_[s.within_a, s.within_b])
    assert t.t > 0 and t.p < 1e-6 and t.p_greater <= t.p
    # different vocabularies: A and B share fewer words than two samples of one set
    vocab_a, vocab_b = [f"a{i}" for i in range(60)] + ["the"], [f"b{i}" for i in range(60)] + ["the"]
    j = JaccardDissimilarity()
    a = j.represent([" ".join(rng.choice(vocab_a, 20)) for _ in range(30)])
    b = j.represent([" ".join(rng.choice(vocab_b, 20)) for _ in range(30)])
    assert fairpair_scores(a, b, j).F > 1.1


def test_undefined_f_when_a_set_has_no_variability():
    s = fairpair_scores(np.array([0.0, 0.0]), np.array([0.5, 1.0]), IDENTITY)
    assert s.V_A == 0 and np.isnan(s.F)
    s1 = fairpair_scores(np.array([0.0]), np.array([0.5, 1.0]), IDENTITY)
    assert np.isnan(s1.V_A) and np.isnan(s1.F)


def test_kfold_sentiment_means_and_jaccard_unions():
    groups = kfold_groups(6, 3)
    assert [g.tolist() for g in groups] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="2 <= k <= samples"):
        kfold_groups(3, 4)
    # folds of A = means {0.5, 2.5}; of B = {4.5, 6.5}
    assert IDENTITY.fold(np.arange(4.0), kfold_groups(4, 2)).tolist() == [0.5, 2.5]
    j = JaccardDissimilarity()
    assert j.fold(j.represent(["a b", "b c", "d"]), [np.array([0, 1]), np.array([2])]) == [{"a", "b", "c"}, {"d"}]
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=40), rng.normal(size=40)
    kf = kfold_scores(a, b, 40, 40, IDENTITY, 40)  # k = n: folds are single samples
    assert kf.F == pytest.approx(fairpair_scores(a, b, IDENTITY).F)
    shifted = kfold_scores(rng.normal(0, 1, 100), rng.normal(1, 1, 100), 100, 100, IDENTITY, 10, seed=3)
    assert shifted.F > 1.5  # fold means sharpen a real shift


def test_embedding_and_callable_dissimilarities():
    class Enc:
        def encode(self, texts):
            v = np.array([[1.0, 0.0] if "x" in t else [0.0, 1.0] for t in texts])
            return v

    e = EmbeddingDissimilarity(Enc())
    m = e.pairwise(e.represent(["x", "y"]), e.represent(["x"]))
    assert m[:, 0].tolist() == [0.0, 1.0]
    folded = e.fold(e.represent(["x", "y"]), [np.array([0, 1])])
    assert np.linalg.norm(folded[0]) == pytest.approx(1.0)
    d = make_dissimilarity(lambda a, b: abs(len(a) - len(b)))
    assert isinstance(d, CallableDissimilarity)
    assert fairpair_scores(d.represent(["ab", "abcd"]), d.represent(["a"]), d).B == 2.0
    assert make_dissimilarity("jaccard").name == "jaccard"
    with pytest.raises(ValueError, match="unknown dissimilarity"):
        make_dissimilarity("toxicity")


def test_sentiment_dissimilarity_uses_vader():
    from biaslens.methods.fairpair.suite import SCORER_DISSIMILARITIES

    with pytest.raises(ValueError, match="needs a scorer"):
        make_dissimilarity("sentiment")
    d = make_dissimilarity("sentiment", SCORER_DISSIMILARITIES)
    s = d.represent(["I love this wonderful day.", "This is terrible and awful."])
    assert s[0] > 0.5 and s[1] < -0.5


def test_aggregate_is_the_mean_over_prompts():
    pp = pd.DataFrame({"dissimilarity": ["j", "j", "s"], "B": [0.8, 0.9, 0.2], "V_A": [0.7, 0.9, 0.1],
                       "V_B": [0.9, 0.9, 0.3], "F": [1.0, np.nan, 1.2]})
    t = aggregate_scores(pp).set_index("dissimilarity")
    assert t.loc["j", "B"] == pytest.approx(0.85) and t.loc["j", "F"] == 1.0
    assert t.loc["j", "n_undefined_F"] == 1 and t.loc["s", "n_prompts"] == 1


def test_prompt_level_test():
    r = prompt_level_test(np.array([1.0, 1.1, 1.2, 1.3]), np.array([0.5, 0.5, 0.6, 0.5]), np.array([0.5, 0.7, 0.6, 0.5]))
    assert r["t"] > 0 and r["p_greater"] < 0.01 and r["n_prompts"] == 4
    assert np.isnan(prompt_level_test(np.array([1.0]), np.array([1.0]), np.array([1.0]))["p"])


def test_ngram_differences():
    a = ["he designs buildings", "she designs buildings daily", "she sells stocks"]
    b = ["she loves her husband", "she is kind and caring", "kind and caring she is"]
    ng = ngram_differences(a, b, min_count=2)
    top_a = ng[ng["side"] == "A"]
    top_b = ng[ng["side"] == "B"]
    assert top_a.iloc[0]["ngram"] == "designs buildings" and top_a.iloc[0]["freq_a"] == pytest.approx(2 / 3)
    assert {"kind", "caring", "kind and caring"} <= set(top_b["ngram"])
    assert "she" not in set(ng["ngram"])  # both sets use it equally, and stopwords-only n-grams are dropped
    assert (top_a["diff"] > 0).all() and (top_b["diff"] < 0).all()
    assert ngram_differences([], b).empty
