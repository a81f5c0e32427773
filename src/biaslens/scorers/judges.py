"""Choosing the toxicity/offensiveness judge (``"auto"`` or a name) and saying what it is.

Above the loaders (:mod:`biaslens.scorers.toxicity`, :mod:`biaslens.scorers.classifiers`),
below the scorer cards (:mod:`biaslens.scorers.card`), so that no loader imports the cards.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from biaslens.scorers.base import ScorerError

AUTO = "auto"
#: the offline judge "auto" falls back to: the trained head (measured skill on both real-output
#: test halves, docs/scorers.md); the lexical screen stays available by name
OFFLINE_JUDGE = "toxicity-head"
#: environment variable naming a Hugging Face toxicity classifier (id or folder) that "auto" tries first
HF_JUDGE_ENV = "BIASLENS_TOXICITY_MODEL"


def lexical_screen(name: str) -> bool:
    """Whether the judge is the lexical screen (a bag-of-words model, not a reader of meaning)."""
    return name in ("alt-profanity-check", "profanity-check")


def describe_judge(name: str) -> str:
    """What kind of model a toxicity/offensiveness judge is, in plain words."""
    if name in ("toxicity-head", "offensiveness-head"):
        return ("trained head: logistic regression on all-MiniLM-L6-v2 sentence embeddings plus alt-profanity-check's "
                "score, VADER's most negative sentence and a ToxiGen-trained sentence score, fitted on the dev halves of "
                "biaslens's labelled real-output sets (offline)")
    if name.startswith("judge:"):
        return f"language model asked with a written rubric ({name[len('judge:'):]})"
    if lexical_screen(name):
        return ("lexical screen: a bag-of-words linear SVM (alt-profanity-check) that reacts to words, "
                "not to what a sentence says about whom; not the paper's classifier")
    if name.startswith("detoxify"):
        return (f"transformer classifier ({name}, trained on the Jigsaw toxic-comment data; detoxify:original is "
                "the community-bias paper's classifier)")
    return f"Hugging Face text classifier ({name})"


def choose_judge(requested: str = AUTO, *, label: str | None = None, device: str = "cpu", role: str = "toxicity",
                 model_judge: Callable[[str, str], Any] | None = None) -> tuple[Any, dict]:
    """The toxicity/offensiveness judge and why it was chosen.

    ``"auto"`` tries, in order: the Hugging Face classifier named by ``$BIASLENS_TOXICITY_MODEL``,
    Detoxify (original), then the offline trained head (``toxicity-head``), then the offline
    lexical screen alt-profanity-check. ``"judge"`` (or ``"judge:<model>"``) asks a language model
    with a written rubric (:class:`biaslens.scorers.model_judge.ModelJudge`), loaded by
    ``model_judge(role, requested)``: a run's loader, which knows its judge section and call cache
    (:func:`biaslens.suites.judge_model.model_judge_loader`). Any other name is loaded as asked
    (errors propagate: the user chose it).

    Returns:
        (scorer with ``scores(texts)`` and ``probability(texts)``, a record for run.json)
    """
    from biaslens.scorers.toxicity import load_toxicity_scorer

    scorer: Any = None
    if requested == "judge" or requested.startswith("judge:"):
        if model_judge is None:
            raise ScorerError(f"{requested}: a language-model judge is loaded from a run's configuration (its judge "
                              "section); none was given here")
        scorer = model_judge(role, requested)
        why = "named in the configuration: a language model asked with a written rubric"
        tried: list[str] = []
    elif requested != AUTO:
        scorer = load_toxicity_scorer(requested, label=label, device=device)
        why = "named in the configuration"
        tried = []
    else:
        tried = []
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
            try:
                scorer = load_toxicity_scorer(OFFLINE_JUDGE)
                why = ("auto: no transformer judge could be loaded, so the offline trained head is used (measured "
                       "skill on labelled real model output; the lexical screen alt-profanity-check stays available "
                       "by name)")
            except (ScorerError, OSError, ValueError, ImportError) as e:
                tried.append(f"{OFFLINE_JUDGE}: {str(e).splitlines()[0][:160]}")
                scorer = load_toxicity_scorer("alt-profanity-check")
                why = "auto: neither a transformer judge nor the trained head could be loaded: the lexical screen is used"
    name = scorer.name
    return scorer, {"requested": requested, "used": name, "kind": describe_judge(name),
                    "lexical_screen": lexical_screen(name), "why": why, "not_loaded": tried}


def load_offensiveness_scorer(name: str = "alt-profanity-check", **kw):
    """'auto' (see :func:`choose_judge`), 'toxicity-head' (offline), 'alt-profanity-check'
    (offline) or a Hugging Face classifier id/path."""
    if name in ("toxicity-head", "offensiveness-head", "default"):
        from biaslens.scorers.toxicity_head import ToxicityHead

        return ToxicityHead()
    if name == "auto":
        return choose_judge(name, device=kw.get("device", "cpu"))[0]
    from biaslens.scorers.classifiers import HFTextClassifier, ProfanityCheck

    if name in ("alt-profanity-check", "profanity-check"):
        return ProfanityCheck()
    return HFTextClassifier(name, **kw)
