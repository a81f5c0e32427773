"""The zero-shot style classifier: preprocessing, inventory validation, accuracy on a
author-labelled set, and the Hugging Face classifier alternative.

Accuracy: the descriptions and temperature of the built-in inventory were tuned on
tests/data/styles_dev.jsonl only (40 responses); tests/data/styles_test.jsonl (40 other
responses, written before tuning and not used for it) measured 39/40 = 97.5% cluster top-1
accuracy (the cluster of the most probable style; "Other" when that style is in no cluster).
The assertion below leaves a margin for numerical differences across torch versions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from biaslens.scorers.base import ScorerError
from biaslens.scorers.styles import (
    DEFAULT_CLUSTERS,
    StyleInventoryError,
    ZeroShotStyleClassifier,
    cluster_probabilities,
    load_style_classifier,
    load_style_inventory,
    prepare_response,
    top_clusters,
)

DATA = Path(__file__).parent / "data"
#: measured 0.975 (39/40) on the test set; asserted with a one-response margin
TEST_ACCURACY_THRESHOLD = 0.95


def _labelled(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def clf(style_encoder) -> ZeroShotStyleClassifier:
    return ZeroShotStyleClassifier(encoder=style_encoder)


def test_prepare_response_replaces_descriptor_and_marker():
    assert prepare_response("_POTENTIALLY_UNSAFE__ I love Deaf kids, deaf is fine.", "Deaf") == \
        "I love left-handed, left-handed is fine."  # the lexicon masks "Deaf kids" as one mention
    # whole words only; multi-word descriptors; regex characters are literal
    assert prepare_response("A deafening noise.", "deaf") == "A deafening noise."
    assert prepare_response("Someone who uses a wheelchair!", "who uses a wheelchair") == "Someone left-handed!"
    assert prepare_response("I am 5'2\" (smiling).", "5'2\"") == "I am left-handed (smiling)."
    assert prepare_response("no descriptor here", "(none)") == "no descriptor here"
    # every identity of the lexicon too (issue #24), not only the prompt's descriptor; a descriptor
    # the lexicon lacks is still masked; spaces folded
    assert prepare_response("My gay friends  and Muslims like  blickets.", "blicket") == \
        "My left-handed friends and left-handed like left-handed."
    assert prepare_response("I love Deaf people.", "blind") == "I love left-handed."


def test_default_inventory_covers_paper_clusters_and_50_styles():
    inv = load_style_inventory()
    assert len(inv.styles) >= 50
    assert inv.clusters == DEFAULT_CLUSTERS
    for members in DEFAULT_CLUSTERS.values():
        assert set(members) <= set(inv.styles)
    assert 0 < inv.temperature < 1


@pytest.mark.parametrize("text, message", [
    ("styles: [a, b]", "field 'styles'"),
    ("styles: {A: x, B: y}\nclusters: {C: [Z]}", "clusters.C': unknown style"),
    ("styles: {A: x, B: y}\ntemperature: -1", "field 'temperature'"),
    ("styles: {A: x, B: []}", "field 'styles.B'"),
    ("styles: {A: x, B: y}\ncolour: red", "unknown field"),
    ("styles: {A: x\n  B: [", "line"),
])
def test_bad_inventory_files_name_file_and_field(tmp_path, text, message):
    f = tmp_path / "styles.yaml"
    f.write_text(text)
    with pytest.raises(StyleInventoryError, match=message) as e:
        load_style_inventory(f)
    assert str(f) in str(e.value)


def test_user_inventory_and_clusters(tmp_path, clf):
    f = tmp_path / "mine.yaml"
    f.write_text("temperature: 0.1\nstyles:\n  Sorry: I'm so sorry to hear that.\n  Asking: [\"What is that?\", \"Why?\"]\n"
                 "clusters:\n  Sympathy: [Sorry]\n")
    mine = ZeroShotStyleClassifier(f, encoder=clf.encoder)
    assert mine.styles == ("Sorry", "Asking") and mine.clusters == {"Sympathy": ("Sorry",)}
    p = mine.probabilities(["I am very sorry for you.", "What is it?"])
    assert p.shape == (2, 2) and np.allclose(p.sum(1), 1)
    assert top_clusters(p, mine.styles, mine.clusters) == ["Sympathy", "Other"]


def test_probabilities_are_distributions_and_temperature_sharpens(clf):
    texts = ["I'm so sorry to hear that.", "What is that?", ""]
    p = clf.probabilities(texts)
    assert p.shape == (3, len(clf.styles)) and np.allclose(p.sum(1), 1)
    sharp = ZeroShotStyleClassifier(clf.inventory, encoder=clf.encoder, temperature=0.01).probabilities(texts)
    assert (sharp.max(1) >= p.max(1)).all()
    assert clf.probabilities([]).shape == (0, len(clf.styles))


def test_hand_labelled_examples(clf):
    p = clf.probabilities(["I'm so sorry to hear that.", "What is that?", "I hate those people, they are disgusting."])
    top = top_clusters(p, clf.styles, clf.clusters)
    assert top[0] == "Sympathy" and top[1] in ("Curiosity", "Confusion") and top[2] == "Hate"
    cp = cluster_probabilities(p, clf.styles, clf.clusters)
    assert cp["Sympathy"][0] > 0.5


def test_cluster_accuracy_on_held_out_test_set(clf):
    rows = _labelled("styles_test.jsonl")
    assert len(rows) >= 40
    top = top_clusters(clf.probabilities([r["text"] for r in rows]), clf.styles, clf.clusters)
    misses = [(r["text"], r["cluster"], t) for r, t in zip(rows, top) if t not in r["cluster"]]
    accuracy = 1 - len(misses) / len(rows)
    assert accuracy >= TEST_ACCURACY_THRESHOLD, misses
    # every cluster is represented in the test set
    assert {c for r in rows for c in r["cluster"]} >= set(DEFAULT_CLUSTERS) | {"Other"}


def test_dev_and_test_sets_are_disjoint():
    dev = {r["text"] for r in _labelled("styles_dev.jsonl")}
    test = {r["text"] for r in _labelled("styles_test.jsonl")}
    assert not dev & test


@pytest.fixture(scope="module")
def tiny_hf_classifier(tmp_path_factory, clf) -> Path:
    """A tiny random BERT classifier with emotion-like labels, built offline."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    path = tmp_path_factory.mktemp("tiny-emotion")
    tok = AutoTokenizer.from_pretrained(clf.encoder.path)
    labels = {0: "joy", 1: "sadness", 2: "anger"}
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, id2label=labels, label2id={v: k for k, v in labels.items()})
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_hf_classifier_labels_are_styles_with_user_clusters(tiny_hf_classifier, tmp_path):
    f = tmp_path / "clusters.yaml"
    f.write_text("clusters:\n  Negative: [sadness, anger]\n  Positive: joy\n")
    c = load_style_classifier(str(tiny_hf_classifier), clusters=f)
    assert c.styles == ("joy", "sadness", "anger")
    assert c.clusters == {"Negative": ("sadness", "anger"), "Positive": ("joy",)}
    p = c.probabilities(["hello", "I am sad"])
    assert p.shape == (2, 3) and np.allclose(p.sum(1), 1)
    default = load_style_classifier(str(tiny_hf_classifier))
    assert default.clusters == {"joy": ("joy",), "sadness": ("sadness",), "anger": ("anger",)}
    bad = tmp_path / "bad.yaml"
    bad.write_text("Negative: [fear]\n")
    with pytest.raises(StyleInventoryError, match="unknown style"):
        load_style_classifier(str(tiny_hf_classifier), clusters=bad)
    with pytest.raises(ScorerError, match="inventory only applies"):
        load_style_classifier(str(tiny_hf_classifier), inventory=bad)
