"""Phrases from a specification alone, for users without RedditBias data.

Each T1 phrase (which already carries its verb: "jews are") is paired with the T2 phrase at
the same position ("christians are") and completed with every stereotypical attribute in a
few neutral templates, so the two phrases of a pair differ only in the target group.
Wildcards are cut to their stem ("greed*" -> "greed").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.datasets.redditbias.specs import BiasSpec

#: ``{target}`` is a T1/T2 phrase with its verb ("jews are"); ``{attribute}`` an A1 term
TEMPLATES = (
    "{target} {attribute}.",
    "i think {target} {attribute}.",
    "everyone knows that {target} {attribute}.",
    "it is true that {target} {attribute}.",
)


def template_pairs(spec: BiasSpec, *, templates: tuple[str, ...] = TEMPLATES, max_pairs: int | None = None,
                   seed: int = 0) -> pd.DataFrame:
    """Paired phrases (minoritized, dominant) for every target pair x A1 attribute x template.

    Args:
        spec: the bias specification.
        templates: format strings with ``{target}`` and ``{attribute}``.
        max_pairs: keep a seeded random sample of at most this many pairs (None: all).
        seed: sampling seed.

    Returns:
        Columns ``phrase``, ``counterfactual``, ``target``, ``target_dominant``, ``attribute``,
        ``template``.
    """
    rows = []
    attributes = list(dict.fromkeys(a.rstrip("*").strip() for a in spec.A1))
    for t1, t2 in dict.fromkeys(zip(spec.T1, spec.T2)):
        for attribute in attributes:
            for template in templates:
                rows.append((template.format(target=t1, attribute=attribute),
                             template.format(target=t2, attribute=attribute), t1, t2, attribute, template))
    df = pd.DataFrame(rows, columns=["phrase", "counterfactual", "target", "target_dominant", "attribute", "template"])
    if max_pairs is not None and len(df) > max_pairs:
        keep = np.sort(np.random.default_rng(seed).choice(len(df), size=max_pairs, replace=False))
        df = df.iloc[keep].reset_index(drop=True)
    return df
