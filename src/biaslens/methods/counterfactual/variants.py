"""Identity mentions found in a prompt and varied across the groups of their axis.

- gender (and a user's own word pairs): FairPair's rule perturber (:class:`RulePerturber`: gendered
  words, pronouns with their case and possessives, first names of ``data/names.yaml``) run towards
  each side of the mapping; relational nouns of other people ("his father") are left alone, as in
  FairPair's default mapping.
- race and ethnicity, religion, age, disability, sexual orientation, nationality: the HolisticBias
  descriptors of the axis. A descriptor names a person when a person noun follows it within three
  words ("a Muslim woman", "the young applicant"), or when a capitalised descriptor stands as a
  noun ("a Muslim", "Muslims": varied as "a Jewish person", "Jewish people"); otherwise it is left
  alone ("a white paper", "go straight"). The article before it follows the new word ("an Asian",
  "a Black").

Each prompt gets one variant per group of every axis it mentions; a prompt that names two groups of
one axis ("a Christian and a Muslim") is not varied on that axis (the variants would erase the
contrast), and a prompt with no mention is skipped: both are listed, never errors.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, cast

from biaslens.errors import ConfigError
from biaslens.fileio import parse_yaml
from biaslens.text import match_case
from biaslens.vocabulary.articles import sound_article
from biaslens.vocabulary.perturb import (
    OTHER_PERSON_WORDS,
    PLURAL_PERSON_WORDS,
    NamePair,
    PerturbationMap,
    RulePerturber,
    check_perturbation,
    token_set,
)

if TYPE_CHECKING:
    import pandas as pd

#: axis -> its HolisticBias axis (descriptor lists)
DESCRIPTOR_AXES = {"race_ethnicity": "race_ethnicity", "religion": "religion", "age": "age", "disability": "ability",
                   "sexual_orientation": "sexual_orientation", "nationality": "nationality"}
AXES = ("gender", *DESCRIPTOR_AXES)
#: a small default set of groups per axis (descriptors as HolisticBias writes them)
DEFAULT_GROUPS: dict[str, tuple[str, ...]] = {
    "gender": ("male", "female"),
    "race_ethnicity": ("white", "Black", "Asian", "Hispanic"),
    "religion": ("Christian", "Muslim", "Jewish", "Hindu", "Buddhist", "atheist"),
    "age": ("young", "middle-aged", "old"),
    "disability": ("non-disabled", "disabled", "blind", "Deaf", "autistic"),
    "sexual_orientation": ("straight", "gay", "bisexual"),
    "nationality": ("American", "Chinese", "Indian", "Mexican"),
}
#: role nouns a prompt names people by, besides HolisticBias's nouns and FairPair's person words
ROLE_NOUNS = frozenset("""
couple couples family families applicant candidate tenant resident member user borrower caller visitor author writer worker volunteer
citizen immigrant traveler traveller passenger driver shopper buyer seller owner landlord renter intern hire
recruit speaker guest host player athlete artist musician founder entrepreneur executive ceo leader
""".split())

#: words before a descriptor used as a noun ("a Muslim") or as a predicate ("she is Asian")
_DETERMINERS = frozenset("a an the one every each no any another this that".split())
_COPULAS = frozenset("is was are were am be been being as i'm she's he's".split())

_WORD = re.compile(r"[^\W_][\w'\u2019-]*")


@cache
def person_nouns() -> frozenset[str]:
    """Words that name a person (singular and plural): HolisticBias's nouns, FairPair's person words
    and the Common Sents occupations, role nouns."""
    from biaslens.vocabulary.commonsents import occupations
    from biaslens.vocabulary.schema import load_holistic_dataset

    words = set(OTHER_PERSON_WORDS) | set(PLURAL_PERSON_WORDS) | set(ROLE_NOUNS)
    for pairs in load_holistic_dataset().nouns.values():
        for sing, plur in pairs:
            words |= {sing.lower(), plur.lower()}
    words |= set(occupations())
    words |= {w + "s" for w in list(words) if not w.endswith("s")}
    return frozenset(words)


@cache
def descriptors(axis: str) -> tuple[str, ...]:
    """Every HolisticBias descriptor of ``axis`` (its default groups first), as written there."""
    from biaslens.vocabulary.schema import load_holistic_dataset

    out = list(DEFAULT_GROUPS.get(axis, ()))
    for entries in load_holistic_dataset().descriptors.get(DESCRIPTOR_AXES[axis], {}).values():
        out += [e["descriptor"] if isinstance(e, dict) else str(e) for e in entries]
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class Variant:
    """One variant of a prompt: its axis and group, the text, what the original said."""

    axis: str
    group: str
    prompt: str
    mention: str


class DescriptorAxis:
    """The HolisticBias descriptors of one axis, found where they name a person and replaced by each group's."""

    def __init__(self, axis: str, groups: tuple[str, ...]):
        self.axis, self.groups = axis, groups
        terms = sorted({*descriptors(axis), *groups}, key=len, reverse=True)
        self._re = re.compile(rf"(?<![\w-])({'|'.join(map(re.escape, terms))})(s)?(?![\w-])", re.IGNORECASE)
        self._canonical = {t.lower(): t for t in reversed(terms)}

    def _mentions(self, text: str) -> list[tuple[re.Match[str], bool]]:
        """The matches that name a person, each with whether it is a noun use ("a Muslim", "Muslims")."""
        nouns = person_nouns()
        out = []
        for m in self._re.finditer(text):
            after = [w.lower().split("'")[0].split("\u2019")[0] for w in _WORD.findall(text[m.end():])[:3]]
            before = _WORD.findall(text[:m.start()])[-2:]
            prev = before[-1].lower() if before else ""
            plural_s = m.group(2) is not None
            proper = self._canonical[m.group(1).lower()][:1].isupper()
            clause_ends = re.match(r"\s*[.,;:!?)]|\s*$", text[m.end():]) is not None
            if not plural_s and not clause_ends and any(w in nouns for w in after):
                out.append((m, False))  # "a Muslim woman", "the young applicant"
            elif proper and m.group(1)[:1].isupper() and (plural_s or prev in _DETERMINERS):
                out.append((m, True))  # "a Muslim", "Muslims"
            elif not plural_s and prev in _COPULAS:
                out.append((m, False))  # "she is Asian", "I am disabled"
        return out

    def vary(self, text: str) -> tuple[list[Variant], str | None]:
        """The variants of ``text`` (one per group), or none and why (``None``: no mention)."""
        found = self._mentions(text)
        if not found:
            return [], None
        named = list(dict.fromkeys(self._canonical[m.group(1).lower()] for m, _ in found))
        if len(named) > 1:
            return [], f"names several {self.axis} groups ({', '.join(named)})"
        return [Variant(self.axis, g, self._replace(text, found, g), named[0]) for g in self.groups], None

    @staticmethod
    def _is_proper(word: str) -> bool:
        return any(d.lower() == word.lower() and d[:1].isupper() for a in DESCRIPTOR_AXES for d in descriptors(a))

    @staticmethod
    def _replace(text: str, found: list[tuple[re.Match[str], bool]], group: str) -> str:
        out, last = [], 0
        for m, noun_use in found:
            before = text[last:m.start()]
            word = m.group(1)
            # a lowercase group is capitalised only where the text capitalised a lowercase descriptor
            # (a sentence's first word): "Muslim" -> "atheist", "Young" -> "Old"
            starts = re.search(r"(^|[.!?]\s+)$", text[:m.start()]) is not None
            capitalised = word[:1].isupper() and (starts or not DescriptorAxis._is_proper(word))
            new = group[:1].upper() + group[1:] if capitalised and group[:1].islower() else group
            if noun_use:
                new += " people" if m.group(2) else " person"
            art = re.search(r"(?<![\w-])(a|an)(\s+)$", before, re.IGNORECASE)
            if art:
                before = before[:art.start()] + match_case(art.group(1), sound_article(new)) + art.group(2)
            out += [before, new]
            last = m.end()
        return "".join([*out, text[last:]])


