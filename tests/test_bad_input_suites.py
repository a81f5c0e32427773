"""Bad input to the newer suites gets one clear error naming the file and line (exit 2), and an
option is accepted only by the suite it belongs to."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import biaslens
from biaslens.cli.app import app
from biaslens.config import ConfigError


def _errors(r) -> list[str]:
    return [ln for ln in r.output.splitlines() if ln.startswith("error:")]


def test_crows_pairs_unknown_bias_type_names_file_and_line(tmp_path):
    from biaslens.methods.crows_pairs.dataset import read_crows_pairs

    rows = read_crows_pairs().head(5)[["sent_more", "sent_less", "stereo_antistereo", "bias_type"]].copy()
    rows.loc[rows.index[2], "bias_type"] = "gendr"
    path = tmp_path / "mine.csv"
    rows.to_csv(path, index=False)
    r = CliRunner().invoke(app, ["run", "crows-pairs", "-m", "fake", "--crows-data-file", str(path),
                                 "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and len(_errors(r)) == 1, r.output
    assert "mine.csv:4: bias_type is 'gendr'; expected one of race-color" in _errors(r)[0]


def test_a_one_item_group_cannot_tell():
    from biaslens.metrics.pair_preference import by_group

    t = by_group([1.0, 2.0, -1.0, 1.0], ["a", "a", "a", "b"])
    assert t.set_index("group").loc["b", "verdict"] == "cannot_tell"


def _bbq_answers(tmp_path, edit) -> str:
    from biaslens.methods.bbq.dataset import load_items

    items = load_items(None, ["Religion"]).head(30)
    rows = [{"example_id": int(e), "category": "Religion", "answer": int(lab)}
            for e, lab in zip(items["example_id"], items["label"])]
    edit(rows)
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_bbq_answer_index_out_of_range_names_file_and_line(tmp_path):
    path = _bbq_answers(tmp_path, lambda rows: rows[6].update(answer=5))
    with pytest.raises(ConfigError, match=r"answers\.jsonl:7: index 5 is not an option \(0, 1 or 2"):
        biaslens.run(suite="bbq", out=str(tmp_path / "run"), bbq={"answers_file": path})


def test_bbq_unmappable_text_is_named_and_a_partial_file_is_not_full(tmp_path):
    def edit(rows):
        rows[3]["answer"] = "the weather is nice"
    path = _bbq_answers(tmp_path, edit)
    res = biaslens.run(suite="bbq", out=str(tmp_path / "run"), bbq={"answers_file": path, "n_bootstrap": 50})
    m = res.metrics
    assert any("answers.jsonl: 1 answer matches none of the options (lines 4)" in w for w in m["warnings"]), m["warnings"]
    selection = m["source"]["selection"]
    assert selection.startswith("partial: the answers file answers 30 of ") and "full" not in selection


def test_an_option_of_another_suite_is_refused(tmp_path):
    r = CliRunner().invoke(app, ["run", "winogender", "-m", "fake", "--winobias-types", "1",
                                 "--out", str(tmp_path / "run")])
    assert r.exit_code == 2 and "--winobias-types: an option of winobias, not of winogender" in r.output, r.output
    assert not (tmp_path / "run").exists()
    r = CliRunner().invoke(app, ["run", "winobias", "-m", "fake", "--winobias-types", "3",
                                 "--out", str(tmp_path / "run2")])
    assert r.exit_code == 2 and "--winobias-types" in r.output and "winobias.types.0" not in r.output, r.output


def test_bold_generations_outside_the_selected_domains_and_the_line(tmp_path):
    from biaslens.methods.bold.dataset import load_prompts

    race = load_prompts(["race"]).iloc[0]
    gender = load_prompts(["gender"]).iloc[0]
    path = tmp_path / "gens.csv"
    # a quoted response over three lines: the race prompt's record starts on line 5, not "row 2"
    path.write_text("prompt,response\n"
                    f'"{gender["prompt"]}","one\ntwo\nthree"\n'
                    f'"{race["prompt"]}",fine\n')
    with pytest.raises(ConfigError) as e:
        biaslens.run(suite="bold", out=str(tmp_path / "run"),
                     bold={"domains": ["gender"], "generations_files": [str(path)]})
    msg = str(e.value)
    assert re.search(r"gens\.csv:5: a BOLD prompt of the race domain, which this run does not select", msg), msg
    assert "--bold-domains" in msg


def test_bold_help_names_only_files_a_run_writes():
    r = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "prompts.csv" not in r.output and "generations.parquet" in r.output
