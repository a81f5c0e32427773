"""Suites: one declaration per method (:class:`biaslens.suites.base.Suite`), run by
:mod:`biaslens.runner`.

Registered lazily by name ("module:Class") so that importing biaslens stays fast and a
suite's dependencies load only when it runs. Adding a suite is one line here.
"""

from __future__ import annotations

import difflib
import importlib

SUITES: dict[str, str] = {
    "holistic-likelihood": "biaslens.suites.holistic_likelihood:HolisticLikelihood",
    "redditbias": "biaslens.suites.redditbias:RedditBias",
    "fairpair": "biaslens.suites.fairpair:FairPair",
    "holistic-generation": "biaslens.suites.holistic_generation:HolisticGeneration",
    "holistic-offensiveness": "biaslens.suites.holistic_offensiveness:HolisticOffensiveness",
    "community": "biaslens.suites.community:Community",
}

#: suites that later issues add; named here so a user gets a clear message
PLANNED: tuple[str, ...] = ()


class UnknownSuite(ValueError):
    pass


def get_suite(name: str):
    """The suite declaration registered under ``name`` (an instance), or an error with suggestions."""
    if name not in SUITES:
        if name in PLANNED:
            raise UnknownSuite(f"suite {name!r} is not available in this version yet; available: {', '.join(SUITES)}")
        close = difflib.get_close_matches(name, list(SUITES) + list(PLANNED), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownSuite(f"unknown suite {name!r}.{hint} Available: {', '.join(SUITES)}")
    module, attr = SUITES[name].split(":")
    return getattr(importlib.import_module(module), attr)()