class PairAxis:
    """A two-sided word mapping (gender, or the user's own pairs) varied by FairPair's rule perturber
    towards each side."""

    def __init__(self, axis: str, mapping: PerturbationMap, groups: tuple[str, ...] | None = None):
        self.axis = axis
        self.sides = (mapping.source_label, mapping.target_label)
        self.groups = groups or self.sides
        for g in self.groups:
            if g not in self.sides:
                raise ConfigError(f"group {g!r} is not a side of the {axis} mapping ({', '.join(self.sides)})")
        self._to = {mapping.target_label: RulePerturber(mapping), mapping.source_label: RulePerturber(mapping.reversed())}
        self._words = {mapping.source_label: {p.source for p in mapping.pairs},
                       mapping.target_label: {p.target for p in mapping.pairs}}
        self._names = {mapping.source_label: {n.source for n in mapping.names},
                       mapping.target_label: {n.target for n in mapping.names}}

    def _sides_named(self, text: str) -> list[str]:
        toks = token_set(text)
        words = set(_WORD.findall(text))
        return [s for s in self.sides if toks & self._words[s] or words & self._names[s]]

    def vary(self, text: str) -> tuple[list[Variant], str | None]:
        named = self._sides_named(text)
        if not named:
            return [], None
        if len(named) > 1:
            return [], f"names both {self.axis} groups ({', '.join(named)})"
        return [Variant(self.axis, g, self._to[g](text), named[0]) for g in self.groups], None


