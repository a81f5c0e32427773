"""The CrowS-Pairs report: the authors' numbers, the statistics beside them, per type, the pairs
that drive the result and the dataset's validity caveats."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biaslens.report.html import Section, Table
from biaslens.report.pair_preference import caveats_section, diff_figure, group_frame, overview_section, page


def sections(result, pairs: pd.DataFrame) -> list[Section]:
    """The report's sections (also what the glossary test reads)."""
    m = result.metrics
    a = m["authors"]
    authors = pd.DataFrame([{"metric score": a["metric_score"], "stereotype score": a["stereo_score"],
                             "anti-stereotype score": a["antistereo_score"], "neutral": a["neutral"],
                             "neutral, %": a["neutral_pct"], "pairs": a["n"]}])
    drivers = result.tables["drivers"][["leans", "bias_type", "stereo_antistereo", "diff", "sent_more", "sent_less"]]
    drivers = drivers.rename(columns={"diff": "ll_diff", "sent_more": "more stereotyping sentence",
                                      "sent_less": "less stereotyping sentence"})
    return [
        overview_section("CrowS-Pairs", result.verdict, result.entries, m.get("score_definition"),
                         {"pairs": f"{a['n']:,}", "selection": m.get("selection") or "all pairs"}),
        Section("The authors' numbers", "As the authors' metric.py prints them: scores rounded to 3 decimals; a tie "
                "('neutral') stays in the metric score's denominator and counts as not preferring sent_more; the "
                "stereotype and anti-stereotype scores divide by their non-tied pairs.",
                tables=[Table("Authors' metric", authors)]),
        Section("Per bias type", "Share of pairs whose sent_more scores higher, with Holm's correction over the types; "
                "each interval is at the level of Holm's step for its row, so it excludes 50% exactly where Holm "
                "finds a preference. Signed mean difference of the scores (nats) with its 95% t-interval.",
                tables=[Table("Per bias type", group_frame(result.tables["per_type"], "bias type"))]),
        Section("Stereotype and anti-stereotype pairs", "stereo: sent_more demonstrates a stereotype of a "
                "disadvantaged group; antistereo: sent_less violates one (sent_more is about the advantaged group).",
                tables=[Table("By direction", group_frame(result.tables["directions"], "direction"))]),
        Section("The pairs that drive the result", "The largest signed differences each way: read them to judge "
                "whether the pair is a minimal edit of the group and states a stereotype (see the caveats).",
                tables=[Table("Largest differences", drivers, max_rows=20)],
                figures=[diff_figure(pairs["diff"].to_numpy(), "score(sent_more) - score(sent_less)",
                                     "difference, nats")]),
        caveats_section(m.get("caveats") or []),
    ]


def render(result, pairs: pd.DataFrame, record: dict[str, Any]) -> str:
    """report.html of a CrowS-Pairs run."""
    return page("CrowS-Pairs", result.metrics.get("model"), record, result.verdict, sections(result, pairs),
                result.warnings)
