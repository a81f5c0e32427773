"""Issue 24, items 4, 5, 6 (VADER) and 7: one masking lexicon for every identity, an identity audit
that can fail, VADER's audit, and the paper-architecture judges plugged in from a folder."""

from __future__ import annotations

import ast
import json
import re
import time

import numpy as np
import pytest

from biaslens.scorers import card as card_mod
from biaslens.scorers.masking import PLACEHOLDER, identity_masker, mask_all, mask_identities, mask_identity


def _masked_out(text: str, term: str) -> bool:
    """``term`` (as written in ``text``) no longer appears after masking, and a placeholder does."""
    out = mask_identities(text)
    return PLACEHOLDER in out and not re.search(rf"(?<!\w){re.escape(term)}(?!\w)", out, re.IGNORECASE)


def _source_terms():
    from biaslens.methods.community.dataset.prompts import load_keywords
    from biaslens.methods.redditbias.dataset.specs import builtin_specs
    from biaslens.vocabulary.schema import load_holistic_dataset

    hb = load_holistic_dataset()
    descriptors = [e["descriptor"] for b in hb.descriptors.values() for es in b.values() for e in es]
    nouns = [n for pairs in hb.nouns.values() for pair in pairs for n in pair if n not in ("person", "people")]
    reddit = [t.strip() for s in builtin_specs().values() for pair in s.target_pairs for t in pair]
    community = [k.keyword for k in load_keywords()]
    return descriptors, nouns, reddit, community


def test_every_source_term_is_masked_in_several_forms():
    from biaslens.vocabulary.pluralize import pluralize_noun

    descriptors, nouns, reddit, community = _source_terms()
    from biaslens.methods.community.dataset.prompts import load_keywords

    plurals = {n.lower() for n in nouns[1::2]} | {t.lower() for t in reddit + community if t.endswith(("s", "men"))}
    # no plural of "she" or "Islam"
    plurals |= {k.keyword.lower() for k in load_keywords() if k.form.endswith("pronoun") or k.form == "abstract"}
    assert len(descriptors) > 500 and len(nouns) > 50 and len(reddit) > 60 and len(community) > 80
    missed = []
    for term in descriptors + nouns + reddit + community:
        if term == PLACEHOLDER:  # "left-handed" is a HolisticBias descriptor: masked to itself
            continue
        forms = [term, term.upper(), term.capitalize(), term.replace("-", " "), term.replace(" ", "-")]
        if not re.search(r"[\s-]", term) and term.lower() not in plurals:  # plural and possessive of one word
            forms += [pluralize_noun(term), term + "'s", term + "\u2019s"]
        for form in dict.fromkeys(forms):
            for text in (f"{form}", f"I think {form} are fine.", f"That {form}-friendly place."):
                if not _masked_out(text, form):
                    missed.append((term, text, mask_identities(text)))
    assert not missed, missed[:20]


@pytest.mark.parametrize("text, expected", [
    ("I'm gay... queers and gays are everywhere.", "I'm left-handed... left-handed and left-handed are everywhere."),
    ("Jews and Muslims", "left-handed and left-handed"),  # nouns of adjectives, plurals
    ("Homosexuals, homosexuality", "left-handed, left-handed"),
    ("asian american, Asian-American, AsianAmerican", "left-handed, left-handed, left-handed"),
    ("a gay-friendly bar, anti-gay laws", "a left-handed-friendly bar, anti-left-handed laws"),
    ("a transphobic joke", "a left-handed-phobic joke"),
    ("My grandma's sisters", "My left-handed's left-handed"),
    ("A deafening noise in the manager's office", "A deafening noise in the manager's office"),  # whole words only
])
def test_masking_examples(text, expected):
    assert mask_identities(text) == expected


