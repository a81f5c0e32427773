"""Finding target and attribute terms in text: one matcher for counterfactuals and debiasing losses.

The RedditBias authors match target stems as substrings ("muslim" also finds "muslims",
"muslim's"; "jew " needs a trailing space so "jewelry" is not a jew). biaslens matches whole
words *and their inflected forms*, case-insensitively:

- base form ("muslim"), plural ("muslims"; "lady" -> "ladies", "wife" -> "wives",
  "gentleman" -> "gentlemen", "witch" -> "witches"), possessive ("muslim's") and plural
  possessive ("muslims'"), in any capitalisation ("Muslims", "MUSLIMS");
- a trailing ``*`` is a wildcard word ending (``greed*`` finds greedy);
- overlapping matches: the longest wins ("african americans" is one match, not "african").

- compounds the authors' substrings reach: "girlfriend", "grandmother", "stepson",
  "womanhood", "homosexuality" (a short list of prefixes and suffixes, not any substring:
  "jewelry", "manager", "moment" stay untouched).

A match records its *form* (base, plural, possessive, plural_possessive) and compound affixes
so a swap writes the replacement the same way ("Muslims'" -> "Christians'", "Grandmother" ->
"Grandfather").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from biaslens.vocabulary.pluralize import pluralize_noun

FORMS = ("base", "plural", "possessive", "plural_possessive")
_APOSTROPHES = "'\u2019"


def plural(term: str) -> str:
    """English plural of a (lowercase) term: its last word by the project's rule-based
    pluralizer, plus "-man" -> "-men" in any compound ("gentleman" -> "gentlemen")."""
    head, _, last = term.rpartition(" ")
    p = pluralize_noun(last)
    if last.endswith("man") and p.endswith("mans") and last not in ("human", "german", "roman"):
        p = last[:-3] + "men"
    return f"{head} {p}" if head else p


def inflect(term: str, form: str) -> str:
    """``term`` in one of :data:`FORMS` (``"'"`` alone after a plural in -s)."""
    if form == "base":
        return term
    if form == "plural":
        return plural(term)
    if form == "possessive":
        return term + "'s"
    p = plural(term)
    return p + ("'" if p.endswith("s") else "'s")


def _apostrophe_free(s: str) -> str:
    return re.escape(s).replace("'", f"[{_APOSTROPHES}]").replace(r"\ ", r"\s+")


#: compounds the authors' substring matching reaches and whole words would miss
#: ("girlfriend", "grandmother", "stepson", "womanhood", "homosexuality")
COMPOUND_PREFIXES = ("great-grand", "grand", "step", "god")
COMPOUND_SUFFIXES = ("friend", "hood", "ity")


def compound_affixes() -> list[tuple[str, str]]:
    """(prefix, suffix) of every compound the matcher knows, the plain word first."""
    return [("", "")] + [(p, "") for p in COMPOUND_PREFIXES] + [("", x) for x in COMPOUND_SUFFIXES]


@dataclass(frozen=True)
class TermMatch:
    """One occurrence: ``text[start:end]``, the term it is a form of (index), which form, and
    the compound prefix/suffix around the term ("grand" + "mother")."""

    start: int
    end: int
    term: int
    form: str
    surface: str
    prefix: str = ""
    suffix: str = ""

    def rewrite(self, term: str) -> str:
        """``term`` in this occurrence's compound and form ("father" for "Grandmothers'" ->
        "grandfathers'"), lowercase."""
        return inflect(self.prefix + term + self.suffix, self.form)


class TermMatcher:
    """Whole-word, inflection-aware, case-insensitive finder for a list of terms.

    Args:
        terms: the terms (surrounding spaces ignored; ``*`` = wildcard word ending).
        inflections: also match plural and possessive forms and the compounds of
            :data:`COMPOUND_PREFIXES`/:data:`COMPOUND_SUFFIXES` (default); False = exact words only.
    """

    def __init__(self, terms: Sequence[str], *, inflections: bool = True):
        self.terms = [str(t).strip().lower() for t in terms]
        self.inflections = inflections
        self._form: dict[str, tuple[int, str, str, str]] = {}  # surface -> (term, form, prefix, suffix)
        alternatives: list[tuple[float, str]] = []  # (length, regex): the longest is tried first
        words = [(i, t) for i, t in enumerate(self.terms) if t and not t.endswith("*")]
        affixes = compound_affixes() if inflections else [("", "")]
        # every term's own forms before any compound, so "christianity" stays a term of its own
        for prefix, suffix in affixes:
            for i, term in words:
                for form in FORMS if inflections else ("base",):
                    surface = inflect(prefix + term + suffix, form)
                    if surface not in self._form:  # the first term listed keeps a shared surface
                        self._form[surface] = (i, form, prefix, suffix)
                        alternatives.append((len(surface), _apostrophe_free(surface)))
        self._wild = [(i, t.rstrip("*")) for i, t in enumerate(self.terms) if t.endswith("*")]
        alternatives += [(len(stem) + 0.5, re.escape(stem) + r"[\w'\u2019-]*") for _, stem in self._wild if stem]
        body = "|".join(rx for _, rx in sorted(alternatives, key=lambda a: -a[0]))
        self.pattern = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE) if body else None

    def find(self, text: str) -> list[TermMatch]:
        """Non-overlapping occurrences in ``text``, left to right."""
        if self.pattern is None:
            return []
        out = []
        for m in self.pattern.finditer(text):
            key = re.sub(r"\s+", " ", m.group(0).lower().replace("\u2019", "'"))
            if key in self._form:
                i, form, prefix, suffix = self._form[key]
            else:  # a wildcard match
                i, form, prefix, suffix = next((i, "base", "", "") for i, stem in self._wild if key.startswith(stem))
            out.append(TermMatch(m.start(), m.end(), i, form, m.group(0), prefix, suffix))
        return out


@lru_cache(maxsize=256)
def matcher(terms: tuple[str, ...], inflections: bool = True) -> TermMatcher:
    """A cached :class:`TermMatcher` (building the regex is the expensive part)."""
    return TermMatcher(terms, inflections=inflections)


