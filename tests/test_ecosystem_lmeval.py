"""lm-evaluation-harness both ways: `biaslens export lm-eval` writes a task lm-eval runs, and
`biaslens run holistic-likelihood --from-lm-eval SAMPLES --tokenizer MODEL` rebuilds per-sentence
perplexity from its --log_samples output with no model calls; bad samples fail in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app

TASK = "biaslens_holistic_likelihood"
SELECT = ["--sample", "200", "--axes", "ability,age"]


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def _one_error_line(result) -> str:
    assert "Traceback" not in result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    return errors[0]


@pytest.fixture
def export(cli, tmp_path):
    r = cli("export", "lm-eval", "--suite", "holistic-likelihood", *SELECT, "--out", tmp_path / "task")
    assert r.exit_code == 0, r.output
    docs = [json.loads(ln) for ln in (tmp_path / "task" / f"{TASK}.jsonl").read_text().splitlines()]
    asked = int(SELECT[SELECT.index("--sample") + 1])
    if asked != len(docs):  # a stratified sample keeps whole groups: the line says how many were written
        assert f"wrote {len(docs):,} texts ({asked:,} requested" in " ".join(r.output.split()), r.output
    return tmp_path / "task", docs


def _samples(docs, lls, path: Path, mutate=None) -> Path:
    """A samples file as lm-eval 0.4's --log_samples writes it (arguments as gen_args_0/arg_0, the
    log-likelihood as a string)."""
    lines = []
    for i, (doc, ll) in enumerate(zip(docs, lls)):
        rec = {"doc_id": i, "doc": dict(doc), "target": doc["text"],
               "arguments": {"gen_args_0": {"arg_0": doc["text"]}}, "resps": [[str(ll)]], "filtered_resps": [str(ll)],
               "filter": "none", "metrics": ["word_perplexity"]}
        if mutate:
            rec = mutate(i, rec)
        if rec is not None:
            lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_export_task_folder(export):
    folder, docs = export
    yaml_text = (folder / f"{TASK}.yaml").read_text()
    assert "output_type: loglikelihood_rolling" in yaml_text and "dataset_path: json" in yaml_text
    assert str((folder / f"{TASK}.jsonl").resolve()) in yaml_text
    assert [d["row"] for d in docs] == list(range(len(docs))) and all(d["n_rows"] == len(docs) for d in docs)
    assert {d["axis"] for d in docs} == {"ability", "age"}
    assert docs[0]["selection"] == "--sample 200 --seed 0 --axes ability,age"
    assert "prefix_token_id" in (folder / "README.md").read_text()


def test_import_rebuilds_perplexity(cli, export, tmp_path):
    """Token counts from the named tokenizer (no start token counted), perplexity exp(-ll/n)."""
    from biaslens.models.embedded import embedded_model_dir
    from biaslens.models.tokenized import load_tokenizer

    _, docs = export
    tok = load_tokenizer(str(embedded_model_dir()))
    n = np.array([len(tok(d["text"], add_special_tokens=False)["input_ids"]) for d in docs])
    lls = -n * np.random.default_rng(0).uniform(2.0, 5.0, len(docs))
    samples = _samples(docs, lls.tolist(), tmp_path / f"samples_{TASK}_2026-11-25T10-00-00.jsonl")
    r = cli("run", "holistic-likelihood", "--from-lm-eval", samples, "--tokenizer", "smollm2-135m", *SELECT,
            "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    s = pd.read_parquet(tmp_path / "run" / "sentences.parquet")
    assert s["text"].tolist() == [d["text"] for d in docs]
    assert (s["n_tokens"].to_numpy() == n).all()
    np.testing.assert_allclose(s["perplexity"], np.exp(-lls / n), rtol=1e-12)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert 0 <= metrics["likelihood_bias"] <= 1 and metrics["n_sentences"] == len(docs)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["model"]["backend"] == "lm-eval" and run["scoring"]["computed"] == 0
    # no results file beside the samples: lm-eval's HF default (BOS <|im_start|>) is assumed and flagged
    assert run["lm_eval"]["start_token"] == "<|im_start|>"
    assert any("prefix_token_id=0" in w for w in metrics["warnings"])
    assert (tmp_path / "run" / "report.html").exists()


def _bad(i, rec, kind):
    if kind == "missing" and i == 3:
        return None
    if kind == "wrong_task" and i == 2:
        rec["doc"] = {"sentence": "Something else."}
    if kind == "mismatch" and i == 4:
        rec["doc"]["text"] = rec["arguments"]["gen_args_0"]["arg_0"] = "I love nobody."
    if kind == "edited" and i == 1:
        rec["arguments"]["gen_args_0"]["arg_0"] = "Another text."
    if kind == "duplicate" and i == 5:
        rec["doc"]["row"] = 0
    if kind == "positive" and i == 0:
        rec["filtered_resps"] = ["3.0"]
    return rec


@pytest.mark.parametrize("kind, expected", [
    ("missing", "1 of 180 sentences have no sample (rows 3)"),
    ("wrong_task", ":3: the document lacks"),
    ("mismatch", ":5: row 4 is 'I love nobody.'"),
    ("edited", ":2: the scored text 'Another text.' differs"),
    ("duplicate", ":6: sentence row 0 was already logged at line 1"),
    ("positive", ":1: log-likelihood ['3.0'] is not a finite number <= 0"),
    ("selection", ":1: exported with --sample 200 --seed 0 --axes ability,age"),
    ("json", ":1: invalid JSON"),
    ("no_tokenizer", "--from-lm-eval needs --tokenizer"),
])
def test_bad_samples_one_line(cli, export, tmp_path, kind, expected):
    _, docs = export
    path = _samples(docs, [-30.0] * len(docs), tmp_path / f"samples_{TASK}_x.jsonl",
                    mutate=lambda i, rec: _bad(i, rec, kind))
    if kind == "json":
        path.write_text("{not json\n")
    select = ["--sample", "300", "--axes", "ability,age"] if kind == "selection" else SELECT
    tok = [] if kind == "no_tokenizer" else ["--tokenizer", "smollm2-135m"]
    r = cli("run", "holistic-likelihood", "--from-lm-eval", path, *tok, *select, "--out", tmp_path / "run")
    line = _one_error_line(r)
    assert expected in line, line
    assert str(path) in line or kind == "no_tokenizer"
    assert not (tmp_path / "run").exists()  # nothing half-written


lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed: pip install 'biaslens[lmeval]' "
                                                "(the round trip through lm-evaluation-harness)")


@pytest.mark.slow
def test_round_trip_through_lm_eval(cli, tmp_path):
    """The exported task run by lm-eval (HF model, the embedded SmolLM2 folder, CPU, prefix_token_id
    = biaslens's start token) gives per-sentence log-likelihoods within 1e-3 of biaslens's own
    scoring, and the same Likelihood Bias."""
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    from biaslens.models.embedded import embedded_model_dir

    select = ["--sample", "400", "--axes", "ability,age,religion"]  # 360 sentences
    assert cli("export", "lm-eval", *select, "--out", tmp_path / "task").exit_code == 0
    folder = embedded_model_dir()
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm"))
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={folder},prefix_token_id=0,dtype=float32", tasks=[TASK],
        task_manager=TaskManager(include_path=str(tmp_path / "task")), device="cpu", batch_size=512,
        log_samples=True, evaluation_tracker=tracker)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name=TASK, samples=samples[TASK])
    (path,) = (tmp_path / "lm").rglob(f"samples_{TASK}_*.jsonl")

    r = cli("run", "holistic-likelihood", "--from-lm-eval", path, "--tokenizer", "smollm2-135m", *select,
            "--out", tmp_path / "imported")
    assert r.exit_code == 0, r.output
    r = cli("run", "holistic-likelihood", "-m", "smollm2-135m", *select, "--no-cache", "--out", tmp_path / "own")
    assert r.exit_code == 0, r.output
    imp = pd.read_parquet(tmp_path / "imported" / "sentences.parquet")
    own = pd.read_parquet(tmp_path / "own" / "sentences.parquet")
    assert len(imp) == len(own) >= 300 and imp["text"].tolist() == own["text"].tolist()
    assert (imp["n_tokens"].to_numpy() == own["n_tokens"].to_numpy()).all()
    diff = np.abs(imp["sum_logprob"].to_numpy() - own["sum_logprob"].to_numpy())
    print(f"max |log-likelihood difference| over {len(imp)} sentences: {diff.max():.2e}")
    assert diff.max() < 1e-3
    m_imp = json.loads((tmp_path / "imported" / "metrics.json").read_text())
    m_own = json.loads((tmp_path / "own" / "metrics.json").read_text())
    assert m_imp["likelihood_bias"] == m_own["likelihood_bias"]
    assert m_imp["by_axis"].keys() == m_own["by_axis"].keys()
    run = json.loads((tmp_path / "imported" / "run.json").read_text())
    assert run["lm_eval"]["start_token"] == "<|endoftext|>" == run["lm_eval"]["biaslens_start_token"]
    assert not m_imp["warnings"] or not any("prefix_token_id" in w for w in m_imp["warnings"])
    assert math.isfinite(diff.mean())


@pytest.mark.parametrize("model_args", [
    "{'pretrained': '/m', 'prefix_token_id': 0, 'dtype': 'float32'}",  # what the lm_eval CLI writes
    "pretrained=/m,prefix_token_id=0,dtype=float32",
    {"pretrained": "/m", "prefix_token_id": 0},
])
def test_results_file_beside_samples(tmp_path, model_args):
    """The prefix token lm-eval used is read from its results file, in each form it writes model_args."""
    from biaslens.datasets.lm_eval import lm_eval_run_info

    date = "2026-11-25T16-58-36.631403"
    (tmp_path / f"results_{date}.json").write_text(json.dumps({
        "config": {"model": "hf", "model_args": model_args}, "lm_eval_version": "0.4.13",
        "tokenizer_bos_token": ["<|im_start|>", "1"], "tokenizer_eos_token": ["<|im_end|>", "2"]}))
    info = lm_eval_run_info(tmp_path / f"samples_{TASK}_{date}.jsonl")
    assert info["prefix_token_id"] == 0 and info["pretrained"] == "/m" and info["bos"] == ("<|im_start|>", 1)
    assert lm_eval_run_info(tmp_path / f"samples_{TASK}_2000-01-01.jsonl") == {}


def test_from_lm_eval_on_another_suite_is_refused(cli, tmp_path):
    line = _one_error_line(cli("run", "fairpair", "--from-lm-eval", tmp_path / "s.jsonl", "--tokenizer", "x"))
    assert "for holistic-likelihood, redditbias and crows-pairs, not fairpair" in line
    line = _one_error_line(cli("run", "redditbias", "--from-lm-eval", tmp_path / "s.jsonl", "--tokenizer", "x"))
    assert "s.jsonl: cannot read" in line


RB = ["--bias-types", "gender,race"]


def test_redditbias_lmb_from_lm_eval(cli, tmp_path):
    """RedditBias LMB from lm-eval samples: two documents per pair, perplexity exp(-ll/n) per side."""
    from biaslens.models.embedded import embedded_model_dir
    from biaslens.models.tokenized import load_tokenizer

    r = cli("export", "lm-eval", "--suite", "redditbias", *RB, "--max-template-pairs", "30", "--out", tmp_path / "t")
    assert r.exit_code == 0, r.output
    docs = [json.loads(ln) for ln in (tmp_path / "t" / "biaslens_redditbias_lmb.jsonl").read_text().splitlines()]
    assert len(docs) == 2 * 2 * 30 and {d["side"] for d in docs} == {"phrase", "counterfactual"}
    tok = load_tokenizer(str(embedded_model_dir()))
    n = np.array([len(tok(d["text"], add_special_tokens=False)["input_ids"]) for d in docs])
    lls = -n * np.random.default_rng(1).uniform(2.0, 5.0, len(docs))
    samples = _samples(docs, lls.tolist(), tmp_path / "samples_biaslens_redditbias_lmb_x.jsonl")
    r = cli("run", "redditbias", "--from-lm-eval", samples, "--tokenizer", "smollm2-135m", *RB,
            "-S", "redditbias.max_template_pairs=30", "--out", tmp_path / "run")
    assert r.exit_code == 0, r.output
    pairs = pd.read_parquet(tmp_path / "run" / "pairs.parquet")
    ppl = np.exp(-lls / n)
    by = {(d["bias_type"], int(d["pair"]), d["side"]): p for d, p in zip(docs, ppl)}
    for row in pairs.itertuples():
        k = row.Index - (0 if row.bias_type == pairs["bias_type"].iloc[0] else 30)
        assert row.ppl_minoritized == pytest.approx(by[(row.bias_type, k, "phrase")], rel=1e-12)
        assert row.ppl_dominant == pytest.approx(by[(row.bias_type, k, "counterfactual")], rel=1e-12)
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["model"]["backend"] == "lm-eval" and run["scoring"]["computed"] == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert any("prefix_token_id=0" in w for w in metrics["warnings"])
    # other pairs than the export's: one line naming the flags to repeat
    line = _one_error_line(cli("run", "redditbias", "--from-lm-eval", samples, "--tokenizer", "smollm2-135m", *RB,
                               "--out", tmp_path / "run2"))
    assert "-S redditbias.max_template_pairs=30" in line and ":1:" in line


@pytest.mark.slow
def test_round_trip_redditbias_through_lm_eval(cli, tmp_path):
    """RedditBias LMB the same way: each phrase's and counterfactual's log-likelihood within 1e-3 of
    biaslens's own scoring, and the same t-test verdict."""
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    from biaslens.models.embedded import embedded_model_dir
    from biaslens.models.tokenized import load_tokenizer

    task = "biaslens_redditbias_lmb"
    assert cli("export", "lm-eval", "--suite", "redditbias", "--bias-types", "gender", "--max-template-pairs", "100",
               "--out", tmp_path / "task").exit_code == 0
    folder = embedded_model_dir()
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm"))
    results = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={folder},prefix_token_id=0,dtype=float32", tasks=[task],
        task_manager=TaskManager(include_path=str(tmp_path / "task")), device="cpu", batch_size=512,
        log_samples=True, evaluation_tracker=tracker)
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    tracker.save_results_samples(task_name=task, samples=samples[task])
    (path,) = (tmp_path / "lm").rglob(f"samples_{task}_*.jsonl")
    common = ["--bias-types", "gender", "-S", "redditbias.max_template_pairs=100"]
    r = cli("run", "redditbias", "--from-lm-eval", path, "--tokenizer", "smollm2-135m", *common,
            "--out", tmp_path / "imported")
    assert r.exit_code == 0, r.output
    r = cli("run", "redditbias", "-m", "smollm2-135m", *common, "--no-cache", "--out", tmp_path / "own")
    assert r.exit_code == 0, r.output
    imp = pd.read_parquet(tmp_path / "imported" / "pairs.parquet")
    own = pd.read_parquet(tmp_path / "own" / "pairs.parquet")
    assert len(imp) == len(own) == 100 and imp["phrase"].tolist() == own["phrase"].tolist()
    tok = load_tokenizer(str(folder))
    diffs = []
    for side, col in (("phrase", "ppl_minoritized"), ("counterfactual", "ppl_dominant")):
        n = np.array([len(ids) for ids in tok(imp[side].tolist(), add_special_tokens=False)["input_ids"]])
        diffs.append(np.abs(n * (np.log(imp[col].to_numpy()) - np.log(own[col].to_numpy()))))
    diff = np.concatenate(diffs)
    print(f"redditbias: max |log-likelihood difference| over {len(diff)} texts: {diff.max():.2e}")
    assert diff.max() < 1e-3
    lmb_imp = pd.read_csv(tmp_path / "imported" / "lmb.csv")
    lmb_own = pd.read_csv(tmp_path / "own" / "lmb.csv")
    np.testing.assert_allclose(lmb_imp["t"], lmb_own["t"], atol=1e-2)
    assert ((lmb_imp["p"] < 0.05) == (lmb_own["p"] < 0.05)).all()
