"""`biaslens dataset NAME --format hf`: a Hugging Face `datasets` folder that load_from_disk reads
back equal to the Parquet table, with ClassLabel features and a dataset card; bad input one line."""

from __future__ import annotations

import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app

datasets = pytest.importorskip("datasets", reason="the Hugging Face datasets package is not installed: "
                                                  "pip install 'biaslens[hfdatasets]'")


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def _one_error_line(result) -> str:
    assert "Traceback" not in result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    return errors[0]


@pytest.mark.parametrize("name, labels", [
    ("holistic", {"axis", "bucket", "noun_phrase_type"}),
    ("redditbias", {"bias_type"}),
    ("fairpair", {"occupation"}),
    ("community", {"dimension", "demographic", "form"}),
])
def test_hf_folder_equals_parquet_table(cli, tmp_path, name, labels):
    from biaslens.datasets.hf_format import decoded

    r = cli("dataset", name, "--out", str(tmp_path / "t.parquet"))
    assert r.exit_code == 0, r.output
    r = cli("dataset", name, "--format", "hf", "--out", str(tmp_path / "hf"))
    assert r.exit_code == 0, r.output
    ds = datasets.load_from_disk(str(tmp_path / "hf"))
    for col in labels:
        assert isinstance(ds.features[col], datasets.ClassLabel), col
    table = pd.read_parquet(tmp_path / "t.parquet")
    back = decoded(ds)
    assert list(back.columns) == list(table.columns)
    assert len(back) == len(table) > 0
    for col in table.columns:  # categoricals and strings compare as text; bools/ints as themselves
        a, b = table[col], back[col]
        if a.dtype == bool or pd.api.types.is_integer_dtype(a):
            assert (a.to_numpy() == b.to_numpy()).all(), col
        else:
            assert (a.astype(str).to_numpy() == b.astype(str).to_numpy()).all(), col
    card = (tmp_path / "hf" / "README.md").read_text()
    assert f"**Rows:** {len(table):,}" in card and "**License:**" in card and "**Source paper:**" in card
    first = sorted(labels)[0]
    assert f"ClassLabel ({table[first].nunique()} names)" in card


def test_hf_card_counts_per_label(cli, tmp_path):
    r = cli("dataset", "redditbias", "--bias-types", "gender,race", "--max-pairs", "7", "--format", "hf",
            "--out", str(tmp_path / "hf"))
    assert r.exit_code == 0, r.output
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "| gender | 7 |" in card and "| race | 7 |" in card and "**Rows:** 14" in card
    ds = datasets.load_from_disk(str(tmp_path / "hf"))
    assert ds.features["bias_type"].names == ["gender", "race"]


def test_hf_bad_input_is_one_line(cli, tmp_path, monkeypatch):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    assert "not an empty folder" in _one_error_line(cli("dataset", "fairpair", "--format", "hf", "--out",
                                                        str(tmp_path / "full")))
    assert "--format xml" in _one_error_line(cli("dataset", "community", "--format", "xml", "--out",
                                                 str(tmp_path / "c")))
    assert "needs a .csv file name" in _one_error_line(cli("dataset", "community", "--format", "csv", "--out",
                                                           str(tmp_path / "c")))
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if the extra were not installed
    line = _one_error_line(cli("dataset", "fairpair", "--format", "hf", "--out", str(tmp_path / "f")))
    assert "biaslens[hfdatasets]" in line
    assert not (tmp_path / "f").exists()
