"""The community suite end to end: fake backends (two "models"), precomputed JSONL, the
CLI, and fine-tuning a tiny random model whose separator then ends the prompts."""

from __future__ import annotations

import json
import random

import pandas as pd
from typer.testing import CliRunner

from biaslens.api import run
from biaslens.models.fake import FakeBackend

SMALL = {"n": 2, "n_bootstrap": 50, "max_new_tokens": 16, "min_new_tokens": 0}


def test_fake_two_models_end_to_end(tmp_path):
    res = run(suite="community", out=tmp_path / "run", cache_dir=tmp_path / "cache",
              community={**SMALL, "dimensions": ["religion"]},
              backend={"base": FakeBackend(seed=0), "community-a": FakeBackend(seed=1)})
    out = res.out
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["status"] == "complete"
    assert run_json["models"]["base"]["separator"] is None and run_json["prompts"]["n"] == 34
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["models"] == ["base", "community-a"]
    assert metrics["n_prompts"] == 34 and metrics["generations_per_prompt"] == {"base": 2.0, "community-a": 2.0}
    assert set(metrics["S_mean"]["base"]) == {"christian", "jewish", "muslim"}
    gens = pd.read_parquet(out / "generations.parquet")
    assert len(gens) == 2 * 34 * 2 and {"sentiment", "sentiment_class", "toxicity"} <= set(gens.columns)
    # the two models really differ (different seeds), and replies are capped at max_words
    assert (gens[gens["model"] == "base"]["response"].to_numpy() != gens[gens["model"] == "community-a"]["response"].to_numpy()).any()
    s = pd.read_csv(out / "sentiment_table.csv")
    assert list(s.columns) == ["dimension", "demographic", "base", "community-a"] and len(s) == 3
    gaps = pd.read_csv(out / "gaps.csv")
    assert len(gaps) == 3 * 2 * 2  # 3 pairs x 2 models x 2 scores
    assert (gaps["ci_low"] <= gaps["gap"] + 1e-12).all() and (gaps["gap"] <= gaps["ci_high"] + 1e-12).all()
    assert (out / "prompts.txt").read_text().count("\n") == 34
    # keyword counts, the simultaneous interval (wider), and the paired change from the base model
    assert set(gaps["n_keywords_a"]) <= {3, 4} and (gaps["ci_high_simultaneous"] >= gaps["ci_high"]).all()
    changes = pd.read_csv(out / "gap_changes.csv")
    assert len(changes) == 3 * 2 and set(changes["model"]) == {"community-a"} and set(changes["base"]) == {"base"}
    g = gaps.set_index(["model", "score", "demographic_a", "demographic_b"])
    for r in changes.itertuples():
        change = g.loc[("community-a", r.score, r.demographic_a, r.demographic_b), "gap"] - \
            g.loc[("base", r.score, r.demographic_a, r.demographic_b), "gap"]
        assert abs(r.change - change) < 1e-9
    assert len(pd.read_csv(out / "keyword_tests.csv")) == 2 * 2 * 10  # 10 religion keywords
    assert {"template", "gap", "p_holm"} <= set(pd.read_csv(out / "template_gaps.csv").columns)
    html = (out / "report.html").read_text()
    assert "Table 3 shape" in html and "Most toxic replies" in html and "<script" not in html
    assert "Did a gap change from the base model?" in html and "Gaps per template" in html
    assert len(metrics["most_negative"]) == 2 * 5


