"""Failures that must not look like success (issue #25): exit codes and messages of `biaslens
card`, `compare`, `report`; a damaged call cache that heals; generations files in JSONL, CSV
and Parquet; did-you-mean for a misspelt YAML field. End-to-end runs use the fake model."""

from __future__ import annotations

import json
import logging
import os
import sqlite3

import pandas as pd
import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app
from biaslens.datasets.generations import GenerationsFileError, read_generations_jsonl
from biaslens.engine.cache import CallCache, check_integrity


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # no wrapped paths in messages
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def _errors(result) -> list[str]:
    assert "Traceback" not in result.output
    return [ln for ln in result.output.splitlines() if ln.startswith("error:")]


# ---- bias card: status and exit code -------------------------------------------------------

def test_card_with_a_model_that_cannot_load_fails_once_and_leaves_no_folder(cli, tmp_path):
    out = tmp_path / "card"
    r = cli("card", "--model", tmp_path / "no" / "such" / "model", "--budget", "smoke", "--out", out,
            "--cache-dir", tmp_path / "c")
    assert r.exit_code == 2, r.output
    errors = _errors(r)
    assert len(errors) == 1 and "cannot load model" in errors[0]
    assert r.output.count("cannot load model") == 1  # once, not once per method
    assert not out.exists()


def _break_redditbias(monkeypatch, tmp_path):
    """The card's redditbias method reads a spec file that does not exist: it fails, the others run."""
    import dataclasses

    from biaslens.methods.redditbias.suite import RedditBias

    card = RedditBias.card
    monkeypatch.setattr(RedditBias, "card", dataclasses.replace(card, budgets={**card.budgets, "smoke": {
        **card.budgets["smoke"], "redditbias": {"spec_files": [str(tmp_path / "missing-spec.yaml")]}}}))


def test_card_with_a_failed_method_is_partial_and_exits_non_zero(cli, tmp_path, monkeypatch):
    _break_redditbias(monkeypatch, tmp_path)
    out = tmp_path / "card"
    args = ("card", "--model", "fake", "--budget", "smoke", "--methods", "holistic-likelihood,redditbias",
            "--cache-dir", tmp_path / "c")
    r = cli(*args, "--out", out)
    assert r.exit_code == 1, r.output
    assert "[red]" not in r.output and "[/red]" not in r.output  # markup is rendered, not printed
    assert "redditbias failed: " in r.output and "missing-spec.yaml" in r.output
    errors = _errors(r)
    assert len(errors) == 1 and "partial" in errors[0] and "1 of 2 methods failed (redditbias)" in errors[0]
    card = json.loads((out / "card.json").read_text())
    assert card["status"] == "partial"
    assert [m["status"] for m in card["methods"]] == ["complete", "failed"]
    html = (out / "card.html").read_text()
    assert 'class="status-partial">partial<' in html and 'class="status-complete"' not in html

    allowed = cli(*args, "--out", tmp_path / "card2", "--allow-failures")
    assert allowed.exit_code == 0, allowed.output
    assert "card status partial" in allowed.output and not _errors(allowed)


def test_card_status_of_old_cards_is_derived_not_assumed():
    from biaslens.report.card import card_status

    assert card_status([{"status": "complete"}, {"status": "not applicable"}]) == "complete"
    assert card_status([{"status": "complete"}, {"status": "failed"}]) == "partial"
    assert card_status([{"status": "failed"}, {"status": "failed"}]) == "failed"


# ---- compare and report ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "lb"
    r = CliRunner().invoke(app, ["run", "--model", "fake", "--sample", "300", "--out", str(out), "--no-cache"])
    assert r.exit_code == 0, r.output
    return out


def test_compare_needs_two_runs(cli, fake_run, tmp_path):
    r = cli("compare", fake_run, "--out", tmp_path / "cmp")
    assert r.exit_code == 2 and "compare needs at least 2 runs (one per model, original first), got 1" in _errors(r)[0]
    assert not (tmp_path / "cmp").exists()


