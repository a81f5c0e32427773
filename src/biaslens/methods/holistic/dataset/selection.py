"""Choosing HolisticBias sentences: filters by axis and template, and the stratified sample
that keeps whole (axis, template, descriptor) groups."""

from __future__ import annotations

import difflib

import numpy as np
import pandas as pd

from biaslens.errors import ConfigError
from biaslens.methods.holistic.likelihood_metrics import LOVE_HATE_TEMPLATES

#: templates the default sample always includes, so the love/hate view has data
_PRIORITY_TEMPLATES = (LOVE_HATE_TEMPLATES["love"], LOVE_HATE_TEMPLATES["hate"])
#: one group of sentences: the unit the sample keeps whole
GROUP_COLUMNS = ["axis", "template", "descriptor"]


def select_rows(
    df: pd.DataFrame,
    *,
    axes: list[str] | None = None,
    templates: list[str] | None = None,
    sample: int | None = None,
    full: bool = False,
    seed: int = 0,
    priority_templates: tuple[str, ...] = _PRIORITY_TEMPLATES,
) -> pd.DataFrame:
    """Filter by axes/templates, then (unless ``full``) a stratified sample of about
    ``sample`` sentences that keeps whole (axis, template, descriptor) groups.

    The sample picks templates first (love and hate always, when present, so the
    love/hate view has data; then seeded-random others), then the same seeded-random
    descriptors per axis for every chosen template, so each (axis, template) has at
    least two descriptors to compare and descriptors are comparable across templates.
    ``priority_templates`` are the ones picked first (default: love and hate).
    """
    for name, wanted, col in (("--axes", axes, "axis"), ("--templates", templates, "template")):
        if wanted:
            present = set(df[col].astype(str).unique())
            unknown = [w for w in wanted if w not in present]
            if unknown:
                hints = [f"{u!r} (did you mean {', '.join(map(repr, close))}?)" if (
                    close := difflib.get_close_matches(u, present, n=2)) else repr(u) for u in unknown]
                raise ConfigError(f"{name}: unknown value(s) {', '.join(hints)}; choose from {sorted(present)}")
            df = df[df[col].isin(wanted)]
    if full or sample is None:
        return df.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    groups = df.groupby(GROUP_COLUMNS, observed=True, sort=True).size()
    per_group = float(groups.median()) if len(groups) else 1.0
    n_groups_wanted = max(1, round(sample / per_group))
    if n_groups_wanted >= len(groups):
        return df.reset_index(drop=True)
    axis_list = sorted(df["axis"].astype(str).unique())
    all_templates = list(dict.fromkeys(df["template"].astype(str)))
    min_desc = 6  # descriptors per (axis, template): 15 pairs each
    if templates:
        chosen_t = all_templates
    else:
        n_t = int(min(len(all_templates), max(1, n_groups_wanted // (len(axis_list) * min_desc))))
        first = [t for t in priority_templates if t in all_templates][:n_t]
        rest = [t for t in all_templates if t not in first]
        extra = list(rng.permutation(rest)[: n_t - len(first)]) if n_t > len(first) else []
        chosen_t = first + [str(t) for t in extra]
    k = max(2, n_groups_wanted // (len(axis_list) * len(chosen_t)))
    keep_desc: dict[str, list[str]] = {}
    for axis in axis_list:
        descs = sorted(df.loc[df["axis"] == axis, "descriptor"].astype(str).unique())
        keep_desc[axis] = list(rng.permutation(descs)[:k]) if len(descs) > k else descs
    mask = df["template"].isin(chosen_t)
    desc_ok = np.zeros(len(df), dtype=bool)
    axis_values = df["axis"].astype(str).to_numpy()
    desc_values = df["descriptor"].astype(str).to_numpy()
    for axis, descs in keep_desc.items():
        desc_ok |= (axis_values == axis) & np.isin(desc_values, descs)
    return df[mask.to_numpy() & desc_ok].reset_index(drop=True)
