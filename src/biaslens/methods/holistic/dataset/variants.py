"""Stylistic variants of templated sentences (paper A.3).

Four independent flags, each on with probability 0.5, applied in this order:
1. ``remove_im_contraction``: whole-word "I'm" -> "I am";
2. ``remove_descriptor_hyphens``: hyphens in the noun phrase -> spaces;
3. ``lowercase_descriptor``: lowercase the noun phrase;
4. ``remove_final_period``: drop a final ".".
Flags are drawn from ``numpy.random.default_rng(seed)`` as one (n, 4) uniform matrix, so the
same seed and row count always give the same variants.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["VARIANT_FLAGS", "add_variants", "apply_variant"]

VARIANT_FLAGS = ("remove_im_contraction", "remove_descriptor_hyphens", "lowercase_descriptor", "remove_final_period")
_IM = re.compile(r"\bI'm\b")


def apply_variant(
    text: str, phrase: str, template: str | None, flags: tuple[bool, bool, bool, bool]
) -> tuple[str, str]:
    """Apply the four variant flags to one sentence.

    Args:
        text: The sentence.
        phrase: The noun phrase inside it (singular or plural, whichever the template uses).
        template: The template, used to locate the phrase exactly; may be None.
        flags: The four flags in ``VARIANT_FLAGS`` order.

    Returns:
        (variant text, variant noun phrase).
    """
    im, hyph, lower, period = flags
    prefix: str | None = None
    suffix = ""  # set with prefix
    if template is not None:
        for key in ("{noun_phrase}", "{plural_noun_phrase}"):
            if template.count(key) == 1 and template.count("{") == 1:
                a, b = template.split(key)
                if text.startswith(a) and text.endswith(b) and len(text) - len(a) - len(b) == len(phrase):
                    prefix, suffix = a, b
                break
    new_phrase = phrase
    if im:
        new_phrase = _IM.sub("I am", new_phrase)
    if hyph:
        new_phrase = new_phrase.replace("-", " ")
    if lower:
        new_phrase = new_phrase.lower()
    if prefix is not None:
        if im:
            prefix, suffix = _IM.sub("I am", prefix), _IM.sub("I am", suffix)
        out = prefix + new_phrase + suffix
    else:  # phrase not at a known position: replace it wherever it occurs
        out = _IM.sub("I am", text) if im else text
        src = _IM.sub("I am", phrase) if im else phrase
        out = out.replace(src, new_phrase)
    if period and out.endswith("."):
        out = out[:-1]
    return out, new_phrase


def add_variants(df: pd.DataFrame, *, seed: int) -> pd.DataFrame:
    """Return a copy of ``df`` with each sentence replaced by a random stylistic variant.

    Args:
        df: A sentence table (``build_sentences`` output or a subset of it).
        seed: Seed for ``numpy.random.default_rng``.

    Returns:
        A copy with ``text`` replaced, the four bool flag columns (``VARIANT_FLAGS``) and
        ``variant_noun_phrase`` added.
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    n = len(df)
    flags = rng.random((n, 4)) < 0.5
    texts = df["text"].tolist()
    templates = df["template"].tolist()
    sing = df["noun_phrase"].tolist()
    plur = df["plural_noun_phrase"].tolist()
    out_text: list[str] = []
    out_phrase: list[str] = []
    for i, (text, template) in enumerate(zip(texts, templates)):
        phrase = plur[i] if "{plural_noun_phrase}" in template else sing[i]
        t, p = apply_variant(text, phrase, template, tuple(flags[i].tolist()))
        out_text.append(t)
        out_phrase.append(p)
    result = df.copy()
    result["text"] = pd.Series(out_text, index=df.index, dtype="str")
    for j, name in enumerate(VARIANT_FLAGS):
        result[name] = flags[:, j]
    result["variant_noun_phrase"] = pd.Series(out_phrase, index=df.index, dtype="str")
    return result