def test_report_names_a_missing_folder_and_rerenders_cards(cli, tmp_path):
    r = cli("report", tmp_path / "nope")
    assert r.exit_code == 2 and _errors(r) == [f"error: {tmp_path / 'nope'}: no such folder"]

    out = tmp_path / "card"
    made = cli("card", "--model", "fake", "--budget", "smoke", "--methods", "holistic-likelihood",
               "--out", out, "--cache-dir", tmp_path / "c")
    assert made.exit_code == 0, made.output
    before = json.loads((out / "card.json").read_text())
    (out / "card.html").unlink()
    (out / "holistic-likelihood" / "report.html").unlink()
    r = cli("report", out)
    assert r.exit_code == 0, r.output
    assert (out / "card.html").is_file() and (out / "holistic-likelihood" / "report.html").is_file()
    after = json.loads((out / "card.json").read_text())
    assert after["status"] == "complete" and after["methods"][0]["value"] == before["methods"][0]["value"]


# ---- messages printed at the right moment --------------------------------------------------

def test_no_prompt_list_path_for_a_folder_that_is_removed(cli, tmp_path):
    out = tmp_path / "run"
    r = cli("run", "community", "--model", tmp_path / "missing-model", "--out", out, "--no-cache")
    assert r.exit_code == 2 and "cannot load model" in r.output
    assert "prompt list" not in r.output and not out.exists()


