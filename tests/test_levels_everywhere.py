"""Every interval carries its level from ``MetricEntry.level`` to every surface: the card's
sentence, headline table and entry tables, the card comparison, the gate line and the
leaderboard. Full Gen Bias' 90% permutation interval reads 90% everywhere, a Holm step's
interval its own level, never a "95%" put beside it by a table header."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape

from card_clones import clone_card

from biaslens.rounding import level_text, value_and_interval


def _text(path) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))


def _levels_beside(text: str, ci: str, pattern: str) -> set[str]:
    """The levels printed beside each occurrence of the interval ``ci`` (``pattern``: how the
    surface writes an interval and its level, with {L} for the level and {I} for the interval)."""
    rx = re.escape(pattern).replace(re.escape("{L}"), r"(\d+(?:\.\d)?%)").replace(re.escape("{I}"), re.escape(ci))
    return set(re.findall(rx, text))


def test_every_printed_level_is_the_entrys(fake_smoke_card, tmp_path):
    from biaslens.bias_card import compare_cards, read_card, rerender_card
    from biaslens.card_leaderboard import leaderboard
    from biaslens.comparison.change import gate

    src, _ = fake_smoke_card
    card = tmp_path / "card"
    shutil.copytree(src, card)
    rerender_card(card)
    page = _text(card / "card.html")
    rows = read_card(card)["methods"]
    levels = {}
    for r in rows:
        if r.get("status") != "complete":
            continue
        head = r["entries"][0]
        levels[r["suite"]] = head.get("level")
        for e in r["entries"]:
            _, ci = value_and_interval(e.get("value"), e.get("ci_low"), e.get("ci_high"))
            if ci == "–":
                continue
            beside = _levels_beside(page, ci, "{I} ({L})")
            assert level_text(e.get("level")) in beside, (r["suite"], e["name"], ci, beside)
    fgb = next(r for r in rows if r["suite"] == "holistic-generation")["entries"][0]
    assert fgb["level"] == 0.9 and "90%" in fgb["interval"]  # the case that was printed as 95%
    assert "90% permutation interval" in next(r for r in rows if r["suite"] == "holistic-generation")["verdict"]

    # the card comparison and the gate line, against an identical copy
    same = tmp_path / "same"
    shutil.copytree(card, same)
    result = compare_cards(card, same, out=tmp_path / "cmp")
    cmp_page = _text(tmp_path / "cmp" / "card-compare.html")
    lines = gate(result["methods"]).lines
    for m in result["methods"]:
        if m.get("before") is None or None in (m.get("before_ci") or [None]):
            continue
        want = level_text(levels[m["suite"]])
        _, ci = value_and_interval(m["before"], *m["before_ci"])
        assert _levels_beside(cmp_page, ci, "({L} CI {I})") == {want}, (m["suite"], ci)
        line = next(ln for ln in lines if f" {m['suite']} " in f" {ln} ")
        if m["outcome"] in ("worse", "better", "no detectable change"):
            assert _levels_beside(line, ci, "({L} CI {I})") == {want}, line

    # the leaderboard: overview cells and each method's order table
    a = clone_card(card, tmp_path / "a", "model-a")
    b = clone_card(card, tmp_path / "b", "model-b", 0.001)
    lb = leaderboard([a, b], out=tmp_path / "lb")
    lb_page = _text(tmp_path / "lb" / "leaderboard.html")
    for board in lb["methods"]:
        for c in board["cells"]:
            if c.get("ci_low") is None or c["status"] != "complete":
                continue
            want = level_text(levels[board["suite"]])
            _, ci = value_and_interval(c["value"], c["ci_low"], c["ci_high"])
            # the overview prints a level only where it is not 95% (its title says so)
            beside = _levels_beside(lb_page, ci.replace(" to ", ", "), "[{I}] {L}")
            assert beside == ({want} if want != "95%" else set()), (board["suite"], ci, beside)
            assert _levels_beside(lb_page, ci, "{I} ({L})") == {want}, (board["suite"], ci)
    json.dumps(lb, default=str)  # the result stays JSON-able
