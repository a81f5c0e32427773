"""Small text helpers every layer may use (no biaslens imports): counted nouns ("1 template",
"2 templates"), cutting text for display without breaking a character, and a model's display name."""

from __future__ import annotations

import numbers
import unicodedata
from pathlib import Path
from typing import Any

ELLIPSIS = "\u2026"
_ZWJ = "\u200d"


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``"1 template"``, ``"3 templates"``, ``"1,200 sentences"``; ``many`` for irregular plurals
    (``plural(n, "axis", "axes")``). Counts get a thousands separator."""
    whole = isinstance(n, numbers.Integral) or (isinstance(n, numbers.Real) and float(n).is_integer())
    shown = f"{int(n):,}" if whole else f"{float(n):g}"
    return f"{shown} {word if n == 1 else (many or word + 's')}"


def _extends(ch: str) -> bool:
    """Whether ``ch`` belongs to the grapheme before it: combining marks, joiners, variation
    selectors, emoji skin tones and tag characters (flag subdivisions)."""
    o = ord(ch)
    return (unicodedata.category(ch) in ("Mn", "Me", "Mc") or ch == _ZWJ or 0xFE00 <= o <= 0xFE0F
            or 0xE0100 <= o <= 0xE01EF or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F
            or 0xDC00 <= o <= 0xDFFF)  # a lone low surrogate (text decoded with surrogateescape/JSON)


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def grapheme_cut(text: str, limit: int) -> int:
    """The largest index <= ``limit`` at which ``text`` can be cut without splitting a user-perceived
    character: not before a combining mark, joiner or modifier, not after a zero-width joiner, not
    inside a surrogate pair or a regional-indicator (flag) pair."""
    cut = max(0, min(limit, len(text)))
    while 0 < cut < len(text):
        if _extends(text[cut]) or text[cut - 1] == _ZWJ or 0xD800 <= ord(text[cut - 1]) <= 0xDBFF:
            cut -= 1
            continue
        if _regional(text[cut]) and _regional(text[cut - 1]):
            run = 0  # flags pair up from the start of a run of regional indicators
            while cut - run > 0 and _regional(text[cut - run - 1]):
                run += 1
            if run % 2:
                cut -= 1
                continue
        break
    return cut


def shorten(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else cut on a character (grapheme) boundary
    and ended with an ellipsis, the whole at most ``limit`` characters. A trailing U+FFFD (the
    decoder's mark for a multi-byte character cut by a token limit) is a cut too, so it becomes the
    ellipsis rather than showing as a broken character."""
    text = str(text)
    broken = text.endswith("\ufffd")
    if broken:
        text = text.rstrip("\ufffd")
    if len(text) <= limit and not broken:
        return text
    if len(text) <= limit - 1:
        return text.rstrip() + ELLIPSIS
    return text[:grapheme_cut(text, limit - 1)].rstrip() + ELLIPSIS


def match_case(src: str, new: str) -> str:
    """``new`` written in the case pattern of ``src`` (UPPER, Title or lower), word by word when
    both have the same number of words ("African Americans" -> "Anglo Americans")."""
    src_words, new_words = src.split(), new.split()
    if len(src_words) > 1 and len(src_words) == len(new_words):
        return " ".join(match_case(a, b) for a, b in zip(src_words, new_words))
    letters = [c for c in src if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return new.upper()
    if letters and src.lstrip()[:1].isupper():
        lead = len(new) - len(new.lstrip())
        return new[:lead] + new[lead:lead + 1].upper() + new[lead + 1:]
    return new


def model_name(model: Any) -> str:
    """A model as reports and tables name it: the last part of its folder or id ('models/ft-a' -> 'ft-a')."""
    return Path(str(model)).name or str(model)


def model_names(models: Any) -> str:
    """A run's models as a report lists them: their names, comma-separated."""
    return ", ".join(model_name(m) for m in models or [])


def decoding_in_words(params: Any, absent: str = "precomputed continuations") -> str:
    """A run's decoding settings as a report shows them ('max new tokens 32, do sample False, top p 0.9'),
    not as a Python repr; settings that are off (None, 0, False) are left out, except the two that say
    how the text was made. ``absent`` when the run read its text instead of generating it."""
    if not isinstance(params, dict) or not params:
        return absent
    shown = {k: v for k, v in params.items() if v not in (None, 0, False) or k in ("do_sample", "max_new_tokens")}
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in shown.items())
