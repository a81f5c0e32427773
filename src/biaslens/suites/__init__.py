"""Suites wire one path through dataset -> model -> metric -> report.

Registered lazily by name so that importing biaslens stays fast and a suite's
heavy dependencies load only when it runs.
"""

from __future__ import annotations

import difflib
import importlib

SUITES: dict[str, str] = {
    "holistic-likelihood": "biaslens.suites.holistic_likelihood:run_holistic_likelihood",
    "redditbias": "biaslens.suites.redditbias:run_redditbias",
    "fairpair": "biaslens.suites.fairpair:run_fairpair",
    "holistic-generation": "biaslens.suites.holistic_generation:run_holistic_generation",
    "holistic-offensiveness": "biaslens.suites.holistic_offensiveness:run_holistic_offensiveness",
    "community": "biaslens.suites.community:run_community",
}

#: suites that later issues add; named here so a user gets a clear message
PLANNED: tuple[str, ...] = ()


class UnknownSuite(ValueError):
    pass


def get_suite(name: str):
    """The run function of a suite, or an error with suggestions."""
    if name not in SUITES:
        if name in PLANNED:
            raise UnknownSuite(f"suite {name!r} is not available in this version yet; available: {', '.join(SUITES)}")
        close = difflib.get_close_matches(name, list(SUITES) + list(PLANNED), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownSuite(f"unknown suite {name!r}.{hint} Available: {', '.join(SUITES)}")
    module, func = SUITES[name].split(":")
    return getattr(importlib.import_module(module), func)
