"""No heavy import before it is needed: `biaslens run --help`, `report DIR`, `suites` and
`compare A B` load neither torch nor transformers (both are installed here; they must stay
unloaded), each checked in a fresh interpreter."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

import biaslens

HEAVY = ("torch", "transformers")
SRC = Path(biaslens.__file__).resolve().parents[1]
PROBE = ("import json, sys\n"
         "from biaslens.cli.app import main\n"
         "sys.argv = ['biaslens', *json.loads(sys.argv[1])]\n"
         "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
         f"print(json.dumps({{'code': code, 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two finished redditbias runs on the fake model (the second answered from the cache)."""
    tmp = tmp_path_factory.mktemp("light-cli")
    runs = []
    for name in ("a", "b"):
        res = biaslens.run(suite="redditbias", model="fake", out=str(tmp / name), cache_dir=str(tmp / "cache"),
                           console=Console(file=io.StringIO()),
                           redditbias={"bias_types": ["gender"], "max_template_pairs": 20})
        runs.append(Path(res.out))
    return tmp, runs


def _probe(args: list[str], cwd: Path, before: str = "") -> dict:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, "-c", before + PROBE, json.dumps(args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("command", ["run --help", "suites", "report", "compare"])
def test_command_loads_no_torch_or_transformers(command, two_runs):
    tmp, (a, b) = two_runs
    args = {"report": ["report", str(a)], "compare": ["compare", str(a), str(b), "--out", str(tmp / "cmp")]}.get(
        command, command.split())
    result = _probe(args, tmp)
    assert result["code"] == 0, result
    assert result["heavy"] == [], f"`biaslens {command}` loaded {result['heavy']}"
    if command == "compare":
        assert (tmp / "cmp" / "report.html").is_file()
        assert json.loads((tmp / "cmp" / "metrics.json").read_text())["redditbias"]["t"]  # its own section ran


def test_the_probe_sees_a_heavy_import(two_runs):
    """The check can fail: transformers imported on the way to the command is caught."""
    tmp, _ = two_runs
    assert _probe(["suites"], tmp, before="import transformers\n")["heavy"] == ["transformers"]