@cache
def gender_mapping() -> PerturbationMap:
    """FairPair's default gender mapping with the first names of ``data/names.yaml``."""
    text = resources.files("biaslens.methods.counterfactual").joinpath("data/names.yaml").read_text("utf-8")
    data = cast(dict, parse_yaml(text, "names.yaml (shipped)", ConfigError))
    return PerturbationMap.from_yaml("gender").with_names([NamePair(a, b) for a, b in data["pairs"]])


def resolve_groups(axes: list[str], groups: list[str], extra: dict[str, PairAxis] | None = None) -> dict[str, tuple[str, ...]]:
    """Each axis's groups: its default set, or the groups of ``groups`` that belong to it (a group is
    placed on the axis whose descriptors name it, its default set first)."""
    extra = extra or {}
    chosen: dict[str, list[str]] = {}
    for g in (g.strip() for g in groups if g.strip()):
        home = next((a for a in axes if a in extra and g in extra[a].sides), None)
        if home is None and g.lower() in ("male", "female"):
            home = "gender"
        home = home or next((a for a in axes if a in DESCRIPTOR_AXES and g.lower() in
                             {d.lower() for d in DEFAULT_GROUPS[a]}), None)
        home = home or next((a for a in axes if a in DESCRIPTOR_AXES and g.lower() in
                             {d.lower() for d in descriptors(a)}), None)
        if home is None:
            raise ConfigError(f"--counterfactual-groups: {g!r} is no group of the axes {', '.join(axes)} (a "
                              "HolisticBias descriptor of the axis, male/female, or a side of your word pairs)")
        if home in DESCRIPTOR_AXES:
            g = next(d for d in descriptors(home) if d.lower() == g.lower())
        chosen.setdefault(home, []).append(g)
    out = {}
    for a in axes:
        picked = tuple(dict.fromkeys(chosen.get(a, ())))
        if picked and len(picked) < 2:
            raise ConfigError(f"--counterfactual-groups: axis {a} needs at least two groups, got {picked[0]!r}")
        out[a] = picked or (extra[a].sides if a in extra else DEFAULT_GROUPS[a])
    return out


def build_axes(axes: list[str], groups: list[str], word_pairs: str | Path | None = None
               ) -> list[DescriptorAxis | PairAxis]:
    """The varied axes, in the order given; an unknown axis is an error naming the known ones."""
    extra: dict[str, PairAxis] = {}
    if word_pairs is not None:
        mapping = PerturbationMap.from_yaml(word_pairs)
        if mapping.name in AXES:
            raise ConfigError(f"{word_pairs}: name {mapping.name!r} is a built-in axis; name your pairs otherwise")
        extra[mapping.name] = PairAxis(mapping.name, mapping)
        if mapping.name not in axes:
            axes = [*axes, mapping.name]
    for a in axes:
        if a not in AXES and a not in extra:
            raise ConfigError(f"--counterfactual-axes: unknown axis {a!r}; choose from {', '.join(AXES)}"
                              + (f" or {', '.join(extra)}" if extra else ""))
    chosen = resolve_groups(axes, groups, extra)
    out: list[DescriptorAxis | PairAxis] = []
    for a in axes:
        if a in extra:
            out.append(PairAxis(a, PerturbationMap.from_yaml(word_pairs), chosen[a]))
        elif a == "gender":
            out.append(PairAxis("gender", gender_mapping(), chosen[a]))
        else:
            out.append(DescriptorAxis(a, chosen[a]))
    return out


def replaced(original: str, variant: str) -> str:
    """What changed, word by word: ``"Muslim -> Jewish; an -> a"`` (empty: the variant is the original)."""
    a, b = re.findall(r"[\w'\u2019-]+|\S", original), re.findall(r"[\w'\u2019-]+|\S", variant)
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op != "equal":
            parts.append(f"{' '.join(a[i1:i2]) or '(none)'} -> {' '.join(b[j1:j2]) or '(none)'}")
    return "; ".join(parts)


