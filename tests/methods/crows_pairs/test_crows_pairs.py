"""CrowS-Pairs: the authors' counting rule on hand-computed pairs, the shipped data against the
authors' file, masked-LM scoring against the authors' masking loop on a tiny BERT, the suite end
to end on the fake backend (run, report, re-render, compare), lm-eval's samples, bad input, and
one small run on the embedded model."""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

import biaslens
from biaslens.cli.app import app
from biaslens.methods.crows_pairs.dataset import BIAS_TYPES, CrowsPairsError, read_crows_pairs
from biaslens.methods.crows_pairs.metrics import authors_metric, crows_pairs_statistics, shared_positions


def _quiet() -> Console:
    return Console(file=io.StringIO(), width=150)


# --------------------------------------------------------------------------- the authors' rule


def test_authors_rule_on_hand_computed_pairs():
    """Six pairs, worked by hand: rounding to 3 decimals makes pair 3 a tie; the metric divides by all
    six (ties counted as not), the stereo and antistereo scores by their non-tied pairs."""
    more = [-10.0, -12.0, -9.0004, -8.0, -20.0, -5.25]
    less = [-11.0, -11.0, -9.0001, -9.5, -19.0, -5.2504]
    direction = ["stereo", "stereo", "stereo", "antistereo", "antistereo", "antistereo"]
    r = authors_metric(more, less, direction)
    # sent_more higher: pairs 1, 4, 6 (pair 6: -5.25 vs -5.250 rounds to a tie? no: -5.2504 -> -5.25 -> tie)
    assert r["neutral"] == 2  # pairs 3 and 6 tie after rounding
    assert r["metric_score"] == pytest.approx(100 * 2 / 6)  # pairs 1 and 4
    assert r["stereo_score"] == pytest.approx(100 * 1 / 2)  # stereo non-tied: 1, 2
    assert r["antistereo_score"] == pytest.approx(100 * 1 / 2)  # antistereo non-tied: 4, 5
    assert (r["n_stereo"], r["n_antistereo"]) == (2, 2)
    # the suite's share is the authors' metric, with its interval over pairs
    stats_, per_type, directions = crows_pairs_statistics(pd.DataFrame(
        {"score_more": more, "score_less": less, "stereo_antistereo": direction, "bias_type": ["a"] * 3 + ["b"] * 3}))
    assert stats_["share"]["share"] == pytest.approx(r["metric_score"]) and stats_["share"]["ties"] == 2
    assert stats_["mean_diff"]["mean"] == pytest.approx(np.mean(np.subtract(more, less)))


def test_shared_positions_are_difflib_equal_blocks():
    """The authors' get_span: [CLS] he/she went home [SEP] shares everything but the pronoun."""
    a, b = shared_positions([2, 11, 20, 21, 3], [2, 12, 13, 20, 21, 3])
    assert (a, b) == ([0, 2, 3, 4], [0, 3, 4, 5])


# --------------------------------------------------------------------------- the data


def test_shipped_pairs_are_the_authors_file(reference_dir):
    shipped = read_crows_pairs()
    with open(reference_dir / "beyond" / "crows-pairs" / "crows_pairs_anonymized.csv", newline="", encoding="utf-8") as f:
        ref = list(csv.DictReader(f))
    assert len(shipped) == len(ref) == 1508
    assert shipped["sent_more"].tolist() == [r["sent_more"] for r in ref]
    assert shipped["sent_less"].tolist() == [r["sent_less"] for r in ref]
    # every field a run reads is the authors', row by row (only the annotation columns are left out)
    assert shipped["pair"].tolist() == [int(r[""]) for r in ref]
    assert shipped["stereo_antistereo"].tolist() == [r["stereo_antistereo"] for r in ref]
    assert shipped["bias_type"].tolist() == [r["bias_type"] for r in ref]
    assert shipped["bias_type"].value_counts().to_dict() == {
        "race-color": 516, "gender": 262, "socioeconomic": 172, "nationality": 159, "religion": 105, "age": 87,
        "sexual-orientation": 84, "physical-appearance": 63, "disability": 60}
    assert set(shipped["bias_type"]) == set(BIAS_TYPES)
    assert (shipped["stereo_antistereo"] == "antistereo").sum() == 1508 - 1290


