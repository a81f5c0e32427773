"""Options declared once as pydantic fields: the flags generated from them (name, type, default,
choices, help), YAML and -S on the training commands, and the light options modules."""

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest
import typer
from pydantic import Field
from typer.testing import CliRunner

import biaslens
from biaslens.cli import app
from biaslens.cli.options import generated_command, load_config
from biaslens.config import ConfigFile, RunConfig
from biaslens.options import Section, flag, flag_specs


class _Toy(Section):
    section = "toy"
    flag_prefix = "toy-"

    k: int = Field(3, ge=1, description="how many")
    mode: Literal["fast", "exact"] = Field("exact", description="how to count")
    words: list[str] = Field(default_factory=list, json_schema_extra=flag(sep=","), description="comma-separated words")
    files: list[Path] = Field(default_factory=list, json_schema_extra=flag("--toy-file"), description="repeatable")
    loud: bool = Field(False, description="say it")


class _ToyConfig(ConfigFile):
    name: str = Field(json_schema_extra=flag(short="-n"), description="a name")
    toy: _Toy = Field(default_factory=_Toy)


def test_a_flag_is_generated_from_its_field():
    specs = {s.decl: s for s in flag_specs(_ToyConfig)}
    assert list(specs) == ["--name", "--toy-k", "--toy-mode", "--toy-words", "--toy-file", "--toy-loud/--no-toy-loud"]
    k = specs["--toy-k"]
    assert (k.kind, k.default, k.paths, k.help) == (int, 3, (("toy", "k"),), "how many [default: 3]")
    assert specs["--toy-mode"].kind == Literal["fast", "exact"]
    assert specs["--toy-words"].sep == "," and not specs["--toy-words"].multiple
    assert specs["--toy-file"].multiple and specs["--toy-file"].kind is Path
    assert specs["--name"].short == "-n" and specs["--name"].help == "a name [required]"

    got = {}

    def command(**a):
        got["config"] = load_config(_ToyConfig, list(specs.values()), a)

    toy = typer.Typer(rich_markup_mode=None)
    toy.command()(generated_command(command, [], list(specs.values()), "toy", example="-S toy.k=2"))
    toy.command("other")(lambda: None)  # a group, so the command is called by name
    r = CliRunner().invoke(toy, ["command", "--help"], terminal_width=200)
    assert r.exit_code == 0
    assert "--toy-mode <fast|exact>" in r.output and "how to count [default: exact]" in r.output
    assert "--toy-k <int>" in r.output and "--toy-loud / --no-toy-loud" in r.output
    r = CliRunner().invoke(toy, ["command", "-n", "x", "--toy-k", "5", "--toy-words", "a, b", "--toy-file", "f1",
                                 "--toy-file", "f2", "--toy-loud", "-S", "toy.mode=fast"])
    assert r.exit_code == 0, r.output
    c = got["config"]
    assert (c.name, c.toy.k, c.toy.words, c.toy.files, c.toy.loud, c.toy.mode) == (
        "x", 5, ["a", "b"], [Path("f1"), Path("f2")], True, "fast")
    assert c.model_fields_set == {"name", "toy"} and c.toy.model_fields_set == {"k", "words", "files", "loud", "mode"}
    r = CliRunner().invoke(toy, ["command", "-n", "x", "--toy-k", "0"])  # the field's bound, under the flag's name
    assert r.exit_code != 0 and "--toy-k: must be at least 1, got 0" in str(r.exception)


def test_run_flags_come_from_the_suites_options():
    specs = {s.decl: s for s in flag_specs(RunConfig)}
    top_p = specs["--fairpair-top-p"]
    assert top_p.paths == (("fairpair", "top_p"),) and top_p.kind is float and top_p.default == 0.9
    assert top_p.panel == "FairPair" and top_p.help == "nucleus sampling top-p [default: 0.9]"
    # a flag shared by two suites sets both
    masking = specs["--identity-masking/--no-identity-masking"]
    assert masking.paths[:2] == (("generation", "identity_masking"), ("community", "identity_masking"))
    assert ("bold", "identity_masking") in masking.paths
    # every section of RunConfig is a registered suite's options or the model/executor
    assert {"redditbias", "fairpair", "generation", "community"} <= set(RunConfig.model_fields)
    r = CliRunner().invoke(app, ["run", "--help"], terminal_width=100)
    assert "--split <test|valid>" in r.output and "\nFairPair:\n" in r.output and "\nCommunity:\n" in r.output


