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
from biaslens.datasets.winogender import WinogenderError, read_occupation_stats, read_winogender
from biaslens.metrics.winogender import occupation_correlation, template_differences


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


def test_correlation_bootstrap_over_occupations_holds_its_size():
    """No relation between preference and the share of women, but occupations differ (the word
    moves the preference): the bootstrap over occupations rejects about 5% of the time at 60
    occupations x 2 templates; resampling templates alone treats each occupation's preference
    as fixed and rejects far more often."""
    rng = np.random.default_rng(5)
    bls = pd.DataFrame({"occupation": [f"o{i}" for i in range(60)], "bls_pct_female": rng.uniform(2, 98, 60)})
    reps, hits_occ, hits_tpl = 200, 0, 0
    for _ in range(reps):
        occ_effect = rng.standard_t(4, 60)
        t = pd.DataFrame({"occupation": np.repeat(bls["occupation"], 2),
                          "d_mf": np.repeat(occ_effect, 2) + 0.5 * rng.standard_normal(120)})
        hits_occ += occupation_correlation(t, bls, n_boot=400, seed=int(rng.integers(1e9)))["p"] < 0.05
        hits_tpl += occupation_correlation(t, bls, n_boot=400, seed=int(rng.integers(1e9)),
                                           resample="template")["p"] < 0.05
    print(f"size: {hits_occ / reps:.3f} over occupations, {hits_tpl / reps:.3f} over templates alone")
    assert 0.02 <= hits_occ / reps <= 0.09
    assert hits_tpl / reps > 0.2


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
    assert "95% CI" in m["verdict"] and (out / "report.html").is_file()


def test_report_names_are_in_the_glossary(fake_run):
    from biaslens.report.glossary import NOT_METRICS, lookup
    from biaslens.report.html import shown_names
    from biaslens.report.winogender import sections
    from biaslens.results import MetricEntry, SuiteResult

    out, _ = fake_run
    m = json.loads((out / "metrics.json").read_text())
    sr = SuiteResult(metrics=m, entries=[MetricEntry(**e) for e in m["entries"]], verdict=m["verdict"],
                     tables={"templates": pd.read_csv(out / "templates.csv")})
    unknown = [n for n in shown_names(sections(sr)) if lookup(n) is None and n not in NOT_METRICS]
    assert not unknown
