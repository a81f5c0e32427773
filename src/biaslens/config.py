"""The run configuration: one object that the CLI fills from flags or a YAML file and
that ``biaslens.run(config)`` accepts directly in Python."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from biaslens.models.embedded import EMBEDDED_NAME


class ConfigError(ValueError):
    """A configuration file or value is invalid; the message names the field."""


class ModelConfig(BaseModel):
    """Which model to call and how."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(EMBEDDED_NAME, description="'smollm2-135m' (embedded), 'fake', a Hugging Face id or a local folder")
    device: str = Field("cpu", description="cpu, cuda, cuda:N or mps")
    dtype: str = Field("float32", description="float32 (exact, default), bfloat16 or float16")
    kind: Literal["auto", "causal", "masked", "seq2seq"] = "auto"
    batch_size: int | None = Field(None, ge=1, description="texts per forward pass; default per backend")
    start_token: str | None = Field(None, description="override the document-start token prepended before each text")
    score_first_token: bool = Field(True, description="False: reference-compatible mode, no start token, first token unscored")
    trust_remote_code: bool = False


class RedditBiasOptions(BaseModel):
    """Options of the ``redditbias`` suite (LMB perplexity t-test)."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path | None = Field(None, description="RedditBias checkout (data/<bias_type>/...); none: phrases from the specifications")
    split: Literal["test", "valid"] = "test"
    perplexity_column: str | None = Field(None, description="evaluate this precomputed column of the paired files; no model")
    bias_types: list[str] | None = Field(None, description="subset of bias types; default all")
    spec_files: list[Path] = Field(default_factory=list, description="your own bias specifications (YAML/JSON)")
    counterfactual_mode: Literal["default", "reference"] = "default"
    reference_text: Path | None = Field(None, description="text file for LM perplexity; default humanref6k.txt under data_dir")
    outlier_removal: Literal["auto", "on", "off"] = Field("auto", description="auto: off for the *_reduced files, on otherwise")
    max_template_pairs: int | None = Field(400, ge=1, description="spec-only phrases: at most this many pairs per bias type")
    max_reference_lines: int | None = Field(None, ge=1, description="LM perplexity: only the first N lines of the reference text")


class RunConfig(BaseModel):
    """Everything a run needs. Unknown fields are errors, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")

    suite: str = "holistic-likelihood"
    model: ModelConfig = Field(default_factory=ModelConfig)
    out: Path | None = Field(None, description="run folder; default runs/<suite>-<model>-<time>")
    cache_dir: Path | None = Field(None, description="call cache folder; default the user cache")
    use_cache: bool = True
    seed: int = 0
    # dataset selection (HolisticBias)
    dataset_dir: Path | None = None
    extra_dataset_files: list[Path] = Field(default_factory=list)
    axes: list[str] | None = None
    templates: list[str] | None = None
    sample: int | None = Field(6000, ge=1, description="about this many sentences, whole (axis, template, descriptor) groups")
    full: bool = Field(False, description="use every sentence (overrides sample)")
    alpha: float = Field(0.05, gt=0, lt=1)
    redditbias: RedditBiasOptions = Field(default_factory=RedditBiasOptions)

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides) -> "RunConfig":
        """Read a YAML config (safely: no Python objects), then apply overrides."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: cannot read: {e}") from e
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise ConfigError(f"{path}:{where} invalid YAML: {getattr(e, 'problem', e)}") from e
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
        if isinstance(data.get("model"), str):
            data["model"] = {"name": data["model"]}
        _deep_update(data, overrides)
        return cls.validated(data, source=str(path))

    @classmethod
    def validated(cls, data: dict, source: str = "config") -> "RunConfig":
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            msgs = [f"{source}: field '{'.'.join(str(p) for p in err['loc'])}': {err['msg']}" for err in e.errors()]
            raise ConfigError("\n".join(msgs)) from None


def _deep_update(base: dict, new: dict) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _deep_update(base[k], v)
        else:
            base[k] = v
