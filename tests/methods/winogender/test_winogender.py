"""Winogender: every sentence of the authors' file paired into its template's male/female/neutral
triple, the per-template differences and the correlation by hand, the size of the correlation's
bootstrap test under no relation (occupations, not templates, resampled), bad input, and the suite
end to end on the fake backend."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from scipy import stats

import biaslens
from biaslens.methods.winogender.dataset import WinogenderError, read_occupation_stats, read_winogender
from biaslens.methods.winogender.metrics import occupation_correlation, template_differences


def test_every_sentence_of_the_authors_file_is_paired(reference_dir):
    folder = reference_dir / "beyond" / "winogender"
    with open(folder / "all_sentences.tsv", newline="", encoding="utf-8") as f:
        ref = {r["sentid"]: r["sentence"] for r in csv.DictReader(f, delimiter="\t")}
    rows = read_winogender()
    used = {f"{r.occupation}.{r.participant}.{r.answer}.{g}.txt": getattr(r, g)
            for r in rows.itertuples() for g in ("male", "female", "neutral")}
    assert used == ref and len(ref) == 720  # each of the 720 sentences in exactly one triple
    assert rows["template"].nunique() == 120 and len(rows) == 240
    with open(folder / "templates.tsv", newline="", encoding="utf-8") as f:
        templates = {f"{r['occupation(0)']}.{r['answer']}" for r in csv.DictReader(f, delimiter="\t")}
    assert set(rows["template"]) == templates
    assert set(read_occupation_stats()["occupation"]) == set(rows["occupation"])
    assert read_winogender(folder).equals(rows)  # the shipped copy is the authors'


def test_a_triple_that_differs_in_more_than_the_pronoun_names_its_line(tmp_path):
    src = read_winogender()
    lines = ["sentid\tsentence"]
    for r in src.head(4).itertuples():
        for g in ("male", "female", "neutral"):
            text = getattr(r, g)
            if r.Index == 2 and g == "female":
                text = text.replace("the", "a", 1)
            lines.append(f"{r.occupation}.{r.participant}.{r.answer}.{g}.txt\t{text}")
    (tmp_path / "all_sentences.tsv").write_text("\n".join(lines) + "\n")
    with pytest.raises(WinogenderError, match=r"all_sentences.tsv:8: the sentences differ in"):
        read_winogender(tmp_path)
    (tmp_path / "all_sentences.tsv").write_text("sentid\tsentence\nnurse.patient.0.male.txt\tHe is here.\n")
    with pytest.raises(WinogenderError, match=r":2: nurse.patient.0 has no female, neutral sentence"):
        read_winogender(tmp_path)


def test_template_differences_and_correlation_by_hand():
    rows = pd.DataFrame({"template": ["a.0", "a.0", "a.1", "a.1", "b.0", "b.0", "c.0", "c.0"],
                         "occupation": list("aaaabbcc"), "answer": [0, 0, 1, 1, 0, 0, 0, 0],
                         "d_mf": [1.0, 3.0, 0.0, 2.0, -1.0, -1.0, 0.5, -0.5], "d_mn": 0.0, "d_fn": 0.0})
    t = template_differences(rows)
    assert t.set_index("template")["d_mf"].to_dict() == {"a.0": 2.0, "a.1": 1.0, "b.0": -1.0, "c.0": 0.0}
    bls = pd.DataFrame({"occupation": list("abc"), "bls_pct_female": [20.0, 80.0, 50.0]})
    c = occupation_correlation(t, bls, n_boot=500)
    # female preference per occupation: a -1.5, b +1.0, c 0.0
    assert c["r"] == pytest.approx(stats.pearsonr([20.0, 80.0, 50.0], [-1.5, 1.0, 0.0]).statistic)
    assert c["n_occupations"] == 3 and c["n_templates"] == 4


def test_correlation_permutation_test_holds_its_size_with_the_real_occupation_statistics():
    """No relation between preference and the share of women, with the 60 real BLS figures and
    occupations that differ (the word moves the preference, heavy-tailed): the permutation test
    rejects r = 0 in at most 5.5% of 2,000 null runs (the bootstrap test it replaced: 5.9-6.5%), and
    its interval excludes 0 exactly when it rejects."""
    bls = read_occupation_stats()[["occupation", "bls_pct_female"]]
    rng = np.random.default_rng(5)
    reps, hits, agree = 2000, 0, 0
    occ = np.repeat(bls["occupation"].to_numpy(), 2)
    for _ in range(reps):
        t = pd.DataFrame({"occupation": occ, "d_mf": np.repeat(0.8 * rng.standard_t(3, 60), 2)
                          + 0.5 * rng.standard_t(4, 120)})
        c = occupation_correlation(t, bls, n_boot=500, seed=int(rng.integers(1e9)))
        hits += c["p"] < 0.05
        agree += (c["p"] < 0.05) == (c["ci_low"] > 0 or c["ci_high"] < 0)
    print(f"size of the permutation test: {hits / reps:.4f}")
    assert hits / reps <= 0.055 and agree == reps


def _fake_statistics(rows, stats_, seed, planted=None, n_boot=1000):
    """The suite's statistics on the unbiased fake model (every sentence an independent draw), from
    the same whole-sentence sums the suite scores."""
    from biaslens.methods.winogender.metrics import winogender_statistics
    from biaslens.models.fake import load_fake

    model = load_fake("fake-unbiased", seed=seed, planted=planted)
    sc = {g: np.array([s.logprobs.sum() for s in model.score_batch(rows[g].tolist())])
          for g in ("male", "female", "neutral")}
    r = rows.assign(d_mf=sc["male"] - sc["female"], d_mn=sc["male"] - sc["neutral"], d_fn=sc["female"] - sc["neutral"])
    return winogender_statistics(r, stats_, n_boot=n_boot, seed=seed)[0]


def test_the_sentence_is_family_wise_at_5_percent_on_the_unbiased_fake():
    """The sentence combines two tests (the correlation and the male share), Holm over them: on the
    unbiased fake model it reads "detected" in either in at most 3 of the first 40 seeds (it did in
    5 of 40 with each test at 5%) and in at most 7.5% of 400 seeds (24 of 400 when measured)."""
    from biaslens.methods.winogender.suite import winogender_verdict

    rows, st = read_winogender(), read_occupation_stats()
    hits = []
    for seed in range(400):
        s = _fake_statistics(rows, st, seed)
        c, m = s["correlation"], s["share_male"]
        hits.append(c["verdict"] == "detected" or m["verdict"] == "detected")
        assert c["level"] in (pytest.approx(0.975), pytest.approx(0.95)) and m["level"] >= 0.95
        if seed < 3:
            assert "compatible with 50%" not in winogender_verdict(s)
    print(f"null detections: {sum(hits[:40])}/40 seeds, {sum(hits)}/400")
    assert sum(hits[:40]) <= 3 and sum(hits) / 400 <= 0.075


@pytest.mark.parametrize(("planted", "side", "verdict"), [(None, None, "cannot tell whether the model prefers"),
                                                          ({"she": 3.0, "her": 3.0}, "female", None),
                                                          ({"he": 3.0, "his": 3.0, "him": 3.0}, "male", None)])
def test_the_sentence_prints_the_share_of_the_side_it_names(planted, side, verdict):
    from biaslens.methods.winogender.suite import winogender_verdict

    rows, st = read_winogender(), read_occupation_stats()
    s = _fake_statistics(rows, st, 0, planted)
    text = winogender_verdict(s)
    m = s["share_male"]
    if side is None:
        assert m["verdict"] == "cannot_tell" and verdict in text and "compatible" not in text
        assert f"only a share {m['detectable']:.0f}+ points" in text
        return
    assert m["verdict"] == "detected"
    shown = m if side == "male" else s["share_female"]
    assert shown["share"] > 50 and shown["ci_low"] > 50
    assert f"the {side} sentence is likelier in {shown['share']:.0f}%" in text, text
    label = f"{100 * m['level']:.4g}% CI"
    assert f"({label} {shown['ci_low']:.0f}% to {shown['ci_high']:.0f}%)" in text, text


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("winogender") / "run"
    res = biaslens.run(suite="winogender", model="fake", out=str(out), use_cache=False,
                       console=Console(file=io.StringIO()))
    return out, res


def test_run_on_the_fake_backend(fake_run):
    out, res = fake_run
    rows = pd.read_parquet(out / "sentences.parquet")
    assert len(rows) == 240 and np.allclose(rows["d_mf"], rows["score_male"] - rows["score_female"])
    m = json.loads((out / "metrics.json").read_text())
    head = m["entries"][0]
    assert head["name"] == "correlation_bls" and head["ideal"] == 0 and "occupations" in head["interval"]
    t = template_differences(rows)
    share = next(e for e in m["entries"] if e["name"] == "share_male")
    assert share["value"] == pytest.approx(100 * (t["d_mf"] > 0).mean()) and share["ideal"] == 50
    for e in m["entries"]:
        assert e["verdict"] in ("detected", "not_detected", "cannot_tell") and e["test"] and e["level"], e
    assert "% CI" in m["verdict"] and (out / "report.html").is_file()


def test_report_names_are_in_the_glossary(fake_run):
    from biaslens.methods.winogender.report import sections
    from biaslens.report.glossary import NOT_METRICS, lookup
    from biaslens.report.html import shown_names
    from biaslens.results import MetricEntry, SuiteResult

    out, _ = fake_run
    m = json.loads((out / "metrics.json").read_text())
    sr = SuiteResult(metrics=m, entries=[MetricEntry(**e) for e in m["entries"]], verdict=m["verdict"],
                     tables={"templates": pd.read_csv(out / "templates.csv")})
    unknown = [n for n in shown_names(sections(sr)) if lookup(n) is None and n not in NOT_METRICS]
    assert not unknown
