"""Shared bits of the scorers."""

from __future__ import annotations


class ScorerError(RuntimeError):
    """A scorer is missing or cannot run; the message says how to fix it."""

    kind = "scorer"
