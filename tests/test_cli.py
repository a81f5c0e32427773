"""The command line: help, clear one-line errors with exit code 2, dataset export, a fake run."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # keep rich from wrapping paths in messages
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args))

    return invoke


def _one_error_line(result) -> str:
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def test_help(cli):
    top = cli("--help")
    assert top.exit_code == 0
    for word in ("run", "report", "dataset", "suites"):
        assert word in top.output
    run = cli("run", "--help")
    assert run.exit_code == 0
    for flag in ("--model", "--out", "--config", "--sample", "--axes", "--batch-size", "--cache-dir", "--no-cache",
                 "--start-token", "--no-start-token", "--extra-dataset-file", "--seed", "--full"):
        assert flag in run.output, flag
    assert cli("dataset", "holistic", "--help").exit_code == 0


def test_unknown_suite(cli, tmp_path):
    r = cli("run", "hollistic-likelihood", "--model", "fake", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2
    assert "Did you mean holistic-likelihood" in _one_error_line(r)


def test_bad_yaml_names_file_and_line(cli, tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("model: fake\nsample: [1,\n  2\nout: x\n")
    r = cli("run", "--config", str(cfg))
    assert r.exit_code == 2
    line = _one_error_line(r)
    assert str(cfg) in line and re.search(r"line \d+", line), line


def test_unknown_config_field_is_named(cli, tmp_path):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("model:\n  name: fake\n  batchsize: 4\nsampel: 300\n")
    r = cli("run", "--config", str(cfg))
    assert r.exit_code == 2
    assert "model.batchsize" in r.output and "sampel" in r.output
    assert "Traceback" not in r.output


def test_bad_flag_value(cli, tmp_path):
    r = cli("run", "--model", "fake", "--sample", "0", "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "sample" in _one_error_line(r)
    r = cli("run", "--model", "fake", "--axes", "agee", "--out", str(tmp_path / "o2"))
    assert r.exit_code == 2 and "agee" in _one_error_line(r)


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_missing_model_path(cli, tmp_path, kind):
    path = tmp_path / "no-such-model"
    if kind == "empty":
        path.mkdir()
    r = cli("run", "--model", str(path), "--out", str(tmp_path / "o"), "--sample", "300")
    assert r.exit_code == 2, r.output
    line = _one_error_line(r)
    assert str(path) in line
    assert ("no such folder" if kind == "missing" else "config.json") in line


def test_dataset_export(cli, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "holistic.parquet"
    r = cli("dataset", "holistic", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert pq.read_metadata(out).num_rows == 472_566
    bad = cli("dataset", "holistic", "--out", str(tmp_path / "x.txt"))
    assert bad.exit_code == 2
    assert ".parquet" in _one_error_line(bad) and not (tmp_path / "x.txt").exists()


def test_fake_run_and_report(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # the report path must not be wrapped, even in a narrow log
    out = tmp_path / "a-rather-long-folder-name-[with brackets]-so-the-path-is-longer-than-80" / "run"
    r = cli("run", "--model", "fake", "--sample", "300", "--out", str(out), "--cache-dir", str(tmp_path / "cache"))
    assert r.exit_code == 0, r.output
    assert str(out / "report.html") in r.output
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete" and run["config"]["sample"] == 300
    rep = cli("report", str(out))
    assert rep.exit_code == 0 and str(out / "report.html") in rep.output
    # a folder that is not a finished run gives a clear error
    (tmp_path / "empty").mkdir()
    bad = cli("report", str(tmp_path / "empty"))
    assert bad.exit_code == 2 and "run.json" in _one_error_line(bad)
    run["status"] = "running"
    (out / "run.json").write_text(json.dumps(run))
    busy = cli("report", str(out))
    assert busy.exit_code == 2 and "complete" in _one_error_line(busy)


def test_suites_and_cache_commands(cli, tmp_path):
    r = cli("suites")
    assert r.exit_code == 0 and "holistic-likelihood" in r.output
    info = cli("cache", "info", "--cache-dir", str(tmp_path))
    assert info.exit_code == 0 and "empty" in info.output
