"""Terminal summaries at 80 columns (a CI job's redirected output): every cell whole, never an
ellipsis, never a group name cut so two groups read the same."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import biaslens


def _console():
    buf = io.StringIO()
    return Console(file=buf, width=80, force_terminal=False, color_system=None), buf


def _check(text: str, must: list[str]):
    assert "…" not in text and "..." not in text, text
    # table rows fit (sentences are printed soft-wrapped: the terminal wraps them whole)
    assert all(len(line) <= 80 for line in text.splitlines() if "│" in line or line.startswith("  "))
    for m in must:
        assert m in text, (m, text)


def test_print_table_stacks_rows_that_do_not_fit():
    from biaslens.report.terminal import print_table

    console, buf = _console()
    rows = [("American_actors", "+0.123 (95% CI -0.050 to +0.300)", "[not markup]")] * 2
    print_table(console, "t", ("group", "a long column header here", "another header, also long"),
                rows * 1, left=("group",))
    print_table(console, "t", ("group", "x") * 5, [("American_actresses", "+0.123 (-0.050 to +0.300)") * 5])
    _check(buf.getvalue(), ["American_actors", "American_actresses", "[not markup]",
                            "+0.123 (-0.050 to +0.300)"])


@pytest.mark.parametrize("suite, options, must", [
    ("bbq", {"bbq": {"categories": ["Religion", "Age"], "sample": 24, "n_bootstrap": 50}}, ["Religion", "Age"]),
    ("redditbias", {"redditbias": {"bias_types": ["gender", "race"], "max_template_pairs": 40}}, ["gender", "race"]),
    ("bold", {"bold": {"sample": 40, "max_new_tokens": 6, "n_permutations": 20, "domains": ["gender"]}},
     ["American_actors", "American_actresses"]),
])
def test_suite_summaries_fit_80_columns(tmp_path, suite, options, must):
    console, buf = _console()
    biaslens.run(suite=suite, model="fake", out=str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
                 console=console, **options)
    _check(buf.getvalue(), must)