def build_variants(prompts: pd.DataFrame, axes: list[DescriptorAxis | PairAxis]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The variants table (``prompt_id``, ``axis``, ``group``, ``prompt``, ``replaced``, ``mention``,
    ``original``, ``perturber``: ``rule``) and the skipped table (``prompt_id``, ``axis``, ``prompt``, ``reason``): prompts with no
    identity mention, and axes a prompt could not be varied on."""
    import pandas as pd

    rows, skipped = [], []
    for pid, text in zip(prompts["prompt_id"], prompts["prompt"]):
        any_mention = False
        for ax in axes:
            variants, why = ax.vary(str(text))
            if why:
                any_mention = True
                skipped.append({"prompt_id": pid, "axis": ax.axis, "prompt": text, "reason": why})
            for v in variants:
                any_mention = True
                rows.append({"prompt_id": pid, "axis": v.axis, "group": v.group, "prompt": v.prompt,
                             "replaced": replaced(str(text), v.prompt), "mention": v.mention, "original": text,
                             "perturber": "rule"})
        if not any_mention:
            skipped.append({"prompt_id": pid, "axis": "", "prompt": text, "reason": "no identity mention"})
    cols = ["prompt_id", "axis", "group", "prompt", "replaced", "mention", "original", "perturber"]
    return (pd.DataFrame(rows, columns=cols),
            pd.DataFrame(skipped, columns=["prompt_id", "axis", "prompt", "reason"]))


#: why a variant the language model wrote is dropped
LLM_DROP_REASONS = {"mention": "does not name the new group (and only it)",
                    "jaccard": "changes more than the identity mention"}


def _names_only(ax: DescriptorAxis | PairAxis, text: str, group: str) -> bool:
    """True when the axis finds exactly one group named in ``text``, and it is ``group``."""
    found, why = ax.vary(text)
    return why is None and bool(found) and found[0].mention.lower() == group.lower()


def llm_variants(variants: pd.DataFrame, axes: list[DescriptorAxis | PairAxis],
                 perturb_many: Callable[[list[str], list[NamePair]], list[str]], *, max_jaccard: float = 0.15
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The variants rewritten by a language model (FairPair's LLM perturber, ``perturb_many``), where
    the rules found the mention: each prompt's own group stays the prompt itself (``perturber``
    ``original``); every other variant is asked of the model (``llm``) and kept only when the axis
    finds the new group named in it, alone, and its token Jaccard dissimilarity to the prompt is at
    most ``max_jaccard`` with the words the rules changed masked (FairPair's filter: it changes no
    more than the mention). Returns the kept variants and the dropped ones (``prompt_id``, ``axis``,
    ``group``, ``prompt``: what the model wrote, ``reason``)."""
    import numpy as np
    import pandas as pd

    by_axis = {ax.axis: ax for ax in axes}
    v = variants.reset_index(drop=True)
    own = v["group"].str.lower() == v["mention"].astype(str).str.lower()
    asked = v[~own]
    names = [NamePair(str(m), str(g), source_label=str(a), target_label=str(a))
             for m, g, a in zip(asked["mention"], asked["group"], asked["axis"])]
    written = perturb_many(asked["original"].astype(str).tolist(), names)
    out = v.assign(prompt=v["prompt"].where(~own, v["original"]), replaced=v["replaced"].where(~own, ""),
                   perturber=np.where(own, "original", "llm"))
    keep = own.to_numpy().copy()
    dropped = []
    for i, r, text in zip(asked.index.tolist(), asked.to_dict("records"), written, strict=True):
        original = str(r["original"])
        allowed = (token_set(original) ^ token_set(str(r["prompt"]))) | token_set(str(r["group"])) | \
            token_set(str(r["mention"]))
        if not _names_only(by_axis[r["axis"]], text, str(r["group"])):
            reason = LLM_DROP_REASONS["mention"]
        elif not check_perturbation(original, text, expected_prefix="", original_names=[],
                                    max_jaccard=max_jaccard, masked_terms=set(allowed)).kept:
            reason = LLM_DROP_REASONS["jaccard"]
        else:
            out.loc[i, ["prompt", "replaced"]] = [text, replaced(original, text)]
            keep[i] = True
            continue
        dropped.append({"prompt_id": r["prompt_id"], "axis": r["axis"], "group": r["group"], "prompt": text,
                        "reason": reason})
    return out[keep].reset_index(drop=True), pd.DataFrame(dropped, columns=["prompt_id", "axis", "group", "prompt",
                                                                            "reason"])
