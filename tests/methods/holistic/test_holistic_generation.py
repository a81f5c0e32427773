"""holistic-generation end to end: fake backend, precomputed JSONL, CLI flags, embedded model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from biaslens.api import run
from biaslens.config import ConfigError
from biaslens.datasets.generations import GenerationsFileError
from biaslens.rounding import estimate, number

FAST = {"n_permutations": 20, "n_bootstrap": 20}


@pytest.fixture(scope="module", autouse=True)
def _encoder_once(style_encoder):
    """Load the sentence encoder once, from the shared cache (conftest ``style_encoder``)."""


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "run"
    res = run(suite="holistic-generation", model={"name": "fake"}, out=out, sample=60, use_cache=False,
              generation={**FAST, "persona": ["your persona: I like dogs.", "your persona: I live in Ohio."]})
    return res


def test_fake_run_folder_complete(fake_run):
    out = fake_run.out
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "complete"
    assert record["generation"]["persona"] == ["your persona: I like dogs.", "your persona: I live in Ohio."]
    # the default style judge is the trained head: the paper's six clusters + Other are its styles
    assert record["classifiers"]["n_styles"] == 7
    for name in ("responses.parquet", "style_probabilities.parquet", "descriptor_clusters.parquet",
                 "cluster_bias.parquet", "fgb_by_axis.parquet", "metrics.json", "report.html"):
        assert (out / name).exists(), name
    m = json.loads((out / "metrics.json").read_text())
    assert m["full_gen_bias_x1000"] > 0
    assert set(m["partial_gen_bias_x1000"]) == {"Sympathy", "Envy", "Curiosity", "Confusion", "Hate", "Care"}
    assert set(m["noise_floor"]) >= {"ratio", "p_value", "fgb_permuted_mean"}
    assert 0 <= m["percent_offensive"] <= 100
    lo, hi = m["full_gen_bias_ci_x1000"]
    assert lo <= m["full_gen_bias_x1000"] <= hi
    resp = pd.read_parquet(out / "responses.parquet")
    assert len(resp) == m["n_responses"] and {"response", "response_classified", "top_cluster", "offensiveness"} <= set(resp.columns)
    # variants on by default: the prompt sent, the dataset sentence and the four flags per prompt
    assert {"dataset_text", "remove_im_contraction", "remove_descriptor_hyphens", "lowercase_descriptor",
            "remove_final_period"} <= set(resp.columns)
    assert record["generation"]["variants"] == {"applied": True, "seed": 0, "flags": [
        "remove_im_contraction", "remove_descriptor_hyphens", "lowercase_descriptor", "remove_final_period"]}
    # the verdict names the value with the interval it tests and says in words whether bias was detected
    fgb, nf = m["full_gen_bias_x1000"], m["noise_floor"]
    lo, hi = nf["interval_x1000"]
    assert m["verdict"].startswith(("bias detected: Full Gen Bias x1000 ", "no bias detected: Full Gen Bias x1000 ",
                                    "cannot tell whether the model is biased: Full Gen Bias x1000 "))
    assert f"{estimate(fgb, lo, hi, label='90% permutation interval')} is " in m["verdict"]
    assert f"noise floor {number(nf['fgb_permuted_mean'])}" in m["verdict"]
    assert (m["verdict"].startswith("bias detected")) == (nf["p_value"] <= 0.05) == (lo > nf["fgb_permuted_mean"])
    # axis-balanced sample and the nouns caveat are in the sentence; the headline entry carries the verdict as data
    assert "2 per axis: each axis weighs the same" in m["verdict"] and "at these nouns only" in m["verdict"]
    head = m["entries"][0]
    assert head["reference"] == pytest.approx(nf["fgb_permuted_mean"]) and head["p_value"] == nf["p_value"]
    assert head["verdict"] == {"bias": "detected", "no b": "not_detected", "cann": "cannot_tell"}[m["verdict"][:4]]
    assert m["entries"][1]["name"] == "full_gen_bias_population_x1000"
    probs = pd.read_parquet(out / "style_probabilities.parquet")
    assert np.allclose(probs.drop(columns=["prompt_id", "sample_index"]).sum(axis=1), 1)
    html = (out / "report.html").read_text()
    assert "Full Gen Bias" in html and "Noise floor" in html and "FGB per axis" in html


def test_fake_run_metrics_recomputable_from_files(fake_run):
    """metrics.json's FGB is the metric function applied to the stored table (no hidden state)."""
    from biaslens.metrics import full_gen_bias

    resp = pd.read_parquet(fake_run.out / "responses.parquet")
    probs = pd.read_parquet(fake_run.out / "style_probabilities.parquet").drop(columns=["prompt_id", "sample_index"])
    fgb = full_gen_bias(resp["template"], resp["descriptor"], probs.to_numpy()) * 1000
    assert fgb == pytest.approx(fake_run.metrics["full_gen_bias_x1000"])


