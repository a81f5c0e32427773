"""A method's words live in its folder (words.yaml): the platform finds a registered method's file
from its registry line without importing the method, merges it with report/words.yaml, and a
bad or contradicting file is an error that names the file and the field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from biaslens.report import glossary
from biaslens.suites import SUITES

SRC = Path(glossary.__file__).resolve().parents[1]


@pytest.fixture
def toy_method(tmp_path, monkeypatch):
    """A method folder with a words file and a suite module that must never be imported."""
    folder = tmp_path / "toy_words_method"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "suite.py").write_text("raise RuntimeError('the glossary imported the method')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(SUITES, "toy-words", "toy_words_method.suite:Toy")
    yield folder / "words.yaml"
    glossary._merged.clear()


def test_every_method_folder_has_its_words_and_the_platform_names_no_method():
    files = glossary.method_words_files()
    assert {p.parent.name for p in files} == {"holistic", "redditbias", "community", "fairpair", "bbq", "bold",
                                              "crows_pairs", "winogender", "winobias"}
    assert all(p.parent.parent == SRC / "methods" for p in files)
    platform = (SRC / "report" / "words.yaml").read_text(encoding="utf-8")
    for own in ("CrowS-Pairs metric score", "S_AMB", "Likelihood Bias", "Cohen's d", "V_A", "pro-anti gap"):
        assert own not in platform, f"{own!r} is a method's word: it belongs in that method's words.yaml"
    # each method's metric reaches every page through the merge
    assert glossary.lookup("CrowS-Pairs metric score") == "CrowS-Pairs metric score"
    assert glossary.human_name("likelihood_bias_holm") == "Likelihood Bias (Holm)"
    assert "crows-pairs" in glossary.NOT_METRICS  # the card's budget table names each registered method


def test_a_registered_methods_words_are_merged_without_importing_it(toy_method):
    toy_method.write_text("columns:\n  toy_gap_x100: toy gap x100\nglossary:\n  toy gap x100:\n"
                          "    what: The toy gap, times 100.\n    ideal: '0'\npatterns:\n- ['toy gap .*', toy gap x100]\n"
                          "labels: [toy label]\n")
    assert glossary.human_name("toy_gap_x100") == "toy gap x100"
    assert glossary.lookup("toy gap (before)") == "toy gap x100"
    assert [e.ideal for e in glossary.glossary_for(["toy gap x100", "p (Holm)"])] == ["0", "large (no evidence of bias)"]
    assert "toy label" in glossary.NOT_METRICS and "toy-words" in glossary.NOT_METRICS
    assert "toy_words_method.suite" not in sys.modules


@pytest.mark.parametrize("text, message", [
    ("glossary:\n  p:\n    what: Something else.\n    ideal: '1'\n",
     r"glossary\.p: .*toy_words_method/words\.yaml and .*report/words\.yaml give it different words"),
    ("glossary:\n  toy:\n    what: no ideal given\n", r"toy_words_method/words\.yaml: glossary\.toy: needs exactly"),
    ("patterns:\n- ['toy (', toy]\n", r"words\.yaml: patterns\[0\]: 'toy \(' is not a regular expression"),
    ("patterns:\n- ['toy .*', no such entry]\n", r"patterns lead to names with no glossary entry: \['no such entry'\]"),
    ("columns:\n  toy: [a, list]\n", r"words\.yaml: columns\.toy: expected text, found list"),
    ("colums:\n  toy: x\n", r"words\.yaml: a words file has the sections .*found \['colums'\]"),
])
def test_a_bad_words_file_names_the_file_and_the_field(toy_method, text, message):
    toy_method.write_text(text)
    with pytest.raises(ValueError, match=message):
        glossary.words()
