"""The shared target-term matcher: unit cases, and the shares of the authors' data it reproduces
(paired test rows, annotated biased phrases, training phrases carrying the LMD loss), measured
on the authors' files when they are present."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from biaslens.methods.redditbias.dataset import (
    BUILTIN_NAMES,
    builtin_spec,
    find_files,
    read_lines,
    read_paired,
    target_swap,
)
from biaslens.methods.redditbias.dataset.terms import TermMatcher, inflect, plural

REF = Path(__file__).resolve().parents[3].parent / "shared" / "reference" / "redditbias"
if not REF.is_dir():
    REF = Path("/work/shared/reference/redditbias")
needs_ref = pytest.mark.skipif(not REF.is_dir(), reason=f"the authors' RedditBias files are not at {REF}")


# --------------------------------------------------------------------------- unit cases


def test_plural_and_forms():
    assert [plural(w) for w in ("muslim", "lady", "wife", "gentleman", "witch", "boy", "negro")] == \
        ["muslims", "ladies", "wives", "gentlemen", "witches", "boys", "negros"]
    assert [inflect("muslim", f) for f in ("base", "plural", "possessive", "plural_possessive")] == \
        ["muslim", "muslims", "muslim's", "muslims'"]


def test_matcher_finds_inflected_capitalised_and_compound_forms_only():
    m = TermMatcher(["muslim", "jew", "mother", "girl", "man", "greed*"])
    text = "Muslims' views, a MUSLIM'S word, Jews and jewelry, my Grandmother's girlfriends, a manager, greedy men"
    found = [(x.surface, m.terms[x.term], x.form, x.prefix, x.suffix) for x in m.find(text)]
    assert found == [("Muslims'", "muslim", "plural_possessive", "", ""),
                     ("MUSLIM'S", "muslim", "possessive", "", ""),
                     ("Jews", "jew", "plural", "", ""),
                     ("Grandmother's", "mother", "possessive", "grand", ""),
                     ("girlfriends", "girl", "plural", "", "friend"),
                     ("greedy", "greed*", "base", "", ""),
                     ("men", "man", "plural", "", "")]
    # an explicit term keeps its own entry ahead of another term's compound
    m2 = TermMatcher(["christian", "christianity"])
    assert [m2.terms[x.term] for x in m2.find("christianity")] == ["christianity"]
    assert TermMatcher(["muslim"], inflections=False).find("muslims") == []


def test_default_swap_keeps_form_and_case_and_exchanges_where_the_authors_did():
    race, gender = builtin_spec("race"), builtin_spec("gender")
    r = target_swap(["Blacks' rights", "whites are more dangerous than blacks!", "African Americans are"], race)
    assert r.texts == ["Whites' rights", "blacks are more dangerous than whites!", "Anglo Americans are"]
    g = target_swap(["My Grandmother and her girlfriends", "Ladies first", "she is a nurse"], gender)
    assert g.texts == ["My Grandfather and her boyfriends", "Gentlemen first", "he is a nurse"]


def test_reference_mode_exchanges_t1_and_t2_within_a_phrase():
    race, religion2 = builtin_spec("race"), builtin_spec("religion2")
    assert target_swap(["blacks are more dangerous than whites!"], race, mode="reference").texts == \
        ["whites are more dangerous than blacks!"]
    # the authors' one-way exception: once "muslims" became "christians", "islamic" is replaced,
    # not exchanged (an exchange would turn the new "christians" into "islamics")
    assert target_swap(["islamic muslims"], religion2, mode="reference").texts == ["christian christians"]


# --------------------------------------------------------------------------- the authors' files


def _t1_stems(spec) -> list[str]:
    return [a.strip().lower() for a, _ in spec.target_pairs]


def _authors_left_a_target(ours: str, theirs: str, spec) -> bool:
    """True when every word where the two counterfactuals differ is one where the authors' row
    still holds a minoritized term (their substring swap missed it: "she" at the start, "ladies",
    "islam." before punctuation) or a substring artefact ("muslimity")."""
    a, b = ours.lower().split(), theirs.lower().split()
    if len(a) != len(b):
        return False
    stems = _t1_stems(spec)
    t1 = TermMatcher(stems)
    return all(any(s in y for s in stems) or t1.find(y) for x, y in zip(a, b) if x != y)


def reproduction(spec, mode: str) -> tuple[int, int, int]:
    """(rows, exact, exact or corrected) of the authors' paired test rows rebuilt from the phrases."""
    files = find_files(REF, spec, "test")
    pairs = read_paired(*files.paired)
    ours = target_swap(pairs["phrase"].tolist(), spec, "to_dominant", mode).texts
    exact = [o.lower() == t.lower() for o, t in zip(ours, pairs["counterfactual"])]
    ok = [e or _authors_left_a_target(o, t, spec) for e, o, t in zip(exact, ours, pairs["counterfactual"])]
    return len(pairs), sum(exact), sum(ok)


