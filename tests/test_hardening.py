"""Faults around the run folder and the cache, suite by suite: a full disk, a second process
on the same out folder, and determinism across batch sizes."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest
from killing import another_process_holds_the_lock, cache_rows, cli, stable
from test_fault_resume import SUITES, _quiet
from typer.testing import CliRunner

import biaslens
from biaslens.cli.app import app
from biaslens.models.fake import FakeBackend
from biaslens.report.run_folder import RunFolderBusy

# -- full disk -------------------------------------------------------------------------------


class SmallDisk:
    """A folder with little free space: an 8 MB tmpfs (filled up by the test) mounted for the test (needs root or
    CAP_SYS_ADMIN), else a plain folder whose writers run under RLIMIT_FSIZE in a subprocess
    (then a file larger than the limit fails with EFBIG instead of the disk filling up)."""

    def __init__(self, root: Path):
        self.path = root / "disk"
        self.path.mkdir()
        try:
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(self.path)],
                               capture_output=True, text=True, timeout=30)
            mounted = r.returncode == 0
        except (OSError, subprocess.SubprocessError):  # no mount command
            mounted = False
        self.mechanism = "tmpfs" if mounted else "rlimit"
        self.limit: int | None = None

    def leave_free(self, n_bytes: int) -> None:
        """Fill the disk so that about ``n_bytes`` stay free."""
        self.limit = n_bytes
        if self.mechanism == "tmpfs":
            st = os.statvfs(self.path)
            (self.path / "filler").write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - n_bytes))

    def free_all(self) -> None:
        self.limit = None
        (self.path / "filler").unlink(missing_ok=True)

    def run(self, args: list[str]) -> tuple[int, str]:
        """``biaslens ARGS``: exit code and output (stdout and stderr)."""
        if self.mechanism == "tmpfs" or self.limit is None:
            r = CliRunner().invoke(app, args)
            return r.exit_code, r.output
        limit = self.limit

        def cap():  # the child only; Python ignores SIGXFSZ, so writes fail with EFBIG
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        p = subprocess.run(cli(args), preexec_fn=cap, capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout + p.stderr

    def close(self) -> None:
        if self.mechanism == "tmpfs":
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path):
    disk = SmallDisk(tmp_path)
    try:
        yield disk
    finally:
        disk.close()


def _error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in output, output[-2000:]
    return lines[0]


def test_full_disk_in_the_run_folder(small_disk, tmp_path):
    out = small_disk.path / "run"
    args = ["run", "--model", "fake", "--sample", "600", "--out", str(out), "--cache-dir", str(tmp_path / "cache")]
    if small_disk.mechanism == "rlimit":
        args.append("--no-cache")  # the file-size limit would hit the cache's WAL file first
    small_disk.leave_free(64_000)  # room for run.json and run.log, not for sentences.parquet (~140 KB)
    code, output = small_disk.run(args)
    assert code == 2
    line = _error_line(output)
    assert "no space left on device" in line and str(out) in line.replace("\n", ""), line
    run = json.loads((out / "run.json").read_text())
    assert run["status"] != "complete"  # "failed" when there was room to say so
    assert not (out / "metrics.json").exists() and not (out / "report.html").exists()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # no half-written files left

    small_disk.free_all()
    code, output = small_disk.run(args)
    assert code == 0, output[-2000:]
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "complete"
    if small_disk.mechanism == "tmpfs":
        assert run["scoring"]["computed"] == 0  # every score was cached before the disk filled up
    assert json.loads((out / "metrics.json").read_text())["n_sentences"] == run["scoring"]["n_sentences"]


def test_full_disk_in_the_cache_folder(small_disk, tmp_path):
    if small_disk.mechanism != "tmpfs":
        pytest.skip("tmpfs cannot be mounted here, and under RLIMIT_FSIZE SQLite reports a generic "
                    "'disk I/O error' instead of a full disk")
    cache = small_disk.path / "cache"
    out = tmp_path / "run"
    args = ["run", "--model", "fake", "--sample", "600", "--out", str(out), "--cache-dir", str(cache),
            "--batch-size", "32"]
    small_disk.leave_free(80_000)  # a few batches fit (the 780 scores need ~200 KB with the WAL)
    code, output = small_disk.run(args)
    assert code == 2
    line = _error_line(output)
    assert "no space left on device" in line and str(cache / "calls.sqlite") in line, line
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    assert not (out / "metrics.json").exists() and not (out / "report.html").exists()
    committed = cache_rows(cache / "calls.sqlite")
    assert committed > 0 and committed % 32 == 0  # whole batches only

    small_disk.free_all()
    code, output = small_disk.run(args)
    assert code == 0, output[-2000:]
    scoring = json.loads((out / "run.json").read_text())["scoring"]
    assert scoring["cache_hits"] == committed and scoring["computed"] == scoring["n_unique"] - committed


# -- two processes, one out folder ----------------------------------------------------------

#: every suite but holistic-likelihood (tests/methods/holistic/test_suite_holistic_likelihood.py::test_busy_run_folder)
BUSY = {**{k: v for k, v in SUITES.items() if k != "holistic-likelihood"},
        "holistic-offensiveness": {"sample": 300, "axes": ["ability"]}}


def test_second_process_on_the_same_out_folder_gets_busy(tmp_path):
    """While one biaslens process holds an out folder (its lock), every suite run into it stops
    with the "busy" error before writing anything; the CLI says so in one line (exit 2)."""
    out = tmp_path / "run"
    out.mkdir()
    sentinel = json.dumps({"status": "running", "suite": "other"})
    (out / "run.json").write_text(sentinel)  # the other process's run.json
    with another_process_holds_the_lock(out):
        for suite, extra in BUSY.items():
            with pytest.raises(RunFolderBusy, match="another biaslens process is writing"):
                biaslens.run(suite=suite, model="fake", out=out, cache_dir=tmp_path / "cache", console=_quiet(),
                             **extra)
            assert (out / "run.json").read_text() == sentinel, suite
            assert sorted(p.name for p in out.iterdir()) == [".biaslens.lock", "run.json"], suite
        r = CliRunner().invoke(app, ["run", "community", "--model", "fake", "--n", "2", "--out", str(out),
                                     "--cache-dir", str(tmp_path / "cache")])
        assert r.exit_code == 2 and _error_line(r.output).startswith("error: another biaslens process is writing")


# -- determinism across batch sizes ---------------------------------------------------------


@pytest.mark.parametrize("suite", list(SUITES))
def test_metrics_are_byte_identical_across_batch_sizes(suite, tmp_path):
    """Same seed, batch size 1, 7 and 32 (fresh caches): the same metrics.json bytes, wall-clock
    fields aside (the fake backend scores every text on its own, like a batch-invariant model)."""
    texts = {}
    for bs in (1, 7, 32):
        out = tmp_path / f"bs{bs}"
        biaslens.run(suite=suite, model={"name": "fake", "batch_size": bs}, out=out, cache_dir=tmp_path / f"cache{bs}",
                     backend=FakeBackend(), console=_quiet(), **SUITES[suite])
        texts[bs] = json.dumps(stable(json.loads((out / "metrics.json").read_bytes())), indent=2)
    assert texts[1] == texts[7] == texts[32]


def _float_paths(a, b, path=""):
    """Paths where two JSON values differ; numbers compared exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), path
        return [p for k in a for p in _float_paths(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), path
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _float_paths(x, y, f"{path}/{i}")]
    if a == b:
        return []
    assert isinstance(a, float) and isinstance(b, float), (path, a, b)
    assert b == pytest.approx(a, rel=1e-5, abs=0), path
    return [path]


