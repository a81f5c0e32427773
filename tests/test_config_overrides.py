"""`-S section.field=value` overrides and the environment policy applied by the API."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from biaslens.cli import app
from biaslens.config import ConfigError, deep_merge, dotted_overrides


def test_dotted_overrides_nest_and_read_yaml_values():
    assert dotted_overrides(["fairpair.temperature=0.8", "axes=[age, ability]", "model.name=fake",
                             "options.my-suite.k=3", "model.engine_options.alphabet=30"]) == {
        "fairpair": {"temperature": 0.8}, "axes": ["age", "ability"], "model": {"name": "fake",
                                                                               "engine_options": {"alphabet": 30}},
        "options": {"my-suite": {"k": 3}}}


@pytest.mark.parametrize("item, message", [
    ("fairpair.temprature=0.8", "fairpair has no field 'temprature'; did you mean fairpair.temperature"),
    ("sampel=5", "the run configuration has no field 'sampel'; did you mean sample"),
    ("alpha", "expected section.field=value"),
    ("axes=[age", "is not valid YAML"),
])
def test_dotted_override_errors_name_the_key(item, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        dotted_overrides([item])


def test_one_deep_merge_for_yaml_api_cli_and_card():
    base = {"model": {"name": "m", "batch_size": 4}, "axes": ["age"], "fairpair": {"n": 3}}
    merged = deep_merge(base, {"model": {"batch_size": 8}, "axes": ["ability"], "fairpair": 5})
    assert merged == {"model": {"name": "m", "batch_size": 8}, "axes": ["ability"], "fairpair": 5}
    assert base == {"model": {"name": "m", "batch_size": 4}, "axes": ["age"], "fairpair": {"n": 3}}  # unchanged
    # no module but options.py (where config.py reads it from) defines its own recursive merge of settings
    import ast
    from pathlib import Path

    import biaslens

    src = Path(biaslens.__file__).parent
    copies = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and "merge" in node.name.lower() and any(
                    isinstance(c, ast.Call) and getattr(c.func, "id", None) == node.name for c in ast.walk(node)):
                copies.append(f"{path.relative_to(src)}:{node.name}")
    assert copies == ["options.py:deep_merge"]


def test_cli_set_wins_over_flags_and_reaches_run_json(tmp_path):
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["run", "--model", "fake", "--sample", "120", "--axes", "ability,age",
                                   "--alpha", "0.05", "-S", "alpha=0.01", "-S", "seed=3", "--out", str(out),
                                   "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    config = json.loads((out / "run.json").read_text())["config"]
    assert config["alpha"] == 0.01 and config["seed"] == 3 and config["axes"] == ["ability", "age"]
    bad = CliRunner().invoke(app, ["run", "--model", "fake", "-S", "fairpair.tempature=1", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "did you mean fairpair.temperature" in bad.output
    assert not (tmp_path / "x").exists()


def _python_without_policy(code: str, online: str | None) -> str:
    """Standard output of ``python -c code`` with none of the offline variables set (and
    ``BIASLENS_ONLINE=online`` when given)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "BIASLENS_ONLINE")}
    if online:
        env["BIASLENS_ONLINE"] = online
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.mark.parametrize("online, expected", [(None, "1"), ("1", "unset")])
def test_the_api_applies_the_offline_policy(tmp_path, online, expected):
    code = ("import os, biaslens; biaslens.run(model='fake', sample=120, axes=['ability', 'age'], "
            f"out={str(tmp_path / 'run')!r}, cache_dir={str(tmp_path / 'c')!r}); "
            "print(os.environ.get('HF_HUB_OFFLINE', 'unset'))")
    assert _python_without_policy(code, online).strip().splitlines()[-1] == expected


#: every public function that can load a model (the CLI's commands call these)
MODEL_LOADING_API = ("run", "card", "check_backend", "debias", "debias_grid", "finetune_community",
                     "tune_style_equality", "downstream_dst", "downstream_generation", "load_model")


@pytest.mark.parametrize("online, expected", [(None, "1"), ("1", "unset")])
def test_every_model_loading_api_function_applies_the_offline_policy(online, expected):
    """Each function is called with too many arguments: the policy is applied before the call
    fails, and nothing is loaded."""
    code = ("import os, biaslens\n"
            f"for name in {MODEL_LOADING_API!r}:\n"
            "    for k in ('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE'):\n"
            "        os.environ.pop(k, None)\n"
            "    try:\n"
            "        getattr(biaslens, name)(*[None] * 30)\n"
            "    except TypeError as e:\n"
            "        assert 'positional argument' in str(e), (name, e)\n"
            "    print(name, os.environ.get('HF_HUB_OFFLINE', 'unset'), os.environ.get('TRANSFORMERS_OFFLINE', 'unset'))\n")
    assert _python_without_policy(code, online).split() == [w for name in MODEL_LOADING_API
                                                           for w in (name, expected, expected)]


def test_every_command_has_a_python_function():
    """The CLI's commands are biaslens.* functions too (lazily imported; none loads torch)."""
    import inspect

    import biaslens
    import biaslens.bias_card  # noqa: F401 - importing the submodules must not shadow a function's name
    import biaslens.cli.leaderboard  # noqa: F401
    import biaslens.comparison.runs  # noqa: F401

    commands = {"run": "run", "report": "rerender", "card": "card", "compare": "compare",
                "check-backend": "check_backend", "debias": "debias", "finetune community": "finetune_community",
                "tune style-equality": "tune_style_equality", "downstream dst": "downstream_dst",
                "downstream generation": "downstream_generation", "leaderboard": "leaderboard"}
    for command, name in commands.items():
        fn = getattr(biaslens, name)
        assert callable(fn) and inspect.getdoc(fn), f"{command}: biaslens.{name} has no docstring"
        assert name in biaslens.__all__
    code = ("import sys, biaslens; biaslens.compare; biaslens.card; biaslens.leaderboard; "
            "import biaslens.card_leaderboard, biaslens.report.leaderboard; print('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
