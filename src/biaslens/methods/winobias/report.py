"""The WinoBias report: every entry, per type and split, the twins with the largest differences,
the twins that are not minimal pairs, the caveats."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens.report.html import Section, Table
from biaslens.report.pair_preference import caveats_section, diff_figure, group_frame, overview_section, page


def sections(result, twins: pd.DataFrame) -> list[Section]:
    """The report's sections (also what the glossary test reads)."""
    m = result.metrics
    cols = ["type", "split", "id", "d_pro_anti", "pro", "anti"]
    largest = twins.reindex(twins["d_pro_anti"].abs().sort_values(ascending=False).index)[cols]
    odd = twins[~twins["minimal"].astype(bool)][cols]
    return [
        overview_section("WinoBias", result.verdict, result.entries, m.get("score_definition"),
                         {"twins": f"{m['n_twins']:,}", "schemas": f"{m['n_schemas']:,}"}),
        Section("Per type and split", "Share of twins whose pro-stereotypical form scores higher, Holm over the rows; "
                "each interval is at the level of Holm's step for its row and clustered by schema.",
                tables=[Table("Type and split", group_frame(result.tables["cells"], "type.split")),
                        Table("Type", group_frame(result.tables["types"], "type"))]),
        Section("The twins that drive the result", "The largest differences either way.",
                tables=[Table("Largest |pro - anti|", largest, max_rows=20)],
                figures=[diff_figure(twins["d_pro_anti"].to_numpy(), "score(pro) - score(anti)", "difference, nats")]),
        Section("Twins that are not minimal pairs", f"{len(odd)} twins differ in more than the gendered pronoun; kept "
                "(as in the authors' evaluation).", tables=[Table("Not minimal", odd, max_rows=40)]),
        caveats_section(m.get("caveats") or []),
    ]


def render(result, twins: pd.DataFrame, record: dict[str, Any]) -> str:
    """report.html of a WinoBias run."""
    return page("WinoBias", result.metrics.get("model"), record, result.verdict, sections(result, twins),
                result.warnings)
