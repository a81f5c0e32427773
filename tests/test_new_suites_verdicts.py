"""The verdict paths of Winogender, WinoBias, BBQ and BOLD end to end at the bias card's budgets
(smoke and default), on fake models with a known answer: ``fake-unbiased`` (every text an
independent draw: no bias by construction) and the same model with planted words (a known lean).
CrowS-Pairs' are in tests/methods/crows_pairs/test_crows_pairs.py. Each sentence says what its entries' verdicts say,
and each interval printed agrees with its verdict."""

from __future__ import annotations

import json

import numpy as np
import pytest
from rich.console import Console

import biaslens
from biaslens.methods.bbq.dataset import read_category
from biaslens.suites import suite_class

QUIET = Console(stderr=True, quiet=True)


def _run(tmp_path, suite, name, budget, *, planted=None, **options):
    model = {"name": "fake-unbiased"}
    if planted:
        model.update(backend="fake", engine_options={"planted": planted})
    spec = dict(suite_class(suite).card.budgets[budget].get(suite, {}))
    spec.update(options)
    res = biaslens.run(suite=suite, model=model, out=str(tmp_path / name), cache_dir=str(tmp_path / "cache"),
                       console=QUIET, **({suite: spec} if spec else {}))
    return res.metrics


def _agree(entries):
    for e in entries:
        if e.get("verdict") is None or e.get("ci_low") is None:
            continue
        ideal = e.get("ideal") or 0.0
        excludes = e["ci_low"] > ideal or e["ci_high"] < ideal
        assert excludes == (e["verdict"] == "detected"), e


def test_winogender_unbiased_and_planted(tmp_path):
    """All 720 sentences at every budget: the unbiased fake reads 'cannot tell' for both tests;
    'she'/'her' planted 3 nats likelier reads the female sentence likelier, its share printed."""
    m = _run(tmp_path, "winogender", "wg", "default")
    assert m["verdict"].startswith("cannot tell whether the model's pronoun preference follows")
    assert "cannot tell whether the model prefers either pronoun" in m["verdict"]
    _agree(m["entries"][:2])
    p = _run(tmp_path, "winogender", "wg_planted", "default", planted={"she": 3.0, "her": 3.0})
    share = next(e for e in p["entries"] if e["name"] == "share_male")
    assert share["verdict"] == "detected" and share["ci_high"] < 50
    assert "; the female sentence is likelier in 6" in p["verdict"]
    _agree(p["entries"][:2])


@pytest.mark.parametrize("budget", ["smoke", "default"])
def test_winobias_unbiased_reads_no_preference(tmp_path, budget):
    """The unbiased fake: no type on the test split (default) or the pooled gap (smoke: type 1, dev
    only) reads 'detected'; a planted 'he' (a pronoun-frequency lean) cancels in the pro-anti gap,
    as WinoBias' design intends (each schema pairs a male- and a female-stereotyped occupation)."""
    for name, planted in (("u", None), ("he", {"he": 3.0, "his": 3.0, "him": 3.0})):
        m = _run(tmp_path, "winobias", f"wb_{budget}_{name}", budget, planted=planted)
        heads = [e for e in m["entries"] if e["name"].startswith("pro_anti_gap")]
        assert heads and all(e["verdict"] != "detected" for e in heads), [(e["name"], e["p_value"]) for e in heads]
        assert not m["verdict"].startswith("the model prefers")
        assert m["unit"] == "occupations"
        _agree(m["entries"])


def test_bbq_unbiased_at_the_smoke_budget_and_a_planted_answer_file(tmp_path):
    """Smoke budget on the unbiased fake: no category biased after Holm. An answers file that always
    picks the stereotyped person (Religion, full) is biased in both contexts, every interval
    agreeing with its verdict."""
    m = _run(tmp_path, "bbq", "bbq_u", "smoke")
    assert "0 of 2 categories biased in ambiguous contexts after Holm" in m["verdict"]
    _agree(m["entries"])
    items = read_category("Religion")
    rows = [{"example_id": int(r["example_id"]), "category": "Religion", "answer": int(r["target_loc"])}
            for r in items.to_dict("records")]
    path = tmp_path / "biased.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = biaslens.run(suite="bbq", out=str(tmp_path / "bbq_b"), bbq={"answers_file": str(path), "n_bootstrap": 500},
                       console=QUIET)
    b = res.metrics
    assert b["verdict"].startswith("answers with the stereotype in ambiguous contexts")
    assert "1 of 1 categories biased in ambiguous contexts after Holm" in b["verdict"] or \
        "1 of 1 category biased in ambiguous contexts after Holm" in b["verdict"]
    _agree(b["entries"])


def test_bold_unbiased_at_the_smoke_budget_says_what_the_budget_detects(tmp_path):
    m = _run(tmp_path, "bold", "bold_u", "smoke")
    for e in m["entries"]:
        assert e["verdict"] != "detected" or np.isfinite(e["ci_low"])
        if e["verdict"] == "cannot_tell":
            assert "at this budget can only detect" in m["verdict"]
