"""The options of the training commands (``biaslens debias``, ``finetune community``, ``tune
style-equality``, ``downstream``) that set :class:`~biaslens.mitigation.training.TrainingConfig`:
declared here once with their bounds, defaults and help, so each command states only where it differs."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from pydantic import Field

from biaslens.mitigation.training import TrainingConfig
from biaslens.models.embedded import EMBEDDED_NAME
from biaslens.options import TRAINING_MODEL_FLAG, TRAINING_OUT_FLAG

_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(TrainingConfig)}

#: setting -> (its lower bound: "gt" (greater than) or "ge" (at least) and the bound, help)
TRAINER_SETTINGS: dict[str, tuple[tuple[str, float] | None, str]] = {
    "epochs": (("gt", 0), "training epochs"),
    "batch_size": (("ge", 1), "examples per step"),
    "grad_accum": (("ge", 1), "gradient accumulation steps"),
    "learning_rate": (("gt", 0), "AdamW learning rate"),
    "max_steps": (None, "stop after N optimizer steps (-1: the epochs decide)"),
    "save_steps": (("ge", 1), "checkpoint every N steps (resume point)"),
    "device": (None, "cpu, cuda, cuda:N, mps"),
    "seed": (None, "training seed"),
}


def trainer_field(setting: str, default: Any = None, description: str | None = None) -> Any:
    """The pydantic field of one TrainingConfig setting: its bound, and TrainingConfig's default and
    the common help unless the command gives its own."""
    bound, text = TRAINER_SETTINGS[setting]
    kind, value = bound or ("", None)
    return Field(_DEFAULTS[setting] if default is None else default, gt=value if kind == "gt" else None,
                 ge=value if kind == "ge" else None, description=description or text)


def base_model_field(description: str) -> Any:
    """--model/-m: the model a training command starts from (default the embedded model)."""
    return Field(EMBEDDED_NAME, json_schema_extra=TRAINING_MODEL_FLAG, description=description)


def model_out_field() -> Any:
    """--out/-o: the model folder a training command writes; the same command resumes it."""
    return Field(json_schema_extra=TRAINING_OUT_FLAG, description="output model folder (re-run the same command to resume)")