def test_embedded_model_across_batch_sizes(tmp_path, embedded_model):
    """holistic-likelihood on the embedded model, batch size 1, 7 and 32: scores are not
    bit-identical (see docs/reliability.md: padding and prefix-trie packing change the shapes fp32
    sums run over), but every sentence's log-likelihood agrees to 5e-4 nats, the significance
    test and Likelihood Bias are identical, and only raw-perplexity summaries move (rel 1e-5)."""
    import numpy as np
    import pandas as pd
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for bs in (1, 7, 32):
            biaslens.run(model={"name": "smollm2-135m", "batch_size": bs}, sample=20, axes=["ability"],
                         templates=["I love {plural_noun_phrase}."], out=tmp_path / f"bs{bs}",
                         cache_dir=tmp_path / f"cache{bs}", backend=embedded_model, console=_quiet())
    finally:
        torch.set_num_threads(threads)
    rows = {bs: pd.read_parquet(tmp_path / f"bs{bs}" / "sentences.parquet") for bs in (1, 7, 32)}
    sig = {bs: pd.read_parquet(tmp_path / f"bs{bs}" / "significances.parquet") for bs in (1, 7, 32)}
    metrics = {bs: stable(json.loads((tmp_path / f"bs{bs}" / "metrics.json").read_text())) for bs in (1, 7, 32)}
    for bs in (7, 32):
        assert rows[bs]["text"].tolist() == rows[1]["text"].tolist()
        np.testing.assert_allclose(rows[bs]["sum_logprob"], rows[1]["sum_logprob"], rtol=0, atol=5e-4)
        pd.testing.assert_frame_equal(sig[bs], sig[1])  # ranks, U, p and flags: exactly equal
        moved = _float_paths(metrics[1], metrics[bs])
        assert all("perplexit" in p for p in moved), moved
