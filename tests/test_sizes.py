"""Sizes stated are the sizes that run: run.json and the report header record the requested and
the actual size; the card's budgets select what docs/card.md says; the first-run conversion of
the embedded model is shown on standard error with the one measured figure the README quotes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from biaslens.bias_card import card_methods, method_config
from biaslens.config import RunConfig

ROOT = Path(__file__).resolve().parents[1]


def test_run_json_and_report_record_requested_and_actual_size(tmp_path):
    import biaslens

    out = tmp_path / "run"
    biaslens.run(model="fake", sample=300, out=str(out), cache_dir=str(tmp_path / "cache"), console=_quiet())
    record = json.loads((out / "run.json").read_text())
    # whole (axis, template, descriptor) groups: 300 asked, 26 groups of 30 sentences ran
    assert record["size"] == {"unit": "sentences", "requested": 300, "actual": 780,
                              "selection": "stratified sample, whole groups"}
    assert record["scoring"]["n_sentences"] == 780
    assert "780 sentences run; 300 requested" in (out / "report.html").read_text()


def _selected(suite: str, budget: str) -> tuple[int | None, int]:
    """(requested, actual) size of a card method at a budget, from the suite's own selection."""
    from biaslens.methods.holistic.dataset.prompts import generation_prompts, generation_sample
    from biaslens.methods.holistic.likelihood import select_sentences

    method = next(m for m in card_methods() if m.suite == suite)
    cfg = RunConfig.validated(method_config(method, budget, {"model": {"name": "fake"}}, Path("card")), source="t")
    if suite == "holistic-likelihood":
        return cfg.sample, len(select_sentences(cfg))
    return generation_sample(cfg), len(generation_prompts(cfg))


def _docs_row(title: str) -> list[str]:
    for line in (ROOT / "docs" / "card.md").read_text().splitlines():
        if line.startswith(f"| {title} |"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"docs/card.md has no row for {title}")


@pytest.mark.parametrize(("suite", "title", "unit"), [
    ("holistic-likelihood", "HolisticBias Likelihood Bias", "sentences"),
    ("holistic-generation", "HolisticBias generation bias (styles)", "prompts")])
def test_card_budgets_run_the_sizes_the_docs_state(suite, title, unit):
    row = _docs_row(title)
    sizes = {}
    for budget, cell in (("smoke", row[2]), ("default", row[3])):
        requested, actual = _selected(suite, budget)
        assert f"{actual:,} {unit}" in cell, (budget, cell)  # the docs state what runs
        if requested != actual:  # and say what was asked for where the sample rounds to whole groups
            assert f"--sample {requested:,}" in cell or f"{requested:,} requested" in cell, (budget, cell)
        sizes[budget] = actual
    assert sizes["smoke"] < sizes["default"]  # smoke is genuinely smaller


def test_conversion_is_shown_on_stderr_with_the_measured_figure(monkeypatch, tmp_path, capsys):
    from biaslens.models import embedded

    def fake_convert(gguf, out, step):
        out.mkdir(parents=True)
        for done in (1, 2, 3):
            step(done)

    monkeypatch.setattr(embedded, "_convert", fake_convert)
    embedded._convert_shown(Path("model.gguf"), tmp_path / "tmp", tmp_path / "target")
    captured = capsys.readouterr()
    assert captured.out == ""
    err = " ".join(captured.err.split())
    assert f"converting the embedded model to safetensors, once, into {tmp_path / 'target'}" in err
    assert embedded.CONVERSION_TIME in err
    for step in embedded._STEPS:
        assert f"converting the embedded model: {step} (" in err
    assert re.search(r"converted the embedded model in \d+ s", err)
    # docs/benchmarks.md (where the README sends a reader for timings) states the same measured figure
    figure = re.match(r"(\d+ s on an idle [^;]+)", embedded.CONVERSION_TIME).group(1)
    assert figure in " ".join((ROOT / "docs" / "benchmarks.md").read_text().split())


def _quiet():
    from rich.console import Console

    return Console(quiet=True)
