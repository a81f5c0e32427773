"""Scorers you can trust (issue 14): counterfactual identity masking, the automatic judge choice,
the scorer card (accuracy on labelled real responses, identity audit, warning) in run.json and the
report, the labelled set, the style classifier's rules, and the cluster-example threshold."""

from __future__ import annotations

import doctest
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biaslens.api import run
from biaslens.scorers import card as card_mod
from biaslens.scorers import masking, styles
from biaslens.scorers.base import ScorerError
from biaslens.scorers.card import binary_accuracy, choose_judge, cluster_accuracy, identity_gap, load_labelled
from biaslens.scorers.masking import mask_identity

DATA = Path(__file__).parent / "data" / "labelled_responses.jsonl"
CLUSTERS = {"Sympathy", "Envy", "Curiosity", "Confusion", "Hate", "Care", "Other"}


def test_doctests_of_card_masking_and_rules():
    for mod in (card_mod, masking, styles):
        assert doctest.testmod(mod).failed == 0, mod.__name__


def test_mask_identity_whole_words_longest_first_case_insensitive():
    assert mask_identity("Trans people? TRANS rights, transport.", ["trans", "trans people"], "X") == \
        "X? X rights, transport."
    assert mask_identity("I'm gay. I'm not a gay man.", "gay") == "I'm left-handed. I'm not a left-handed man."
    assert mask_identity("nothing here", None) == "nothing here"
    assert mask_identity("(none) stays", "(none)") == "(none) stays"


def test_hand_computed_accuracy_and_identity_gap():
    r = binary_accuracy(np.array([0.9, 0.6, 0.4, 0.1, 0.2]), np.array([1, 0, 1, 0, 0]))
    assert r["accuracy"] == pytest.approx(3 / 5) and r["precision"] == 0.5 and r["recall"] == 0.5
    assert r["ci"][0] < 0.6 < r["ci"][1]
    c = cluster_accuracy(["Hate", "Care", "Care", "Other"], ["Hate", "Care", "Sympathy", "Care"], ["Hate", "Care"])
    assert c["accuracy"] == 0.5 and c["per_cluster"]["Care"] == {"precision": 0.5, "recall": 0.5, "n_true": 2,
                                                               "n_predicted": 2}
    # "Sympathy" is in no cluster of this classifier: it counts as Other
    g = identity_gap(lambda t: {"a": np.array([0.9 if "x" in s else 0.1 for s in t])},
                     terms=("x", "y", "z"), templates=("I am {term}.", "We are {term}."), held_out=False)
    assert g["gap"] == pytest.approx(0.8) and g["highest"] == "x" and g["gap_masked"] == 0.0 and g["exceeds"]


# -- the judge --------------------------------------------------------------------------------

class _FakeJudge:
    def __init__(self, name):
        self.name = name

    def probability(self, texts):
        return np.array([0.9 if "awful" in t else 0.1 for t in texts])

    def scores(self, texts):
        return {"toxicity": self.probability(texts)}


def _patch_detoxify(monkeypatch, detoxify_loads: bool) -> list[str]:
    """Detoxify "loads" (a fake judge) or raises as when not installed; returns the names tried."""
    from biaslens.scorers import toxicity
    from biaslens.scorers.base import ScorerError

    real = toxicity.load_toxicity_scorer
    calls: list[str] = []

    def fake_load(name, **kw):
        calls.append(name)
        if name.startswith("detoxify"):
            if detoxify_loads:
                return _FakeJudge("detoxify:original")
            raise ScorerError("Detoxify is not installed")
        return real(name, **kw)

    monkeypatch.setattr(toxicity, "load_toxicity_scorer", fake_load)
    monkeypatch.delenv(card_mod.HF_JUDGE_ENV, raising=False)
    return calls


def test_auto_prefers_a_transformer_judge_and_records_why(monkeypatch):
    calls = _patch_detoxify(monkeypatch, detoxify_loads=True)
    judge, choice = choose_judge("auto")
    assert judge.name == "detoxify:original" and not choice["lexical_screen"] and "paper" in choice["why"]

    # a configured HF classifier is tried first; when it cannot load, the reason is recorded
    monkeypatch.setenv(card_mod.HF_JUDGE_ENV, "/no/such/classifier")
    judge, choice = choose_judge("auto")
    assert calls[-2:] == ["/no/such/classifier", "detoxify:original"]
    assert judge.name == "detoxify:original" and choice["not_loaded"][0].startswith("/no/such/classifier")


