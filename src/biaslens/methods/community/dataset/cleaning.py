"""Cleaning of community posts and comments before fine-tuning (spec section 1).

Removes HTML tags and entities, URLs, e-mail addresses, @mentions, ``u/`` and ``r/``
handles, known user names (from an author column), emojis and other symbols, and
counts every removal so a user can see what the data lost.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable

_TAG = re.compile(r"<\s*/?\s*[A-Za-z][^<>]{0,500}>")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
#: markdown link ``[label](url)``: keep the label, drop the address
_MD_LINK = re.compile(r"\[([^\[\]]{0,300})\]\(\s*(?:https?://|www\.)[^)\s]*\s*\)")
_URL = re.compile(r"(?:https?://|ftp://|www\.)[^\s<>\"'\])]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_][A-Za-z0-9_.]{0,49}")
_USER_HANDLE = re.compile(r"(?<![\w/])/?u/[A-Za-z0-9_-]{2,}", re.IGNORECASE)
_SUB_HANDLE = re.compile(r"(?<![\w/])/?r/[A-Za-z0-9_]{2,}", re.IGNORECASE)
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([!?.,;:](?:\s|$))")
_SPACES = re.compile(r"[ \t\f\v]+")
_NEWLINES = re.compile(r"\s*\n\s*(?:\n\s*)+")
#: comments Reddit left behind when a user or moderator deleted them
DELETED_MARKERS = frozenset({"[deleted]", "[removed]", "[deleted by user]"})
#: categories of characters kept: letters, marks, numbers, punctuation, math and currency
#: symbols, spaces. Dropped: emojis and pictographs (So), modifier symbols (Sk), control,
#: private-use, unassigned and surrogate code points.
_KEEP_CATEGORIES = ("L", "M", "N", "P", "Zs", "Sm", "Sc")

#: marks that only decorate emojis (variation selector 16, keycap, skin tones are Sk)
_EMOJI_MARKS = frozenset("\ufe0f\ufe0e\u20e3\u200d")

COUNT_KEYS = ("html_tags", "html_entities", "urls", "emails", "mentions", "user_handles", "subreddit_handles",
              "user_names", "symbols")


def _keep_char(ch: str) -> bool:
    if ch in "\n\t ":
        return True
    if ch in _EMOJI_MARKS:
        return False
    return unicodedata.category(ch).startswith(_KEEP_CATEGORIES)


class TextCleaner:
    """Cleans texts and keeps a running count of what it removed.

    Args:
        user_names: known user names (e.g. every value of the data's author column);
            whole-word occurrences in texts are removed. Names shorter than 3 characters
            and the deleted markers are ignored, so "[deleted]" or "Al" do not wipe words.
    """

    def __init__(self, user_names: Iterable[str] = ()):
        self.counts: Counter[str] = Counter({k: 0 for k in COUNT_KEYS})
        names = sorted({n.strip() for n in user_names if isinstance(n, str) and len(n.strip()) >= 3
                        and n.strip().lower() not in DELETED_MARKERS and n.strip().lower() not in ("deleted", "removed")},
                       key=len, reverse=True)
        # one alternation, longest first; escaped, so names are plain text, never patterns
        self._names = (re.compile(r"(?<![\w])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w])")
                       if names else None)

    def _sub(self, pattern: re.Pattern[str], repl: str, text: str, key: str) -> str:
        text, n = pattern.subn(repl, text)
        self.counts[key] += n
        return text

    def clean(self, text: str) -> str:
        """One cleaned text (may be empty)."""
        if not text:
            return ""
        # entities first (twice: "&amp;lt;" is a double-escaped "<"), then tags they may reveal
        for _ in range(2):
            n = len(_ENTITY.findall(text))
            if not n:
                break
            self.counts["html_entities"] += n
            text = html.unescape(text)
        text = self._sub(_TAG, " ", text, "html_tags")
        text = self._sub(_MD_LINK, r"\1", text, "urls")
        text = self._sub(_URL, "", text, "urls")
        text = self._sub(_EMAIL, "", text, "emails")
        text = self._sub(_USER_HANDLE, "", text, "user_handles")
        text = self._sub(_SUB_HANDLE, "", text, "subreddit_handles")
        text = self._sub(_MENTION, "", text, "mentions")
        if self._names is not None:
            text = self._sub(self._names, "", text, "user_names")
        kept = [ch for ch in text if _keep_char(ch)]
        self.counts["symbols"] += len(text) - len(kept)
        text = "".join(kept)
        text = _SPACES.sub(" ", text)
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)  # "Thanks @bob !" -> "Thanks !" -> "Thanks!"
        text = _NEWLINES.sub("\n", text)
        text = re.sub(r" *\n *", "\n", text)
        return text.strip()


def clean_text(text: str) -> str:
    """Clean one text with a throw-away cleaner (no user names)."""
    return TextCleaner().clean(text)
