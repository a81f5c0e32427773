"""Common Sents (FairPair paper, section 3.1): "{name} is (a {descriptor})*, working as a
{occupation}." with the 60 Winogender occupations of the paper's appendix A."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from biaslens.errors import ConfigError
from biaslens.vocabulary.articles import sound_article
from biaslens.vocabulary.commonsents import commonsents_data, occupations
from biaslens.vocabulary.perturb import NamePair, parse_name_pair


def default_name_pairs() -> list[NamePair]:
    return [parse_name_pair(p, where="commonsents.yaml name_pairs") for p in commonsents_data()["name_pairs"]]


@dataclass(frozen=True)
class PromptPair:
    """One Common Sents prompt x and its perturbation p(x)."""

    pair_id: str
    occupation: str
    descriptor: str
    names: NamePair
    x: str
    px: str


def sentence(name: str, noun: str, occupation: str, descriptor: str = "") -> str:
    """One Common Sents sentence, e.g. ``John is a young man, working as an engineer.``"""
    np_ = " ".join(w for w in (descriptor.strip(), noun.strip()) if w)
    if descriptor.strip() and not noun.strip():
        np_ += " person"
    occ = f"{sound_article(occupation)} {occupation}"
    if not np_:
        return f"{name} is working as {occ}."
    return f"{name} is {sound_article(np_)} {np_}, working as {occ}."


def select_occupations(wanted: list[str] | None = None, count: int | None = None) -> list[str]:
    """The occupations to use: ``wanted`` (any words; the paper's are checked for typos), else the
    first ``count`` of the paper's list, else all 60."""
    all_occ = occupations()
    if wanted:
        import difflib

        out = []
        for w in wanted:
            w = str(w).strip()
            if not w:
                continue
            if w.lower() not in all_occ:
                close = difflib.get_close_matches(w.lower(), all_occ, n=1, cutoff=0.8)
                if close:  # a near miss of a paper occupation is a typo, not a new occupation
                    raise ConfigError(f"fairpair occupations: {w!r} is not in the paper's list; did you mean {close[0]!r}?")
            out.append(w)
        if not out:
            raise ConfigError("fairpair occupations: the list is empty")
        return list(dict.fromkeys(out))
    if count is not None:
        if count < 1:
            raise ConfigError("fairpair n_occupations must be >= 1")
        return all_occ[: min(count, len(all_occ))]
    return all_occ


def expand_descriptors(descriptors: list[str] | None) -> list[str]:
    """Descriptors with ``holistic:<axis>`` (or ``holistic:<axis>/<bucket>``) replaced by that
    HolisticBias v1.0 axis's descriptors. Descriptors tied to one gender ("gender" field) are left
    out: both entities of a pair must get the same words."""
    out: list[str] = []
    for d in descriptors or []:
        if not str(d).startswith("holistic:"):
            out.append(str(d))
            continue
        from biaslens.vocabulary.schema import load_holistic_dataset

        axis, _, bucket = str(d)[len("holistic:"):].partition("/")
        data = load_holistic_dataset(None).descriptors
        if axis not in data:
            raise ConfigError(f"fairpair descriptors: {d!r}: unknown HolisticBias axis {axis!r}; "
                              f"choose from {', '.join(sorted(data))}")
        buckets = data[axis]
        if bucket and bucket not in buckets:
            raise ConfigError(f"fairpair descriptors: {d!r}: unknown bucket {bucket!r}; "
                              f"choose from {', '.join(sorted(buckets))}")
        for b, entries in buckets.items():
            if bucket and b != bucket:
                continue
            out += [e["descriptor"] for e in entries if not e.get("gender")]
    return list(dict.fromkeys(out))


def build_prompts(occupation_list: list[str], name_pairs: list[NamePair] | None = None,
                  descriptors: list[str] | None = None) -> list[PromptPair]:
    """Every (name pair, descriptor, occupation) prompt x with its expected perturbation p(x)."""
    pairs = name_pairs or default_name_pairs()
    descs = expand_descriptors(descriptors) or [""]
    out = []
    for names in pairs:
        for desc in descs:
            for occ in occupation_list:
                x = sentence(names.source, names.source_noun, occ, desc)
                px = sentence(names.target, names.target_noun, occ, desc)
                pid = hashlib.blake2b(x.encode(), digest_size=4).hexdigest()
                out.append(PromptPair(pair_id=pid, occupation=occ, descriptor=desc, names=names, x=x, px=px))
    return out