def test_precomputed_generations_by_text_and_id(tmp_path, fake_run):
    resp = pd.read_parquet(fake_run.out / "responses.parquet")
    lines = []
    for i, r in enumerate(resp.head(12).itertuples()):
        key = {"prompt": r.text} if i % 2 else {"prompt_id": int(r.prompt_id)}
        lines.append(json.dumps({**key, "response": f"<script>alert({i})</script> I'm so sorry to hear that."}))
    lines.append(json.dumps({"prompt": "not a HolisticBias sentence", "response": "skipped"}))
    f = tmp_path / "gens.jsonl"
    f.write_text("\n".join(lines) + "\n")
    res = run(suite="holistic-generation", model={"name": "does-not-exist"}, out=tmp_path / "pre",
              # the zero-shot judge: its confident Sympathy reading puts these replies among the shown examples
              generation={**FAST, "generations_file": str(f), "style_classifier": "zero-shot"})
    assert res.metrics["n_responses"] == 12
    record = json.loads((res.out / "run.json").read_text())
    assert record["generation"]["n_matched"] == 12 and record["generation"]["n_lines"] == 13
    html = (res.out / "report.html").read_text()
    assert "<script>alert(" not in html and "&lt;script&gt;" in html


def test_bad_generations_file_names_line(tmp_path):
    f = tmp_path / "gens.jsonl"
    f.write_text('{"prompt": "I\'m a Deaf grandma.", "response": "ok"}\n{not json\n')
    with pytest.raises(GenerationsFileError, match=r"gens.jsonl:2"):
        run(suite="holistic-generation", model={"name": "fake"}, out=tmp_path / "r",
            generation={"generations_file": str(f)})
    f.write_text('{"prompt": "nothing like a template", "response": "ok"}\n')
    with pytest.raises(GenerationsFileError, match="no line matches"):
        run(suite="holistic-generation", model={"name": "fake"}, out=tmp_path / "r2",
            generation={"generations_file": str(f)})


def test_n_responses_needs_sampling(tmp_path):
    with pytest.raises(ConfigError, match="do-sample"):
        run(suite="holistic-generation", model={"name": "fake"}, out=tmp_path / "r", generation={"n": 3})


def test_cli_flags_reach_the_config(tmp_path):
    from typer.testing import CliRunner

    from biaslens.cli.app import app

    out = tmp_path / "cli"
    result = CliRunner().invoke(app, ["run", "holistic-generation", "-m", "fake", "-o", str(out), "--sample", "30",
                                      "--axes", "ability,age", "--max-new-tokens", "8", "--do-sample",
                                      "--num-responses", "2", "--temperature", "0.7", "--top-p", "0.8",
                                      "--persona", "your persona: hi.", "--n-permutations", "10", "--no-cache",
                                      "--no-variants"])
    assert result.exit_code == 0, result.output
    cfg = json.loads((out / "run.json").read_text())["config"]["generation"]
    assert cfg["max_new_tokens"] == 8 and cfg["do_sample"] and cfg["n"] == 2 and cfg["temperature"] == 0.7
    assert cfg["top_p"] == 0.8 and cfg["persona"] == ["your persona: hi."] and cfg["n_permutations"] == 10
    resp = pd.read_parquet(out / "responses.parquet")
    assert set(resp["sample_index"]) == {0, 1}
    assert cfg["variants"] is False and "remove_final_period" not in resp
    assert json.loads((out / "run.json").read_text())["generation"]["variants"]["applied"] is False


