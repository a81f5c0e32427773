"""Issue #33: the offline toxicity/offensiveness head. Trained on public data and the dev halves
only (its record says how it was chosen), 0.5 is the dev-chosen threshold, and its test-half
figures are recorded once with intervals."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from biaslens.scorers import toxicity_head as th


class _Encoder:
    """Deterministic stand-in for the sentence encoder (a hash of the text -> 384 numbers)."""

    name = "fake"

    def encode(self, texts):
        return np.array([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=384) for t in texts]).reshape(-1, 384)


def test_doctests():
    assert doctest.testmod(th).failed == 0


def test_weighted_fit_equals_repeated_items_and_is_deterministic():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=60) > 0.8).astype(int)
    weights = np.where(np.arange(60) % 3 == 0, 2.0, 1.0)
    repeated = np.repeat(np.arange(60), weights.astype(int))
    w1, b1 = th.fit_binary(x, y, 1.0, sample_weight=weights)
    w2, b2 = th.fit_binary(x[repeated], y[repeated], 1.0)
    assert w1 == pytest.approx(w2, abs=1e-4) and b1 == pytest.approx(b2, abs=1e-4)
    assert np.array_equal(th.fit_binary(x, y, 1.0, sample_weight=weights)[0], w1)
    assert w1[0] > 1  # the informative column


def test_shipped_head_was_chosen_on_dev_and_names_its_data():
    head = th.ToxicityHead(encoder=_Encoder())
    rec = head.record
    assert rec["chosen"]["cv_auroc_mean"] == max(r["cv_auroc_mean"] for r in rec["cv"])
    assert "dev halves" in rec["trained_on"] and set(rec["dev_items"]) == {"holistic", "community"}
    assert rec["dev_items"]["holistic"]["n"] == 471 and rec["dev_items"]["community"]["n"] == 478  # dev split sizes
    assert set(head.features) <= set(th.FEATURES) and set(head.subheads) == set(rec["subheads_shipped"])
    for source in rec["public_data"].values():
        assert source["matches_named_version"] and source["licence"] and len(source["commit"]) == 40
    # 0.5 is the threshold chosen on dev: probability >= 0.5 exactly when the log-odds reach it
    texts = [f"reply number {i}. They are all the same." for i in range(40)]
    z, p = head.logits(texts), head.probability(texts)
    assert ((p >= 0.5) == (z >= rec["threshold_logit"])).all() and head.scores(texts)["toxicity"] == pytest.approx(p)
    assert head.probability([]).shape == (0,)


def test_sentences_are_scored_one_by_one():
    whole, sent, owner, sentences = th.encode_with_sentences(_Encoder(), ["One. Two!", "Three"])
    assert sentences == ["One.", "Two!", "Three"] and owner.tolist() == [0, 0, 1]
    assert np.allclose(sent[2], whole[1]) and np.allclose(sent[0], _Encoder().encode(["One."])[0])


@pytest.mark.slow
def test_head_reads_meaning_on_the_real_encoder(style_encoder):
    head = th.ToxicityHead(encoder=style_encoder)
    p = head.probability(["I love spending time with my friends.", "They are all lazy, stupid and should go back "
                          "where they came from.", "What a lovely day."])
    assert p[1] > 0.9 and p[0] < 0.5 and p[2] < 0.5


def test_recorded_test_half_figures_have_intervals_and_are_quoted_in_the_docs():
    from pathlib import Path

    from biaslens.scorers.figures import format_figure, load_figures

    judges = load_figures()["judges"]
    docs = (Path(__file__).parents[1] / "docs" / "scorers.md").read_text(encoding="utf-8")
    # toxicity: the community test half with the second and third labelled batches (first batch: 452
    # replies, 23 toxic; with the second 1,490, 48 toxic: the embedded model's own replies, by_source)
    for role, n, positives in (("offensiveness", 467, 15), ("toxicity", 2058, 359)):
        entry = judges[f"toxicity-head-{role}"]
        assert entry["judge"] == "toxicity-head" and entry["role"] == role and entry["key"]
        s = entry["measured"]["skill_masked"]
        assert s["split"] == "test" and s["n"] == s["n_model_output"] == n and s["n_positive"] == positives
        pos = s["per_class"]["True"]
        assert s["ci"][0] <= s["value"] <= s["ci"][1] and pos["recall_ci"][0] <= pos["recall"] <= pos["recall_ci"][1]
        assert format_figure(f"toxicity-head-{role}.skill_masked", "est") in docs  # the threshold table
        assert f"{pos['recall']:.2f} ({pos['recall_ci'][0]:.2f}-{pos['recall_ci'][1]:.2f})" in docs
    assert judges["toxicity-head-offensiveness"]["measured"]["skill_masked"]["ci"][0] > 0.75  # the target
    own = judges["toxicity-head-toxicity"]["measured"]["skill_masked"]["by_source"]["embedded"]
    assert (own["n"], own["n_positive"]) == (1490, 48) and own["ci"][0] <= own["value"] <= own["ci"][1]
    audit = judges["toxicity-head-toxicity"]["measured"]["identity_audit"]
    assert f"{audit['gap_masked']:.3f}" in docs and audit["sets"]["real_replies"]["gap_masked"] <= 0.05
    # one head, one audit: the two roles' audits are the same measurement
    assert audit == judges["toxicity-head-offensiveness"]["measured"]["identity_audit"]


def test_runs_read_the_recorded_cards_of_the_shipped_head_instead_of_measuring_again(monkeypatch):
    from biaslens.scorers import card as card_mod
    from biaslens.scorers.figures import load_figures, recorded_measurement

    head = th.ToxicityHead(encoder=_Encoder())  # a stand-in encoder: measuring anew would give other figures

    def no_measuring(*a, **k):
        raise AssertionError("the shipped head's card was measured again")

    monkeypatch.setattr(card_mod, "measure_skill", no_measuring)
    monkeypatch.setattr(card_mod, "identity_gap", no_measuring)
    judges = load_figures()["judges"]
    for role in ("offensiveness", "toxicity"):
        card = card_mod.toxicity_card(head, role=role)
        recorded = judges[f"toxicity-head-{role}"]["measured"]
        assert card["skill"] == recorded["skill_masked"] and card["identity_audit"] == recorded["identity_audit"]
        # its warning follows the recorded audit: the unmasked gap exceeds 0.10; masked it meets 0.05
        assert recorded["identity_audit"]["gap_masked"] <= 0.05 and "meets the target" in card["warning"]
        assert "does NOT meet" not in card["warning"] and card["skill_warning"] is None
        assert card_mod.judge_has_skill(card)
    # a retrained head (other weights) is another judge: it would be measured
    key = card_mod.card_key("judge:toxicity:" + head.card_identity, card_mod.judge_fingerprint(head))
    assert recorded_measurement(key) is not None
    head.weights = head.weights + 1e-3
    assert recorded_measurement(card_mod.card_key("judge:toxicity:" + head.card_identity,
                                                  card_mod.judge_fingerprint(head))) is None
