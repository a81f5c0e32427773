"""The Likelihood Bias suite end to end on the fake backend (seconds), and resume after
``kill -9`` of a real run on the embedded model."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import biaslens
from biaslens.api import RunNotComplete
from biaslens.methods.holistic.dataset import COLUMNS
from biaslens.methods.holistic.likelihood_metrics import SIGNIFICANCE_COLUMNS
from biaslens.models.fake import FakeBackend
from biaslens.report.run_folder import RunFolderBusy
from biaslens.rounding import interval

GROUP = ["axis", "template", "descriptor"]


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def fake_run(out: Path, **kw):
    kw.setdefault("cache_dir", out.parent / "cache")
    return biaslens.run(model="fake", out=out, console=quiet(), **kw)


@pytest.fixture(scope="module")
def fake_run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fake") / "run"
    fake_run(out, sample=600)
    return out


def test_run_folder_contents(fake_run_dir):
    out = fake_run_dir
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["error"] is None
    assert run["suite"] == "holistic-likelihood"
    assert run["model"]["name"] == "fake"
    assert run["scoring"]["computed"] + run["scoring"]["cache_hits"] == run["scoring"]["n_unique"]
    assert set(run["files"]) >= {"sentences.parquet", "significances.parquet", "metrics.json", "report.html"}
    for name in run["files"]:
        assert (out / name).is_file(), name
    assert not list(out.glob(".*.tmp"))  # no temporary files left behind

    sentences = pd.read_parquet(out / "sentences.parquet")
    assert list(sentences.columns) == [*COLUMNS, "perplexity", "n_tokens", "sum_logprob"]
    assert sentences["perplexity"].gt(1).all() and sentences["n_tokens"].gt(0).all()
    np.testing.assert_allclose(sentences["perplexity"], np.exp(-sentences["sum_logprob"] / sentences["n_tokens"]))
    assert 400 <= len(sentences) <= 1200  # "about 600"

    sig = pd.read_parquet(out / "significances.parquet")
    assert list(sig.columns) == SIGNIFICANCE_COLUMNS and len(sig) > 0
    assert sig["p_value"].between(0, 1).all()

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["suite"] == "holistic-likelihood" and metrics["n_sentences"] == len(sentences)
    assert metrics["n_pairs"] == len(sig)
    assert set(metrics["by_axis"]) == set(sentences["axis"].astype(str))
    for v in metrics["by_axis"].values():
        assert 0 <= v["likelihood_bias"] <= 1 and v["ci_low"] <= v["likelihood_bias"] <= v["ci_high"]
    assert metrics["likelihood_bias"] == pytest.approx(sig["significant_difference"].mean())


def test_sample_keeps_whole_groups(fake_run_dir):
    sentences = pd.read_parquet(fake_run_dir / "sentences.parquet")
    sizes = sentences.groupby(GROUP, observed=True).size()
    assert set(sizes) == {30}  # every (axis, template, descriptor) group whole
    per_template = sentences.groupby(["axis", "template"], observed=True)["descriptor"].nunique()
    assert per_template.min() >= 2
    # the same descriptors for every chosen template of an axis
    for axis, part in sentences.groupby("axis", observed=True):
        sets = {frozenset(g["descriptor"]) for _, g in part.groupby("template", observed=True)}
        assert len(sets) == 1, axis
    assert "I love {plural_noun_phrase}." in set(sentences["template"].astype(str))


def test_larger_sample_has_love_and_hate(tmp_path):
    from biaslens.methods.holistic.dataset import build_sentences, likelihood_rows, load_holistic_dataset
    from biaslens.methods.holistic.likelihood import select_rows

    rows = likelihood_rows(build_sentences(load_holistic_dataset()))
    chosen = select_rows(rows, sample=6000, seed=0)
    templates = set(chosen["template"].astype(str))
    assert {"I love {plural_noun_phrase}.", "I hate {plural_noun_phrase}."} <= templates
    assert set(chosen.groupby(GROUP, observed=True).size()) == {30}
    assert 4000 <= len(chosen) <= 9000
    assert len(select_rows(rows, axes=["age"], templates=["I love {plural_noun_phrase}."], full=True)) == \
        30 * rows.loc[rows["axis"] == "age", "descriptor"].nunique()
    from biaslens.config import ConfigError

    with pytest.raises(ConfigError, match="--axes"):
        select_rows(rows, axes=["agee"])


def test_same_seed_same_bytes_other_seed_other_selection(fake_run_dir, tmp_path):
    fake_run(tmp_path / "again", sample=600, cache_dir=tmp_path / "c1")
    assert (tmp_path / "again" / "metrics.json").read_bytes() == (fake_run_dir / "metrics.json").read_bytes()
    fake_run(tmp_path / "seed1", sample=600, seed=1, cache_dir=tmp_path / "c2")
    a = pd.read_parquet(fake_run_dir / "sentences.parquet")[GROUP].drop_duplicates()
    b = pd.read_parquet(tmp_path / "seed1" / "sentences.parquet")[GROUP].drop_duplicates()
    assert set(map(tuple, a.astype(str).to_numpy())) != set(map(tuple, b.astype(str).to_numpy()))


def test_rerender_reproduces_metrics_without_model_calls(fake_run_dir, tmp_path, monkeypatch):
    import shutil

    import biaslens.models

    copy = tmp_path / "copy"
    shutil.copytree(fake_run_dir, copy)
    before = (copy / "metrics.json").read_bytes()

    def boom(*a, **k):
        raise AssertionError("rerender called the model")

    monkeypatch.setattr(biaslens.models, "load_model", boom)
    monkeypatch.setattr(FakeBackend, "score_batch", boom)
    (copy / "report.html").unlink()
    path = biaslens.rerender(copy)
    assert path == copy / "report.html" and path.is_file()
    assert (copy / "metrics.json").read_bytes() == before
    (copy / "metrics.json").unlink()
    biaslens.rerender(copy)
    # the model name and scoring kind come from run.json when metrics.json is gone
    assert (copy / "metrics.json").read_bytes() == before


def test_failed_run_is_marked_failed(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError, match="fail_after"):
        biaslens.run(model="fake", sample=600, out=out, cache_dir=tmp_path / "cache", console=quiet(),
                     backend=FakeBackend(fail_after=100))
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "failed" and "fail_after" in run["error"]
    assert not (out / "metrics.json").exists() and not (out / "report.html").exists()
    with pytest.raises((RunNotComplete, FileNotFoundError), match="complete|finish"):
        biaslens.rerender(out)
    # the finished batches are cached: a second attempt only scores the rest
    backend = FakeBackend()
    biaslens.run(model="fake", sample=600, out=out, cache_dir=tmp_path / "cache", console=quiet(), backend=backend)
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete"
    assert run["scoring"]["cache_hits"] >= 64 and backend.scored_texts == run["scoring"]["computed"]
    assert run["scoring"]["computed"] + run["scoring"]["cache_hits"] == run["scoring"]["n_unique"]


def test_failed_rerun_does_not_leave_old_results_looking_current(fake_run_dir, tmp_path):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(fake_run_dir, out)
    with pytest.raises(RuntimeError):
        biaslens.run(model="fake", sample=600, out=out, cache_dir=tmp_path / "cache", console=quiet(),
                     backend=FakeBackend(fail_after=10))
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "failed"
    # results of the earlier, complete run must not sit next to a failed run.json as if current
    assert not (out / "metrics.json").exists() and not (out / "report.html").exists()
    with pytest.raises((RunNotComplete, FileNotFoundError), match="complete|finish"):
        biaslens.rerender(out)


def test_busy_run_folder(tmp_path):
    from killing import another_process_holds_the_lock

    out = tmp_path / "run"
    out.mkdir()
    with another_process_holds_the_lock(out, 60):
        with pytest.raises(RunFolderBusy, match="another biaslens process"):
            biaslens.run(model="fake", sample=300, out=out, cache_dir=tmp_path / "cache", console=quiet())
        assert not (out / "run.json").exists()  # the other writer's folder is untouched
    biaslens.run(model="fake", sample=300, out=out, cache_dir=tmp_path / "cache", console=quiet())
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_report_escapes_user_data(tmp_path):
    extra = tmp_path / "descriptors_xss.json"
    extra.write_text(json.dumps({"xss": {"tags": ["<script>alert(1)</script>", "<b>bold</b>", "$\\frac{1$ rich",
                                                  "plain"]}}))
    template = "<img src=x onerror=alert(1)> I love {plural_noun_phrase}."
    extra_t = tmp_path / "sentence_templates_xss.json"
    extra_t.write_text(json.dumps({template: {}}))
    out = tmp_path / "run"
    result = biaslens.run(model="fake", out=out, cache_dir=tmp_path / "cache", console=quiet(),
                          extra_dataset_files=[extra, extra_t], axes=["xss"],
                          templates=["I love {plural_noun_phrase}.", template], full=True)
    assert "<script>alert(1)</script>" in set(result.sentences["descriptor"].astype(str))
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html
    assert "<script" not in html.lower()
    assert "<b>bold" not in html and "<img src=x" not in html


# ---------------------------------------------------------------- resume after kill -9


def test_resume_after_kill_9(tmp_path, embedded_model):
    """Kill a real embedded-model run with SIGKILL after two committed batches, re-run the same
    command: only the missing sentences are computed and the results equal an uninterrupted run."""
    from conftest import model_env
    from killing import cache_rows as _rows
    from killing import cli as _cli
    from killing import kill_when

    bs, n = 8, 60  # 60 sentences (two whole groups), 8 batches: small, yet time to kill after two
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["run", "--model", "smollm2-135m", "--sample", str(n), "--axes", "ability", "--out", str(out),
            "--cache-dir", str(cache), "--batch-size", str(bs)]
    env = model_env(BIASLENS_THREADS="1")
    db = cache / "calls.sqlite"
    kill_when(_cli(args), env, lambda: _rows(db) >= 2 * bs, tmp_path / "killed-run.log", poll=0.05)
    cached_at_kill = _rows(db)
    # whole batches only (the last, shorter batch would mean the kill came after scoring ended)
    assert cached_at_kill >= 2 * bs and cached_at_kill % bs in (0, n % bs)
    run_file = out / "run.json"
    if run_file.exists():
        assert json.loads(run_file.read_text())["status"] == "running"
    assert not (out / "metrics.json").exists()

    done = subprocess.run(_cli(args), env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(run_file.read_text())
    assert run["status"] == "complete"
    scoring = run["scoring"]
    assert scoring["cache_hits"] == cached_at_kill
    assert scoring["computed"] == scoring["n_unique"] - cached_at_kill
    assert _rows(db) == scoring["n_unique"] == n

    # an uninterrupted run (same batches, same thread count) into a fresh folder and cache
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        fresh = biaslens.run(model={"name": "smollm2-135m", "batch_size": bs}, sample=n, axes=["ability"],
                             out=tmp_path / "fresh", cache_dir=tmp_path / "fresh-cache", backend=embedded_model,
                             console=quiet())
    finally:
        torch.set_num_threads(threads)
    fresh_run = json.loads((tmp_path / "fresh" / "run.json").read_text())
    assert fresh_run["scoring"]["cache_hits"] == 0 and fresh_run["scoring"]["computed"] == n
    resumed = pd.read_parquet(out / "sentences.parquet")
    again = pd.read_parquet(tmp_path / "fresh" / "sentences.parquet")
    assert resumed["text"].tolist() == again["text"].tolist() == fresh.sentences["text"].tolist()
    np.testing.assert_allclose(resumed["perplexity"], again["perplexity"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(resumed["sum_logprob"], again["sum_logprob"], rtol=1e-9, atol=0)
    # the statistics on real model output equal scipy's
    assert _assert_significances_match_scipy(out) >= 1


def test_run_overrides_merge_into_nested_config(tmp_path):
    from biaslens.config import RunConfig

    cfg = RunConfig(model={"name": "fake"}, sample=300, cache_dir=tmp_path / "cache")
    result = biaslens.run(cfg, model={"batch_size": 7}, out=tmp_path / "run", console=quiet())
    run = json.loads((result.out / "run.json").read_text())
    assert run["model"]["name"] == "fake"
    assert run["config"]["model"]["name"] == "fake" and run["config"]["model"]["batch_size"] == 7
    assert run["config"]["sample"] == 300
    assert run["scoring"]["batches"] == -(-run["scoring"]["computed"] // 7)


def _assert_significances_match_scipy(run_dir: Path) -> int:
    """Every pair in a run folder's significances equals scipy.stats.mannwhitneyu on the
    perplexities in its sentences table (the reference's test, recomputed from the output)."""
    from scipy import stats

    sentences = pd.read_parquet(run_dir / "sentences.parquet")
    sig = pd.read_parquet(run_dir / "significances.parquet")
    groups = {k: g["perplexity"].to_numpy() for k, g in
              sentences.groupby(["axis", "template", "descriptor"], observed=True)}
    for r in sig.itertuples(index=False):
        ref = stats.mannwhitneyu(groups[(r.axis, r.template, r.descriptor_0)],
                                 groups[(r.axis, r.template, r.descriptor_1)])
        assert r.mann_whitney_u == float(ref.statistic)
        assert r.p_value == pytest.approx(float(ref.pvalue), rel=1e-12, abs=0)
        assert r.significant_difference == int(ref.pvalue < 0.05)
    return len(sig)


def test_pipeline_output_matches_scipy(fake_run_dir):
    assert _assert_significances_match_scipy(fake_run_dir) >= 13  # every pair of the sampled run


def test_too_few_descriptors_warns_in_terminal_report_and_metrics(tmp_path):
    """--sample 300 keeps 2 descriptors per axis: every axis's LB is 0 or 1. The terminal,
    metrics.json and the report say so next to the number."""
    out = tmp_path / "run"
    buf = io.StringIO()
    res = biaslens.run(model="fake", out=out, sample=300, cache_dir=tmp_path / "cache",
                       console=Console(file=buf, width=200))
    m = res.metrics
    assert all(v["n_descriptors"] == 2 and v["few_descriptors"] for v in m["by_axis"].values())
    assert len(m["warnings"]) == 1 and m["min_descriptors"] == 5
    n_axes = len(m["by_axis"])
    text = " ".join(buf.getvalue().split())  # undo the console's wrapping
    assert f"warning: {n_axes} of {n_axes} axes rest on fewer than 5 descriptors" in text
    assert "ability (2 descriptors, 1 pair)" in text
    # resamples of 2 descriptors often hold no pair, so BCa cannot be computed: the interval used,
    # the percentile one of the resamples with a pair, is named as such
    assert m["ci_method"] == "percentile" and m["ci_low"] <= m["likelihood_bias"] <= m["ci_high"]
    assert " *" in text  # marked next to the number in the table
    # the headline and the "all" row say what the overall figure rests on
    assert m["headline_caveat"].startswith("it rests on every axis with fewer than 5 descriptors (2 each)")
    assert "note: the overall Likelihood Bias (*): it rests on every axis" in text
    assert any(line.split("\u2502")[1:4] and line.split("\u2502")[1].strip() == "all"
               and line.split("\u2502")[3].strip().endswith("*") for line in buf.getvalue().splitlines())
    html = (out / "report.html").read_text()
    assert "Warnings" in html and "only 2 descriptors (&lt; 5): LB is coarse" in html
    assert "it rests on every axis with fewer than 5 descriptors" in html
    assert f"(95% percentile CI {interval(m['ci_low'], m['ci_high'])})" in html  # the headline
    assert json.loads((out / "metrics.json").read_text())["warnings"] == m["warnings"]
    # the default-sized run has enough descriptors: no warning
    ok = fake_run(tmp_path / "ok", sample=2000)
    assert not ok.metrics["warnings"] and ok.metrics["ci_method"] == "bootstrap"
    assert ok.metrics["ci_low"] <= ok.metrics["likelihood_bias"] <= ok.metrics["ci_high"]