@pytest.mark.parametrize("text, expected", [
    # the pronoun paradigm: "her" is also a possessive, so "his" is masked too
    ("his wife and her husband", "left-handed and left-handed"),
    ("He blamed himself, she blamed herself; the car is hers.", "left-handed blamed left-handed, left-handed "
                                                                "blamed left-handed; the car is left-handed."),
    # a group head after a mention merges into it; alone it stays
    ("Latino folks and the Chinese community", "left-handed and left-handed"),
    ("Hindu families, the Sikh population and Buddhist culture", "left-handed, left-handed and left-handed"),
    ("Hey folks, my family and our community garden", "Hey folks, my family and our community garden"),
    # mentions joined by a hyphen merge ("Korean-American" is not listed; "Korean" and "American" are)
    ("Korean-Americans and a Mexican-American-run bakery", "left-handed and a left-handed-run bakery"),
    # an adjective used as a plural noun reads like a plural noun
    ("The blind and the rich", "left-handed and left-handed"),
    ("the Sikh man's shop", "left-handed's shop"),
])
def test_masking_merges_forms_that_would_tell_the_identity(text, expected):
    assert mask_identities(text) == expected


def test_forms_of_different_identities_mask_to_one_text():
    """Counterfactual invariance: replies that differ only in which identity they name, and in which
    form (plural noun, adjective + "folks"/"community"/"population", "the" + adjective, hyphenated
    "X-American"), become one text. Frames and identities are the community lists' own, none from
    the held-out audit."""
    from biaslens.methods.community.dataset.prompts import load_keywords

    kws = load_keywords()
    adjectives = sorted({k.keyword for k in kws if k.form == "adjective"})
    plurals = sorted({k.keyword for k in kws if k.form == "plural"})
    assert len(adjectives) > 20 and len(plurals) > 20
    frames = ("{x} moved into the flat upstairs.", "Why do {x} always get the window seats?",
              "We asked {x} about the bus timetable.")
    forms = [f"{a} {h}" for a in adjectives for h in ("folks", "community", "population", "families")] + \
        [f"the {a}" for a in adjectives] + [f"{a}-Americans" for a in adjectives] + plurals + \
        [f"the {p} community" for p in plurals[:5]]
    for frame in frames:
        texts = [frame.format(x=f) for f in forms]
        masked = set(mask_all(texts, [()] * len(texts)))
        assert len(masked) == 1, sorted(masked)[:5]


def test_over_masking_policy_every_sense_is_masked():
    """docs/scorers.md: a lexicon word is masked in every sense (the text only goes to the judge)."""
    assert mask_identities("black coffee and white wine") == "left-handed coffee and left-handed wine"
    assert mask_identities("She is two years old.") == "left-handed is two years left-handed."
    # "person"/"people" are HolisticBias nouns: masked too; never inside another word
    assert mask_identities("Oldham's blackboard; many people") == "Oldham's blackboard; many left-handed"
    assert mask_identities("I'm an autistic person. A person who is deaf.") == "I'm a left-handed. A left-handed."


def test_same_lexicon_whatever_a_run_selected_and_user_terms_added():
    # community keywords of another dimension, HolisticBias descriptors, RedditBias terms: all masked
    # with no terms given (the old masker masked only the run's own keywords)
    assert mask_all(["Muslims, Latinx, niece"], [["woman"]]) == ["left-handed, left-handed, left-handed"]
    # a user's own descriptor (not in the built-in lists) is masked in its forms too
    assert mask_all(["blickets and zorblians", "zorblian"], [["zorblian"], []]) == \
        ["left-handed and left-handed", "left-handed"]


def test_masking_throughput_10k_replies():
    """One compiled trie regex: measured 0.18 s for 10,000 labelled replies (~100 characters each,
    54,000 replies/s on one core of the 2-core dev machine); the bound leaves room for a busy machine."""
    rows = card_mod.load_labelled()
    texts = ([r["response"] for r in rows] * 50)[:10_000]
    identity_masker(())
    t0 = time.perf_counter()
    out = mask_all(texts, [()] * len(texts))
    dt = time.perf_counter() - t0
    assert len(out) == 10_000 and dt < 3.0, dt


# -- the audit -----------------------------------------------------------------------------

def test_held_out_audit_is_separate_from_the_lexicon():
    """The audit's groups and sentences are data, not part of the lexicon: its plural/compound forms
    ("queers", "Jews", "Black folks") are masked by rules, never listed."""
    from biaslens.scorers import masking

    tree = ast.parse(open(masking.__file__, encoding="utf-8").read())
    docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and n.body and isinstance(n.body[0], ast.Expr)}
    code_strings = " ".join(n.value.lower() for n in ast.walk(tree)
                            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)
    listed = {t.lower() for t, _ in masking._source_terms()}
    audit = card_mod.load_audit()
    for g in audit["groups"]:
        for form in ("plural", "compound"):  # forms the package's lists lack are nowhere in the masker's code
            assert g[form].lower() in listed or g[form].lower() not in code_strings, g[form]
    sentences = card_mod.held_out_sentences()
    assert len(sentences) == len(audit["groups"]) * sum(map(len, audit["templates"].values()))
    two = [s for f, _, s in sentences if f == "two_identities"]
    assert two and all(len(identity_masker(()).find(s)) >= 2 for s in two)


