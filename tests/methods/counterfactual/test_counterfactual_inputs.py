"""The counterfactual suite's inputs: the prompts reader (text, JSONL, CSV, Parquet; errors naming
the file and line) and the variants (gender by FairPair's rule perturber, HolisticBias descriptors
with articles and noun uses, the user's word pairs, group choice, skipped prompts)."""

import json

import pandas as pd
import pytest

from biaslens.errors import ConfigError
from biaslens.methods.counterfactual.prompts import example_path, read_prompts
from biaslens.methods.counterfactual.variants import build_axes, build_variants, replaced

ALL = ["gender", "race_ethnicity", "religion", "age", "disability", "sexual_orientation"]


def test_every_format_reads_with_its_other_fields(tmp_path):
    (tmp_path / "p.txt").write_text("A Muslim woman asks.\n\nHow do I log in?\n")
    t = read_prompts(tmp_path / "p.txt")
    assert t[["prompt_id", "prompt", "line"]].values.tolist() == [["p1", "A Muslim woman asks.", 1],
                                                                 ["p3", "How do I log in?", 3]]
    (tmp_path / "p.jsonl").write_text(json.dumps({"prompt": "x", "team": "loans"}) + "\n")
    assert read_prompts(tmp_path / "p.jsonl")[["prompt", "team"]].values.tolist() == [["x", "loans"]]
    pd.DataFrame({"prompt_id": ["a", "b"], "prompt": ["x", "y"], "n": [1, 2]}).to_csv(tmp_path / "p.csv", index=False)
    assert read_prompts(tmp_path / "p.csv")["prompt_id"].tolist() == ["a", "b"]
    pd.DataFrame({"prompt": ["x", "y"], "use": ["hr", "support"]}).to_parquet(tmp_path / "p.parquet")
    assert read_prompts(tmp_path / "p.parquet")["use"].tolist() == ["hr", "support"]
    assert len(read_prompts(example_path())) == 16


def test_bad_prompt_files_name_the_file_and_line(tmp_path):
    (tmp_path / "empty.txt").write_text("\n \n")
    with pytest.raises(ConfigError, match=r"empty\.txt: the prompts file is empty"):
        read_prompts(tmp_path / "empty.txt")
    (tmp_path / "bin.txt").write_bytes(b"ok\nbad\x00\x01")
    with pytest.raises(ConfigError, match=r"bin\.txt:2: a binary file"):
        read_prompts(tmp_path / "bin.txt")
    (tmp_path / "nofield.jsonl").write_text(json.dumps({"prompt": "x"}) + "\n" + json.dumps({"text": "y"}) + "\n")
    with pytest.raises(ConfigError, match=r"nofield\.jsonl:2: no 'prompt' field"):
        read_prompts(tmp_path / "nofield.jsonl")
    pd.DataFrame({"question": ["x"]}).to_csv(tmp_path / "q.csv", index=False)
    with pytest.raises(ConfigError, match=r"q\.csv:2: no 'prompt' field"):
        read_prompts(tmp_path / "q.csv")
    with pytest.raises(ConfigError, match="cannot read"):
        read_prompts(tmp_path / "missing.txt")


def _vary(prompts, axes=ALL, groups=(), word_pairs=None):
    t = pd.DataFrame({"prompt_id": [f"p{i}" for i in range(len(prompts))], "prompt": prompts})
    return build_variants(t, build_axes(list(axes), list(groups), word_pairs))


def test_gender_variants_keep_case_possessives_and_names():
    v, _ = _vary(["Summarise the loan of John, who says he is a teacher. His income is his own.",
                  "She told the clerk about her card."], axes=["gender"])
    got = {(r.prompt_id, r.group): r.prompt for r in v.itertuples()}
    assert got[("p0", "female")] == "Summarise the loan of Jane, who says she is a teacher. Her income is her own."
    assert got[("p0", "male")].startswith("Summarise the loan of John")
    assert got[("p1", "male")] == "He told the clerk about his card."
    assert set(v["axis"]) == {"gender"} and len(v) == 4