def test_precomputed_generations_with_models_and_untrusted_text(tmp_path):
    from biaslens.methods.community.dataset import build_prompts

    prompts = build_prompts(dimensions=["socioeconomic_class"])
    path = tmp_path / "gens.jsonl"
    lines = []
    for i, p in enumerate(prompts.itertuples()):
        for model, word in (("crypto", "great"), ("w$b", "awful")):
            resp = f"{p.keyword} people are {word}." + (" <script>alert(1)</script>" if i == 0 else "")
            # prompts may carry the model's separator; ids work too
            rec = {"prompt": p.prompt + "<|sep|>", "response": resp, "model": model} if i % 2 else \
                  {"prompt_id": p.prompt_id, "response": resp, "model": model}
            lines.append(json.dumps(rec))
    lines.append(json.dumps({"prompt": "Not one of ours?", "response": "x"}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = run(suite="community", out=tmp_path / "run", use_cache=False,
              community={"generations_files": [str(path)], "n_bootstrap": 50, "dimensions": ["socioeconomic_class"]})
    m = res.metrics
    assert m["models"] == ["crypto", "w$b"] and m["n_generations"] == 2 * len(prompts)
    assert all(v > 0.05 for v in m["S_mean"]["crypto"].values()) and all(v < -0.05 for v in m["S_mean"]["w$b"].values())
    html = (res.out / "report.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;" in html


def test_cli_run_community_with_fake_model(tmp_path):
    from biaslens.cli.app import app

    r = CliRunner().invoke(app, ["run", "community", "--model", "fake", "--n", "2", "--dimensions", "religion",
                                 "--out", str(tmp_path / "run"), "--no-cache"])
    assert r.exit_code == 0, r.output
    cfg = json.loads((tmp_path / "run" / "run.json").read_text())["config"]["community"]
    assert cfg["n"] == 2 and cfg["dimensions"] == ["religion"]
    bad = CliRunner().invoke(app, ["run", "community", "--model", "fake", "--dimensions", "age", "--no-cache",
                                   "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "unknown dimension" in bad.output


# -- fine-tuning a tiny random model -----------------------------------------

def _community_file(tmp_path, n_posts: int = 60):
    rnd = random.Random(0)
    words = "money market coin moon hold sell buy rich poor people think great bad price week".split()
    rows = []
    for i in range(n_posts):
        title = " ".join(rnd.choices(words, k=4)).capitalize()
        for j in range(rnd.randint(0, 4)):  # some posts have no comments: counted skips
            rows.append({"post_id": f"p{i}", "title": title, "selftext": f"<i>post {i}</i> see https://ex.com/{i}",
                         "comment": " ".join(rnd.choices(words, k=8)) + f" @user{j}", "author": f"user{j}"})
        if not any(r["post_id"] == f"p{i}" for r in rows):
            rows.append({"post_id": f"p{i}", "title": title, "selftext": "alone", "comment": "", "author": "x"})
    path = tmp_path / "community.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, len(rows)


def test_finetune_tiny_model_then_compare(tmp_path, tiny_causal_lm, embedded_model_path):
    from biaslens.cli.app import app
    from biaslens.methods.community.mitigation import community_separator
    from biaslens.models import load_model

    base = tiny_causal_lm(tmp_path / "tiny-base", "llama", tokenizer_from=embedded_model_path)
    data, n_lines = _community_file(tmp_path)
    assert n_lines >= 100
    out = tmp_path / "crypto-model"
    r = CliRunner().invoke(app, ["finetune", "community", "--model", str(base), "--data", str(data), "--out", str(out),
                                 "--epochs", "1", "--max-length", "48", "--batch-size", "16", "--max-steps", "3",
                                 "--save-steps", "2", "--learning-rate", "1e-3"])
    assert r.exit_code == 0, r.output
    assert "posts without comments" in r.output
    record = json.loads((out / "biaslens-training.json").read_text())
    desc = record["description"]
    assert desc["separator"] == "<|sep|>" and desc["loss_on"] == "all"
    assert desc["data"]["counts"]["posts_without_comments"] > 0 and desc["data"]["removed"]["urls"] > 0
    assert desc["data"]["removed"]["html_tags"] > 0 and desc["data"]["removed"]["mentions"] > 0
    # truncation is counted: posts cut at their end, separator and comment kept
    tr = desc["truncation"]
    assert tr["max_length"] == 48 and tr["examples"] == desc["data"]["counts"]["examples"]
    assert {"posts_truncated", "comments_truncated"} <= set(tr) and "truncated to 48 tokens" in r.output
    assert record["steps"] == 3 and not (out / "checkpoints").exists()
    assert community_separator(out) == "<|sep|>" and community_separator(base) is None

    backend = load_model(str(out))
    assert "<|sep|>" in backend.tokenizer.get_vocab()
    kw = tmp_path / "kw.yaml"
    kw.write_text("dimensions:\n  class:\n    poor: [{keyword: poor people, form: plural}]\n"
                  "    rich: [{keyword: rich people, form: plural}]\n", encoding="utf-8")
    tf = tmp_path / "t.yaml"
    tf.write_text("templates:\n  - {id: opinion, text: 'What do you think about XYZ?', forms: [plural]}\n",
                  encoding="utf-8")
    res = run(suite="community", model=str(base), out=tmp_path / "run", cache_dir=tmp_path / "cache",
              community={**SMALL, "models": [str(out)], "keywords_file": str(kw), "templates_file": str(tf)})
    g = res.sentences
    assert res.metrics["n_prompts"] == 2 and len(g) == 2 * 2 * 2
    ft = g[g["model"] == str(out)]
    assert ft["model_prompt"].str.endswith("<|sep|>").all()
    assert not g[g["model"] == str(base)]["model_prompt"].str.contains("<|sep|>", regex=False).any()
    models = res.stats["models"]
    assert models[str(out)]["separator"] == "<|sep|>" and models[str(out)]["chat"] is False
    assert models[str(out)]["example_prompt"].endswith("What do you think about poor people?<|sep|>")


def test_finetune_bad_input_is_one_clear_error(tmp_path):
    from biaslens.cli.app import app

    bad = tmp_path / "bad.csv"
    bad.write_text("title,body_text\nA,B\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["finetune", "community", "--model", "fake", "--data", str(bad),
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no comment column" in r.output and "Traceback" not in r.output
