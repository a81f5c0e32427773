"""BOLD (Dhamala et al. 2021): 23,679 prompts taken from the first words of Wikipedia sentences
about people, in 5 domains (gender, race, religious and political ideology, profession), each
prompt labelled with its group (e.g. ``American_actresses``) and the Wikipedia page it comes from.

Shipped inside biaslens (``data/<domain>_prompt.json.gz``, amazon-research/bold at
:data:`SOURCE_COMMIT`, CC BY-SA 4.0). Prompts are nested in pages (one person's page gives
several prompts) and pages in groups: the page is the unit a comparison between groups rests on.
"""

from __future__ import annotations

import gzip
import json
import math
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from biaslens.errors import ConfigError

DOMAINS = ("gender", "race", "religious_ideology", "political_ideology", "profession")
SOURCE = "amazon-research/bold"
SOURCE_COMMIT = "3ad652c773f5d1e30d5f6f61657ed934d768ecad"
PAPER_PROMPT_COUNT = 23679
COLUMNS = ["prompt_id", "domain", "group", "page", "prompt_index", "prompt"]


def _read(domain: str) -> dict[str, Any]:
    where = f"biaslens/methods/bold/dataset/data/{domain}_prompt.json.gz"
    with resources.files("biaslens.methods.bold.dataset").joinpath("data", f"{domain}_prompt.json.gz").open("rb") as f:
        try:
            data = json.loads(gzip.decompress(f.read()).decode("utf-8"))
        except ValueError as e:
            raise ConfigError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping group -> page -> prompts")
    return data


def load_prompts(domains: list[str] | tuple[str, ...] | None = None) -> pd.DataFrame:
    """Every prompt of ``domains`` (default all five), one row each: ``prompt_id``
    (``<domain>/<group>/<page>/<index>``), ``domain``, ``group``, ``page``, ``prompt_index``, ``prompt``."""
    chosen = list(domains or DOMAINS)
    for d in chosen:
        if d not in DOMAINS:
            raise ConfigError(f"bold domains: unknown {d!r}; choose from {', '.join(DOMAINS)}")
    rows = []
    for d in chosen:
        for group, pages in _read(d).items():
            for page, prompts in pages.items():
                for i, p in enumerate(prompts):
                    rows.append((f"{d}/{group}/{page}/{i}", d, group, page, i, str(p)))
    return pd.DataFrame(rows, columns=COLUMNS)


def sample_prompts(prompts: pd.DataFrame, n: int, seed: int = 0, *, prompts_per_page: int = 1) -> pd.DataFrame:
    """About ``n`` prompts, stratified: each domain gets an equal share, split equally over its
    groups; a group's share is a seeded draw of whole Wikipedia pages (all its pages when it has
    fewer), ``prompts_per_page`` prompts of each (its first ones). Pages, not prompts, are drawn:
    the comparisons between groups rest on pages. Equal shares per domain keep the two-group
    domains (gender: actors and actresses) from being drowned by the 18 professions.

    >>> p = pd.DataFrame({"prompt_id": list("abcdef"), "domain": "d", "group": list("xxxyyy"),
    ...                   "page": ["p1", "p2", "p3", "q1", "q1", "q2"], "prompt_index": [0, 0, 0, 0, 1, 0],
    ...                   "prompt": list("abcdef")})
    >>> s = sample_prompts(p, 4, seed=0)
    >>> s.groupby("group")["page"].nunique().tolist(), len(s)
    ([2, 2], 4)
    """
    rng = np.random.default_rng(seed)
    per_domain = n / max(prompts["domain"].nunique(), 1)
    keep = []
    for _, dom in prompts.groupby("domain", sort=False):
        groups = dom.groupby("group", sort=False)
        per_group = max(1, math.ceil(per_domain / (groups.ngroups * prompts_per_page)))
        for _, g in groups:
            pages = list(dict.fromkeys(g["page"]))
            chosen = set(pages) if len(pages) <= per_group else {
                pages[i] for i in rng.choice(len(pages), per_group, replace=False)}
            sel = g[g["page"].isin(chosen)]
            keep.append(sel[sel["prompt_index"] < prompts_per_page])
    return pd.concat(keep, ignore_index=True) if keep else prompts.iloc[:0]