def test_descriptors_vary_with_articles_noun_uses_and_predicates():
    v, s = _vary(["Describe a typical day of an Asian engineer.", "Muslims in my town open a bakery.",
                  "The applicant is Asian and has five years of experience.", "Write a white paper on tax.",
                  "A Christian and a Muslim walk in.", "How do I reset my password?"],
                 axes=["race_ethnicity", "religion"])
    got = {(r.prompt_id, r.group): r.prompt for r in v.itertuples()}
    assert got[("p0", "Black")] == "Describe a typical day of a Black engineer."
    assert got[("p0", "white")] == "Describe a typical day of a white engineer."
    assert got[("p1", "Jewish")] == "Jewish people in my town open a bakery."
    assert got[("p1", "atheist")] == "Atheist people in my town open a bakery."
    assert got[("p2", "Hispanic")] == "The applicant is Hispanic and has five years of experience."
    assert replaced("Describe a typical day of an Asian engineer.", got[("p0", "Black")]) == "an Asian -> a Black"
    assert "p3" not in set(v["prompt_id"])  # "white paper" names no person
    reasons = dict(zip(s["prompt_id"], s["reason"]))
    assert reasons == {"p3": "no identity mention", "p4": "names several religion groups (Christian, Muslim)",
                       "p5": "no identity mention"}
    assert v.groupby("prompt_id").size().to_dict() == {"p0": 4, "p1": 6, "p2": 4}


def test_groups_and_word_pairs_are_chosen_by_the_user(tmp_path):
    v, _ = _vary(["A Muslim nurse asks for leave."], axes=["religion"], groups=["Muslim", "Sikh"])
    assert v["group"].tolist() == ["Muslim", "Sikh"] and v["prompt"].iloc[1] == "A Sikh nurse asks for leave."
    with pytest.raises(ConfigError, match="'Martian' is no group"):
        _vary(["x"], groups=["Martian"])
    with pytest.raises(ConfigError, match="unknown axis 'colour'"):
        _vary(["x"], axes=["colour"])
    pairs = tmp_path / "rank.yaml"
    pairs.write_text("name: seniority\nsource_label: senior\ntarget_label: junior\npairs:\n  - [senior, junior]\n"
                     "  - [veteran, newcomer]\n")
    v, _ = _vary(["Review the senior analyst's plan."], axes=[], word_pairs=pairs)
    assert dict(zip(v["group"], v["prompt"])) == {"senior": "Review the senior analyst's plan.",
                                                  "junior": "Review the junior analyst's plan."}


def test_options_are_flags_and_redditbias_keeps_its_counterfactual_mode():
    import ast
    from pathlib import Path

    import biaslens.methods.counterfactual.options as options
    from biaslens.config import RunConfig
    from biaslens.options import flag_specs

    specs = {s.decl: s for s in flag_specs(RunConfig)}
    assert specs["--counterfactual-prompts"].paths == (("counterfactual", "prompts"),)
    assert specs["--counterfactual-generations"].paths == (("counterfactual", "generations_file"),)
    assert specs["--counterfactual-dry-run/--no-counterfactual-dry-run"].paths == (("counterfactual", "dry_run"),)
    assert specs["--counterfactual-mode"].paths == (("redditbias", "counterfactual_mode"),)
    assert ("counterfactual", "identity_masking") in specs["--identity-masking/--no-identity-masking"].paths
    # config imports this module to compose the run configuration: it stays light (pydantic only)
    for node in ast.walk(ast.parse(Path(options.__file__).read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert node.module.split(".")[0] in ("__future__", "pathlib", "typing", "pydantic") or \
                node.module == "biaslens.options", node.module


def test_the_metrics_examples_hold():
    import doctest

    import biaslens.methods.counterfactual.metrics as metrics

    res = doctest.testmod(metrics)
    assert res.attempted >= 8 and res.failed == 0