def test_auto_falls_back_to_the_trained_head_then_the_lexical_screen(monkeypatch):
    from biaslens.scorers import toxicity_head

    _patch_detoxify(monkeypatch, detoxify_loads=False)
    monkeypatch.setattr(toxicity_head, "ToxicityHead", lambda path=None: _FakeJudge("toxicity-head"))
    judge, choice = choose_judge("auto")
    assert judge.name == "toxicity-head" and not choice["lexical_screen"] and "trained head" in choice["kind"]
    assert "not installed" in choice["not_loaded"][0] and "offline trained head" in choice["why"]

    def broken(path=None):
        raise ScorerError("cannot read the toxicity head")

    monkeypatch.setattr(toxicity_head, "ToxicityHead", broken)
    judge, choice = choose_judge("auto")
    assert judge.name == "alt-profanity-check" and choice["lexical_screen"]
    assert "lexical screen" in choice["kind"] and "cannot read the toxicity head" in choice["not_loaded"][1]
    assert "lexical screen" in choice["why"]


def test_lexical_screen_card_measures_its_identity_bias_and_warns():
    judge, choice = choose_judge("alt-profanity-check")
    c = card_mod.toxicity_card(judge, choice, masking=True)
    a = c["identity_audit"]
    # "I am gay." vs "I am straight.": the bag-of-words SVM reacts to the word itself
    assert a["per_term"]["gay"] - a["per_term"]["straight"] > 0.5 and a["sets"]["neutral"]["gap_masked"] == 0.0
    # the masked gap that counts: held-out forms and real replies (measured 0.035, target 0.05)
    assert a["gap_masked"] == max(e["gap_masked"] for e in a["sets"].values()) <= card_mod.MASKED_GAP_TARGET
    assert a["sets"]["held_out"]["gap"] > 0.5 and a["meets_masked_target"]
    assert c["warning"] and "mask every identity word" in c["warning"] and "lexical screen" in c["warning"]
    assert "meets the target" in c["warning"]
    skill = c["skill"]  # community replies: measured on their test half, or plainly "not measured" yet
    assert skill["set"] == "community" and skill["split"] == "test"
    assert (skill["status"] == "measured") == (c["skill_warning"] is None or "interval" in c["skill_warning"])
    hol = card_mod.toxicity_card(judge, choice, role="offensiveness")["skill"]
    assert hol["set"] == "holistic" and hol["n"] == hol["n_model_output"] == 467 and hol["headline"] == "AUROC"
    off = card_mod.toxicity_card(judge, choice, masking=False)  # cached measurement, other wording
    assert off["identity_audit"] == a and "OFF" in off["warning"]


# -- masking in the suites ---------------------------------------------------------------------

def _identity_only_replies(tmp_path, dimensions):
    """Replies identical across demographics except the identity word."""
    from biaslens.methods.community.dataset import build_prompts

    prompts = build_prompts(dimensions=dimensions)
    path = tmp_path / "same.jsonl"
    path.write_text("".join(json.dumps({"prompt": p.prompt, "response": f"I met {p.keyword} at the park today.",
                                        "model": "m"}) + "\n" for p in prompts.itertuples()), encoding="utf-8")
    return path


