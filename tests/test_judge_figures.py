"""Issue #24: judge figures that cannot flatter (balanced accuracy, macro-F1, AUROC, Wilson
per-class intervals, Cohen's kappa), checked against hand computation and scipy."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

from biaslens.metrics import classification as cl
from biaslens.metrics.classification import agreement, auroc, binary_skill, cohen_kappa, multiclass_skill


def test_doctests():
    assert doctest.testmod(cl).failed == 0


def test_multiclass_figures_on_a_hand_computed_table():
    # truth: A x4, B x3, C x1 ; confusion rows=truth: A->A 3, A->B 1 ; B->B 1, B->A 2 ; C->A 1
    truth = ["A"] * 4 + ["B"] * 3 + ["C"]
    pred = ["A", "A", "A", "B", "B", "A", "A", "A"]
    r = multiclass_skill(truth, pred, ["A", "B", "C", "D"], n_boot=200)
    assert r["balanced_accuracy"] == pytest.approx((3 / 4 + 1 / 3 + 0) / 3)  # D absent from the truth: K = 3
    assert r["baseline"] == pytest.approx(1 / 3)
    # F1: A: 2*3/(4+6) = 0.6 ; B: 2*1/(3+2) = 0.4 ; C: 0 ; D: neither in truth nor predicted -> left out
    assert r["macro_f1"] == pytest.approx((0.6 + 0.4 + 0) / 3)
    # majority classifier (always A): F1 A = 2*4/(4+8), others 0
    assert r["macro_f1_baseline"] == pytest.approx((8 / 12) / 3)
    assert r["accuracy"] == pytest.approx(4 / 8) and r["majority_accuracy"] == pytest.approx(4 / 8)
    a = r["per_class"]["A"]
    assert (a["precision"], a["recall"], a["n_true"], a["n_predicted"], a["n_correct"]) == (0.5, 0.75, 4, 6, 3)
    # Wilson 95% for 3/4 by hand: centre (p + z²/2n)/(1 + z²/n), half z/(1 + z²/n) sqrt(p(1-p)/n + z²/4n²)
    z, n, p = 1.959963984540054, 4, 0.75
    centre, half = (p + z**2 / (2 * n)) / (1 + z**2 / n), z / (1 + z**2 / n) * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    assert a["recall_ci"] == pytest.approx([centre - half, centre + half])
    assert r["per_class"]["D"]["recall"] is None and r["per_class"]["C"]["precision"] is None
    assert r["ci"][0] <= r["balanced_accuracy"] <= r["ci"][1]


def test_majority_classifier_scores_exactly_the_baseline():
    truth = ["x"] * 50 + ["y"] * 30 + ["z"] * 20
    r = multiclass_skill(truth, ["x"] * 100, ["x", "y", "z"], n_boot=200)
    assert r["balanced_accuracy"] == pytest.approx(r["baseline"]) and r["accuracy"] == 0.5
    assert r["macro_f1"] == pytest.approx(r["macro_f1_baseline"])
    assert cl.no_measured_skill(r)


def test_auroc_matches_scipy_mann_whitney_and_hand_count():
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    s = np.round(rng.random(60) + 0.3 * y, 1)  # rounded: ties
    u = mannwhitneyu(s[y == 1], s[y == 0]).statistic
    assert auroc(s, y) == pytest.approx(u / (y.sum() * (1 - y).sum()))
    pairs = [(a > b) + 0.5 * (a == b) for a, b in itertools.product(s[y == 1], s[y == 0])]
    assert auroc(s, y) == pytest.approx(np.mean(pairs))


def test_binary_skill_without_positives_is_not_measured():
    r = binary_skill([0.1, 0.9, 0.2], [0, 0, 0], n_boot=50)
    assert r["value"] is None and r["balanced_accuracy"] is None and cl.no_measured_skill(r)
    assert r["majority_accuracy"] == 1.0 and r["accuracy"] == pytest.approx(2 / 3)


def test_headline_interval_covers_and_flags_a_random_judge():
    rng = np.random.default_rng(0)
    y = (rng.random(400) < 0.2).astype(int)
    useless = binary_skill(rng.random(400), y, n_boot=500)
    assert useless["ci"][0] < 0.5 < useless["ci"][1] and cl.no_measured_skill(useless)
    good = binary_skill(y * 0.5 + rng.random(400) * 0.6, y, n_boot=500)
    assert good["ci"][0] > 0.5 and not cl.no_measured_skill(good)


def _kappa_by_hand(a, b, cats, linear=False):
    n, k = len(a), len(cats)
    w = {(i, j): (abs(i - j) / (k - 1) if linear else float(i != j)) for i in range(k) for j in range(k)}
    ia, ib = [cats.index(x) for x in a], [cats.index(x) for x in b]
    obs = sum(w[i, j] for i, j in zip(ia, ib)) / n
    exp = sum(w[i, j] * ia.count(i) * ib.count(j) for i in range(k) for j in range(k)) / n**2
    return 1 - obs / exp


def test_kappa_unweighted_and_linear_weighted_by_hand():
    cats = ["negative", "neutral", "positive"]
    a = ["negative", "negative", "neutral", "positive", "positive", "neutral", "negative", "positive"]
    b = ["negative", "neutral", "neutral", "positive", "neutral", "neutral", "positive", "positive"]
    # unweighted: po = 5/8; marginals a (3,2,3), b (1,4,3): pe = (3+8+9)/64
    assert cohen_kappa(a, b, cats) == pytest.approx((5 / 8 - 20 / 64) / (1 - 20 / 64))
    assert cohen_kappa(a, b, cats, "linear") == pytest.approx(_kappa_by_hand(a, b, cats, linear=True))
    r = agreement(a, b, cats, weights="linear", n_boot=300)
    assert r["raw_agreement"] == 5 / 8 and r["counts_a"] == {"negative": 3, "neutral": 2, "positive": 3}
    assert r["ci"][0] <= r["kappa"] <= r["ci"][1]


def test_kappa_bootstrap_interval_covers_in_simulation():
    """Two raters copy a latent label with prob 0.8, else guess: the interval covers the kappa of
    a very large sample in about 95% of small samples."""
    rng = np.random.default_rng(1)
    cats = [0, 1, 2]

    def draw(n):
        latent = rng.choice(3, n, p=[0.6, 0.3, 0.1])
        return [np.where(rng.random(n) < 0.8, latent, rng.integers(0, 3, n)) for _ in range(2)]

    truth = cohen_kappa(*draw(200_000), cats)
    hits = sum(lo <= truth <= hi for lo, hi in
               (agreement(*draw(300), cats, key=str(i), n_boot=400)["ci"] for i in range(100)))
    assert 88 <= hits <= 100


# -- the cards: test items only, plain words when there is no measured skill -----------------

def _tiny_set(tmp_path, n=120):
    import json

    from biaslens.scorers.labelled import split_of

    items = [{"id": f"hol-{i:04d}", "prompt": "I'm tall.", "response": f"reply {i}", "suite": "holistic-generation",
              "model": "m", "decoding": {}, "seed": 0, "sample_index": i, "descriptor": "tall"} for i in range(n)]
    cl_of = lambda i: ("Care", "Other", "Sympathy")[i % 3]  # noqa: E731
    labels = [{"id": it["id"], "cluster": "unresolved" if i == 5 else cl_of(i), "offensive": i % 4 == 0,
               "reply_type": "ok"} for i, it in enumerate(items)]
    for name, rows in (("holistic_unlabelled", items), ("holistic_labels_final", labels)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path, {it["id"]: split_of(it["id"]) for it in items}, {lab["id"]: lab for lab in labels}


def test_card_headline_uses_test_items_only_and_leaves_out_unresolved(tmp_path):
    from biaslens.scorers.card import measure_skill

    folder, split, labels = _tiny_set(tmp_path)
    seen: list[str] = []

    def predict(rows):
        seen.extend(r["id"] for r in rows)
        return [r["cluster"] for r in rows]  # a perfect judge

    s = measure_skill("style", predict, folder=folder, n_boot=200)
    expected = [i for i in split if split[i] == "test" and labels[i]["cluster"] != "unresolved"]
    assert seen == expected and s["n"] == len(expected) and s["split"] == "test"
    assert s["n_unresolved"] == int(split["hol-0005"] == "test")
    assert s["value"] == 1.0 and not s["no_skill"]


def test_no_measured_skill_in_plain_words_on_card_report_and_terminal(tmp_path):
    from biaslens.report.scorer_card import scorer_card_section
    from biaslens.scorers.card import card_warnings, measure_skill, skill_caveat, skill_text, skill_verdict

    folder, *_ = _tiny_set(tmp_path)
    flat = measure_skill("style", lambda rows: ["Care"] * len(rows), folder=folder, n_boot=200)
    assert flat["no_skill"] and flat["value"] == pytest.approx(flat["baseline"])
    verdict = skill_verdict(flat, "style", "judge-x")
    assert verdict.startswith("NO MEASURED SKILL") and "PGB, SCGB" in verdict and "not shown to judge better" in verdict
    coin = measure_skill("offensiveness", lambda rows: np.full(len(rows), 0.3), folder=folder, n_boot=200)
    assert coin["no_skill"] and coin["value"] == 0.5 and "offensiveness rates" in skill_verdict(coin, "offensiveness", "j")
    good = measure_skill("offensiveness", lambda rows: [float(r["offensive"]) for r in rows], folder=folder, n_boot=200)
    assert not good["no_skill"] and "NO MEASURED SKILL" not in skill_verdict(good, "offensiveness", "j")
    cards = [{"role": "style", "used": "judge-x", "kind": "k", "masking": True, "skill": flat, "skill_verdict": verdict,
              "skill_warning": verdict, "warning": None}]
    assert card_warnings(cards) == [verdict] and skill_caveat(cards) == verdict  # terminal footer, report sections
    assert "NO MEASURED SKILL" in skill_text(flat)
    html_cells = scorer_card_section(cards).tables[0].df.to_string()
    assert "NO MEASURED SKILL" in html_cells
    missing = measure_skill("sentiment", lambda rows: [], folder=folder)  # no community labels in the folder
    assert missing["status"] == "not measured" and missing["no_skill"]
    assert skill_verdict(missing, "sentiment", "vader").startswith("NO MEASURED SKILL: the sentiment judge vader has "
                                                                   "not been measured")


# -- the trained style head -----------------------------------------------------------------

def test_fit_softmax_recovers_separable_classes_and_is_deterministic():
    from biaslens.scorers.styles import fit_softmax

    rng = np.random.default_rng(0)
    centres = np.eye(4)[:3] * 4
    y = np.repeat([0, 1, 2], [60, 30, 5])  # unbalanced, one class never seen among 4 outputs
    x = centres[y] + rng.normal(size=(len(y), 4))
    w, b = fit_softmax(x, y, 4, c=1.0, class_weighted=True)
    assert np.mean(np.argmax(x @ w + b, axis=1) == y) > 0.95
    assert (np.argmax(x @ w + b, axis=1) != 3).all()  # the unseen class is never predicted
    w2, b2 = fit_softmax(x, y, 4, c=1.0, class_weighted=True)
    assert np.array_equal(w, w2) and np.array_equal(b, b2)


def test_shipped_head_was_chosen_on_dev_by_cross_validation():
    from biaslens.scorers.labelled import CLUSTER_LABELS
    from biaslens.scorers.styles import DEFAULT_STYLE_CLASSIFIER, HeadStyleClassifier

    class _Enc:
        name = "fake"

        def encode(self, texts):
            return np.random.default_rng(len(texts)).normal(size=(len(texts), 384)).astype(np.float32)

    head = HeadStyleClassifier(encoder=_Enc())
    rec = head.record
    assert tuple(rec["classes"]) == CLUSTER_LABELS and "dev split" in rec["trained_on"]
    assert rec["chosen"]["cv_balanced_accuracy"] == max(r["cv_balanced_accuracy"] for r in rec["cv"])
    # the default is the head only because it beat the zero-shot classifier on dev
    assert DEFAULT_STYLE_CLASSIFIER == "head" and rec["better_than_zero_shot_on_dev"]
    p = head.probabilities(["I'm so sorry to hear that.", "What is a blicket?"])
    assert p.shape == (2, 7) and np.allclose(p.sum(axis=1), 1)
    assert set(head.clusters) == set(CLUSTER_LABELS) - {"Other"}


def test_verdict_names_a_threshold_without_skill_and_accuracy_below_majority(tmp_path):
    from biaslens.scorers.card import measure_skill, skill_verdict

    folder, *_ = _tiny_set(tmp_path)
    # ranks offensive items first but never reaches the 0.5 threshold: AUROC 1, balanced accuracy 0.5
    low = measure_skill("offensiveness", lambda rows: [0.4 if r["offensive"] else 0.1 for r in rows], folder=folder,
                        n_boot=200)
    assert not low["no_skill"] and low["value"] == 1.0 and low["balanced_accuracy"] == 0.5
    v = skill_verdict(low, "offensiveness", "j")
    assert "at the threshold 0.5 it showed no measured skill" in v
    assert "Its plain accuracy" not in v  # it says "not offensive" always: exactly the majority's accuracy
