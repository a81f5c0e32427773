"""A real ``kill -9`` of each fine-tuning command at a random point, then the same command again:
training resumes from the last complete checkpoint and ends with exactly the weights (and
training record) of an uninterrupted run.

The commands train a tiny random model (tests/conftest.py:make_tiny_causal_lm), checkpointing
every step; the killed process sleeps before each step (tests/killing.py:slow_training_cli) so
the kill can land anywhere, including in the middle of writing a checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import time

import pytest
from killing import complete_checkpoints, kill_when, slow_training_cli
from typer.testing import CliRunner

from biaslens.cli.app import app

STEPS = 6
DELAY = 0.4  # seconds per step in the killed run


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_causal_lm):
    """A tiny model, a community data file and a holistic-generation run folder."""
    import io

    from rich.console import Console
    from test_community_suite import _community_file

    import biaslens

    root = tmp_path_factory.mktemp("kill-train")
    run = root / "generation-run"
    biaslens.run(suite="holistic-generation", model={"name": "fake"}, out=run, sample=8, use_cache=False,
                 generation={"n_permutations": 0, "max_new_tokens": 8}, console=Console(file=io.StringIO()))
    return {"model": tiny_causal_lm(root / "tiny", "gpt2"), "data": _community_file(root)[0], "run": run}


def _args(command: str, inputs: dict, out) -> list[str]:
    common = ["--model", str(inputs["model"]), "--out", str(out), "--max-steps", str(STEPS), "--max-length", "32",
              "--batch-size", "4"]
    if command == "debias":
        return ["debias", "lmd", "-b", "religion1", "--max-template-pairs", "24", "--save-steps", "1",
                "--no-evaluate", *common]
    if command == "finetune":
        return ["finetune", "community", "--data", str(inputs["data"]), "--save-steps", "1", "--limit", "40",
                *common]
    # validation (and a checkpoint) every step, early stopping keeps the best model
    return ["tune", "style-equality", "--generations", str(inputs["run"]), "--eval-steps", "1", "--patience", "3",
            *common]


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


@pytest.mark.parametrize("command", ["debias", "finetune", "tune"])
def test_kill_9_during_training_then_rerun(command, inputs, tmp_path):
    clean = tmp_path / "clean"
    r = CliRunner().invoke(app, _args(command, inputs, clean))
    assert r.exit_code == 0, r.output[-3000:]

    out = tmp_path / "out"
    rng = random.Random(f"kill-{command}")
    step = rng.randint(2, STEPS - 1)  # checkpoint-1 at least is complete when checkpoint-2 appears
    extra = rng.uniform(0, DELAY)  # 0: mid-save of checkpoint-<step>; later: during the next step
    appeared: list[float] = []

    def ready() -> bool:
        if not appeared and (out / "checkpoints" / f"checkpoint-{step}").exists():
            appeared.append(time.monotonic())
        return bool(appeared) and time.monotonic() - appeared[0] >= extra

    kill_when(slow_training_cli(_args(command, inputs, out), DELAY), dict(os.environ), ready,
              tmp_path / "killed.log", timeout=180, poll=0.01)
    done_at_kill = complete_checkpoints(out / "checkpoints")
    assert done_at_kill and max(done_at_kill) >= step - 1 and max(done_at_kill) < STEPS
    assert not (out / "biaslens-training.json").exists()  # nothing says the model is finished

    r = CliRunner().invoke(app, _args(command, inputs, out))
    assert r.exit_code == 0, r.output[-3000:]
    record = json.loads((out / "biaslens-training.json").read_text())
    # resumed from the last complete checkpoint: at most the step in flight is trained again
    assert record["resumed_from"].endswith(f"checkpoint-{max(done_at_kill)}")
    assert record["steps"] == STEPS

    a, b = _weights(clean), _weights(out)
    assert a.keys() == b.keys()
    assert all((a[k] == b[k]).all() for k in a), "resumed weights differ from the uninterrupted run"
    want = json.loads((clean / "biaslens-training.json").read_text())
    for key in ("train_loss", "eval_loss"):
        # the resumed mean loss adds the logged losses before the checkpoint: equal up to the
        # order of a float sum
        assert (record[key] is None) == (want[key] is None)
        if want[key] is not None:
            assert record[key] == pytest.approx(want[key], rel=1e-12, abs=0)
    strip = ("resumed_from", "train_loss", "eval_loss", "eval_perplexity")
    assert {k: v for k, v in record.items() if k not in strip} == {k: v for k, v in want.items() if k not in strip}


def test_incomplete_checkpoint_is_skipped(tmp_path):
    """A kill while the Trainer writes checkpoint-N leaves a folder without (or with a cut)
    trainer_state.json, which transformers' get_last_checkpoint would still pick."""
    from transformers.trainer_utils import get_last_checkpoint

    from biaslens.mitigation.training import _last_checkpoint

    ckpt = tmp_path / "checkpoints"
    for step in (1, 2, 3, 4):
        (ckpt / f"checkpoint-{step}").mkdir(parents=True)
        (ckpt / f"checkpoint-{step}" / "model.safetensors").write_bytes(b"x")
    for step in (1, 2):
        (ckpt / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (ckpt / "checkpoint-4" / "trainer_state.json").write_text('{"global_step": 4, "log_hi')  # cut mid-write
    assert get_last_checkpoint(str(ckpt)).endswith("checkpoint-4")
    assert _last_checkpoint(ckpt) == ckpt / "checkpoint-2"
    assert _last_checkpoint(tmp_path / "none") is None
