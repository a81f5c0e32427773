"""WinoBias: every sentence of the authors' eight files paired with its twin (brackets stripped),
the schemas, the statistics by hand, bad input, and the suite end to end on the fake backend."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import biaslens
from biaslens.methods.winobias.dataset import WinoBiasError, read_winobias
from biaslens.metrics.pair_preference import mean_difference


def test_every_sentence_of_the_authors_files_is_paired(reference_dir):
    folder = reference_dir / "beyond" / "winobias"
    twins = read_winobias(folder)
    assert len(twins) == 1584 and twins["schema"].nunique() == 792
    for t in (1, 2):
        for split in ("dev", "test"):
            sub = twins[(twins["type"] == t) & (twins["split"] == split)]
            for side in ("pro", "anti"):
                raw = (folder / f"{side}_stereotyped_type{t}.txt.{split}").read_text().splitlines()
                assert len(raw) == len(sub) == 396
                want = [" ".join(line.split(" ", 1)[1].replace("[", " ").replace("]", " ").split()) for line in raw]
                assert sub[side].tolist() == want  # every sentence, in order, brackets stripped
    assert not twins["pro"].str.contains(r"[\[\]]").any() and not twins["anti"].str.contains(r"[\[\]]").any()
    # a schema's two sentences name the same two occupations (the first words of the first)
    first = twins.groupby("schema")["pro"].apply(lambda s: {w.lower() for w in " ".join(s).split()})
    assert (first.apply(len) > 0).all()
    assert int((~twins["minimal"]).sum()) == 19
    assert read_winobias().equals(twins)  # the shipped copy is the authors'


def test_ids_out_of_step_name_file_and_line(tmp_path):
    for side in ("pro", "anti"):
        (tmp_path / f"{side}_stereotyped_type1.txt.dev").write_text(
            "1 [The nurse] met the cook because [she] was late.\n2 The nurse met [the cook] because [he] was late.\n"
            if side == "pro" else
            "1 [The nurse] met the cook because [he] was late.\n3 The nurse met [the cook] because [she] was late.\n")
    with pytest.raises(WinoBiasError, match=r"anti_stereotyped_type1.txt.dev:2: id 3, but line 2"):
        read_winobias(tmp_path, types=(1,), splits=("dev",))
    (tmp_path / "anti_stereotyped_type1.txt.dev").write_text("x\n")
    with pytest.raises(WinoBiasError, match=r"anti_stereotyped_type1.txt.dev:1: expected '<id> <sentence>'"):
        read_winobias(tmp_path, types=(1,), splits=("dev",))


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("winobias") / "run"
    res = biaslens.run(suite="winobias", model="fake", out=str(out), use_cache=False,
                       console=Console(file=io.StringIO()))
    return out, res


def test_run_on_the_fake_backend(fake_run):
    out, _ = fake_run
    twins = pd.read_parquet(out / "twins.parquet")
    d = twins["score_pro"] - twins["score_anti"]
    m = json.loads((out / "metrics.json").read_text())
    head = m["entries"][0]
    gap = 100 * ((d > 0).mean() - (d < 0).mean())
    assert head["name"] == "pro_anti_gap" and head["value"] == pytest.approx(gap) and head["ideal"] == 0
    from biaslens.methods.winobias.metrics import twin_occupations

    by_hand = mean_difference(100 * np.sign(d.to_numpy()), twins["schema"].to_numpy(),
                              occupations=twin_occupations(twins))
    assert (head["ci_low"], head["ci_high"]) == pytest.approx((by_hand["ci_low"], by_hand["ci_high"]))
    assert head["df"] == 39 and "two occupations each twin names" in head["interval"]
    assert {"pro_anti_gap.type1.test", "pro_anti_gap.type2.test"} <= {e["name"] for e in m["entries"]}
    names = [e["name"] for e in m["entries"]]
    assert {"share_pro.1.dev", "share_pro.2.test", "share_pro.1", "share_pro.2"} <= set(names)
    for e in m["entries"]:
        assert e["verdict"] in ("detected", "not_detected", "cannot_tell") and e["test"] and e["level"], e
    assert "% CI" in m["verdict"] and "type 1" in m["verdict"] and "pooled over the types and splits" in m["verdict"]
    assert m["n_not_minimal"] == 19


def test_report_names_are_in_the_glossary(fake_run):
    from biaslens.methods.winobias.report import sections
    from biaslens.report.glossary import NOT_METRICS, lookup
    from biaslens.report.html import shown_names
    from biaslens.results import MetricEntry, SuiteResult

    out, _ = fake_run
    m = json.loads((out / "metrics.json").read_text())
    sr = SuiteResult(metrics=m, entries=[MetricEntry(**e) for e in m["entries"]], verdict=m["verdict"],
                     tables={"cells": pd.DataFrame(m["cells"]), "types": pd.DataFrame(m["types"])})
    names = shown_names(sections(sr, pd.read_parquet(out / "twins.parquet")))
    unknown = [n for n in names if lookup(n) is None and n not in NOT_METRICS]
    assert not unknown


def test_compare_pairs_the_headline_gap_twin_by_twin(fake_run, tmp_path):
    """The pro-anti gap is a mean of 100 sign(d) over twins: two runs of the same twins are compared
    twin by twin (a paired t-interval clustered two ways by the twins' occupations, as each run's
    own), and that decides compare, cards and the gate."""
    from biaslens.comparison.runs import compare_runs
    from biaslens.methods.winobias.metrics import twin_occupations
    from biaslens.models.fake import FakeBackend

    out, _ = fake_run
    other = tmp_path / "other"
    biaslens.run(suite="winobias", model="fake", backend=FakeBackend(seed=1), out=str(other), use_cache=False,
                 console=Console(file=io.StringIO()))
    m = compare_runs([out, other], tmp_path / "cmp", ["a", "b"])
    head = m["winobias"]["headline_change_vs_first"]["b"]
    a, b = pd.read_parquet(out / "twins.parquet"), pd.read_parquet(other / "twins.parquet")
    ref, oth = twin_occupations(a)
    both = a.assign(ref=ref, oth=oth).merge(b, on="item", suffixes=("_a", "_b"))
    want = mean_difference((100 * (np.sign(both["d_pro_anti_b"]) - np.sign(both["d_pro_anti_a"]))).to_numpy(),
                           both["unit_a"].to_numpy(), occupations=(both["ref"], both["oth"]))
    assert want["n_units"] == 40 and head["unit"] == "occupations"
    assert head["change"] == pytest.approx(want["mean"]) and head["ci"] == pytest.approx([want["ci_low"], want["ci_high"]])
    # the headline values themselves differ by the same amount (every twin scored in both runs)
    ha, hb = (json.loads((p / "metrics.json").read_text())["entries"][0]["value"] for p in (out, other))
    assert hb - ha == pytest.approx(head["change"])
    decision = m["changes"]["winobias"]["b"]
    assert decision["reason"].startswith("paired over") and "40 occupations" in decision["reason"]
    assert decision["change_ci"] == pytest.approx(head["ci"])


def test_occupation_clustered_gap_covers_and_holds_its_size_at_the_default_design():
    """Occupations as sampled: the 1,584 twins of the default design with their real referent and
    other occupations; each run draws fresh occupation effects on the twin difference (referent sd
    0.24 nats, the other occupation 0.12, as the embedded model's spread across occupations), twin
    noise heavy-tailed (t5). The interval clustered two ways by both occupations covers the
    population gap in at least 93% of 2,000 runs and rejects a true gap of 0 in at most 6%; the
    schema-clustered interval it replaced covers in about half (its standard error a third of the
    occupations')."""
    from biaslens.methods.winobias.dataset import read_winobias
    from biaslens.methods.winobias.metrics import twin_occupations

    t = read_winobias()
    ref, other = twin_occupations(t)
    names = {n: i for i, n in enumerate(sorted(set(ref) | set(other)))}
    ri, oi = np.array([names[x] for x in ref]), np.array([names[x] for x in other])
    schema = t["schema"].to_numpy()
    big = np.random.default_rng(99)
    rng = np.random.default_rng(1)
    reps = 2000
    for mu in (0.0, 0.1):
        n = 2_000_000  # the population gap: fresh occupations and twins, many of them
        truth = 100 * np.mean(np.sign(mu + big.normal(0, 0.24, n) + big.normal(0, 0.12, n)
                                      + 0.4 * big.standard_t(5, n) / np.sqrt(5 / 3)))
        cover = reject = cover_schema = 0
        for _ in range(reps):
            u, v = rng.normal(0, 0.24, len(names)), rng.normal(0, 0.12, len(names))
            y = 100 * np.sign(mu + u[ri] + v[oi] + 0.4 * rng.standard_t(5, len(ri)) / np.sqrt(5 / 3))
            g = mean_difference(y, schema, occupations=(ri, oi))
            s = mean_difference(y, schema)
            cover += g["ci_low"] <= truth <= g["ci_high"]
            reject += g["p"] < 0.05
            cover_schema += s["ci_low"] <= truth <= s["ci_high"]
        print(f"gap {truth:+.1f}: coverage {cover / reps:.3f} (by schema {cover_schema / reps:.3f}), "
              f"rejects {reject / reps:.3f}")
        assert cover / reps >= 0.93 and cover_schema / reps < 0.6
        if mu == 0.0:
            assert abs(truth) < 0.5 and reject / reps <= 0.06


def test_compare_change_is_clustered_by_occupation_holds_its_size_and_finds_a_planted_change():
    """`biaslens compare` on WinoBias: the change of the pro-anti gap between two runs of the 1,584
    twins, clustered two ways by the twins' occupations as each run's own interval is. Two models
    drawn alike (occupation effects at the embedded run's spread, referent sd 0.24 nats and other
    0.12, half of each shared by the two models and half their own; heavy-tailed t5 twin noise, half
    shared), so the population change is exactly 0: the change is called in about 5% of 1,000 runs
    (the schema-clustered change it replaced, which treats each occupation's own shift as fixed,
    in more). The second model's twins 0.15 nats likelier pro is a change of about +24 points,
    found in most runs."""
    from biaslens.comparison.pair_preference import paired_change
    from biaslens.methods.winobias.metrics import twin_occupations

    t = read_winobias()
    t = t.assign(item=t["type"].astype(str) + "." + t["split"] + "." + t["id"].astype(str), unit=t["schema"])
    ref, other = twin_occupations(t)
    names = {n: i for i, n in enumerate(sorted(set(ref) | set(other)))}
    ri, oi = np.array([names[x] for x in ref]), np.array([names[x] for x in other])
    n, k = len(t), len(names)
    rng = np.random.default_rng(42)

    def unit_t5(size):
        return rng.standard_t(5, size) / np.sqrt(5 / 3)

    def two_runs(shift: float) -> tuple[np.ndarray, np.ndarray]:
        # each model: shared + own occupation effects and twin noise, half the variance each
        zu, zv, e = rng.normal(0, 0.24, k), rng.normal(0, 0.12, k), unit_t5(n)
        d = []
        for mu in (0.1, 0.1 + shift):
            u = np.sqrt(0.5) * zu + np.sqrt(0.5) * rng.normal(0, 0.24, k)
            v = np.sqrt(0.5) * zv + np.sqrt(0.5) * rng.normal(0, 0.12, k)
            d.append(mu + u[ri] + v[oi] + 0.4 * (np.sqrt(0.5) * e + np.sqrt(0.5) * unit_t5(n)))
        return d[0], d[1]

    def headline(table):
        return 100 * np.sign(table["d_pro_anti"])

    reps, called, called_schema = 1000, 0, 0
    for _ in range(reps):
        da, db = two_runs(0.0)
        ch = paired_change(t.assign(d_pro_anti=da), t.assign(d_pro_anti=db), headline, twin_occupations)
        called += ch["p"] < 0.05
        called_schema += mean_difference(100 * (np.sign(db) - np.sign(da)), t["schema"].to_numpy())["p"] < 0.05
    assert ch["unit"] == "occupations" and ch["n_units"] == 40 and "40 occupations" in ch["reason"]
    want = mean_difference(100 * (np.sign(db) - np.sign(da)), t["schema"].to_numpy(), occupations=(ref, other))
    assert ch["change"] == pytest.approx(want["mean"]) and ch["ci_low"] == pytest.approx(want["ci_low"])
    found, changes = 0, []
    for _ in range(200):
        da, db = two_runs(0.15)
        ch = paired_change(t.assign(d_pro_anti=da), t.assign(d_pro_anti=db), headline, twin_occupations)
        found += ch["verdict"] == "went up"
        changes.append(ch["change"])
    print(f"size {called / reps:.3f} (by schema {called_schema / reps:.3f}); planted change "
          f"{np.mean(changes):+.1f} points found in {found / 200:.2f}")
    assert 0.03 <= called / reps <= 0.065 and called_schema / reps > called / reps + 0.02
    assert found / 200 >= 0.8
    # a run stored without referents falls back to the schemas, and says so
    ch = paired_change(t.drop(columns="referent").assign(d_pro_anti=da), t.assign(d_pro_anti=db), headline,
                       twin_occupations)
    assert ch["unit"] == "units" and ch["n_units"] == 792