def test_busy_note_when_the_model_calls_start_not_before_a_failure(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (3.75, 3.0, 2.0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    bad = cli("run", "--model", "fake", "--axes", "agee", "--out", tmp_path / "bad", "--no-cache")
    assert bad.exit_code == 2 and "busy" not in bad.output
    ok = cli("run", "--model", "fake", "--sample", "300", "--out", tmp_path / "ok", "--no-cache")
    assert ok.exit_code == 0, ok.output
    assert "this machine is busy (load average 3.8 on 2 cores)" in ok.output


# ---- a damaged cache heals ------------------------------------------------------------------

def _damage(path, how: str) -> None:
    size = path.stat().st_size
    if how == "page":  # 8 KiB of 0xff in the middle: two whole 4 KiB pages with impossible headers
        with open(path, "r+b") as f:
            f.seek(size // 2)
            f.write(b"\xff" * 8192)
    elif how == "truncated":
        with open(path, "r+b") as f:
            f.truncate(size // 3)
    else:  # not SQLite at all
        path.write_text("prompt,response\nhello,world\n" * 200)


@pytest.mark.parametrize("how", ["page", "truncated", "not-sqlite"])
def test_damaged_cache_file_is_set_aside_and_a_new_one_started(tmp_path, how, caplog):
    path = tmp_path / "calls.sqlite"
    items = {f"k{i}": bytes([i % 256]) * 300 for i in range(3000)}
    c = CallCache(path)
    c.put_many(items)
    c.close()
    _damage(path, how)
    assert check_integrity(path)  # the damage is seen
    with caplog.at_level(logging.WARNING, logger="biaslens.engine.cache"):
        c = CallCache(path)
        assert c.get_many(items) == {}  # nothing from a damaged file is used
        c.put_many({"k1": b"v"})
        assert c.get_many(["k1"]) == {"k1": b"v"} and len(c) == 1
        c.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0] and str(c.set_aside) in warnings[0]
    assert c.set_aside.is_file() and c.set_aside.name.startswith("calls.sqlite.damaged-")
    assert check_integrity(path) == []


def _run_lb(out, cache) -> dict:
    r = CliRunner().invoke(app, ["run", "--model", "fake", "--sample", "300", "--out", str(out), "--cache-dir", str(cache)])
    assert r.exit_code == 0, r.output
    return json.loads((out / "metrics.json").read_text())


@pytest.fixture(scope="module")
def empty_cache_metrics(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("empty-cache")
    return _run_lb(tmp / "run", tmp / "cache")


@pytest.mark.parametrize("how", ["page", "truncated", "not-sqlite"])
def test_run_on_a_damaged_cache_gives_the_numbers_of_an_empty_cache(cli, tmp_path, how, empty_cache_metrics):
    run, empty = _run_lb, empty_cache_metrics
    cache = tmp_path / "c"
    run(tmp_path / "fill", cache)
    _damage(cache / "calls.sqlite", how)
    check = cli("cache", "check", "--cache-dir", cache)
    assert check.exit_code == 1 and "is damaged" in _errors(check)[0]
    assert run(tmp_path / "healed", cache) == empty
    assert [p.name.startswith("calls.sqlite.damaged-") for p in cache.iterdir()].count(True) == 1
    ok = cli("cache", "check", "--cache-dir", cache)
    assert ok.exit_code == 0 and ok.output.strip().endswith(": ok")
    # the new cache holds the recomputed calls: a third run is served from it, same numbers
    assert run(tmp_path / "again", cache) == empty
    record = json.loads((tmp_path / "again" / "run.json").read_text())
    assert record["scoring"]["cache_hits"] > 0


def test_locked_is_not_damage(tmp_path):
    """A busy database is waited for, never moved aside."""
    from biaslens.engine.cache import _is_damage

    assert not _is_damage(sqlite3.OperationalError("database is locked"))
    assert _is_damage(sqlite3.DatabaseError("database disk image is malformed"))


# ---- bring-your-own generations: JSONL, CSV, Parquet -----------------------------------------

RECORDS = [{"model": "a", "prompt": "John is a man, working as a doctor.", "response": "He likes it, a lot."},
           {"model": "a", "prompt_id": "007", "response": ""},
           {"model": "b", "prompt": "Jane is a woman.", "completion": 'She said "hi"\nand left.'}]


def _write_all(tmp_path):
    jsonl = tmp_path / "gens.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    df = pd.DataFrame(RECORDS)
    df.to_csv(tmp_path / "gens.csv", index=False)
    df.to_parquet(tmp_path / "gens.parquet")
    return jsonl, tmp_path / "gens.csv", tmp_path / "gens.parquet"


def test_generations_read_the_same_from_jsonl_csv_and_parquet(tmp_path):
    jsonl, csv, parquet = _write_all(tmp_path)
    want = read_generations_jsonl(jsonl)
    assert list(want["response"]) == ["He likes it, a lot.", "", 'She said "hi"\nand left.']
    assert want.loc[1, "prompt_id"] == "007"
    cols = ["model", "prompt", "prompt_id", "response", "sample_index"]
    for path in (csv, parquet):
        got = read_generations_jsonl(path)
        pd.testing.assert_frame_equal(got[cols].fillna("-"), want[cols].fillna("-"), check_dtype=False)
    # a CSV record's line is the file's line (the header is line 1); a Parquet row's is its number
    assert read_generations_jsonl(csv)["line"].tolist() == [2, 3, 4]
    assert read_generations_jsonl(parquet)["line"].tolist() == [1, 2, 3]


def test_generations_format_mistakes_are_named(tmp_path):
    jsonl, csv, _ = _write_all(tmp_path)
    misnamed = tmp_path / "gens-really-csv.jsonl"
    misnamed.write_text(csv.read_text())
    with pytest.raises(GenerationsFileError, match="expected JSONL .one JSON object per line., got what looks like CSV"):
        read_generations_jsonl(misnamed)
    no_response = tmp_path / "nores.csv"
    no_response.write_text("prompt,answer\nhello,world\n")
    with pytest.raises(GenerationsFileError, match=r"nores.csv:2: no string response field"):
        read_generations_jsonl(no_response)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(GenerationsFileError, match="broken.parquet: cannot read as Parquet"):
        read_generations_jsonl(broken)


def test_fairpair_from_csv_and_parquet_equals_jsonl(tmp_path):
    import biaslens

    rows = []
    for model, bias in (("api-a", False), ("api-b", True)):
        for occ in ("doctor", "nurse"):
            for i in range(5):
                x, px = f"John is a man, working as a {occ}.", f"Jane is a woman, working as a {occ}."
                rows.append({"model": model, "prompt": x, "response": f"{x} He likes sample {i} a lot {i % 2}."})
                tail = f"She loves family {i} {i % 2}." if bias else f"She likes sample {i} a lot {i % 2}."
                rows.append({"model": model, "prompt": px, "response": tail})
    (tmp_path / "g.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pd.DataFrame(rows).to_csv(tmp_path / "g.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "g.parquet")
    metrics = {}
    for ext in ("jsonl", "csv", "parquet"):
        res = biaslens.run(suite="fairpair", out=str(tmp_path / ext), use_cache=False, fairpair={
            "generations_file": str(tmp_path / f"g.{ext}"), "dissimilarities": ["jaccard"], "k_folds": None})
        metrics[ext] = res.metrics["models"]
    assert metrics["csv"] == metrics["jsonl"] == metrics["parquet"]


# ---- configuration -----------------------------------------------------------------------------

def test_misspelt_yaml_field_gets_did_you_mean(cli, tmp_path):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("model:\n  name: fake\n  batchsize: 4\nsampel: 600\n")
    r = cli("run", "--config", cfg)
    assert r.exit_code == 2 and "Extra inputs" not in r.output
    assert "field 'sampel': the run configuration has no field 'sampel'; did you mean sample?" in r.output
    assert "model has no field 'batchsize'; did you mean model.batch_size?" in r.output
