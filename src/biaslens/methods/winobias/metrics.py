"""WinoBias (Zhao et al. 2018) for a language model: does it score the pro-stereotypical form of a
sentence (the pronoun of the gender the occupation is stereotyped with) higher than its
anti-stereotypical twin?

A schema (ids ``2k-1`` and ``2k`` of a file) shares its two occupations and the interaction, the
pronoun referring to one, then the other; each has a pro and an anti form. The 792 schemas reuse 40
occupations, and an occupation moves every twin that names it: intervals and tests are clustered
two ways by the two occupations each twin names (the schema nested in that), so that the claim is
about occupations like these 40, not only these 40.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biaslens.metrics.multiple_testing import holm
from biaslens.metrics.pair_preference import (
    MEANINGFUL_D,
    MEANINGFUL_SHARE,
    by_group,
    holm_levels,
    mean_difference,
    share_preferred,
    sign_test,
    verdict,
)

__all__ = ["winobias_statistics"]


def twin_occupations(twins: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """Per twin, the occupation its pronoun refers to (the bracketed mention, article dropped, lower
    case) and the schema's other occupation (its twin's referent); None where the table has no
    ``referent`` (a run stored before it was kept) or a schema has not two distinct referents."""
    if "referent" not in twins:
        return None
    ref = twins["referent"].astype(str).str.lower().str.replace(r"^(the|a|an)\s+", "", regex=True).str.strip()
    pairs: dict[Any, list[str]] = {}
    for sc, r in zip(twins["schema"].tolist(), ref.tolist()):
        if r not in pairs.setdefault(sc, []):
            pairs[sc].append(r)
    if not all(len(v) == 2 for v in pairs.values()):
        return None
    other = np.array([pairs[sc][1] if pairs[sc][0] == r else pairs[sc][0]
                      for sc, r in zip(twins["schema"].tolist(), ref.tolist())], dtype=object)
    return ref.to_numpy(dtype=object), other


def _gap(d: np.ndarray, schema: np.ndarray, occ: tuple[np.ndarray, np.ndarray] | None, *, level: float = 0.95,
         alpha: float = 0.05) -> dict[str, Any]:
    gap = mean_difference(100 * np.sign(d), schema, level=level, occupations=occ)
    gap["verdict"] = verdict(gap["p"], gap["detectable"], 2 * MEANINGFUL_SHARE, round(1 - level, 12))
    gap.update(sign_test(d, schema))
    return gap


def winobias_statistics(twins: pd.DataFrame, *, alpha: float = 0.05) -> tuple[dict[str, Any], pd.DataFrame,
                                                                              pd.DataFrame]:
    """Everything the suite reports, from one row per twin with ``score_pro``, ``score_anti``,
    ``type``, ``split``, ``schema``, ``minimal`` and ``referent``. Returns (metrics, per type-and-split
    table with Holm over its cells, per type table with Holm over the types).

    ``gap``: percent of twins whose pro form scores higher minus percent whose anti form does
    (percentage points; the mean of sign(pro - anti) x 100), pooled over the types and splits run,
    with its t-interval. ``gap_test``: the same per type on the test split (the paper's rows), Holm
    over the types, each interval at its Holm step's level.

    Intervals and tests treat the occupations as sampled: the variance is clustered two ways by the
    two occupations each twin names (:func:`biaslens.metrics.pair_preference.occupation_variance`;
    a schema's twins name the same two, so the schema is nested in it), with occupations - 1
    degrees of freedom. ``unit`` says which ("occupations", or "schemas" where the table has no
    referents).

    >>> t = pd.DataFrame({"score_pro": [-10.0, -12.0, -9.0, -8.0], "score_anti": [-11.0, -11.0, -10.0, -9.0],
    ...                   "type": [1, 1, 2, 2], "split": "dev", "schema": ["a", "a", "b", "b"], "minimal": True})
    >>> m, cells, types = winobias_statistics(t)
    >>> m["gap"]["mean"], m["share"]["share"], types["n"].tolist(), m["unit"]
    (50.0, 75.0, [2, 2], 'schemas')
    """
    d = (twins["score_pro"] - twins["score_anti"]).to_numpy(np.float64)
    schema = twins["schema"].to_numpy()
    occ = twin_occupations(twins)
    out: dict[str, Any] = {"n_twins": len(twins), "n_schemas": int(twins["schema"].nunique()),
                           "unit": "schemas" if occ is None else "occupations",
                           "n_occupations": None if occ is None else len(set(occ[0]) | set(occ[1]))}
    share = share_preferred(d, schema, occupations=occ)
    share["verdict"] = verdict(share["p"], share["detectable"], MEANINGFUL_SHARE, alpha)
    gap = _gap(d, schema, occ, alpha=alpha)
    mean = mean_difference(d, schema, occupations=occ)
    mean["verdict"] = verdict(mean["p"], mean["detectable"] / mean["sd_units"] if mean["sd_units"] else None,
                              MEANINGFUL_D, alpha)
    minimal = twins["minimal"].to_numpy(bool)
    out.update(share=share, gap=gap, mean_diff=mean,
               share_minimal_only=share_preferred(d[minimal], schema[minimal]), n_not_minimal=int((~minimal).sum()))
    # the paper's rows: the test split, type 1 and type 2 each; Holm over the types run
    test = (twins["split"] == "test").to_numpy()
    types_run = [t for t in sorted(twins["type"].astype(str).unique()) if (test & (twins["type"].astype(str) == t)
                                                                            .to_numpy()).sum() > 1]
    masks = [test & (twins["type"].astype(str) == t).to_numpy() for t in types_run]

    def occ_of(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        return None if occ is None else (occ[0][mask], occ[1][mask])

    first = [_gap(d[m], schema[m], occ_of(m)) for m in masks]
    levels = holm_levels([g["p"] if g["p"] is not None else np.nan for g in first], alpha)
    p_holm: np.ndarray = holm([g["p"] if g["p"] is not None else np.nan for g in first]) if first else np.zeros(0)
    out["gap_test"] = {}
    for t, m, lv, ph in zip(types_run, masks, levels, p_holm):
        lv = float(lv) if np.isfinite(lv) else 1 - alpha
        g = _gap(d[m], schema[m], occ_of(m), level=lv)
        g.update(p_holm=float(ph), type=t)
        out["gap_test"][t] = g
    cell = (twins["type"].astype(str) + "." + twins["split"].astype(str)).to_numpy()
    cells = by_group(d, cell, schema, alpha=alpha, occupations=occ).rename(columns={"group": "type.split"})
    types = by_group(d, twins["type"].astype(str).to_numpy(), schema, alpha=alpha,
                     occupations=occ).rename(columns={"group": "type"})
    return out, cells, types
