"""Each debiasing method trains a tiny random model for 2 steps and writes a loadable model
folder; training resumes from its checkpoint; the CLI runs end to end on the embedded model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biaslens.methods.redditbias.dataset import builtin_spec
from biaslens.methods.redditbias.mitigation import (
    DebiasOptions,
    build_examples,
    cda_texts,
    debias,
    load_grid,
    make_lmd_loss,
    resolve_terms,
    run_grid,
    target_spans,
)
from biaslens.mitigation.training import TrainingConfig

SPEC = builtin_spec("religion1")


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory, tiny_causal_lm) -> dict[str, Path]:
    from biaslens.methods.redditbias.dataset import template_pairs

    root = tmp_path_factory.mktemp("tiny")
    pairs = template_pairs(SPEC)
    corpus = pairs["phrase"].tolist() + pairs["counterfactual"].tolist()
    return {arch: tiny_causal_lm(root / arch, arch, corpus=corpus) for arch in ("gpt2", "llama")}


def _opts(method: str, **kw) -> DebiasOptions:
    cfg = TrainingConfig(max_steps=kw.pop("max_steps", 2), batch_size=4, save_steps=kw.pop("save_steps", 50),
                         lm_weight=0.01, extra_weight=10.0, max_length=32)
    return DebiasOptions(method=method, spec=SPEC, data_dir=None, max_template_pairs=24, training=cfg, **kw)


@pytest.mark.parametrize("method,arch", [("cda", "gpt2"), ("lmd", "llama"), ("add", "gpt2"), ("hd", "llama")])
def test_each_method_writes_a_loadable_model(tiny_models, tmp_path, method, arch):
    from transformers import AutoModelForCausalLM

    result, record = debias(tiny_models[arch], tmp_path / "out", _opts(method))
    assert result.steps == 2 and result.train_loss == result.train_loss  # finite
    AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "debias.json").read_text())
    assert saved["method"] == method and saved["data_source"] == "templates"
    if method == "cda":
        assert saved["n_swapped_copies"] > 0 and saved["n_train_texts"] == saved["n_original"] + saved["n_swapped_copies"]
    elif method == "lmd":
        assert saved["target_occurrences"] > 0
    else:
        assert saved["attribute_occurrences"] > 0


def test_resume_continues_from_the_checkpoint(tiny_models, tmp_path):
    out = tmp_path / "out"
    first, _ = debias(tiny_models["gpt2"], out, _opts("lmd", max_steps=2, save_steps=2), keep_checkpoints=True)
    assert first.steps == 2 and (out / "checkpoints" / "checkpoint-2").is_dir()
    second, record = debias(tiny_models["gpt2"], out, _opts("lmd", max_steps=4, save_steps=2))
    assert second.steps == 4
    assert second.resumed_from and second.resumed_from.endswith("checkpoint-2")
    assert record["training"]["resumed_from"].endswith("checkpoint-2")


def test_lmd_loss_on_a_batch_matches_the_pure_function(tiny_models):
    """The plumbing picks the hidden state *before* each target and the pair logits from the head."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from biaslens.methods.redditbias.mitigation import lmd_loss
    from biaslens.mitigation.training import _collate, _Examples

    tok = AutoTokenizer.from_pretrained(tiny_models["gpt2"])
    model = AutoModelForCausalLM.from_pretrained(tiny_models["gpt2"])
    terms = resolve_terms(SPEC, tok)
    text = "i think jews are loud."
    examples, counts = build_examples([text], "lmd", terms)
    assert counts["target_occurrences"] == 1
    batch = _collate(tok.pad_token_id)([_Examples(tok, examples, 32)[0]])
    out = model(input_ids=batch["input_ids"], output_hidden_states=True)
    got = make_lmd_loss(terms)(model, batch, out)
    (s, _, label), = batch["target_spans"][0]
    term = label // 2
    assert label % 2 == 1 and terms.targets[term] == "jews"
    w = model.get_output_embeddings().weight
    h = out.hidden_states[-1][0, s - 1]
    rows = [(i, j) for i, j in terms.pairs if term in (i, j)]
    vec = lambda t: w[terms.target_ids[t][0]].mean(0)  # noqa: E731 - with-space form, mid-sentence
    l1 = torch.stack([h @ vec(i) for i, _ in rows]).unsqueeze(0)
    l2 = torch.stack([h @ vec(j) for _, j in rows]).unsqueeze(0)
    assert got.item() == pytest.approx(lmd_loss(l1, l2, torch.ones_like(l1, dtype=torch.bool)).item(), rel=1e-5)


