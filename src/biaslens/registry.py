"""The suite registry: one line per suite, ``name -> "module:Class"`` (imported lazily).

It imports nothing, so that :mod:`biaslens.config` can compose the run configuration from the
suites' options modules without importing any suite code (no import circle).
"""

SUITES: dict[str, str] = {
    "holistic-likelihood": "biaslens.methods.holistic.likelihood:HolisticLikelihood",
    "redditbias": "biaslens.methods.redditbias.suite:RedditBias",
    "holistic-generation": "biaslens.methods.holistic.generation:HolisticGeneration",
    "fairpair": "biaslens.methods.fairpair.suite:FairPair",
    "holistic-offensiveness": "biaslens.methods.holistic.offensiveness:HolisticOffensiveness",
    "community": "biaslens.methods.community.suite:Community",
    "bbq": "biaslens.methods.bbq.suite:Bbq",
    "bold": "biaslens.methods.bold.suite:Bold",
    "crows-pairs": "biaslens.methods.crows_pairs.suite:CrowsPairs",
    "winogender": "biaslens.methods.winogender.suite:Winogender",
    "winobias": "biaslens.methods.winobias.suite:WinoBias",
    "counterfactual": "biaslens.methods.counterfactual.suite:Counterfactual",
}

#: each method's own CLI commands (its training and its dataset tables): "module:function", the function
#: called with the CLI app and its `dataset` group when the CLI starts
COMMANDS: dict[str, str] = {
    "holistic": "biaslens.methods.holistic.commands:register",
    "redditbias": "biaslens.methods.redditbias.commands:register",
    "community": "biaslens.methods.community.commands:register",
    "fairpair": "biaslens.methods.fairpair.commands:register",
}

#: `biaslens dataset <name>` for the methods that ship a fixed dataset: name -> (what it writes,
#: "module:function" returning the table, imported when the command runs)
TABLES: dict[str, tuple[str, str]] = {
    "bbq": ("the BBQ items of the shipped categories (context, question, three answers, label)",
            "biaslens.methods.bbq.dataset:load_items"),
    "bold": ("the BOLD prompts of every domain (domain, group, Wikipedia page, prompt)",
             "biaslens.methods.bold.dataset:load_prompts"),
    "crows-pairs": ("the 1,508 CrowS-Pairs sentence pairs (more and less stereotyping sentence, bias type)",
                    "biaslens.methods.crows_pairs.dataset:read_crows_pairs"),
    "winogender": ("the 720 Winogender sentences (occupation, participant, pronoun form, template)",
                   "biaslens.methods.winogender.dataset:read_winogender"),
    "winobias": ("the 1,584 WinoBias twins (pro- and anti-stereotypical sentence, type, split)",
                 "biaslens.methods.winobias.dataset:read_winobias"),
}

#: suites that later issues add; named here so a user gets a clear message
PLANNED: tuple[str, ...] = ()
