"""Small, rule-based English pluralizer for HolisticBias nouns and after-the-noun phrases.

The paper lists singular forms only (Table 5, A.3). The built-in data derives plurals from these
rules so that no plural is hand-copied from the official files. The rules cover ordinary English
morphology; they are not a lookup table of the dataset's answers.
"""

from __future__ import annotations

import re

__all__ = ["pluralize_noun", "pluralize_verb", "pluralize_after_noun_phrase"]

# Genuinely irregular English plurals (closed class); everything else follows suffix rules.
_IRREGULAR_NOUNS = {
    "man": "men",
    "woman": "women",
    "person": "people",
    "child": "children",
    "foot": "feet",
    "tooth": "teeth",
    "mouse": "mice",
    "goose": "geese",
}
# Nouns in -f/-fe that take -ves (most -f nouns just add -s: "chief", "roof").
_F_TO_VES = {"wife", "life", "knife", "wolf", "half", "leaf", "loaf", "shelf", "thief", "calf", "elf", "self"}
# Irregular present-tense verbs after "who" (3rd person singular -> plural).
_IRREGULAR_VERBS = {"is": "are", "was": "were", "has": "have", "does": "do", "'s": "are", "’s": "are"}
# Words that end a noun phrase when scanning for its head noun.
_PREPOSITIONS = {"in", "on", "with", "of", "at", "to", "for", "from", "who", "that", "and", "by", "as"}
_ARTICLES = {"a", "an"}


def _match_case(src: str, out: str) -> str:
    """Keep the capitalisation of ``src`` (e.g. "Man" -> "Men")."""
    if src[:1].isupper() and not src.isupper():
        return out[:1].upper() + out[1:]
    return out


def pluralize_noun(word: str) -> str:
    """Return the plural of one English noun.

    Args:
        word: A singular noun, e.g. "grandma", "crisis", "PhD".

    Returns:
        The plural form, e.g. "grandmas", "crises", "PhDs".
    """
    low = word.lower()
    # Compounds such as "grandfather"/"stepmother" pluralize like their last part.
    for sing, plur in _IRREGULAR_NOUNS.items():
        if low == sing or (low.endswith(sing) and sing in ("man", "woman", "child", "person")
                           and low[: -len(sing)] in ("grand", "step", "god", "sales", "chair", "fire", "police")):
            return word[: len(word) - len(sing)] + _match_case(word[-len(sing):], plur)
    if low in _F_TO_VES:
        return word[:-2] + "ves" if low.endswith("fe") else word[:-1] + "ves"
    if word[-1:].isupper() or (len(word) > 1 and word[-1].isdigit()):
        # Acronyms and abbreviations ("PhD", "CEO"): plain -s.
        return word + "s"
    if low.endswith("is") and len(low) > 3:
        return word[:-2] + "es"  # crisis -> crises, thesis -> theses
    if re.search(r"(s|x|z|ch|sh)$", low):
        return word + "es"
    if re.search(r"[^aeiou]y$", low):
        return word[:-1] + "ies"
    return word + "s"


def pluralize_verb(word: str) -> str:
    """Turn a 3rd-person-singular present verb into its plural form ("uses" -> "use").

    Past tenses and other forms are returned unchanged ("dropped" -> "dropped").
    """
    low = word.lower()
    if low in _IRREGULAR_VERBS:
        return _IRREGULAR_VERBS[low]
    if low.endswith("ies") and len(low) > 4:
        return word[:-3] + "y"  # carries -> carry
    if re.search(r"(ss|x|z|ch|sh)es$", low):
        return word[:-2]  # watches -> watch
    if low.endswith("s") and not low.endswith("ss") and len(low) > 2:
        return word[:-1]  # uses -> use, walks -> walk, stutters -> stutter
    return word


def pluralize_after_noun_phrase(phrase: str) -> str:
    """Pluralize a phrase that follows a noun ("who uses a wheelchair" -> "who use wheelchairs").

    Rules: the verb right after a leading "who" (or the contraction "who's") agrees with a plural
    subject; every indefinite article "a"/"an" is dropped and the head noun of its noun phrase
    (the last word before the next preposition or the end) is pluralized. Phrases with no such
    parts are returned unchanged ("with low vision", "with one kid").

    Args:
        phrase: The phrase without the noun, e.g. "with a PhD".

    Returns:
        The plural phrase, e.g. "with PhDs".
    """
    tokens = phrase.split(" ")
    out: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        low = tok.lower()
        if low in ("who's", "who’s"):
            out += [tok[:3], "are"]
        elif low == "who" and i + 1 < len(tokens):
            out += [tok, pluralize_verb(tokens[i + 1])]
            i += 1
        elif low in _ARTICLES and i + 1 < len(tokens):
            # Find the head noun: last token before a preposition or the end of the phrase.
            j = i + 1
            while j + 1 < len(tokens) and tokens[j + 1].lower() not in _PREPOSITIONS:
                j += 1
            out += tokens[i + 1 : j] + [pluralize_noun(tokens[j])]
            i = j
        else:
            out.append(tok)
        i += 1
    return " ".join(out)