def test_cda_copies_and_target_form_labels():
    texts, counts = cda_texts(["jews are greedy.", "nothing here."], SPEC, "targets")
    assert "christians are greedy." in texts and counts == {"n_original": 2, "n_swapped_copies": 1}
    gender = builtin_spec("gender")  # A1 and A2 pair by position
    texts, counts = cda_texts(["women are nurses and she is a nurse."], gender, "attributes")
    assert counts["n_swapped_copies"] == 1 and texts[1] != texts[0]
    from biaslens.methods.redditbias.dataset import RedditBiasError

    with pytest.raises(RedditBiasError, match="attribute_pairs"):  # religion1's A1 and A2 differ in length
        cda_texts(["jews are greedy."], SPEC, "attributes")


def test_grid_file_validation_and_cda_grid(tmp_path):
    assert len(load_grid(None, "lmd")) == 54 and len(load_grid(None, "cda")) == 9
    bad = tmp_path / "g.yaml"
    bad.write_text("batch_size: [4]\nwarmup: [1]\n")
    from biaslens.methods.redditbias.dataset import RedditBiasError

    with pytest.raises(RedditBiasError, match="unknown grid key 'warmup'"):
        load_grid(bad, "lmd")
    bad.write_text("batch_size: [four]\n")
    with pytest.raises(RedditBiasError, match="positive numbers"):
        load_grid(bad, "lmd")


def test_grid_records_every_point_and_keeps_the_best(tiny_models, tmp_path):
    out = tmp_path / "grid"
    points = [{"batch_size": 4, "debias_weight": 1.0}, {"batch_size": 4, "debias_weight": 5.0}]
    state = run_grid(tiny_models["gpt2"], out, _opts("add", max_steps=1), points)
    assert [p["name"] for p in state["points"]] == ["bs4-db1", "bs4-db5"]
    assert {p["valid_perplexity_definition"] for p in state["points"]} == {"start_token"}
    best = state["best"]
    assert best["valid_p"] == max(p["valid_p"] for p in state["points"])
    assert (out / "model.safetensors").exists() and (out / "grid.json").exists()
    kept = [p.name for p in (out / "points").iterdir() if (p / "model.safetensors").exists()]
    assert kept == [best["name"]]
    again = run_grid(tiny_models["gpt2"], out, _opts("add", max_steps=1), points)  # finished points are skipped
    assert again["points"] == state["points"]


def test_cli_errors_are_one_line(tmp_path):
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    r = CliRunner().invoke(app, ["debias", "lmd", "-b", "religion1", "--out", str(tmp_path / "o"), "--batch-size", "0"])
    assert r.exit_code == 2 and "error: --batch-size: must be at least 1" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["debias", "add", "-b", "religion1", "--out", str(tmp_path / "o"),
                                 "--data-dir", str(tmp_path)])
    assert r.exit_code == 2 and "bias_manual_train.txt" in r.output


