"""Suites: one declaration per method (:class:`biaslens.suites.base.Suite`), run by
:mod:`biaslens.runner`.

Registered lazily by name ("module:Class") so that importing biaslens stays fast and a
suite's dependencies load only when it runs. :data:`SUITES` is the only per-suite registry:
``biaslens run``, the bias card (``Suite.card``) and ``biaslens compare`` (``Suite.compare``)
all read it. It lives in :mod:`biaslens.registry` (which imports nothing): adding a suite
is one line there; its order is the card's order.
"""

from __future__ import annotations

import difflib
import importlib
from typing import TYPE_CHECKING

from biaslens.registry import PLANNED, SUITES

if TYPE_CHECKING:
    from biaslens.suites.base import Suite


class UnknownSuite(ValueError):
    """No suite of that name (the message lists the suites)."""

    kind = "bad_input"


def suite_class(name: str) -> type[Suite]:
    """The suite class registered under ``name`` (its module imported now), or an error with suggestions."""
    if name not in SUITES:
        if name in PLANNED:
            raise UnknownSuite(f"suite {name!r} is not available in this version yet; available: {', '.join(SUITES)}")
        close = difflib.get_close_matches(name, list(SUITES) + list(PLANNED), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownSuite(f"unknown suite {name!r}.{hint} Available: {', '.join(SUITES)}")
    module, attr = SUITES[name].split(":")
    return getattr(importlib.import_module(module), attr)


def get_suite(name: str) -> Suite:
    """The suite declaration registered under ``name`` (an instance), or an error with suggestions."""
    return suite_class(name)()