def test_flags_reach_the_config_as_before():
    """The historical flag spellings: sep lists, repeatable flags, negated booleans, renamed fields."""
    specs = flag_specs(RunConfig)
    by_flag = {f: s for s in specs for f in s.flags}
    values = {by_flag["--axes"].name: "ability, age", by_flag["--templates"].name: "I love {x}.|I hate {x}.",
              by_flag["--no-cache"].name: False, by_flag["--no-start-token"].name: False,
              by_flag["--fairpair-descriptors"].name: "young,,old", by_flag["--num-responses"].name: 2,
              by_flag["--community-model"].name: ["a", "b"], by_flag["--no-identity-masking"].name: False,
              by_flag["--ray-workers"].name: 3, by_flag["--generations"].name: Path("g.jsonl")}
    c = load_config(RunConfig, specs, values)
    assert c.axes == ["ability", "age"] and c.templates == ["I love {x}.", "I hate {x}."]
    assert c.use_cache is False and c.model.score_first_token is False
    assert c.fairpair.descriptors == ["young", "", "old"] and c.generation.n == 2
    assert c.community.models == ["a", "b"] and not c.community.identity_masking and not c.generation.identity_masking
    assert c.executor.workers == 3 and c.generation.generations_file == Path("g.jsonl")
    assert "sample" not in c.model_fields_set  # a flag not given leaves the field unset


def test_the_type_checkers_run_config_lists_the_composed_sections():
    from biaslens.config import suite_sections

    tree = ast.parse((Path(biaslens.__file__).parent / "config.py").read_text())
    [declared] = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "RunConfig"]
    annotations = {a.target.id: a.annotation.id for a in declared.body if isinstance(a, ast.AnnAssign)}
    assert annotations == {key: cls.__name__ for key, cls in suite_sections().items()}


def test_a_misspelt_flag_gets_the_closest_name():
    r = CliRunner().invoke(app, ["run", "--fairpair-temprature", "0.5"])
    assert r.exit_code == 2 and "--fairpair-temperature" in r.output


def test_old_yaml_keys_still_load(tmp_path):
    cfg = tmp_path / "old.yaml"
    cfg.write_text("model: fake\nsample: 300\naxes: [age]\nredditbias: {split: valid, bias_types: [race]}\n"
                   "fairpair: {temperature: 0.7, name_pairs: [[John, man, Jane, woman]]}\n"
                   "generation: {num_beams: 3}\ncommunity: {n: 5, n_bootstrap: 10}\noptions: {my-suite: {k: 1}}\n")
    c = RunConfig.from_yaml(cfg)
    assert (c.model.name, c.redditbias.split, c.fairpair.temperature, c.generation.num_beams, c.community.n) == (
        "fake", "valid", 0.7, 3, 5)


def test_options_modules_import_only_pydantic():
    """config composes the run configuration from each method's options module (found through the
    registry): they must stay light, with no suite, model or data code."""
    import importlib

    from biaslens.config import suite_sections

    modules = sorted({cls.__module__ for cls in suite_sections().values()})
    assert len(modules) == 11 and all(m.startswith("biaslens.methods.") for m in modules)
    for name in modules:
        path = Path(importlib.import_module(name).__file__)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert node.module.split(".")[0] in ("__future__", "pathlib", "typing", "pydantic") or \
                    node.module in ("biaslens.options", "biaslens.models.embedded"), f"{path.name} imports {node.module}"