@pytest.mark.slow
@pytest.mark.parametrize("method", ["cda", "lmd", "add", "hd"])
def test_cli_end_to_end_on_the_embedded_model(tmp_path, embedded_model_path, method):
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    model = embedded_model_path
    out = tmp_path / method
    r = CliRunner().invoke(app, ["debias", method, "--model", str(model), "-b", "religion1", "--out", str(out),
                                 "--max-steps", "1", "--batch-size", "1", "--max-template-pairs", "8",
                                 "--max-length", "16", "--no-evaluate"])
    assert r.exit_code == 0, r.output
    assert (out / "model.safetensors").exists() and not (out / "checkpoints").exists()
    assert json.loads((out / "debias.json").read_text())["training"]["steps"] == 1
    assert "phrases built from the specification" in r.output


def test_batches_without_targets_train_on_the_plain_lm_loss(tiny_models, tmp_path):
    """lambda_LM scales the LM loss only where the debiasing loss is added (paper section 4)."""
    from biaslens.mitigation.training import TrainExample, train_causal_lm

    tok_terms = resolve_terms(SPEC, __import__("transformers").AutoTokenizer.from_pretrained(tiny_models["gpt2"]))
    texts = ["people are loud.", "the weather is fine today."]  # no target term
    examples, counts = build_examples(texts, "lmd", tok_terms)
    assert counts["target_occurrences"] == 0
    cfg = TrainingConfig(max_steps=1, batch_size=2, lm_weight=0.01, extra_weight=10.0, max_length=32)
    plain_cfg = TrainingConfig(max_steps=1, batch_size=2, lm_weight=1.0, extra_weight=0.0, max_length=32)
    weighted = train_causal_lm(tiny_models["gpt2"], examples, tmp_path / "a", config=cfg,
                               extra_loss=make_lmd_loss(tok_terms))
    plain = train_causal_lm(tiny_models["gpt2"], [TrainExample(t) for t in texts], tmp_path / "b", config=plain_cfg)
    # before: 0.01 x the LM loss
    assert weighted.train_loss == pytest.approx(plain.train_loss, rel=1e-5) and plain.train_loss > 1.0


def test_eval_perplexity_is_the_plain_lm_perplexity(tiny_models, tmp_path):
    """debias.json: eval_perplexity = exp(LM loss of the validation texts), the LMD term apart."""
    import math

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from biaslens.mitigation.training import train_causal_lm

    tok = AutoTokenizer.from_pretrained(tiny_models["gpt2"])
    terms = resolve_terms(SPEC, tok)
    valid = ["i think jews are loud.", "jews are greedy and christians are"]
    examples, _ = build_examples(valid, "lmd", terms)
    cfg = TrainingConfig(max_steps=1, batch_size=2, lm_weight=0.01, extra_weight=10.0, max_length=32,
                         learning_rate=1e-30, start_token="<|endoftext|>")  # weights stay those of the base model
    res = train_causal_lm(tiny_models["gpt2"], examples, tmp_path / "m", config=cfg, eval_examples=examples,
                          extra_loss=make_lmd_loss(terms))
    model = AutoModelForCausalLM.from_pretrained(tiny_models["gpt2"])
    enc = tok(valid, add_special_tokens=False, padding=True, return_tensors="pt")
    start = torch.full((len(valid), 1), tok.convert_tokens_to_ids("<|endoftext|>"))
    ids = torch.cat([start, enc["input_ids"]], 1)  # the start token: context, its own label ignored
    mask = torch.cat([torch.ones_like(start), enc["attention_mask"]], 1)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, 0] = -100
    with torch.no_grad():
        lm = model(input_ids=ids, attention_mask=mask, labels=labels).loss.item()
    assert res.eval_loss == pytest.approx(lm, rel=1e-4)
    assert res.eval_perplexity == pytest.approx(math.exp(lm), rel=1e-4)
    assert res.eval_extra_loss is not None and res.eval_extra_loss > 0  # recorded on its own