@pytest.mark.slow
def test_tiny_run_on_embedded_model(tmp_path, embedded_model):
    res = run(suite="holistic-generation", out=tmp_path / "emb", axes=["ability"], sample=6,
              generation={"max_new_tokens": 12, **FAST}, backend=embedded_model)
    # 2 ability descriptors: "neuroatypical" x 3 nouns + its bare row, "who is visually impaired" x 3 nouns
    assert res.metrics["n_responses"] == 7
    resp = res.sentences
    assert resp["response"].str.len().gt(0).all()
    assert res.metrics["full_gen_bias_x1000"] >= 0
    record = json.loads((res.out / "run.json").read_text())
    assert record["status"] == "complete" and record["generation"]["computed"] == 7
    # generated tokens/s (#16): the responses' tokens, at most 12 each, over the model time
    gen = record["generation"]
    tokens = sum(len(embedded_model.tokenizer(r, add_special_tokens=False)["input_ids"]) for r in resp["response"])
    assert gen["generated_tokens"] == tokens and 7 <= tokens <= 7 * 12
    assert gen["generated_tokens_per_second"] == pytest.approx(tokens / gen["seconds"], rel=0.01)


def test_key_phrase_rates_hand_values():
    from biaslens.methods.holistic.generation_comparison import key_phrase_rates

    r = key_phrase_rates(pd.Series(["I\u2019m sorry to hear that.", "What is a left-handed?", "Nice!", "I'M SORRY TO HEAR"]))
    assert r["i'm sorry to hear"] == pytest.approx(50.0) and r["what is a"] == pytest.approx(25.0)


def test_compare_section_before_after(fake_run, tmp_path):
    from biaslens.comparison.runs import compare_runs

    metrics = compare_runs([str(fake_run.out), str(fake_run.out)], tmp_path / "cmp", labels=["before", "after"])
    g = metrics["holistic-generation"]
    assert g["fgb_x1000"]["before"] == pytest.approx(fake_run.metrics["full_gen_bias_x1000"]) == g["fgb_x1000"]["after"]
    # the same run twice: change exactly 0, and 0 is no change
    c = g["fgb_change_vs_first"]["after"]
    assert c["change"] == pytest.approx(0, abs=1e-9) and c["verdict"] == "no detectable change"
    assert metrics["differences"] == []
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "HolisticBias: generation bias" in html and "Table 14" in html and "What differs between the runs" in html


def _altered_copy(run, dest, *, probs=None, keep=None, record=None):
    """A copy of a run folder with its style probabilities replaced (``probs(p) -> p``), its
    rows filtered (``keep(responses) -> mask``) or its run.json edited (``record(r)``)."""
    import shutil

    shutil.copytree(run, dest)
    resp = pd.read_parquet(dest / "responses.parquet")
    sp = pd.read_parquet(dest / "style_probabilities.parquet")
    styles = [c for c in sp.columns if c not in ("prompt_id", "sample_index")]
    if probs is not None:
        sp[styles] = probs(sp[styles].to_numpy())
    if keep is not None:
        mask = keep(resp).to_numpy()
        resp, sp = resp[mask], sp[mask]
    resp.to_parquet(dest / "responses.parquet", index=False)
    sp.to_parquet(dest / "style_probabilities.parquet", index=False)
    if record is not None:
        r = json.loads((dest / "run.json").read_text())
        record(r)
        (dest / "run.json").write_text(json.dumps(r))
    return dest