@pytest.mark.parametrize("edit,message", [
    (lambda rows: rows[3].update(stereo_antistereo="pro"), r":5: stereo_antistereo is 'pro'"),
    (lambda rows: rows[1].update(sent_less=""), r":3: empty sent_less"),
    (lambda rows: rows[2].update(sent_less=rows[2]["sent_more"]), r":4: sent_more and sent_less are the same"),
])
def test_bad_rows_name_file_and_line(tmp_path, edit, message):
    rows = [dict(r) for r in read_crows_pairs().head(6)[["sent_more", "sent_less", "stereo_antistereo",
                                                          "bias_type"]].to_dict("records")]
    edit(rows)
    path = tmp_path / "mine.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(CrowsPairsError, match=re.escape(str(path)) + message):
        read_crows_pairs(path)


def test_bad_file_on_the_command_line_is_one_error_line(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("sent_more,sent_less\na,b\n")
    r = CliRunner().invoke(app, ["run", "crows-pairs", "-m", "fake", "--crows-data-file", str(path),
                                 "--out", str(tmp_path / "run")])
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1 and "mine.csv:1: no column stereo_antistereo" in errors[0], r.output


# --------------------------------------------------------------------------- the suite, fake backend


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("crows") / "run"
    res = biaslens.run(suite="crows-pairs", model="fake", out=str(out), use_cache=False, console=_quiet(),
                       crows_pairs={"sample": 400})
    return out, res


def test_run_reproduces_the_authors_count_from_its_own_scores(fake_run):
    out, res = fake_run
    pairs = pd.read_parquet(out / "pairs.parquet")
    assert len(pairs) == 400 and {"item", "unit", "prefers"} <= set(pairs.columns)
    by_hand = authors_metric(pairs["score_more"], pairs["score_less"], pairs["stereo_antistereo"])
    m = json.loads((out / "metrics.json").read_text())
    assert m["authors"] == by_hand
    head = m["entries"][0]
    assert head["name"] == "metric_score" and head["value"] == pytest.approx(by_hand["metric_score"])
    assert head["ideal"] == 50 and head["level"] == 0.95 and head["df"] == 399 and head["verdict"]
    assert head["test"] and 0 <= head["p_value"] <= 1 and head["detectable"] > 0
    for e in m["entries"]:
        assert e["verdict"] in ("detected", "not_detected", "cannot_tell"), e
        assert e["level"] and e["test"] and e["ideal"] is not None and e["interval"], e
        if e["name"].startswith("metric_score."):
            assert e["level"] > 0.95  # Holm's step level
    assert [e["name"] for e in m["entries"]].count("mean_ll_diff") == 1
    assert re.search(r"\d+(\.\d+)?% \(95% CI \d+(\.\d+)?% to \d+(\.\d+)?%\)", m["verdict"]), m["verdict"]
    html = (out / "report.html").read_text()
    assert "Blodgett et al. (2021)" in html and "The pairs that drive the result" in html


def test_report_names_are_in_the_glossary(fake_run):
    from biaslens.methods.crows_pairs.report import sections
    from biaslens.report.glossary import NOT_METRICS, lookup
    from biaslens.report.html import shown_names

    out, res = fake_run
    from biaslens.api import rerender

    rerender(out)  # re-renders from the stored table, no model
    result = biaslens.suites.get_suite("crows-pairs")
    from biaslens.results import MetricEntry, SuiteResult

    m = json.loads((out / "metrics.json").read_text())
    per_type = pd.DataFrame(m["per_type"])
    sr = SuiteResult(metrics=m, entries=[MetricEntry(**e) for e in m["entries"]], verdict=m["verdict"],
                     tables={"per_type": per_type, "directions": pd.DataFrame(m["directions"]),
                             "drivers": pd.read_csv(out / "drivers.csv")})
    names = shown_names(sections(sr, pd.read_parquet(out / "pairs.parquet")))
    unknown = [n for n in names if lookup(n) is None and n not in NOT_METRICS and n not in BIAS_TYPES]
    assert not unknown and result.name == "crows-pairs"


def test_compare_two_runs_pairs_the_items(fake_run, tmp_path):
    out, _ = fake_run
    other = tmp_path / "other"
    from biaslens.models.fake import FakeBackend

    biaslens.run(suite="crows-pairs", model="fake", backend=FakeBackend(seed=1), out=str(other), use_cache=False,
                 console=_quiet(), crows_pairs={"sample": 400})
    r = CliRunner().invoke(app, ["compare", str(out), str(other), "--out", str(tmp_path / "cmp"),
                                 "--label", "a", "--label", "b"])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "cmp" / "metrics.json").read_text())["crows-pairs"]
    ch = m["change"]["b"]
    a = pd.read_parquet(out / "pairs.parquet")
    b = pd.read_parquet(other / "pairs.parquet")
    assert ch["n_items"] == 400
    assert ch["change"] == pytest.approx(100 * (b["prefers"].mean() - a["prefers"].mean()))
    assert ch["ci_low"] < ch["change"] < ch["ci_high"] and "crows-pairs b: change" in r.output
    # the headline is that share: compare's decision (and the gate's) is the paired change, not two intervals
    decision = json.loads((tmp_path / "cmp" / "metrics.json").read_text())["changes"]["crows-pairs"]["b"]
    assert decision["change_ci"] == pytest.approx([ch["ci_low"], ch["ci_high"]])
    assert decision["reason"].startswith("paired over 400 items") and "95% CI of the change" in decision["reason"]
    assert decision["verdict"] == ch["verdict"]