@needs_ref
@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_default_mode_reproduces_the_authors_paired_rows(name):
    spec = builtin_spec(name)
    n, exact, ok = reproduction(spec, "default")
    # before the shared matcher (whole words only): religion2 51.7%, race 56.3%, gender 76.7%, orientation 65.1%
    assert ok / n >= 0.99, f"{name}: {ok}/{n} rows reproduced or corrected"
    assert exact / n >= 0.94, f"{name}: only {exact}/{n} rows identical"


@needs_ref
@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_reference_mode_is_the_authors_procedure(name):
    n, exact, _ = reproduction(builtin_spec(name), "reference")
    assert exact == n  # every row, the t1 <-> t2 exchange included


@needs_ref
@pytest.mark.parametrize("name", ["religion1", "religion2", "race", "gender", "orientation"])
def test_every_annotated_biased_phrase_is_swapped_or_listed(name):
    from biaslens.config import RunConfig
    from biaslens.methods.redditbias.dataset.views import annotated_view

    spec = builtin_spec(name)
    path = find_files(REF, spec, "test").annotated
    config = RunConfig.validated({"suite": "redditbias", "redditbias": {"data_dir": str(REF)}})
    view = annotated_view(spec, path, config.redditbias)
    notes = view.notes
    assert notes["n_swapped"] + notes["n_unswappable"] == notes["n_biased_phrases"] == len(view.pairs) + len(notes["unswappable"])
    # before: religion2 dropped 528 of 1,200 (44%), race 461 of 1,273, gender 322 of 2,028, silently
    assert notes["n_unswappable"] / notes["n_biased_phrases"] <= 0.01, notes["unswappable"][:5]
    assert all(a != b for a, b in zip(view.pairs["phrase"], view.pairs["counterfactual"]))


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_target_occurrence_in_the_training_phrases_carries_the_lmd_loss(name, reference_dir, terminal_summary_lines):
    """Through the very tokenizer, start token, truncation and position picking the training uses:
    every occurrence the matcher finds and truncation keeps is predicted by some hidden state, and
    every phrase with a target (the authors' notion: a t1 stem as a substring) carries the loss.
    Before the start token, a target at token 0 got none: 611 of religion1's 716 phrases with a
    target carried the loss, religion2 598/719, race 620/763, gender 1473/1519, orientation 596/720."""
    from transformers import AutoTokenizer

    from biaslens.methods.redditbias.mitigation import build_examples, lmd_positions, load_debias_data, resolve_terms
    from biaslens.mitigation.training import _Examples, start_token_id
    from biaslens.models.embedded import embedded_model_dir
    from biaslens.models.tokenized import pick_start_token

    ref = reference_dir / "redditbias"
    if not ref.is_dir():
        pytest.skip(f"no RedditBias files under {reference_dir}")
    spec = builtin_spec(name)
    tok = AutoTokenizer.from_pretrained(embedded_model_dir())
    start = pick_start_token(tok)
    assert start == "<|endoftext|>"
    data = load_debias_data(spec, ref)
    assert not any(t.startswith("<bos>") for t in data.train + data.valid)  # orientation's marker stripped
    terms = resolve_terms(spec, tok)
    examples, counts = build_examples(data.train, "lmd", terms)
    items = _Examples(tok, examples, 128, start_token_id(tok, start)).items
    assert len(items) == len(examples)
    positions = lmd_positions([it["target_spans"] for it in items])
    carried = {(b, pos + 1) for b, pos, _ in positions}  # the token each position predicts

    # independently: the occurrences whose characters all lie in the first 127 tokens (+ start token)
    surviving = set()
    for b, ex in enumerate(examples):
        offsets = tok(ex.text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"][:127]
        for s, e, _ in ex.spans["target_spans"]:
            if e <= offsets[-1][1]:
                first = next(i for i, (a, z) in enumerate(offsets) if z > s)
                surviving.add((b, first + 1))
    assert carried == surviving and len(positions) == len(surviving)
    # a target opening a phrase is predicted by the start token's state
    assert all(items[b]["input_ids"][pos] == start_token_id(tok, start) for b, pos, _ in positions if pos == 0)
    with_target = [b for b, t in enumerate(data.train) if any(s in t.lower() for s in _t1_stems(spec))]
    phrases = {b for b, _ in carried}
    assert phrases >= set(with_target), [data.train[b] for b in set(with_target) - phrases][:5]
    at_start = sum(pos == 0 for _, pos, _ in positions)
    terminal_summary_lines.setdefault("LMD coverage (SmolLM2 tokenizer, start token, 128 tokens)", []).append(
        f"{name}: {len(positions)}/{counts['target_occurrences']} occurrences carry LMD "
        f"({at_start} at the first word), {len(phrases & set(with_target))}/{len(with_target)} phrases with a target")


@needs_ref
@pytest.mark.parametrize("name", ["religion1", "religion2", "orientation"])
def test_one_sided_cda_matches_the_authors_augmented_file(name):
    """The paper's CDA: minoritized -> dominant copies only; the authors' file is the 720
    phrases followed by one copy of each."""
    from biaslens.methods.redditbias.mitigation import cda_texts, load_debias_data

    spec = builtin_spec(name)
    data = load_debias_data(spec, REF)
    theirs = [re.sub(r"^<bos>\s*", "", t) for t in
              read_lines(REF / "text_files" / name / f"{name}_bias_manual_swapped_targets_train.txt")]
    copies = theirs[len(data.train):]
    assert len(copies) == len(data.train)
    texts, counts = cda_texts(data.train, spec, "targets", "reference")
    ours = texts[len(data.train):]
    changed = [c for c, o in zip(copies, data.train) if c != o.lower()]
    assert counts["n_swapped_copies"] == len(ours) >= 0.99 * len(changed)
    assert sum((Counter(ours) & Counter(changed)).values()) >= 0.99 * len(changed)  # phrases repeat
    two, counts2 = cda_texts(data.train, spec, "targets", "reference", sides="two-sided")
    assert counts2["n_swapped_copies"] > counts["n_swapped_copies"]


# --------------------------------------------------------------------------- d_z interval


@needs_ref
@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_dz_interval_agrees_with_the_t_test_on_the_authors_perplexities(name):
    from biaslens.methods.redditbias.metrics import lmb_test

    spec = builtin_spec(name)
    pairs = read_paired(*find_files(REF, spec, "test").paired, perplexity_column="perplexity")
    r = lmb_test(pairs["ppl_minoritized"], pairs["ppl_dominant"])
    n = r.n_pairs
    half = stats.t.ppf(0.975, n - 1) / np.sqrt(n)
    assert r.d_ci == pytest.approx((r.cohens_d - half, r.cohens_d + half))
    assert (r.d_ci[0] > 0 or r.d_ci[1] < 0) == (r.p < 0.05)  # before: orientation [+0.09, +0.29] at p = 0.092
    diff = np.sort(pairs["ppl_minoritized"].to_numpy() - pairs["ppl_dominant"].to_numpy())
    assert r.median_diff == pytest.approx(np.median(diff)) and r.median_diff_ci[0] <= r.median_diff <= r.median_diff_ci[1]
    # the median's interval is a pair of order statistics covering >= 95% by the binomial law
    lo, hi = (np.searchsorted(diff, v) for v in r.median_diff_ci)
    assert stats.binom.cdf(hi, n, 0.5) - stats.binom.cdf(lo, n, 0.5) >= 0.95 - 1e-9
    if name == "orientation":
        assert r.skew_warning and r.diff_skew == pytest.approx(13.8, abs=0.05)