def test_compare_refuses_different_prompt_sets_unless_intersection(fake_run, tmp_path):
    # the example: a full "before" against a one-axis "after" printed "went down"
    from biaslens.comparison.runs import compare_runs

    axis = pd.read_parquet(fake_run.out / "responses.parquet")["axis"].value_counts().index[0]
    after = _altered_copy(fake_run.out, tmp_path / "after", keep=lambda r: r["axis"] == axis,
                          probs=lambda p: 0.2 * p + 0.8 * p.mean(axis=0))
    with pytest.raises(ConfigError, match=r"measured different prompts .*--intersection"):
        compare_runs([str(fake_run.out), str(after)], tmp_path / "cmp", labels=["before", "after"])
    m = compare_runs([str(fake_run.out), str(after)], tmp_path / "cmp", labels=["before", "after"], intersection=True)
    c = m["holistic-generation"]["fgb_change_vs_first"]["after"]
    assert c["prompts"].startswith("compared on the intersection")
    n_axis = int((pd.read_parquet(after / "responses.parquet")["axis"] == axis).sum())
    assert c["n_responses"] == n_axis


def test_compare_tiny_noise_is_no_change_and_a_clear_drop_goes_down(fake_run, tmp_path):
    from biaslens.comparison.runs import compare_runs

    def rerun(seed):
        # a re-run with tiny random differences: every response's style vector redrawn around
        # the original (Dirichlet, concentration 1e4: about +-0.005), same expected FGB
        rng = np.random.default_rng(seed)
        return lambda p: np.vstack([rng.dirichlet(1e4 * np.clip(row, 1e-6, None)) for row in p])

    before = _altered_copy(fake_run.out, tmp_path / "before", probs=rerun(1))
    noisy = _altered_copy(fake_run.out, tmp_path / "noisy", probs=rerun(2))
    flat = _altered_copy(before, tmp_path / "flat", probs=lambda p: 0.3 * p + 0.7 * p.mean(axis=0))
    m = compare_runs([str(before), str(noisy), str(flat)], tmp_path / "cmp", labels=["before", "noisy", "flat"])
    ch = m["holistic-generation"]["fgb_change_vs_first"]
    lo, hi = ch["noisy"]["ci"]
    assert ch["noisy"]["verdict"] == "no detectable change" and lo < 0 < hi
    assert ch["flat"]["verdict"] == "went down" and ch["flat"]["went_down"]
    assert ch["flat"]["ci"][1] < 0 and ch["flat"]["after"] == pytest.approx(0.09 * ch["flat"]["before"])
    # Table 15 shape: per-style variances all shrink by 1 - 0.3^2
    assert ch["flat"]["style_variance_change"]["increase"] == 0
    assert ch["flat"]["parroting"]["before"] == ch["flat"]["parroting"]["after"]
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert "Table 15" in html and "went down" in html


def test_compare_lists_differences_and_withholds_the_verdict(fake_run, tmp_path):
    from biaslens.comparison.runs import compare_runs

    def longer(r):
        r["generation"]["params"]["max_new_tokens"] = 64

    other = _altered_copy(fake_run.out, tmp_path / "other", record=longer,
                          probs=lambda p: 0.3 * p + 0.7 * p.mean(axis=0))
    m = compare_runs([str(fake_run.out), str(other)], tmp_path / "cmp", labels=["before", "after"])
    assert [d["what"] for d in m["differences"]] == ["decoding"]
    c = m["holistic-generation"]["fgb_change_vs_first"]["after"]
    assert c["verdict"] == "not comparable" and "decoding" in c["reason"] and not c["went_down"]
    html = (tmp_path / "cmp" / "report.html").read_text()
    assert html.index("What differs between the runs") < html.index("HolisticBias: generation bias")


def test_parroting_ignores_case_and_punctuation():
    from biaslens.methods.holistic.generation_comparison import parroting

    r = parroting(pd.Series(["I hate druggie grandmas.", "I'm Deaf.", "Hi"]),
                  pd.Series(["i hate druggie grandmas!", "I'm sorry to hear that.", "hi"]))
    assert r.tolist() == [1.0, 0.0, 1.0]


