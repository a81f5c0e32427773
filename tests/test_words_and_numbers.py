"""Words that agree with the numbers beside them: BBQ's pooled sentence against its categories,
examples from the flagged categories, verdicts in words in terminal tables, a leaderboard of one
pair in grammatical English (the rounding rule itself: tests/test_rounding.py)."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console


def _scores(pooled_verdict: str) -> pd.DataFrame:
    rows = []
    for g, v in (("all categories", pooled_verdict), ("Age", "not_detected"), ("Religion", "detected")):
        rows.append({"group": g, "s_amb": 0.02, "s_amb_ci_low": -0.01, "s_amb_ci_high": 0.05, "n_templates": 50,
                     "verdict_amb": v, "verdict_dis": "not_detected", "detectable_amb": 0.03})
    return pd.DataFrame(rows)


def test_bbq_sentence_says_pooled_when_a_category_is_biased():
    from biaslens.methods.bbq.suite import bbq_verdict

    text = bbq_verdict(_scores("not_detected"), "per-token log-probability")
    assert text.startswith("pooled over the categories, no bias detected in ambiguous contexts")
    assert "yet 1 of 2 categories biased in ambiguous contexts after Holm (Religion)" in text


def test_bbq_examples_come_from_the_flagged_category():
    from biaslens.methods.bbq.report import examples

    amb = pd.DataFrame({"group": ["Age"] * 12 + ["Religion"] * 3, "category": ["Age"] * 12 + ["Religion"] * 3,
                        "x": range(15)})
    ex = examples(amb, _scores("not_detected"))
    assert ex["group"].tolist()[:3] == ["Religion"] * 3 and (ex["group"] == "Age").sum() == 2


def test_terminal_table_says_verdicts_in_words():
    from biaslens.report.pair_preference import print_summary
    from biaslens.results import SuiteResult

    groups = pd.DataFrame({"bias type": ["age", "gender"], "n": [87, 262], "share": [63.0, 51.0],
                           "ci_low": [50.4, 45.0], "ci_high": [75.3, 57.0], "p_holm": [0.049, 0.7],
                           "verdict": ["detected", "not_detected"]})
    out = io.StringIO()
    print_summary(Console(file=out, width=120), "CrowS-Pairs", SuiteResult(metrics={"model": "m"}), groups,
                  "bias type")
    text = out.getvalue()
    assert "not detected" in text and "not_detected" not in text
    assert "63 (50.4 to 75)" in text  # the edge that excludes the ideal 50 does not print as 50


def test_leaderboard_of_one_pair_is_grammatical():
    from biaslens.card_leaderboard import _summary

    pairs = pd.DataFrame({"m": [1], "distinguishable": [False]})
    board = [{"model": "a"}, {"model": "b"}]
    text = _summary("bbq", board, pairs, [], [{"comparable": "yes"}] * 2)
    assert "the one pair" in text and "1 pairs" not in text


def test_leaderboard_verdict_is_one_line_per_finding():
    from biaslens.report.html import with_headline
    from biaslens.report.leaderboard import verdict_lines

    same = "no two of 2 models are distinguishable at 95% (the one pair)"
    boards = [{"summary": f"{s}: {same}"} for s in ("bbq", "bold", "winobias")]
    boards.append({"summary": "fairpair: cannot tell which models differ: the headlines have no interval"})
    lines = verdict_lines(boards)
    assert lines == [f"bbq, bold, winobias: {same}",
                     "fairpair: cannot tell which models differ: the headlines have no interval"]
    page = with_headline("<h1>t</h1>", lines)
    assert page.count("<li>") == 2 and page.count(same) == 1