def _keyword_judge(texts):
    """A judge that reacts to identity words only: 1 for "queer"/"gays"/"Jews" in any form."""
    return {"toxicity": np.array([1.0 if re.search(r"queer|gays|jews", t, re.I) else 0.0 for t in texts])}


def test_audit_can_fail_and_the_masker_passes_it():
    # masking only the inserted adjective (the old masker): plurals and second identities stay
    old = card_mod.identity_gap(_keyword_judge, mask=lambda s, term: mask_identity(s, term))
    assert old["sets"]["neutral"]["gap_masked"] == 0.0  # zero by construction on the inserted term
    assert old["sets"]["held_out"]["gap_masked"] > 0.5 and not old["meets_masked_target"]
    new = card_mod.identity_gap(_keyword_judge)
    assert new["sets"]["held_out"]["gap"] > 0.5 and new["gap_masked"] == 0.0 and new["meets_masked_target"]
    assert set(new["sets"]["held_out"]["by_form"]) == {"plural", "compound", "variant", "two_identities"}
    # each real reply rewritten into every group's variant spelling and compound (card.REWRITE_FORMS)
    assert new["sets"]["real_replies"]["n_sentences"] == (40 * len(card_mod.load_audit()["groups"])
                                                          * len(card_mod.REWRITE_FORMS))


def test_default_judge_masked_gap_meets_the_target():
    """alt-profanity-check (the default where Detoxify is not installed): measured unmasked 0.85
    (neutral sentences), 0.65 held-out; masked 0.035 held-out, 0.00 on real replies."""
    judge, _ = card_mod.choose_judge("alt-profanity-check")
    a = card_mod.identity_gap(lambda t: {"toxicity": judge.probability(t)})
    assert a["gap"] > 0.5 and a["sets"]["held_out"]["gap"] > 0.5
    assert a["gap_masked"] <= card_mod.MASKED_GAP_TARGET and a["meets_masked_target"]


def test_vader_card_audits_sentiment():
    c = card_mod.sentiment_card()
    a = c["identity_audit"]
    assert c["role"] == "sentiment" and c["masking"] is False and c["skill"]["set"] == "community"
    # VADER's lexicon scores "rich" above "poor" in "I am X.": a real reaction to the word
    assert a["per_term"]["rich"] > a["per_term"]["poor"] and a["gap"] > 0.1 and c["warning"]
    assert a["gap_masked"] <= a["gap_unmasked"]
    assert "identity gap" in card_mod.card_note(c)


# -- the paper's judges from a folder (RoBERTa-style sequence classification) -------------------

TEXTS = ["you are awful and stupid", "what a lovely day", "i am gay", "thank you so much",
         "i hate you", "tell me more about it", "i am sorry to hear that"]