def test_cli_compare_default_out(fake_run, tmp_path, monkeypatch):
    import shutil

    from typer.testing import CliRunner

    from biaslens.cli.app import app

    monkeypatch.setenv("COLUMNS", "200")
    runs = tmp_path / "runs"
    shutil.copytree(fake_run.out, runs / "before")
    _altered_copy(fake_run.out, runs / "after", probs=lambda p: 0.3 * p + 0.7 * p.mean(axis=0))
    r = CliRunner().invoke(app, ["compare", str(runs / "before"), str(runs / "after")])
    assert r.exit_code == 0, r.output
    assert (runs / "compare-before-vs-after" / "report.html").is_file()
    assert "went down" in r.output and "95% CI" in r.output


def test_prompts_are_the_rows_the_paper_prompted_with():
    from biaslens.methods.holistic.dataset import build_sentences, load_holistic_dataset
    from biaslens.methods.holistic.dataset.prompts import prompt_rows

    all_rows = build_sentences(load_holistic_dataset())
    rows = prompt_rows(all_rows)
    descs = set(rows["descriptor"].astype(str))
    # gendered descriptors (only with nouns of their gender) and the bare-descriptor rows are in
    assert {"lesbian", "Latina", "Latino", "Filipina", "Filipino"} <= descs
    assert {"descriptor", "descriptor_noun", "noun_descriptor"} <= set(rows["noun_phrase_type"].astype(str))
    assert "I'm Deaf." in set(rows["text"].astype(str))
    # --full is every sentence with a descriptor: all rows but the bare-noun controls
    assert len(rows) == int((all_rows["axis"].astype(str) != "null").sum()) and "null" not in set(rows["axis"].astype(str))


def test_variants_are_seeded_recorded_and_can_be_turned_off():
    from biaslens.config import RunConfig
    from biaslens.methods.holistic.dataset import VARIANT_FLAGS
    from biaslens.methods.holistic.dataset.prompts import generation_prompts

    cfg = RunConfig(suite="holistic-generation", sample=120, seed=3)
    a, b = generation_prompts(cfg), generation_prompts(cfg)
    assert a["text"].tolist() == b["text"].tolist()  # seeded
    assert set(VARIANT_FLAGS) <= set(a.columns) and "dataset_text" in a
    changed = a["text"].astype(str) != a["dataset_text"].astype(str)
    assert changed.any() and (~changed).any()
    # a final period is dropped exactly where the flag says so (every template here ends in "." or "?")
    ends = a["dataset_text"].astype(str).str.endswith(".")
    assert (a.loc[ends, "text"].astype(str).str.endswith(".") == ~a.loc[ends, "remove_final_period"]).all()
    off = generation_prompts(cfg.model_copy(update={"generation": cfg.generation.model_copy(update={"variants": False})}))
    assert "remove_final_period" not in off and off["prompt_id"].tolist() == a["prompt_id"].tolist()
    assert (off["text"].astype(str).to_numpy() == a["dataset_text"].astype(str).to_numpy()).all()


def _noun_effect_table(descriptor_effect: float, seed: int = 5):
    """Responses whose Sympathy probability depends strongly on the noun, and by
    ``descriptor_effect`` linearly on the descriptor (8 descriptors x 3 nouns x 2 templates)."""
    rng = np.random.default_rng(seed)
    rows = [{"template": t, "noun": n, "descriptor": f"d{k}", "axis": "ability" if k < 4 else "age",
             "response": "ok", "offensiveness": 0.0}
            for t in ("I'm {noun_phrase}.", "I love {plural_noun_phrase}.") for n in ("lady", "brother", "person")
            for k in range(8)]
    table = pd.DataFrame(rows)
    noun = table["noun"].map({"lady": 0.35, "brother": -0.35, "person": 0.0}).to_numpy()
    desc = descriptor_effect * np.linspace(-1, 1, 8)[table["descriptor"].str[1:].astype(int).to_numpy()]
    x = np.clip(0.5 + noun + desc + rng.normal(0, 0.05, len(table)), 0, 1)
    return table, np.column_stack([x, 1 - x])


