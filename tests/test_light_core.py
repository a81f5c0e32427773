"""The light core: `pip install biaslens` without extras has no torch, and still re-renders a
finished run and runs a suite on precomputed generations (#15).

A virtualenv is made with only the core dependencies of pyproject.toml (pip, from the index or
pip's cache), kept under the user cache keyed by those dependencies so later runs reuse it;
biaslens itself comes from this checkout (PYTHONPATH), so the code under test is the current one.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "accelerate", "safetensors", "gguf", "vaderSentiment", "profanity_check")


def _core_dependencies() -> list[str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]


@pytest.fixture(scope="module")
def core_python() -> Path:
    deps = _core_dependencies()
    key = hashlib.sha256(json.dumps([sys.version, deps]).encode()).hexdigest()[:16]
    venv = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "biaslens-test-venvs" / f"core-{key}"
    python = venv / "bin" / "python"
    if not (venv / ".complete").is_file():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        res = subprocess.run([str(python), "-m", "pip", "install", "-q", *deps], capture_output=True, text=True)
        assert res.returncode == 0, f"pip could not install the core dependencies: {res.stderr[-3000:]}"
        (venv / ".complete").write_text("ok")
    return python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_core_package_does_not_depend_on_torch():
    deps = " ".join(_core_dependencies()).lower()
    for name in ("torch", "transformers", "vadersentiment", "alt-profanity-check", "gguf", "accelerate"):
        assert name not in deps


def test_core_venv_has_no_torch_and_imports_biaslens(core_python, tmp_path):
    code = ("import importlib.util, sys, biaslens, biaslens.api, biaslens.runner, biaslens.bias_card; "
            f"print([m for m in {HEAVY!r} if importlib.util.find_spec(m)])")
    res = _run(core_python, "-c", code, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]", f"heavy packages present in the core venv: {res.stdout}"


def test_core_venv_rerenders_a_run_and_runs_fairpair_on_precomputed_generations(core_python, tmp_path):
    import biaslens

    # a finished run made with the full install (the fake model), re-rendered by the core
    run = tmp_path / "likelihood"
    biaslens.run(model="fake", sample=300, out=str(run), cache_dir=str(tmp_path / "c"))
    before = json.loads((run / "metrics.json").read_text())
    (run / "report.html").unlink()
    res = _run(core_python, "-m", "biaslens.cli.app", "report", str(run), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (run / "report.html").is_file() and json.loads((run / "metrics.json").read_text()) == before

    # precomputed generations: FairPair with the jaccard dissimilarity needs no model and no scorer
    lines = []
    for occ in ("doctor", "nurse"):
        for i in range(5):
            x, px = f"John is a man, working as a {occ}.", f"Jane is a woman, working as a {occ}."
            lines.append({"prompt": x, "response": f"{x} He likes sample {i} a lot {i % 2}."})
            lines.append({"prompt": px, "response": f"She loves family {i} {i % 2}."})
    gens = tmp_path / "gens.jsonl"
    gens.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    res = _run(core_python, "-m", "biaslens.cli.app", "run", "fairpair", "--fairpair-generations", str(gens),
               "--fairpair-dissimilarities", "jaccard", "--out", str(tmp_path / "fp"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    metrics = json.loads((tmp_path / "fp" / "metrics.json").read_text())
    assert metrics["entries"] and metrics["entries"][0]["name"].startswith("F.jaccard")
    assert (tmp_path / "fp" / "report.html").is_file()

    # a model-backed run in the core names the extra to install, in one line
    res = _run(core_python, "-m", "biaslens.cli.app", "run", "--model", "fake-missing-model-folder", "--out",
               str(tmp_path / "nomodel"), cwd=tmp_path)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "biaslens[hf]" in res.stderr, res.stderr
