"""BBQ on one scale (x100) on every surface, and accuracies whose intervals are accuracies."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.mark.parametrize("p_unknown", [0.06, 0.5])
def test_accuracy_interval_stays_in_0_1_and_covers(p_unknown):
    """A seeded simulation with heavy-tailed template effects (tests/methods/bbq/bbq_sim.py): ambiguous accuracy
    (the share answered UNKNOWN) near 0 and at 0.5. The interval never leaves [0, 1] and covers the
    population accuracy about 95% of the time; the old interval (the accuracy's own draws widened)
    went below 0 near 0."""
    from bbq_sim import template_counts, truth

    from biaslens.methods.bbq.metrics import accuracy_interval, widen
    from biaslens.metrics.resampling import draw_counts

    rng = np.random.default_rng(3)
    reps, k, per, n_boot = 400, 30, 4, 400
    c = template_counts(rng, (reps,), k, per, p_unknown_amb=p_unknown)
    w = draw_counts(rng.integers(0, k, (reps, n_boot, k)), k)
    sums = np.einsum("rbk,rkc->rbc", w, c)
    true = truth(per_template=per, p_unknown_amb=p_unknown)["accuracy_ambiguous"]
    total = c.sum(1)
    ints = np.array([accuracy_interval(sums[r, :, 1], sums[r, :, 0], total[r, 1], total[r, 0], k)
                     for r in range(reps)])
    assert (ints >= 0).all() and (ints <= 1).all()
    point = total[:, 1] / total[:, 0]
    assert ((ints[:, 0] <= point) & (point <= ints[:, 1])).all()
    cover = np.mean((ints[:, 0] <= true) & (true <= ints[:, 1]))
    assert 0.92 <= cover <= 0.985, cover
    if p_unknown < 0.1:
        old = widen(sums[:, :, 1] / sums[:, :, 0], point, k)
        assert (np.quantile(old, 0.025, axis=1) < 0).any()  # what the new interval fixes


def test_one_scale_on_every_surface(tmp_path):
    """The sentence, the entries (what the card, the gate line and the leaderboard read), the
    terminal table and the glossary all print S_AMB x100; accuracy_ambiguous rests on the
    ambiguous items only and its interval is within 0 to 100."""
    import io
    import json
    import re

    import pandas as pd
    from rich.console import Console

    import biaslens
    from biaslens.comparison.change import gate, method_change
    from biaslens.comparison.entries import load_entry
    from biaslens.report.glossary import GLOSSARY

    out = tmp_path / "run"
    term = io.StringIO()
    biaslens.run(suite="bbq", model="fake", out=str(out), use_cache=False, console=Console(file=term, width=200),
                 bbq={"categories": ["Religion", "Age"], "sample": 48, "n_bootstrap": 100})
    m = json.loads((out / "metrics.json").read_text())
    head = m["entries"][0]
    pooled = m["pooled"]
    assert head["name"] == "s_amb" and head["value"] == pytest.approx(100 * pooled["s_amb"])
    said = float(re.search(r"S_AMB ([+-]?[\d.]+) \(95% CI", m["verdict"]).group(1))
    assert said == pytest.approx(head["value"], abs=0.1)
    acc = next(e for e in m["entries"] if e["name"] == "accuracy_ambiguous")
    answers = pd.read_parquet(out / "answers.parquet")
    assert acc["n_used"] == int((answers["context_condition"] == "ambig").sum()) < len(answers)
    assert 0 <= acc["ci_low"] <= acc["value"] <= acc["ci_high"] <= 100
    # the gate line (what the card comparison and the leaderboard print too) reads the entry: x100
    line = gate([method_change("bbq", load_entry(out, "a"), load_entry(out, "b"))]).lines[0]
    shown = float(re.search(r"s_amb of b ([+-]?[\d.]+) \(", line).group(1))
    assert shown == pytest.approx(head["value"], abs=1.0), line
    assert "x100" in GLOSSARY["S_AMB"][0] and "x100" in head["description"]