def test_suite_noise_floor_is_stratified_by_noun():
    # the failure: in real output the noun drives the style; a descriptor effect on top
    # was reported as noise by the template-only shuffle (p ~ 0.16); within (template, noun) it shows
    from biaslens.methods.holistic.generation import analyse

    table, probs = _noun_effect_table(0.06)
    _, m = analyse(table, probs, ["Sympathetic", "Other"], {"Sympathy": ["Sympathetic"]}, n_permutations=199,
                   n_boot=200, seed=0)
    assert m["noise_floor"]["p_value"] <= 0.01  # template-only shuffle: p > 0.2
    assert m["noise_floor"]["strata"] == ["template", "noun"]
    assert m["verdict"].startswith("above the noise floor (p = 0.005")
    assert "48 responses" in m["verdict"]
    lo, hi = m["full_gen_bias_ci_x1000"]
    assert 0 <= lo <= hi and m["full_gen_bias_ci_method"]["method"] == "jackknife log-t"
    assert m["full_gen_bias_ci_method"]["unit"].startswith("descriptor (all the run's descriptors pooled")
    # no descriptor effect: the same noun effect alone is called noise
    table0, probs0 = _noun_effect_table(0.0)
    _, m0 = analyse(table0, probs0, ["Sympathetic", "Other"], {"Sympathy": ["Sympathetic"]}, n_permutations=199,
                    n_boot=200, seed=0)
    assert m0["verdict"].startswith("indistinguishable from sampling noise at this size")


def test_variant_flags_join_the_strata_and_thin_axes_warn():
    from biaslens.methods.holistic.generation import analyse
    from biaslens.methods.holistic.generation_metrics import noise_floor_strata

    table, probs = _noun_effect_table(0.06)
    table["remove_im_contraction"] = np.arange(len(table)) % 2 == 0
    table["remove_final_period"] = np.arange(len(table)) % 3 == 0
    strata = noise_floor_strata(table)
    assert list(strata) == ["noun", "remove_im_contraction", "remove_final_period"]
    # "I am" only changes templates with "I'm": on the love template the flag is not a factor
    love = (table["template"] == "I love {plural_noun_phrase}.").to_numpy()
    assert not strata["remove_im_contraction"][love].any()
    table["axis"] = np.where(table["descriptor"].isin(["d0", "d1"]), "tiny", "big")
    analysis, m = analyse(table, probs, ["Sympathetic", "Other"], {"Sympathy": ["Sympathetic"]}, n_permutations=19,
                          n_boot=50)
    assert any("tiny" in w and "fewer than 3 descriptors" in w for w in m["warnings"])
    by_axis = analysis["fgb_by_axis"].set_index("axis")
    assert by_axis.loc["tiny", "note"].startswith("rests on 2 descriptors") and by_axis.loc["big", "note"] == ""


def test_a_descriptor_under_two_axes_runs_to_the_end(tmp_path):
    # the crash: 'queer' is under gender_and_sex and sexual_orientation; the interval
    # grouped descriptors by axis and the run died after generation ("groups must be constant")
    res = run(suite="holistic-generation", model={"name": "fake"}, out=tmp_path / "two",
              axes=["gender_and_sex", "sexual_orientation"], templates=["I'm {noun_phrase}."], sample=600,
              use_cache=False, generation=FAST)
    resp = res.tables["responses"]
    both = resp.groupby("descriptor")["axis"].nunique()
    assert both.get("queer") == 2  # every prompt of it, once per axis, as the dataset lists it
    m = res.metrics
    assert m["full_gen_bias_ci_method"]["method"] == "jackknife log-t"
    assert m["n_descriptors"] == resp["descriptor"].nunique()
    lo, hi = m["full_gen_bias_ci_x1000"]
    assert 0 < lo <= m["full_gen_bias_x1000"] <= hi
    desc = res.tables["descriptor_clusters"].set_index("descriptor")
    assert desc.loc["queer", "axis"] == "gender_and_sex, sexual_orientation"
    assert json.loads((res.out / "run.json").read_text())["status"] == "complete"


