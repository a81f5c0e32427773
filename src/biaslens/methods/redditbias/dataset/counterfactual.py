"""Counterfactual phrases: swap target terms (t1 <-> t2) or attributes (a1 -> a2).

Two modes:

- ``reference``: what the RedditBias authors did. The phrase is lowercased and each pair is
  applied in order by plain substring replacement (no word boundaries; "cook" -> "officer"
  turns "cookie" into "officerie"); for race and religion t1 and t2 are exchanged within the
  phrase, with the authors' one-way exceptions. Use it to reproduce their files.
- ``default``: the shared term matcher (:mod:`.terms`): whole words and their plural and
  possessive forms ("Muslims'" -> "Christians'", "jewelry" untouched), one pass over all
  terms (longest first, so a swapped term is never swapped again), case kept, t1 <-> t2
  exchanged where the authors exchanged. Use it for new data.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from biaslens.methods.redditbias.dataset.specs import BiasSpec, Direction
from biaslens.methods.redditbias.dataset.terms import matcher
from biaslens.text import match_case

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

    #: per text, whether it changed (reference mode: an exchange can change a phrase whose
    #: ``initial`` record, kept in the authors' style, stays empty)
    modified: list[bool] = field(default_factory=list)

    @property
    def changed(self) -> list[bool]:
        return self.modified or [bool(i) for i in self.initial]

    @property
    def n_changed(self) -> int:
        return sum(self.changed)

    @property
    def n_unchanged(self) -> int:
        return len(self.texts) - self.n_changed


def _reference_swap(text: str, pairs: list[tuple[str, str]], exchange: bool,
                    plain_if: dict[str, list[str]]) -> tuple[str, list[str], list[str]]:
    """The authors' swap of one lowercased phrase: each pair in order, by substring.

    With ``exchange`` (race, religion), ``a`` and ``b`` trade places within the phrase (via a
    placeholder, so "whites ... than blacks" stays a contrast), except that a pair listed in
    ``plain_if`` is replaced one way when one of its strings is present (the authors' special
    cases, where ``b`` is also the replacement of an earlier pair). ``initial``/``replaced``
    follow the authors' record: ``b`` is now present and ``a`` was in the original.
    """
    original, initial, replaced = text, [], []
    for a, b in pairs:
        conditions = plain_if.get(a.strip(), None)
        if not exchange or (conditions is not None and any(c in text for c in conditions)):
            text = text.replace(a, b)
        else:
            text = text.replace(a, "\0").replace(b, a).replace("\0", b)
        if b in text and a in original:
            initial.append(a)
            replaced.append(b)
    return text, initial, replaced


def swap_terms(texts: Iterable[str], pairs: list[tuple[str, str]], mode: Mode = "default", *,
               exchange: bool = False, plain_if: dict[str, list[str]] | None = None,
               inflections: bool = True) -> SwapResult:
    """Replace each ``a`` of ``pairs`` by its ``b`` in every text (and ``b`` by ``a`` with ``exchange``).

    A trailing ``*`` on ``a`` is a wildcard: in default mode the whole word that starts with
    the stem is replaced; in reference mode the stem alone is replaced (as the authors did).

    Args:
        texts: phrases to swap.
        pairs: (from, to) terms, in the order the reference applies them.
        mode: ``default`` (shared term matcher: whole words and their plural/possessive forms,
            case kept, one pass) or ``reference`` (the authors' lowercase substring swap).
        exchange: t1 <-> t2 within one phrase ("whites are worse than blacks" -> "blacks are
            worse than whites"); in default mode a t2 maps back to the first t1 it is paired with.
        plain_if: reference mode only: the authors' one-way exceptions to the exchange.
        inflections: default mode: match plural and possessive forms too.
    """
    texts = list(texts)
    out = SwapResult(texts=[])
    if mode == "reference":
        plain = [(a.rstrip("*"), b) for a, b in pairs if a.rstrip("*")]
        for t in texts:
            low = str(t).lower()
            t, initial, replaced = _reference_swap(low, plain, exchange, plain_if or {})
            out.modified.append(t != low)
            out.texts.append(t)
            out.initial.append(initial)
            out.replaced.append(replaced)
        return out
    if mode != "default":
        raise ValueError(f"counterfactual mode must be 'default' or 'reference', got {mode!r}")
    # the reference's padding spaces stood in for word boundaries: the matcher has its own
    table: dict[str, str] = {}
    for a, b in pairs + ([(b, a) for a, b in pairs] if exchange else []):
        key = a.strip().lower()
        if key and key not in table:  # first pair wins, as in the reference's ordered list
            table[key] = b.strip().rstrip("*")
    keys = list(table)
    find = matcher(tuple(keys), inflections)
    for t in texts:
        t = str(t)
        initial, replaced, parts, pos = [], [], [], 0
        for m in find.find(t):
            target = table[keys[m.term]]
            new = match_case(m.surface, target if keys[m.term].endswith("*") else m.rewrite(target))
            parts += [t[pos:m.start], new]
            pos = m.end
            initial.append(m.surface)
            replaced.append(new)
        out.texts.append("".join(parts) + t[pos:])
        out.initial.append(initial)
        out.replaced.append(replaced)
    return out


def target_swap(texts: Iterable[str], spec: BiasSpec, direction: Direction = "to_dominant",
                mode: Mode = "default") -> SwapResult:
    """Counterfactuals for the other group: t1 -> t2 (``to_dominant``) or t2 -> t1.

    Where the specification swaps both ways (race, religion), the phrase's terms of the other
    group are exchanged too, as the authors did.
    """
    pairs = spec.target_pairs if direction == "to_dominant" else [(b, a) for a, b in spec.target_pairs]
    plain_if = spec.reference_plain_if if direction == "to_dominant" else {}
    return swap_terms(texts, pairs, mode, exchange=spec.exchanges, plain_if=plain_if)


def attribute_swap(texts: Iterable[str], spec: BiasSpec, mode: Mode = "default") -> SwapResult:
    """Replace stereotypical attributes (A1) by their counterparts (A2)."""
    return swap_terms(texts, spec.attribute_swap_pairs(), mode)


def augment(texts: Iterable[str], spec: BiasSpec, mode: Mode = "default",
            sides: Literal["one-sided", "two-sided"] = "one-sided") -> dict[str, SwapResult]:
    """Target-swapped copies for CDA: ``one-sided`` is the paper's rule (minoritized ->
    dominant only, so the data doubles); ``two-sided`` adds t2 -> t1 copies too."""
    if sides not in ("one-sided", "two-sided"):
        raise ValueError(f"CDA sides must be 'one-sided' or 'two-sided', got {sides!r}")
    texts = list(texts)
    directions: list[Direction] = ["to_dominant", "to_minoritized"] if sides == "two-sided" else ["to_dominant"]
    return {d: target_swap(texts, spec, d, mode) for d in directions}