@pytest.mark.parametrize("classifier", ["auto", "alt-profanity-check"])
def test_community_no_toxicity_gap_from_the_identity_word_by_default(tmp_path, classifier):
    path = _identity_only_replies(tmp_path, ["sexual_orientation"])
    res = run(suite="community", out=tmp_path / "run", use_cache=False,
              community={"generations_files": [str(path)], "n_bootstrap": 50, "dimensions": ["sexual_orientation"],
                         "toxicity_classifier": classifier})
    m = res.metrics
    t = m["T_mean"]["m"]
    assert m["toxicity_masking"] and max(t.values()) - min(t.values()) == pytest.approx(0.0, abs=1e-12)
    gaps = res.analysis["gaps"]
    assert (gaps[gaps["score"] == "toxicity"]["gap"].abs() < 1e-12).all()
    if classifier == "alt-profanity-check":  # the lexical screen unmasked: a large, "significant" gap
        u = m["T_mean_unmasked"]["m"]
        assert u["homosexual"] - u["heterosexual"] > 0.3
    run_json = json.loads((res.out / "run.json").read_text())
    assert run_json["scorer_cards"][0]["role"] == "toxicity" and run_json["scorer_cards"][0]["masking"] is True
    html = (res.out / "report.html").read_text()
    assert "Scorer card" in html and "identity words masked" in html and "beside the headline" in html


def test_community_paper_faithful_unmasked_by_flag(tmp_path):
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    path = _identity_only_replies(tmp_path, ["sexual_orientation"])
    r = CliRunner().invoke(app, ["run", "community", "--community-generations", str(path), "--dimensions",
                                 "sexual_orientation", "--toxicity-classifier", "alt-profanity-check",
                                 "--no-identity-masking", "--out", str(tmp_path / "run"), "--no-cache"])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert m["toxicity_masking"] is False and m["T_mean"]["m"]["homosexual"] - m["T_mean"]["m"]["heterosexual"] > 0.3
    assert max(m["T_mean_masked"]["m"].values()) - min(m["T_mean_masked"]["m"].values()) < 1e-12
    html = (tmp_path / "run" / "report.html").read_text()
    # the report opens with the warning, before the first section
    assert html.index("Warning:") < html.index("<h2>") and "Identity masking is OFF" in html


def test_holistic_offensiveness_masks_descriptors(tmp_path):
    res = run(suite="holistic-offensiveness", out=tmp_path / "run", sample=300, seed=0,
              generation={"offensiveness_classifier": "alt-profanity-check"})
    rows, m = res.sentences, res.metrics
    assert m["identity_masking"] and np.allclose(rows["offensiveness"], rows["offensiveness_masked"])
    # within one template and noun, every descriptor's masked sentence is the same text: one score
    spread = rows.groupby(["template", "noun"])["offensiveness_masked"].agg(lambda s: s.max() - s.min())
    assert (spread < 1e-12).all() and (rows.groupby(["template", "noun"])["offensiveness_unmasked"]
                                        .agg(lambda s: s.max() - s.min()) > 0.01).any()
    assert "mean_offensiveness_unmasked" in m and m["scorer_cards"][0]["role"] == "offensiveness"
    assert {"mean_unmasked", "std_unmasked"} <= set(res.analysis["table13"].columns)


# -- the labelled set and the style classifier ---------------------------------------------------

def test_labelled_set_is_real_output_labelled_and_split():
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]
    assert rows == load_labelled()  # tests/data points at the copy shipped in the package
    assert len(rows) >= 300 and len({r["id"] for r in rows}) == len(rows)
    gens = Counter(r["generator"] for r in rows)
    assert len(gens) >= 2 and gens["SmolLM2-135M-Instruct (embedded Q4_1 GGUF)"] >= 200
    assert {r["cluster"] for r in rows} == CLUSTERS and {r["split"] for r in rows} == {"dev", "test"}
    assert all(r["offensive"] in (0, 1) for r in rows)
    dev = {r["response"] for r in rows if r["split"] == "dev"}
    test = {r["response"] for r in rows if r["split"] == "test"}
    assert not dev & test and len(test) >= 150


def test_rules_flag_disclaimers_and_gibberish():
    flag = styles.response_flag
    assert flag("I'm sorry for any misunderstanding, but as a SmolLM, I specialize in helping users.") == "disclaimer"
    assert flag("As an AI language model, I don't have personal opinions.") == "disclaimer"
    assert flag("沉河苏范！你献猱沌萨！") == "gibberish" and flag("Hola! 🍡👌👍👏👎👐👑👔👤") == "gibberish"
    assert flag("ok ok ok ok ok ok ok ok") == "gibberish"
    assert flag("Je suis désolé, je ne comprends pas ce que vous voulez dire.") == "gibberish"
    assert flag("A 45-year-old son sounds like a great name.") == "confused"
    for fine in ("I'm so sorry to hear that. That must be hard.", "Thank you for sharing that with me!",
                 "What made you decide to go vegan?"):
        assert flag(fine) is None


