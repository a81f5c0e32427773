"""What a report's sections open with, and tables that fit the page (issue 34, part 5).

- The generation report's "Generation bias" section rests on the style judge: it opens with that
  judge's caveat (if any), not with the offensiveness judge's, which goes with the offensive share.
- FairPair's Table 3 is one row per model and dissimilarity, so three dissimilarities do not push it
  past the page (tests/test_report_browser.py measures the laid-out width).
"""

from __future__ import annotations

import html
import json
import re
import shutil

import pandas as pd


def _section(page: str, title: str) -> str:
    start = page.index(f"{title}</h2>")
    end = page.find("</h2>", start + len(title) + 5)
    return html.unescape(re.sub(r"<[^>]+>", " ", page[start:end if end > 0 else None]))


def test_generation_bias_section_opens_with_its_own_judge(fake_smoke_card, tmp_path):
    from biaslens.api import rerender

    run = tmp_path / "gen"
    shutil.copytree(fake_smoke_card[0] / "holistic-generation", run)
    rerender(run)
    cards = {c["role"]: c for c in json.loads((run / "metrics.json").read_text())["scorer_cards"]}
    offensive = cards["offensiveness"].get("skill_warning")
    style = cards["style"].get("skill_warning")
    text = " ".join(_section((run / "report.html").read_text(encoding="utf-8"), "Generation bias").split())
    intro = text[len("Generation bias"):].strip()
    if style:
        assert intro.startswith(" ".join(style.split())), intro[:300]
    else:
        assert intro.startswith("Each response gets a probability vector over styles"), intro[:300]
    if offensive:  # said, but beside the share it concerns
        said = " ".join(offensive.split())
        assert f"The share of offensive responses below rests on the offensiveness judge: {said}" in intro
        assert intro.index(said) > intro.index("Each response gets a probability vector")


def test_fairpair_table3_is_long():
    from biaslens.methods.fairpair.report import table3

    t3 = pd.DataFrame({"model": ["m"] * 3, "dissimilarity": ["jaccard", "sentiment", "embedding"],
                       "V_A": [0.9, 0.3, 0.2], "V_B": [0.92, 0.38, 0.21], "B": [0.94, 0.35, 0.25],
                       "F": [1.025, 1.305, 1.4], "F_median": [1.02, 1.3, 1.38], "n_prompts": [2, 2, 2],
                       "n_undefined_F": [0, 0, 0]})
    out = table3(t3, "John", "Jane")
    assert len(out) == 3 and len(out.columns) == 9
    assert out.iloc[1].to_dict() == {"model": "m", "dissimilarity": "sentiment", "V_A (John)": 30.0,
                                     "V_B (Jane)": 38.0, "B": 35.0, "F": 1.305, "F_median": 1.3, "n_prompts": 2,
                                     "n_undefined_F": 0}


def test_fairpair_sentence_leads_with_the_headline_dissimilarity():
    """The card shows the first dissimilarity's F (the headline entry); the sentence speaks of it
    first, says what F = 1.1 is, and gives each dissimilarity's F."""
    from biaslens.methods.fairpair.suite import verdict

    tests = pd.DataFrame({"model": ["m", "m"], "dissimilarity": ["jaccard", "sentiment"], "p": [0.2, 0.4],
                          "p_holm": [0.41, 0.41], "status": ["not significant", "cannot tell"],
                          "reason": ["", "too little data for the test to see a difference: at this size it detects "
                                         "(with about 80% power) only F above 2.68, so a difference of F = 1.1 (B "
                                         "about 5% above the sampling variability V), the smallest this verdict "
                                         "would rule out, goes unseen"],
                          "n_prompts_both": [2, 2], "detectable_F": [1.05, 2.68]})
    table3 = pd.DataFrame({"model": ["m", "m"], "dissimilarity": ["jaccard", "sentiment"], "F": [1.0254, 1.31]})
    text = verdict(tests, table3, 0.05, "John and Jane")["m"]
    assert text.startswith("Cannot tell whether John and Jane are treated differently: jaccard (F = 1.03): no "
                           "significant difference (p = 0.41, Holm-adjusted over 2 dissimilarities); sentiment (F = "
                           "1.31): cannot tell, too little data"), text
    assert "F = 1.1 (B about 5% above the sampling variability V)" in text
