"""Write the identity masker's frozen term lists, src/biaslens/scorers/data/masker_terms.json, from
the lists they come from: the HolisticBias nouns, descriptors and noun phrases, the community
keywords and the RedditBias target terms (tests/test_identity_masking.py checks the shipped file
still equals what they give).

    python scripts/masker_terms.py [--check]

The masker is versioned (``biaslens.scorers.masking.MASKER_VERSION``): a change to the file changes
what the toxicity head was trained on, so bump the version and re-train when it changes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from biaslens.scorers.masking import _PRONOUN_FORMS

OUT = Path(__file__).resolve().parents[1] / "src" / "biaslens" / "scorers" / "data" / "masker_terms.json"


def source_terms() -> tuple[tuple[str, str], ...]:
    """(term, role) from the package's term lists, nouns and pronouns before adjectives."""
    from biaslens.methods.community.dataset.prompts import load_keywords
    from biaslens.methods.redditbias.dataset.specs import builtin_specs
    from biaslens.vocabulary.schema import load_holistic_dataset

    hb = load_holistic_dataset()
    terms: list[tuple[str, str]] = []
    for pairs in hb.nouns.values():
        for singular, plural in pairs:
            terms += [(singular, "noun"), (plural, "noun_plural")]
    kws = load_keywords()
    nouns = {t.lower() for t, _ in terms}
    community_role = {"subject_pronoun": "subject_pronoun", "object_pronoun": "object_pronoun",
                      "adjective": "adjective", "abstract": "abstract"}
    for k in kws:
        if k.form in community_role:
            terms.append((k.keyword, community_role[k.form]))
            terms += [(f, k.form) for f in _PRONOUN_FORMS.get(k.keyword.lower(), ()) if k.form.endswith("pronoun")]
        elif k.form == "singular":
            terms.append((k.keyword, "noun" if k.keyword.lower() in nouns else "adjective_noun"))
        else:  # plural: "women" is a noun, "Black people" / "Asians" an identity's plural
            terms.append((k.keyword, "noun_plural" if k.keyword.lower() in nouns else "adjective_plural"))
    pronouns = {k.keyword.lower(): k.form for k in kws if k.form.endswith("pronoun")}
    for name, spec in builtin_specs().items():
        for pair in spec.target_pairs:
            for t in pair:
                t = t.strip()
                if t.lower() in pronouns:
                    terms.append((t, pronouns[t.lower()]))
                    continue
                # RedditBias lists some groups by their plural ("arabs", "negroes"): the singular too
                if t.endswith("s") and not t.endswith("ss"):
                    terms.append((t, "adjective_plural"))
                    terms.append((t[:-2] if t.endswith("oes") else t[:-1], "adjective"))
                else:
                    terms.append((t, "noun" if name == "gender" else "adjective"))
    for buckets in hb.descriptors.values():
        for entries in buckets.values():
            terms += [(e["descriptor"], "adjective") for e in entries]
    for entries in hb.standalone_noun_phrases.values():
        for e in entries:
            for field, role in (("noun_phrase", "after"), ("plural_noun_phrase", "after_plural")):
                if e.get(field):
                    terms.append((e[field].replace("{article}", "").replace("{noun}", "").strip(), role))
    return tuple(terms)


def group_heads() -> tuple[str, ...]:
    """Nouns that head a group mention after an identity word in the RedditBias target phrases
    ("jewish folks are", "black population is": folks, population, community, family, culture, ...),
    lowercase, as listed. The masker merges those not in the lexicon, singular or plural, into a
    mention that precedes them ("Black folks" = "Black people" = "Blacks"), never masks them alone
    ("hey folks")."""
    from biaslens.methods.redditbias.dataset.specs import builtin_specs

    heads: set[str] = set()
    for spec in builtin_specs().values():
        targets = {t.strip().lower() for pair in spec.target_pairs for t in pair}
        for phrase in list(spec.T1) + list(spec.T2):
            words = phrase.lower().split()
            if len(words) >= 3 and words[0] in targets:  # identity, head noun, verb
                heads.add(words[1])
    return tuple(sorted(heads))


def lexicon() -> dict:
    return {"terms": [list(t) for t in source_terms()], "group_heads": list(group_heads())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the shipped file differs, write nothing")
    args = ap.parse_args(argv)
    text = json.dumps(lexicon(), ensure_ascii=False, indent=0) + "\n"
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print("masker_terms.json is up to date" if same else "masker_terms.json differs: run without --check")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
