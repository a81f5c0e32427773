"""counterfactual: a use-case bias assessment on the user's own prompts. Each prompt's identity
mentions (gendered words, pronouns and first names; HolisticBias descriptors of race and ethnicity,
religion, age, disability, sexual orientation, nationality) are varied across groups, the model
continues every variant, and the continuations are compared between the groups of an axis
(sentiment and toxicity gaps with prompt-clustered intervals, FairPair's B, V and F, LangFair's
counterfactual metrics).

prompts.py (the user's file) -> variants.py (the variants table) -> suite.py (continuations,
scores) -> metrics.py (pure) -> report.py."""
