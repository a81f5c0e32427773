"""Toxicity scorers behind one call, ``scores(texts) -> {"toxicity": ..., ...}``: the offline
trained head ``toxicity-head`` (:mod:`biaslens.scorers.toxicity_head`), the offline lexical
screen ``alt-profanity-check`` (the HolisticBias paper's classifier stand-in), Detoxify
(optional; needs its package and its downloaded weights), a language model asked with a rubric
(``judge``, :mod:`biaslens.scorers.model_judge`) or any Hugging Face text classifier."""

from __future__ import annotations

import numpy as np

from biaslens.scorers.base import ScorerError
from biaslens.scorers.classifiers import HFTextClassifier, ProfanityCheck

#: Detoxify variants (``detoxify`` = ``detoxify:original``, the paper's)
DETOXIFY_VARIANTS = ("original", "unbiased", "multilingual")


class Detoxify:
    """Detoxify's ``toxicity`` and ``identity_attack`` (and its other heads)."""

    def __init__(self, variant: str = "original", device: str = "cpu"):
        if variant not in DETOXIFY_VARIANTS:
            raise ScorerError(f"unknown Detoxify variant {variant!r}; choose from {list(DETOXIFY_VARIANTS)}")
        try:
            from detoxify import Detoxify as _D  # optional dependency, imported only when asked for
        except ImportError:
            raise ScorerError("Detoxify is not installed: pip install detoxify (its weights are downloaded on "
                              "first use), or use --toxicity-classifier alt-profanity-check (offline)") from None
        try:
            self._model = _D(variant, device=device)
        except Exception as e:  # noqa: BLE001 - download/load failures come in many types
            raise ScorerError(f"Detoxify {variant!r} weights could not be loaded (they are downloaded on first use; "
                              f"offline?): {type(e).__name__}: {str(e)[:200]}") from None
        self.name = f"detoxify:{variant}"

    def scores(self, texts: list[str]) -> dict[str, np.ndarray]:
        if not texts:
            return {"toxicity": np.zeros(0)}
        out = self._model.predict(list(texts))
        return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}

    def probability(self, texts: list[str]) -> np.ndarray:
        return self.scores(texts)["toxicity"]


class _Single:
    def __init__(self, scorer, identity_label: str | None = None):
        self._s = scorer
        #: the classifier inside, whose packages and weights identify the judge (scorers.card.judge_fingerprint)
        self.wrapped = scorer
        self.name = getattr(scorer, "name", type(scorer).__name__)
        self._identity = identity_label

    def scores(self, texts: list[str]) -> dict[str, np.ndarray]:
        if isinstance(self._s, HFTextClassifier):
            probs = self._s.probabilities(texts)
            out = {"toxicity": probs[:, self._s.labels.index(self._s.positive_label)]}
            if self._identity:
                out["identity_attack"] = probs[:, self._s.labels.index(self._identity)]
            return out
        return {"toxicity": self._s.probability(texts)}

    def probability(self, texts: list[str]) -> np.ndarray:
        return self._s.probability(texts)


def load_profanity_check(variant: str | None = None, *, device: str = "cpu") -> _Single:
    return _Single(ProfanityCheck())


def load_detoxify(variant: str | None = None, *, device: str = "cpu") -> Detoxify:
    return Detoxify(variant or "original", device=device)


#: named toxicity/offensiveness judges ("name" or "name:variant"), imported on use; a judge has
#: ``name``, ``scores(texts) -> {"toxicity": array, ...}`` and ``probability(texts) -> array``.
#: Any other name is loaded as a Hugging Face text classifier.
TOXICITY_SCORERS: dict[str, str] = {
    "alt-profanity-check": "biaslens.scorers.toxicity:load_profanity_check",
    "profanity-check": "biaslens.scorers.toxicity:load_profanity_check",
    "default": "biaslens.scorers.toxicity_head:load_toxicity_head",
    "detoxify": "biaslens.scorers.toxicity:load_detoxify",
    "toxicity-head": "biaslens.scorers.toxicity_head:load_toxicity_head",
    "offensiveness-head": "biaslens.scorers.toxicity_head:load_toxicity_head",
}


def load_toxicity_scorer(name: str = "alt-profanity-check", *, label: str | None = None, device: str = "cpu"):
    """A judge from :data:`TOXICITY_SCORERS` ('toxicity-head', the offline trained head;
    'alt-profanity-check', the offline lexical screen; 'detoxify[:variant]'; ...), or a Hugging
    Face classifier id/folder (``label`` = its toxic
    label; an ``identity_attack``/``identity_hate`` label, when present, is reported too)."""
    import importlib

    key, _, variant = name.partition(":")
    if key in TOXICITY_SCORERS:
        module, function = TOXICITY_SCORERS[key].split(":")
        return getattr(importlib.import_module(module), function)(variant or None, device=device)
    clf = HFTextClassifier(name, device=device, positive_label=label)
    ident = next((lab for lab in clf.labels if lab.lower() in ("identity_attack", "identity_hate")), None)
    return _Single(clf, ident)