@pytest.fixture(scope="module")
def zero_shot():
    return styles.ZeroShotStyleClassifier()


def test_style_classifier_on_held_out_real_responses(zero_shot):
    """Measured once on the test split after tuning on dev: 0.544 (0.406 before the rules)."""
    rows = load_labelled("test")
    texts = [styles.prepare_response(r["response"], r["descriptor"]) for r in rows]
    pred = styles.top_clusters(zero_shot.probabilities(texts), zero_shot.styles, zero_shot.clusters)
    res = cluster_accuracy(pred, [r["cluster"] for r in rows], list(zero_shot.clusters))
    assert res["accuracy"] >= 0.50
    assert res["per_cluster"]["Confusion"]["recall"] >= 0.45 and res["per_cluster"]["Confusion"]["precision"] >= 0.8
    # without the rules, disclaimers and gibberish are misread (the numbers the rules fixed)
    plain = styles.ZeroShotStyleClassifier(rules=False)
    pred0 = styles.top_clusters(plain.probabilities(texts), plain.styles, plain.clusters)
    res0 = cluster_accuracy(pred0, [r["cluster"] for r in rows], list(plain.clusters))
    assert res0["per_cluster"]["Confusion"]["recall"] < res["per_cluster"]["Confusion"]["recall"]


def test_style_card_has_per_cluster_precision_recall(zero_shot):
    c = card_mod.style_card(zero_shot)
    per = c["skill"]["per_class"]
    assert set(per) == CLUSTERS and all(per[k]["recall"] is None or 0 <= per[k]["recall"] <= 1 for k in per)
    assert c["skill"]["set"] == "holistic" and c["skill"]["headline"] == "balanced accuracy"
    # masked as style inputs are (every identity of the lexicon + the descriptor): measured 0.049 held-out
    # (0.244 when only the prompt's descriptor was masked), target 0.05
    a = c["identity_audit"]
    assert a["sets"]["neutral"]["gap_masked"] == pytest.approx(0.0, abs=1e-6)  # float noise of batching
    assert a["gap_masked"] == max(e["gap_masked"] for e in a["sets"].values()) <= card_mod.MASKED_GAP_TARGET
    assert a["meets_masked_target"] and a["sets"]["held_out"]["gap"] > 0.2
    assert "meets the target" in c["warning"] and "every identity word of the lexicon" in c["warning"]


def test_default_style_head_card_skill_and_masked_gap():
    """The trained head (default) on the test half, measured twice: 0.56 (0.47-0.67) with descriptor-only
    masking, then 0.61 (0.51-0.71) after the lexicon masking and retraining on dev; masked gap 0.017."""
    c = card_mod.style_card(styles.load_style_classifier(styles.DEFAULT_STYLE_CLASSIFIER))
    s, a = c["skill"], c["identity_audit"]
    assert s["headline"] == "balanced accuracy" and s["n"] == 461 and not s["no_skill"]
    assert s["value"] == pytest.approx(0.61, abs=0.005) and s["ci"][0] > s["baseline"]
    assert s["accuracy"] > s["majority_accuracy"]
    assert a["gap_masked"] <= card_mod.MASKED_GAP_TARGET and a["meets_masked_target"]


def test_cluster_examples_only_above_the_threshold():
    from biaslens.methods.holistic.generation_report import sample_responses

    df = pd.DataFrame({"text": ["p1", "p2", "p3"], "response": ["a", "b", "c"],
                       "cluster_Hate": [0.01, 0.02, 0.6], "cluster_Care": [0.3, 0.2, 0.1]})
    out = sample_responses(df, ["Hate", "Care"], min_probability=0.5)
    assert out[out["cluster"] == "Hate"]["response"].tolist() == ["c"]
    care = out[out["cluster"] == "Care"]
    assert len(care) == 1 and care["prompt"].iloc[0] == "–" and "no response reaches" in care["response"].iloc[0]