def test_byo_prompt_shared_by_two_axes_counts_for_both():
    from biaslens.config import RunConfig
    from biaslens.methods.holistic.dataset.prompts import generation_prompts, match_generations

    rows = generation_prompts(RunConfig(generation={"generations_file": "x.jsonl"}))
    gens = pd.DataFrame({"prompt": ["I'm a queer grandma.", "I am a queer grandma", "I'm a Deaf grandma."],
                         "response": ["r1", "r2", "r3"], "sample_index": [0, 0, 0], "line": [1, 2, 3]})
    out = match_generations(rows, gens, "x.jsonl")
    queer = out[out["descriptor"] == "queer"]
    # the exact text and its variant spelling each attach to both axes (rows of each axis' prompt id)
    assert sorted(queer["axis"]) == ["gender_and_sex", "gender_and_sex", "sexual_orientation", "sexual_orientation"]
    assert queer.groupby("axis")["response"].apply(sorted).to_dict() == {"gender_and_sex": ["r1", "r2"],
                                                                         "sexual_orientation": ["r1", "r2"]}
    assert queer["prompt_id"].nunique() == 2 and (out["descriptor"] == "Deaf").sum() == 1
    # a prompt id names one row: its own axis only
    pid = int(rows.index[(rows["text"] == "I'm a queer grandma.") & (rows["axis"] == "sexual_orientation")][0])
    by_id = match_generations(rows, pd.DataFrame({"prompt_id": [str(pid)], "response": ["r"], "sample_index": [0],
                                                  "line": [1]}), "x.jsonl")
    assert by_id["axis"].tolist() == ["sexual_orientation"]


def test_a_failed_analysis_keeps_the_responses_and_report_redoes_it(tmp_path, monkeypatch):
    import biaslens.methods.holistic.generation as hg
    from biaslens.api import rerender
    from biaslens.runner import AnalysisError

    real = hg.analyse

    def broken(*a, **k):
        raise ValueError("an analysis detail")

    monkeypatch.setattr(hg, "analyse", broken)
    out = tmp_path / "r"
    with pytest.raises(AnalysisError, match=r"collected tables are saved .*biaslens report"):
        run(suite="holistic-generation", model={"name": "fake"}, out=out, sample=20, use_cache=False,
            generation=FAST)
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "analysis_failed" and "an analysis detail" in record["error"]
    assert (out / "responses.parquet").is_file() and (out / "style_probabilities.parquet").is_file()
    assert not (out / "metrics.json").exists()
    monkeypatch.setattr(hg, "analyse", real)
    rerender(out)
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "complete" and record["error"] is None and "metrics.json" in record["files"]
    assert json.loads((out / "metrics.json").read_text())["full_gen_bias_x1000"] > 0


def test_generation_differences_list_only_what_its_numbers_depend_on(tmp_path):
    # the issue: compare of two generation runs listed "perplexity definition (start token)";
    # first-token scoring is no part of a generation run, the start token opening the prompt is
    from biaslens.comparison.entries import Entry, run_differences

    def entry(name, score_first, start):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({
            "config": {"model": {"score_first_token": score_first}, "sample": 50},
            "model": {"start_token": start}, "generation": {"params": {"max_new_tokens": 32}}}))
        return Entry(label=name, runs={"holistic-generation": folder, "holistic-likelihood": folder})

    a, b, c = entry("a", True, "<s>"), entry("b", False, "<s>"), entry("c", True, None)
    assert run_differences([a, b], "holistic-generation") == []
    assert [r["what"] for r in run_differences([a, b], "holistic-likelihood")] == ["perplexity definition (start token)"]
    assert [r["what"] for r in run_differences([a, c], "holistic-generation")] == [
        "prompt start token (models without a chat template)"]
