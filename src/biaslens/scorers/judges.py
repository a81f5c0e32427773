"""Choosing the toxicity/offensiveness judge (``"auto"`` or a name) and saying what it is.

Above the loaders (:mod:`biaslens.scorers.toxicity`, :mod:`biaslens.scorers.classifiers`),
below the scorer cards (:mod:`biaslens.scorers.card`), so that no loader imports the cards.
"""

from __future__ import annotations

import os
from typing import Any

from biaslens.scorers.base import ScorerError

AUTO = "auto"
#: environment variable naming a Hugging Face toxicity classifier (id or folder) that "auto" tries first
HF_JUDGE_ENV = "BIASLENS_TOXICITY_MODEL"


def lexical_screen(name: str) -> bool:
    """Whether the judge is the lexical screen (a bag-of-words model, not a reader of meaning)."""
    return name in ("alt-profanity-check", "profanity-check")


def describe_judge(name: str) -> str:
    """What kind of model a toxicity/offensiveness judge is, in plain words."""
    if lexical_screen(name):
        return ("lexical screen: a bag-of-words linear SVM (alt-profanity-check) that reacts to words, "
                "not to what a sentence says about whom; not the paper's classifier")
    if name.startswith("detoxify"):
        return (f"transformer classifier ({name}, trained on the Jigsaw toxic-comment data; detoxify:original is "
                "the community-bias paper's classifier)")
    return f"Hugging Face text classifier ({name})"


def choose_judge(requested: str = AUTO, *, label: str | None = None, device: str = "cpu") -> tuple[Any, dict]:
    """The toxicity/offensiveness judge and why it was chosen.

    ``"auto"`` tries, in order: the Hugging Face classifier named by ``$BIASLENS_TOXICITY_MODEL``,
    Detoxify (original), then the offline lexical screen alt-profanity-check. Any other name is
    loaded as asked (errors propagate: the user chose it).

    Returns:
        (scorer with ``scores(texts)`` and ``probability(texts)``, a record for run.json)
    """
    from biaslens.scorers.toxicity import load_toxicity_scorer

    if requested != AUTO:
        scorer = load_toxicity_scorer(requested, label=label, device=device)
        why = "named in the configuration"
        tried: list[str] = []
    else:
        tried = []
        scorer = None
        candidates = ([os.environ[HF_JUDGE_ENV]] if os.environ.get(HF_JUDGE_ENV) else []) + ["detoxify:original"]
        for cand in candidates:
            try:
                scorer = load_toxicity_scorer(cand, label=label, device=device)
                why = f"auto: {cand} loaded" + (f" (from ${HF_JUDGE_ENV})" if cand != "detoxify:original" else
                                                  " (the community-bias paper's classifier)")
                break
            except (ScorerError, OSError, ValueError) as e:
                tried.append(f"{cand}: {str(e).splitlines()[0][:160]}")
        if scorer is None:
            scorer = load_toxicity_scorer("alt-profanity-check")
            why = "auto: no transformer judge could be loaded, so the offline lexical screen is used"
    name = scorer.name
    return scorer, {"requested": requested, "used": name, "kind": describe_judge(name),
                    "lexical_screen": lexical_screen(name), "why": why, "not_loaded": tried}


def load_offensiveness_scorer(name: str = "alt-profanity-check", **kw):
    """'auto' (see :func:`choose_judge`), 'alt-profanity-check' (offline) or a
    Hugging Face classifier id/path."""
    if name == "auto":
        return choose_judge(name, device=kw.get("device", "cpu"))[0]
    from biaslens.scorers.classifiers import HFTextClassifier, ProfanityCheck

    if name in ("alt-profanity-check", "profanity-check", "default"):
        return ProfanityCheck()
    return HFTextClassifier(name, **kw)
