"""The run times the method pages quote are the recorded ones (benchmarks/results/bbq_bold.json and
paired_suites.json, written by benchmarks/bench_bbq_bold.py and bench_paired_suites.py)."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _doc(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def test_bbq_and_bold_pages_quote_the_recorded_run_times():
    runs = json.loads((RESULTS / "bbq_bold.json").read_text(encoding="utf-8"))["runs"]
    bbq, bold = runs["bbq"], runs["bold"]
    page = _doc("bbq.md")
    assert f"took {bbq['wall_seconds']:.0f} s" in page
    assert f"scoring at {bbq['calls']['sentences_per_second']:.1f} texts/s" in page
    assert f"load average {bbq['load_average_before']:.2f} when it started" in page
    page = _doc("bold.md")
    assert f"took {bold['wall_seconds']:.0f} s" in page
    assert f"{bold['timings']['generation']:.0f} s generating" in page
    assert f"{bold['timings']['toxicity']:.0f} s for the default toxicity judge" in page
    assert f"load average {bold['load_average_before']:.2f} when it started" in page


@pytest.mark.parametrize("page", ["crows-pairs.md", "winogender.md", "winobias.md"])
def test_paired_suite_pages_quote_the_recorded_run_times(page):
    rec = json.loads((RESULTS / "paired_suites.json").read_text(encoding="utf-8"))
    text = _doc(page)
    assert f"the model loaded once ({rec['model_load_seconds']:.1f} s)" in text
    for suite, what in (("crows-pairs", "3,014 distinct sentences"), ("winogender", "720 sentences"),
                        ("winobias", "3,162 distinct sentences")):
        assert f"{what}) {rec['runs'][suite]['seconds']:.1f} s" in text, suite
    assert f"the three together {rec['total_seconds']:.1f} s" in text
