"""docs/counterfactual.md quotes its worked example from one recorded file
(biaslens/methods/counterfactual/data/example_run.json): every marked figure is the recorded one."""

import json
import re
from pathlib import Path

import biaslens.methods.counterfactual as method

ROOT = Path(__file__).resolve().parents[3]
MARK = re.compile(r"<!-- cf ([\w.]+) -->(.*?)<!-- /cf -->", re.S)


def _value(record, dotted):
    for part in dotted.split("."):
        record = record[int(part)] if isinstance(record, list) else record[part]
    return record


def _shown(value, text):
    if isinstance(value, str):
        return " ".join(value.split()) == " ".join(text.split())
    return abs(float(text) - value) <= 0.5 * 10 ** -len(text.split(".")[1]) if "." in text else int(text) == value


def test_every_marked_figure_is_the_recorded_one():
    record = json.loads((Path(method.__file__).parent / "data" / "example_run.json").read_text())
    page = (ROOT / "docs" / "counterfactual.md").read_text()
    marks = MARK.findall(page)
    assert len(marks) >= 12
    wrong = [(k, t) for k, t in marks if not _shown(_value(record, k), t)]
    assert not wrong, wrong
    assert record["n_variants"] == 68 and record["entries"][0]["name"] == "largest_sentiment_gap.gender"


def test_the_benchmark_figures_are_the_recorded_ones():
    bench = json.loads((ROOT / "benchmarks" / "results" / "counterfactual.json").read_text())
    page = (ROOT / "docs" / "counterfactual.md").read_text()
    marks = re.findall(r"<!-- cfb ([\w.]+) -->(.*?)<!-- /cfb -->", page, re.S)
    assert len(marks) == 6
    assert not [(k, t) for k, t in marks if not _shown(_value(bench, k), t)]
    assert bench["size"] == {"prompts": 100, "groups": 6, "samples": 10, "variants": 600, "continuations": 6000}