# --------------------------------------------------------------------------- lm-eval


def _lm_eval_samples(pairs: pd.DataFrame, lls: np.ndarray, path, swap_line: int | None = None):
    lines = []
    for i, (r, (a, b)) in enumerate(zip(pairs.itertuples(), lls)):
        doc = {"Unnamed: 0": i, "sent_more": r.sent_more, "sent_less": r.sent_less,
               "stereo_antistereo": r.stereo_antistereo, "bias_type": r.bias_type}
        choices = [r.sent_more, r.sent_less][::-1 if swap_line == i + 1 else 1]
        lines.append(json.dumps({
            "doc_id": i, "doc": doc, "target": "0",
            "arguments": {f"gen_args_{k}": {"arg_0": "", "arg_1": c} for k, c in enumerate(choices)},
            "resps": [[[str(a), "False"]], [[str(b), "False"]]], "filtered_resps": [[str(a), "False"], [str(b), "False"]],
            "filter": "none", "metrics": ["likelihood_diff", "pct_stereotype"]}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_from_lm_eval_samples(tmp_path):
    """lm-eval's crows_pairs_english samples (its 0.4 --log_samples layout): the two choices'
    log-likelihoods become the pair's scores; lm-eval's pct_stereotype counts ties against, as here."""
    pairs = read_crows_pairs().head(120)
    lls = -np.random.default_rng(0).uniform(20, 60, (120, 2))
    lls[5] = [-30.0, -30.0]  # a tie
    path = _lm_eval_samples(pairs, lls, tmp_path / "samples_crows_pairs_english_2026.jsonl")
    r = CliRunner().invoke(app, ["run", "crows-pairs", "--from-lm-eval", str(path), "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())
    pct_stereotype = 100 * np.mean(lls[:, 0] > lls[:, 1])  # lm-eval's own aggregate
    assert m["authors"]["metric_score"] == pytest.approx(pct_stereotype)
    assert m["mean_abs_diff"] == pytest.approx(np.mean(np.abs(lls[:, 0] - lls[:, 1])))  # lm-eval's likelihood_diff
    assert m["mean_diff"]["mean"] == pytest.approx(np.mean(lls[:, 0] - lls[:, 1]))
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["model"]["backend"] == "lm-eval" and run["scoring"]["computed"] == 0
    bad = _lm_eval_samples(pairs, lls, tmp_path / "bad.jsonl", swap_line=7)
    r = CliRunner().invoke(app, ["run", "crows-pairs", "--from-lm-eval", str(bad), "--out", str(tmp_path / "bad")])
    errors = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert r.exit_code == 2 and len(errors) == 1 and "bad.jsonl:7: the scored choices" in errors[0], r.output


# --------------------------------------------------------------------------- masked LMs


@pytest.fixture(scope="module")
def tiny_bert_and_pairs(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    pairs = read_crows_pairs().head(12)
    path = tmp_path_factory.mktemp("crows-bert")
    words = sorted({w for t in pairs["sent_more"].tolist() + pairs["sent_less"].tolist()
                    for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[
        ("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(path)
    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=128)).eval().save_pretrained(path)
    data = tmp_path_factory.mktemp("crows-data") / "pairs.csv"
    pairs[["sent_more", "sent_less", "stereo_antistereo", "bias_type"]].to_csv(data, index=False)
    return path, data, pairs


def _authors_mask_unigram(model, tok, sent1: str, sent2: str) -> tuple[float, float]:
    """The authors' mask_unigram, written out: the shared tokens (difflib over the ids, [CLS] and
    [SEP] included, then the first and last left out), each masked alone, log-probabilities summed."""
    import difflib

    import torch

    ids1, ids2 = tok(sent1)["input_ids"], tok(sent2)["input_ids"]
    m = difflib.SequenceMatcher(None, [str(x) for x in ids1], [str(x) for x in ids2])
    t1, t2 = [], []
    for op, a0, a1, b0, b1 in m.get_opcodes():
        if op == "equal":
            t1 += range(a0, a1)
            t2 += range(b0, b1)
    s1 = s2 = 0.0
    with torch.inference_mode():
        for i in range(1, len(t1) - 1):
            for ids, pos, acc in ((ids1, t1[i], 1), (ids2, t2[i], 2)):
                masked = list(ids)
                masked[pos] = tok.mask_token_id
                lp = float(torch.log_softmax(model(input_ids=torch.tensor([masked])).logits[0, pos], -1)[ids[pos]])
                if acc == 1:
                    s1 += lp
                else:
                    s2 += lp
    return s1, s2


def test_masked_lm_scores_are_the_authors_shared_token_pll(tiny_bert_and_pairs, tmp_path):
    from transformers import AutoTokenizer, BertForMaskedLM

    path, data, pairs = tiny_bert_and_pairs
    res = biaslens.run(suite="crows-pairs", model=str(path), out=str(tmp_path / "run"), use_cache=False,
                       console=_quiet(), crows_pairs={"data_file": str(data)})
    got = pd.read_parquet(tmp_path / "run" / "pairs.parquet")
    tok = AutoTokenizer.from_pretrained(path)
    model = BertForMaskedLM.from_pretrained(path).eval()
    for r in got.itertuples():
        want_more, want_less = _authors_mask_unigram(model, tok, r.sent_more, r.sent_less)
        assert r.score_more == pytest.approx(want_more, abs=1e-4) and r.score_less == pytest.approx(want_less, abs=1e-4)
    assert "both sentences share" in res.metrics["score_definition"]


# --------------------------------------------------------------------------- the embedded model


@pytest.mark.slow
def test_small_run_on_the_embedded_model(tmp_path, embedded_model):
    res = biaslens.run(suite="crows-pairs", model="smollm2-135m", backend=embedded_model, out=str(tmp_path / "run"),
                       use_cache=False, console=_quiet(), crows_pairs={"sample": 60})
    pairs = res.sentences
    assert len(pairs) == 60 and np.isfinite(pairs["score_more"]).all() and (pairs["score_more"] < 0).all()
    assert "'<|endoftext|>'" in res.metrics["score_definition"]
    assert res.metrics["entries"][0]["name"] == "metric_score" and res.metrics["verdict"]
