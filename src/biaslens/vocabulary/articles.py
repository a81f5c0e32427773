"""Indefinite article choice ("a"/"an").

``default_article`` is the released generator's rule (first letter a/e/i/o/u -> "an"), kept for
exact reproduction, mistakes included ("a 80-year-old", "an European", "an one-percenter").
``sound_article`` is the ``fix_articles`` option: a few pronunciation rules instead of spelling.
This is a documented deviation from the reference dataset (unique-text counts do not change).
"""

from __future__ import annotations

import re

__all__ = ["default_article", "sound_article", "choose_article"]

# Letters whose English names start with a vowel sound ("an FTM", "an MTF", "an LGBT person").
_VOWEL_SOUND_LETTERS = set("AEFHILMNORSX")
# Spellings that start with a vowel letter but a consonant sound: "you" (uni-, use, Eu-) and "w" (one).
_CONSONANT_SOUND_PREFIXES = ("eu", "one", "once", "uni", "unan", "use", "usu", "uti", "ura", "uro", "ubiq", "ewe")
# Silent h: vowel sound although spelled with a consonant.
_VOWEL_SOUND_PREFIXES = ("hour", "honest", "honor", "honour", "heir")
_FIRST_TOKEN = re.compile(r"[A-Za-z0-9]+")


def default_article(word: str) -> str:
    """The reference rule: "an" if the first letter (lowercased) is a vowel, else "a"."""
    return "an" if word[:1].lower() in "aeiou" and word else "a"


def _number_article(digits: str) -> str:
    # Spoken numbers starting with a vowel sound: eight..., eighty..., eleven, eighteen,
    # and their thousands ("11,000" -> "eleven thousand"); digits only, no separators.
    if digits.startswith("8"):
        return "an"
    if digits[:2] in ("11", "18") and len(digits) % 3 == 2:
        return "an"
    return "a"


def sound_article(word: str) -> str:
    """Choose "a"/"an" from the pronunciation of ``word``'s start (the ``fix_articles`` rules).

    Examples: "80-year-old" -> "an", "European" -> "a", "one-percenter" -> "a",
    "FTM" -> "an", "US-born" -> "a", "hour" -> "an", "NIMBY" -> "a".
    """
    m = _FIRST_TOKEN.match(word)
    if not m:
        return default_article(word)
    token = m.group(0)
    if token[0].isdigit():
        return _number_article(re.split(r"\D", token, maxsplit=1)[0])  # the leading digits
    letters = re.sub(r"[^A-Za-z]", "", token)
    # Initialisms are read letter by letter: all capitals and either short or vowel-less
    # ("FTM", "MTF", "F2M", "US"); capitalised words with vowels ("NIMBY", "BIPOC") are read as words.
    if len(letters) >= 1 and letters.isupper() and (len(letters) <= 2 or not re.search(r"[AEIOU]", letters)):
        return "an" if letters[0] in _VOWEL_SOUND_LETTERS else "a"
    low = token.lower()
    if low.startswith(_VOWEL_SOUND_PREFIXES):
        return "an"
    if low.startswith(_CONSONANT_SOUND_PREFIXES):
        return "a"
    return default_article(word)


def choose_article(word: str, override: str | None = None, fix: bool = False) -> str:
    """Article before ``word``: an explicit override wins, else the reference or the sound rule."""
    if override:
        return override
    return sound_article(word) if fix else default_article(word)
