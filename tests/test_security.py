"""Model loading never runs code from a model folder unless asked, and paths named inside user
files cannot reach outside the folders they are meant for."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app
from biaslens.models import load_model
from biaslens.models.base import ModelError


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory, tiny_causal_lm) -> Path:
    return tiny_causal_lm(tmp_path_factory.mktemp("sec") / "gpt2", "gpt2")


def _copy_without_safetensors(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    (dst / "model.safetensors").unlink()
    return dst


class _RunsCode:
    """Unpickling this calls ``open(marker, "w")``: proof that a pickle was executed."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pickle_weights_load_only_as_plain_tensors(tiny_gpt2, tmp_path):
    import torch
    from safetensors.torch import load_file

    # a .bin of plain tensors: loaded through torch's weights_only unpickler, scores like the original
    plain = _copy_without_safetensors(tiny_gpt2, tmp_path / "plain-bin")
    torch.save(load_file(tiny_gpt2 / "model.safetensors"), plain / "pytorch_model.bin")
    a = load_model(str(tiny_gpt2)).score_batch(["the people in my town"])[0]
    b = load_model(str(plain)).score_batch(["the people in my town"])[0]
    assert (a.logprobs == b.logprobs).all()

    # a .bin whose pickle would run code: refused with one clear error, and the code never ran
    evil = _copy_without_safetensors(tiny_gpt2, tmp_path / "evil-bin")
    marker = tmp_path / "pickle-ran"
    with open(evil / "pytorch_model.bin", "wb") as f:
        pickle.dump({"transformer.wte.weight": _RunsCode(marker)}, f, protocol=2)
    with pytest.raises(ModelError, match="pickled objects other than tensors.*safetensors"):
        load_model(str(evil))
    assert not marker.exists()
    r = CliRunner().invoke(app, ["run", "--model", str(evil), "--sample", "20", "--out", str(tmp_path / "run"),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert r.exit_code == 2 and "Traceback" not in r.output and not marker.exists()
    assert [line for line in r.output.splitlines() if line.startswith("error:")][0].startswith(
        f"error: cannot load causal model '{evil}'")


def _custom_code_model(src: Path, dst: Path, marker: Path) -> Path:
    """A model folder whose config.json maps the Auto classes to its own module (``auto_map``);
    importing that module writes ``marker``."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg.update(model_type="customgpt", auto_map={"AutoConfig": "custom.CustomConfig",
                                                  "AutoModelForCausalLM": "custom.CustomModel"})
    (dst / "config.json").write_text(json.dumps(cfg))
    (dst / "custom.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('ran')\n"
        "from transformers import GPT2Config, GPT2LMHeadModel\n\n\n"
        "class CustomConfig(GPT2Config):\n    model_type = 'customgpt'\n\n\n"
        "class CustomModel(GPT2LMHeadModel):\n    config_class = CustomConfig\n")
    return dst


def test_custom_code_runs_only_with_trust_remote_code(tiny_gpt2, tmp_path):
    marker = tmp_path / "custom-code-ran"
    model = _custom_code_model(tiny_gpt2, tmp_path / "custom", marker)
    r = CliRunner().invoke(app, ["run", "--model", str(model), "--sample", "20", "--out", str(tmp_path / "run"),
                                 "--cache-dir", str(tmp_path / "cache")])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "needs its own Python code" in r.output and "--trust-remote-code" in r.output
    assert not marker.exists()
    # the flag passes through to transformers: the folder's code runs and the model loads
    r = CliRunner().invoke(app, ["run", "--model", str(model), "--trust-remote-code", "--sample", "20",
                                 "--out", str(tmp_path / "run"), "--cache-dir", str(tmp_path / "cache")])
    assert r.exit_code == 0, r.output[-2000:]
    assert marker.read_text() == "ran"
    assert json.loads((tmp_path / "run" / "run.json").read_text())["config"]["model"]["trust_remote_code"] is True


# -- paths named in user files ----------------------------------------------------------------


@pytest.mark.parametrize("field,value", [("name", "../../outside"), ("minoritized", "x/../../../etc/passwd"),
                                         ("dominant", ".."), ("name", "/abs")])
def test_bias_spec_names_cannot_leave_the_data_dir(tmp_path, field, value):
    """A specification's name, minoritized and dominant name folders and files under --data-dir."""
    import yaml

    from biaslens.methods.redditbias.dataset import RedditBiasError, builtin_spec, load_spec

    spec = builtin_spec("religion1").model_dump()
    spec[field] = value
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(RedditBiasError, match=f"{path}: field '{field}'.*plain name"):
        load_spec(path)


def test_run_json_file_list_cannot_delete_outside_the_run_folder(tmp_path):
    """A re-run deletes the result files the previous run.json lists: only names inside the folder."""
    from test_fault_resume import _quiet

    import biaslens

    out = tmp_path / "run"
    out.mkdir()
    victims = [tmp_path / "victim.txt", tmp_path / "sub" / "victim2.txt"]
    for v in victims:
        v.parent.mkdir(exist_ok=True)
        v.write_text("keep me")
    (out / "run.json").write_text(json.dumps({"status": "complete", "files": [
        "../victim.txt", str(victims[0]), "../sub/victim2.txt", "..", ".", "sub/../../victim.txt", 7, None]}))
    biaslens.run(model="fake", sample=300, out=out, cache_dir=tmp_path / "cache", console=_quiet())
    assert all(v.read_text() == "keep me" for v in victims)
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


@pytest.mark.parametrize("model", ["../../escape", "/abs/path/..", "a/b/../../..", ".."])
def test_default_run_folder_stays_under_runs(model):
    from biaslens.config import RunConfig
    from biaslens.runner import default_out

    out = default_out(RunConfig.validated({"model": {"name": model}}, source="test"))
    assert out.parent == Path("runs") and len(out.parts) == 2 and out.name not in ("..", ".")
    assert os.path.normpath(out).startswith("runs" + os.sep)


def test_grid_json_cannot_point_outside_the_grid_folder(tmp_path):
    """grid.json (resumable debias --grid) names point folders whose weights get deleted."""
    from biaslens.methods.redditbias.dataset import RedditBiasError, builtin_spec
    from biaslens.methods.redditbias.mitigation import DebiasOptions, run_grid
    from biaslens.mitigation.training import TrainingConfig

    victim = tmp_path / "other-model"
    victim.mkdir()
    (victim / "model.safetensors").write_bytes(b"weights")
    out = tmp_path / "grid"
    out.mkdir()
    bad = {"name": "../../other-model", "valid_p": 1.0}
    (out / "grid.json").write_text(json.dumps({"points": [bad], "best": bad}))
    opts = DebiasOptions(method="lmd", spec=builtin_spec("religion1"), data_dir=None, training=TrainingConfig())
    with pytest.raises(RedditBiasError, match="grid.json: 'best' is not one of the recorded points"):
        run_grid(str(tmp_path / "no-model-needed"), out, opts, [{"batch_size": 4}])
    assert (victim / "model.safetensors").read_bytes() == b"weights"
