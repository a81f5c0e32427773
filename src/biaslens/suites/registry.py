"""The suite registry: one line per suite, ``name -> "module:Class"`` (imported lazily).

It imports nothing, so that :mod:`biaslens.config` can compose the run configuration from the
suites' options modules without importing any suite code (no import circle).
"""

SUITES: dict[str, str] = {
    "holistic-likelihood": "biaslens.suites.holistic_likelihood:HolisticLikelihood",
    "redditbias": "biaslens.suites.redditbias:RedditBias",
    "holistic-generation": "biaslens.suites.holistic_generation:HolisticGeneration",
    "fairpair": "biaslens.suites.fairpair:FairPair",
    "holistic-offensiveness": "biaslens.suites.holistic_offensiveness:HolisticOffensiveness",
    "community": "biaslens.suites.community:Community",
    "bbq": "biaslens.suites.bbq:Bbq",
    "bold": "biaslens.suites.bold:Bold",
    "crows-pairs": "biaslens.suites.crows_pairs:CrowsPairs",
    "winogender": "biaslens.suites.winogender:Winogender",
    "winobias": "biaslens.suites.winobias:WinoBias",
    "counterfactual": "biaslens.methods.counterfactual.suite:Counterfactual",
}

#: suites that later issues add; named here so a user gets a clear message
PLANNED: tuple[str, ...] = ()