def _tiny_roberta(path, labels, problem_type=None):
    """A randomly initialised RoBERTa sequence classifier (the B.A.D. / Image-Chat classifiers'
    architecture) and a word-level tokenizer, saved as a Hugging Face folder."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForSequenceClassification

    words = sorted({w for t in TEXTS for w in re.findall(r"\w+", t)} | {"left", "handed"})
    vocab = {w: i for i, w in enumerate(["<s>", "<pad>", "</s>", "<unk>", *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>", model_max_length=64)
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=80, pad_token_id=1,
                        id2label=dict(enumerate(labels)), label2id={lab: i for i, lab in enumerate(labels)},
                        problem_type=problem_type)
    model = RobertaForSequenceClassification(cfg).eval()
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return model, fast


def _reference_probs(model, tok, texts, sigmoid=False):
    import torch

    with torch.inference_mode():
        rows = [model(**tok([t], return_tensors="pt")).logits[0] for t in texts]  # one at a time: no padding
    p = [torch.sigmoid(r) if sigmoid else torch.softmax(r, -1) for r in rows]
    return np.array([x.numpy() for x in p])


def test_roberta_toxicity_judge_from_a_folder(tmp_path):
    from biaslens.scorers.toxicity import load_toxicity_scorer

    path = tmp_path / "bad-classifier"
    model, tok = _tiny_roberta(path, ["__ok__", "__notok__"])
    judge = load_toxicity_scorer(str(path), label="__notok__")
    ref = _reference_probs(model, tok, TEXTS)[:, 1]
    # batched and padded by biaslens vs one text at a time here: the same probabilities
    assert np.allclose(judge.probability(TEXTS), ref, atol=1e-5)
    assert np.allclose(judge.scores(TEXTS)["toxicity"], ref, atol=1e-5)
    judge2, choice = card_mod.choose_judge(str(path), label="__notok__")
    assert choice["used"] == str(path) and "Hugging Face" in choice["kind"] and not choice["lexical_screen"]
    c = card_mod.toxicity_card(judge2, choice)
    assert 0 <= c["identity_audit"]["gap_masked"] <= 1 and c["skill"]["n"] > 0 and c["skill"]["headline"] == "AUROC"


def test_multi_label_judge_reports_identity_attack(tmp_path):
    from biaslens.scorers.toxicity import load_toxicity_scorer

    path = tmp_path / "jigsaw-like"
    model, tok = _tiny_roberta(path, ["toxic", "identity_attack"], "multi_label_classification")
    s = load_toxicity_scorer(str(path), label="toxic").scores(TEXTS)
    ref = _reference_probs(model, tok, TEXTS, sigmoid=True)
    assert np.allclose(s["toxicity"], ref[:, 0], atol=1e-5) and np.allclose(s["identity_attack"], ref[:, 1], atol=1e-5)


def test_roberta_style_classifier_from_a_folder(tmp_path):
    from biaslens.scorers.styles import load_style_classifier

    path = tmp_path / "image-chat-style"
    styles = ["Sympathetic", "Curious", "Hateful", "Caring"]
    model, tok = _tiny_roberta(path, styles)
    clusters = tmp_path / "clusters.yaml"
    clusters.write_text("Sympathy: [Sympathetic]\nCuriosity: [Curious]\nHate: [Hateful]\nCare: [Caring]\n",
                        encoding="utf-8")
    clf = load_style_classifier(str(path), clusters=clusters)
    assert clf.styles == tuple(styles) and set(clf.clusters) == {"Sympathy", "Curiosity", "Hate", "Care"}
    p = clf.probabilities(TEXTS)
    assert np.allclose(p, _reference_probs(model, tok, TEXTS), atol=1e-5) and np.allclose(p.sum(1), 1)


def test_community_run_with_a_folder_judge(tmp_path):
    from biaslens.api import run
    from biaslens.methods.community.dataset import build_prompts

    path = tmp_path / "bad-classifier"
    _tiny_roberta(path, ["__ok__", "__notok__"])
    gens = tmp_path / "g.jsonl"
    gens.write_text("".join(json.dumps({"prompt": p.prompt, "response": f"Gays and {p.keyword} are fine.",
                                        "model": "m"}) + "\n" for p in build_prompts(dimensions=["religion"]).itertuples()),
                    encoding="utf-8")
    res = run(suite="community", out=tmp_path / "run", use_cache=False,
              community={"generations_files": [str(gens)], "n_bootstrap": 20, "dimensions": ["religion"],
                         "toxicity_classifier": str(path), "toxicity_label": "__notok__"})
    cards = json.loads((res.out / "run.json").read_text())["scorer_cards"]
    assert [c["role"] for c in cards] == ["toxicity", "sentiment"] and cards[0]["used"] == str(path)
    t = res.metrics["T_mean"]["m"]  # every identity masked: the same text, the same score
    assert max(t.values()) - min(t.values()) == pytest.approx(0.0, abs=1e-9)


def test_the_frozen_masker_terms_are_what_the_term_lists_give():
    """The masker's term lists ship frozen (the head was trained on them): they must still be what
    the HolisticBias, RedditBias and community lists give, or the masker version must change."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "masker_terms.py"
    spec = importlib.util.spec_from_file_location("masker_terms", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
    lexicon = module.lexicon()
    assert len(lexicon["terms"]) > 500 and "folks" in lexicon["group_heads"]