def test_help_of_generated_commands_loads_no_model_library():
    code = ("import sys; from typer.testing import CliRunner; from biaslens.cli import app\n"
            "for args in (['run', '--help'], ['debias', 'cda', '--help'], ['tune', 'style-equality', '--help']):\n"
            "    assert CliRunner().invoke(app, args).exit_code == 0\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


# training commands: YAML, -S and flags, fast (the training itself is replaced)

@pytest.fixture
def captured(monkeypatch):
    import biaslens.methods.redditbias.downstream as ds
    import biaslens.methods.redditbias.mitigation as rb
    import biaslens.models

    got: dict = {}
    monkeypatch.setattr(biaslens.models, "model_folder", lambda name: Path(name))

    def fake_debias(model_path, out, opts, keep_checkpoints=False):
        got["debias"] = opts
        return (type("R", (), {"resumed_from": None, "steps": 1, "train_loss": 0.5})(),
                {"n_train_texts": 1, "data_source": "test"})

    def fake_dst(model, train, test, folder, **kw):
        got["dst"] = dict(kw, model=model, train=train, folder=folder)
        return {"scores": {"f1": 0.5}}

    monkeypatch.setattr(rb, "debias", fake_debias)
    monkeypatch.setattr(ds, "run_dst", fake_dst)
    return got


def test_a_training_command_reads_yaml_then_flags_then_set(tmp_path, captured):
    (tmp_path / "train.json").write_text("{}")
    cfg = tmp_path / "dst.yaml"
    cfg.write_text(f"model: some-model\ntrain: {tmp_path / 'train.json'}\ntest: {tmp_path / 'train.json'}\n"
                   f"out: {tmp_path / 'o'}\nepochs: 2\nbatch_size: 16\nlr: 0.001\n")
    r = CliRunner().invoke(app, ["downstream", "dst", "--config", str(cfg), "--batch-size", "4", "--epochs", "3",
                                 "-S", "epochs=5"])
    assert r.exit_code == 0, r.output
    got = captured["dst"]
    assert (got["epochs"], got["batch_size"], got["lr"], got["max_steps"]) == (5, 4, 0.001, -1)
    assert got["model"] == Path("some-model") and got["folder"] == tmp_path / "o"


def test_debias_takes_yaml_and_set(tmp_path, captured):
    cfg = tmp_path / "debias.yaml"
    cfg.write_text(f"bias_type: religion1\nout: {tmp_path / 'o'}\nlm_weight: 0.5\nevaluate: false\n"
                   "max_template_pairs: 8\nspec_files: []\n")
    r = CliRunner().invoke(app, ["debias", "lmd", "-c", str(cfg), "-S", "max_steps=1", "--batch-size", "2",
                                 "--no-start-token"])
    assert r.exit_code == 0, r.output
    opts = captured["debias"]
    assert (opts.method, opts.spec.name, opts.max_template_pairs) == ("lmd", "religion1", 8)
    assert (opts.training.lm_weight, opts.training.max_steps, opts.training.batch_size) == (0.5, 1, 2)
    assert opts.score_first_token is False


@pytest.mark.parametrize("command, text, hint", [
    (["debias", "cda"], "bias_tpye: religion1\n", "did you mean bias_type"),
    (["finetune", "community"], "data: x.csv\nout: o\nlerning_rate: 0.1\n", "did you mean learning_rate"),
    (["tune", "style-equality"], "generations: g\nout: o\npatiense: 2\n", "did you mean patience"),
    (["downstream", "generation"], "train: a\ntest: b\nepoch: 2\n", "did you mean epochs"),
])
def test_a_misspelt_yaml_field_of_a_training_command_is_named(tmp_path, command, text, hint):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text(text)
    r = CliRunner().invoke(app, [*command, "--config", str(cfg)])
    assert r.exit_code == 2 and hint in r.output and str(cfg) in r.output, r.output
    assert "Traceback" not in r.output


def test_a_misspelt_set_key_of_a_training_command_is_named(tmp_path):
    r = CliRunner().invoke(app, ["debias", "cda", "-b", "religion1", "-o", str(tmp_path / "o"), "-S", "epoch=1"])
    assert r.exit_code == 2 and "has no field 'epoch'; did you mean epochs?" in r.output, r.output
    assert not (tmp_path / "o").exists()


def test_a_required_training_field_is_named_by_its_flag(tmp_path):
    r = CliRunner().invoke(app, ["finetune", "community", "--data", "x.csv"])
    assert r.exit_code == 2 and "error: --out: is required" in r.output, r.output


def test_run_reads_the_suite_from_the_yaml(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"suite: redditbias\nmodel: fake\nout: {tmp_path / 'o'}\ncache_dir: {tmp_path / 'c'}\n"
                   "redditbias: {bias_types: [religion1], max_template_pairs: 10}\n")
    r = CliRunner().invoke(app, ["run", "--config", str(cfg)])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "o" / "run.json").read_text())["config"]["suite"] == "redditbias"


def test_training_fields_default_as_training_config():
    """The training commands' Trainer settings (options.TRAINING_FIELDS) default to what the
    training loop's own TrainingConfig defaults to, and keep their bounds."""
    from dataclasses import fields

    from pydantic import ValidationError

    from biaslens.methods.community.options import FinetuneCommunityConfig
    from biaslens.mitigation.training import TrainingConfig
    from biaslens.options import TRAINING_FIELDS

    config = {f.name: f.default for f in fields(TrainingConfig)}
    settings = {k: v[0] for k, v in TRAINING_FIELDS.items() if k not in ("model", "out")}
    assert settings == {k: config[k] for k in settings}
    with pytest.raises(ValidationError, match="greater than 0"):
        FinetuneCommunityConfig(data="posts.csv", out="m", epochs=0)
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        FinetuneCommunityConfig(data="posts.csv", out="m", batch_size=0)
    with pytest.raises(ValidationError, match="out"):
        FinetuneCommunityConfig(data="posts.csv")
