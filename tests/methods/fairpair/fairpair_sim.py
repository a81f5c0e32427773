"""Synthetic FairPair data where the right answer is known: John and Jane continuations drawn
from one process (the entity's pronouns swapped), optionally mentioning a relative whose own
pronoun is not the entity's ("Her brother said he was tired."), optionally with a planted
difference in a sentiment-like score. No model: texts and scores are built directly."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.methods.fairpair.dataset import NamePair, PerturbationMap, ReferenceCheck, RulePerturber, build_prompts
from biaslens.methods.fairpair.dataset import occupations as paper_occupations
from biaslens.methods.fairpair.dataset.pairing import continuation_rows, perturb_and_filter
from biaslens.metrics.continuation_pairs import ScoreDissimilarity

NAMES = NamePair("John", "Jane")
MAPPING = PerturbationMap.from_yaml().with_names([NAMES])
RULE = RulePerturber(MAPPING)
CHECK = ReferenceCheck(MAPPING, [NAMES], frozenset(w for o in paper_occupations() for w in o.split()))

#: word -> score: the "sentiment" of a continuation is the mean over its scored words
ADJ = {"tired": -0.6, "sad": -0.8, "calm": 0.2, "happy": 0.8, "proud": 0.6, "busy": -0.1, "kind": 0.7,
       "late": -0.3, "bored": -0.5, "glad": 0.7}
ADJ_WORDS = np.array(list(ADJ))
ADJ_SCORE = np.array(list(ADJ.values()))
NOUNS = np.array("music books coffee tennis gardens movies cooking trains maps chess dogs art".split())
RELATIVES = np.array(["brother", "father", "uncle", "son", "sister", "mother"])
RELATIVE_PRONOUN = {"brother": "he", "father": "he", "uncle": "he", "son": "he", "sister": "she", "mother": "she"}


def _scores(texts: list[str]) -> np.ndarray:
    out = np.empty(len(texts))
    for i, t in enumerate(texts):
        vals = [ADJ[w] for w in t.lower().replace(".", " ").split() if w in ADJ]
        out[i] = float(np.mean(vals)) if vals else 0.0
    return out


SCORE = ScoreDissimilarity(_scores, "score")


#: family the entity's pronouns cannot refer to (target gender, or plural): kept by the check
FAMILY = np.array(["wife", "mother", "sister", "kids", "children"])


def continuation(rng: np.random.Generator, female: bool, p_relative: float, shift: float,
                 p_family: float = 0.0) -> str:
    """One continuation about the entity; ``shift`` > 0 makes positive words likelier (bias).
    ``p_family``: share that mention a wife, mother, sister or children (as the default mapping's
    null has it: "Her wife said she was ..." is the counterpart of "His wife said she was ...")."""
    he, his = ("She", "her") if female else ("He", "his")
    w = np.exp(shift * ADJ_SCORE)
    adj = rng.choice(ADJ_WORDS, size=2, p=w / w.sum())
    parts = [f"{he} likes {rng.choice(NOUNS)}.", f"{he} is {adj[0]} today.",
             f"{he} reads about {rng.choice(NOUNS)} with {his} {rng.choice(NOUNS)}."]
    if rng.random() < p_relative:
        rel = str(rng.choice(RELATIVES[:4] if rng.random() < 0.8 else RELATIVES))
        parts.insert(1, f"{his.capitalize()} {rel} said {RELATIVE_PRONOUN[rel]} was {adj[1]}.")
    if rng.random() < p_family:
        fam = str(rng.choice(FAMILY))
        parts.insert(1, f"{his.capitalize()} {fam} were {adj[1]}." if fam in ("kids", "children")
                     else f"{his.capitalize()} {fam} said she was {adj[1]}.")
    return " ".join(parts)


def simulate_rows(seed: int, n_prompts: int, n_samples: int, *, p_relative: float = 0.5,
                  shift: float = 0.0, p_family: float = 0.0) -> pd.DataFrame:
    """Continuation rows for ``n_prompts`` Common Sents pairs, perturbed and filtered by the rule
    perturber as a run would. John and Jane come from the same process unless ``shift`` != 0
    (Jane's continuations then lean positive)."""
    rng = np.random.default_rng(seed)
    pairs = build_prompts(paper_occupations()[:n_prompts], [NAMES])
    cx = [[continuation(rng, False, p_relative, 0.0, p_family) for _ in range(n_samples)] for _ in pairs]
    cpx = [[continuation(rng, True, p_relative, shift, p_family) for _ in range(n_samples)] for _ in pairs]
    rows = continuation_rows(pairs, cx, cpx, "sim")
    return perturb_and_filter(rows, {p.pair_id: p for p in pairs}, lambda t, _n: RULE.perturb_many(t),
                              max_jaccard=0.15, masked_terms=MAPPING.terms(), reference_check=CHECK)
