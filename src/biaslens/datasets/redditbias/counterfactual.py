"""Counterfactual phrases: swap target terms (t1 <-> t2) or attributes (a1 -> a2).

Two modes:

- ``reference``: what the RedditBias authors did. The phrase is lowercased and each pair is
  applied in order by plain substring replacement (no word boundaries; "cook" -> "officer"
  turns "cookie" into "officerie"). Use it to reproduce their files.
- ``default``: whole words only ("Jewish" is swapped, "jewelry" is not), one pass over all
  terms (longest first, so a swapped term is never swapped again), case kept ("Jews" ->
  "Christians", "JEWS" -> "CHRISTIANS"). Use it for new data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Literal

from biaslens.datasets.redditbias.specs import BiasSpec, Direction

Mode = Literal["default", "reference"]


@dataclass
class SwapResult:
    """Swapped texts with what changed.

    Attributes:
        texts: the counterfactual of each input (the input itself when nothing matched).
        initial: per text, the terms that were replaced (in the reference's ``initial_demo`` style).
        replaced: per text, what they were replaced with.
    """

    texts: list[str]
    initial: list[list[str]] = field(default_factory=list)
    replaced: list[list[str]] = field(default_factory=list)

    @property
    def changed(self) -> list[bool]:
        return [bool(i) for i in self.initial]

    @property
    def n_changed(self) -> int:
        return sum(self.changed)

    @property
    def n_unchanged(self) -> int:
        return len(self.texts) - self.n_changed


def _match_case(src: str, new: str) -> str:
    """``new`` written in the case pattern of ``src`` (UPPER, Title or lower)."""
    letters = [c for c in src if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return new.upper()
    if letters and src.lstrip()[:1].isupper():
        lead = len(new) - len(new.lstrip())
        return new[:lead] + new[lead:lead + 1].upper() + new[lead + 1:]
    return new


def swap_terms(texts: Iterable[str], pairs: list[tuple[str, str]], mode: Mode = "default") -> SwapResult:
    """Replace each ``a`` of ``pairs`` by its ``b`` in every text.

    A trailing ``*`` on ``a`` is a wildcard: in default mode the whole word that starts with
    the stem is replaced; in reference mode the stem alone is replaced (as the authors did).

    Args:
        texts: phrases to swap.
        pairs: (from, to) terms, in the order the reference applies them.
        mode: ``default`` (word boundaries, case kept) or ``reference`` (lowercase, substring).
    """
    texts = list(texts)
    out = SwapResult(texts=[])
    if mode == "reference":
        plain = [(a.rstrip("*"), b) for a, b in pairs]
        for t in texts:
            t = str(t).lower()
            initial, replaced = [], []
            for a, b in plain:
                if a and a in t:
                    t = t.replace(a, b)
                    initial.append(a)
                    replaced.append(b)
            out.texts.append(t)
            out.initial.append(initial)
            out.replaced.append(replaced)
        return out
    if mode != "default":
        raise ValueError(f"counterfactual mode must be 'default' or 'reference', got {mode!r}")
    # Terms are stripped: the reference's padding spaces stand in for word boundaries here.
    table: dict[str, str] = {}
    wild: list[tuple[str, str]] = []
    for a, b in pairs:
        key, target = a.strip().lower(), b.strip()
        if a.strip().endswith("*"):
            wild.append((key.rstrip("*"), target))
        elif key and key not in table:  # first pair wins, as in the reference's ordered list
            table[key] = target
    alternatives = [re.escape(k) for k in sorted(table, key=len, reverse=True)]
    alternatives += [re.escape(stem) + r"[\w'-]*" for stem, _ in sorted(wild, key=lambda p: -len(p[0]))]
    if not alternatives:
        return SwapResult(texts=[str(t) for t in texts], initial=[[] for _ in texts], replaced=[[] for _ in texts])
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)

    def target_of(word: str) -> str:
        low = word.lower()
        if low in table:
            return table[low]
        for stem, target in wild:
            if low.startswith(stem):
                return target
        return word  # pragma: no cover - the regex only matches listed terms

    for t in texts:
        t = str(t)
        initial, replaced = [], []

        def sub(m: re.Match) -> str:
            new = _match_case(m.group(0), target_of(m.group(0)))
            initial.append(m.group(0))
            replaced.append(new)
            return new

        out.texts.append(pattern.sub(sub, t))
        out.initial.append(initial)
        out.replaced.append(replaced)
    return out


def target_swap(texts: Iterable[str], spec: BiasSpec, direction: Direction = "to_dominant",
                mode: Mode = "default") -> SwapResult:
    """Counterfactuals for the other group: t1 -> t2 (``to_dominant``) or t2 -> t1."""
    pairs = spec.target_pairs if direction == "to_dominant" else [(b, a) for a, b in spec.target_pairs]
    return swap_terms(texts, pairs, mode)


def attribute_swap(texts: Iterable[str], spec: BiasSpec, mode: Mode = "default") -> SwapResult:
    """Replace stereotypical attributes (A1) by their counterparts (A2)."""
    return swap_terms(texts, spec.attribute_swap_pairs(), mode)


def augment(texts: Iterable[str], spec: BiasSpec, mode: Mode = "default") -> dict[str, SwapResult]:
    """Target swaps in every direction the specification allows (the reference's CDA data)."""
    texts = list(texts)
    return {d: target_swap(texts, spec, d, mode) for d in spec.swap_directions}
