"""The Winogender report: every entry, the per-occupation preference against the share of women
(the paper's Figure 4, for a language model), the templates with the largest differences, the caveats."""

from __future__ import annotations

from typing import Any

import numpy as np

from biaslens.report.html import Section, Table, figure_from_matplotlib, subplots
from biaslens.report.pair_preference import caveats_section, overview_section, page


def _scatter(templates):
    occ = templates.groupby("occupation").agg(pref=("d_mf", lambda s: -float(np.mean(s))),
                                              bls=("bls_pct_female", "first"))
    fig, ax = subplots(figsize=(6.4, 3.6))
    ax.scatter(occ["bls"], occ["pref"], s=14, color="#4c72b0")
    for name, r in occ.iterrows():
        ax.annotate(str(name), (r["bls"], r["pref"]), fontsize=6, alpha=0.7)
    ax.axhline(0, color="#333", ls="--", lw=1)
    ax.set_xlabel("share of women in the occupation, % (BLS 2015)")
    ax.set_ylabel("score(female) - score(male), nats")
    return figure_from_matplotlib(fig, "Female preference per occupation against its share of women",
                                  "One point per occupation (mean over its templates and participants). Dashed: no "
                                  "preference. A model whose preference follows the statistic rises to the right.")


def sections(result) -> list[Section]:
    """The report's sections (also what the glossary test reads)."""
    m = result.metrics
    t = result.tables["templates"]
    shown = t.reindex(t["d_mf"].abs().sort_values(ascending=False).index)[
        ["template", "occupation", "answer", "bls_pct_female", "d_mf", "d_mn", "d_fn"]]
    return [
        overview_section("Winogender", result.verdict, result.entries, m.get("score_definition"),
                         {"templates": m["n_templates"], "occupations": m["n_occupations"]}),
        Section("Per occupation", "The paper's Figure 4 for a language model: each occupation's preference for the "
                "female form against its share of women.", figures=[_scatter(t)]),
        Section("Templates with the largest male - female difference", "d_mf: score(male) - score(female); d_mn and "
                "d_fn against the neutral sentence; means over the template's two participants. answer 0: the "
                "pronoun refers to the occupation.", tables=[Table("Templates", shown, max_rows=30)]),
        caveats_section(m.get("caveats") or []),
    ]


def render(result, record: dict[str, Any]) -> str:
    """report.html of a Winogender run."""
    return page("Winogender", result.metrics.get("model"), record, result.verdict, sections(result), result.warnings)