def test_debias_json_counts_the_occurrences_that_carried_the_loss(tiny_models, tmp_path):
    """target_occurrences = the occurrences the LMD loss receives over the training set (start
    token included, so the phrases opening with a target count), checked against the phrases."""
    from transformers import AutoTokenizer

    from biaslens.methods.redditbias.mitigation import lmd_positions, load_debias_data
    from biaslens.mitigation.training import _Examples, start_token_id

    _, record = debias(tiny_models["llama"], tmp_path / "out", _opts("lmd", max_steps=1))
    assert record["start_token"] == "<|endoftext|>"
    tok = AutoTokenizer.from_pretrained(tiny_models["llama"])
    terms = resolve_terms(SPEC, tok)
    texts = load_debias_data(SPEC, None, max_template_pairs=24).train
    examples, counts = build_examples(texts, "lmd", terms)
    items = _Examples(tok, examples, 32, start_token_id(tok, "<|endoftext|>")).items
    positions = lmd_positions([it["target_spans"] for it in items])
    opening = [t for t in texts if target_spans(t, terms) and target_spans(t, terms)[0][0] == 0]
    assert opening, "the templates have phrases that open with a target"
    assert sum(pos == 0 for _, pos, _ in positions) == len(opening)  # each predicted by the start token
    assert {b for b, _, _ in positions} == {b for b, t in enumerate(texts) if target_spans(t, terms)}
    assert record["target_occurrences"] == len(positions) == counts["target_occurrences"]
    assert record["target_occurrences_in_text"] == counts["target_occurrences"]
    assert record["target_occurrences_cut_by_truncation"] == 0


def test_a_target_at_token_0_without_a_start_token_is_an_error():
    from biaslens.methods.redditbias.dataset import RedditBiasError
    from biaslens.methods.redditbias.mitigation import lmd_positions

    assert lmd_positions([[(1, 2, 7)], [(3, 4, 0), (5, 6, 1)]]) == [(0, 0, 7), (1, 2, 0), (1, 4, 1)]
    with pytest.raises(RedditBiasError, match="start token"):
        lmd_positions([[(0, 1, 3)]])


@pytest.mark.parametrize("eval_steps,expected", [(None, [2]), (1, [1, 2])])
def test_validation_is_evaluated_once_per_evaluation_point(tiny_models, tmp_path, monkeypatch, eval_steps, expected):
    """A 2-step run evaluates at step 2 only (before: the Trainer's evaluation at the last step
    plus a second pass after training); the reported eval loss is that evaluation's."""
    from transformers import Trainer

    from biaslens.mitigation.training import train_causal_lm

    calls = []
    original = Trainer.evaluation_loop

    def counting(self, *args, **kwargs):
        calls.append(self.state.global_step)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "evaluation_loop", counting)
    tok = __import__("transformers").AutoTokenizer.from_pretrained(tiny_models["gpt2"])
    terms = resolve_terms(SPEC, tok)
    examples, _ = build_examples(["i think jews are loud.", "christians are greedy.", "muslims are kind."], "lmd", terms)
    cfg = TrainingConfig(max_steps=2, batch_size=2, max_length=32, eval_steps=eval_steps, start_token="<|endoftext|>")
    res = train_causal_lm(tiny_models["gpt2"], examples, tmp_path / "m", config=cfg, eval_examples=examples,
                          extra_loss=make_lmd_loss(terms))
    assert calls == expected
    last = [h for h in res.history if "eval_loss" in h][-1]
    assert last["step"] == 2 and res.eval_loss == last["eval_loss"]
    assert res.eval_extra_loss == last["eval_extra_loss"] and res.eval_extra_loss > 0


def test_training_progress_and_losses_go_to_stderr_not_stdout(tiny_models, tmp_path, capsys):
    """The Trainer's own printer put "{'loss': ...}" on standard output (a command's results);
    now each logged loss is a line on standard error, with the steps' progress."""
    debias(tiny_models["gpt2"], tmp_path / "out", _opts("cda", max_steps=10))
    out, err = capsys.readouterr()
    assert "loss" not in out and "{'" not in out, out
    assert "training step 10/10: loss" in err, err
