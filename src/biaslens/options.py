"""Options declared once, as pydantic fields, and read three ways: from YAML, from ``-S
section.field=value`` and as command-line flags. A field's flag is derived from its name
(``--<section prefix><field-name>``), its type, its default and its ``Field(description=...)``;
``flag(...)`` in ``json_schema_extra`` keeps a flag's historical name or its list syntax.

This module knows no CLI library: :mod:`biaslens.cli.options` turns :func:`flag_specs` into
typer options.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Self, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from biaslens.errors import ConfigError


class Section(BaseModel):
    """A section of options (a suite's, the model's ...): unknown fields are errors, and its
    flags are grouped under ``panel`` with names starting ``--<flag_prefix>``."""

    model_config = ConfigDict(extra="forbid")

    #: the key of this section in the run configuration (a suite's YAML section)
    section: ClassVar[str] = ""
    #: the start of every generated flag name of the section, e.g. "fairpair-"
    flag_prefix: ClassVar[str] = ""
    #: the heading its flags are listed under in ``--help``
    panel: ClassVar[str | None] = None

    def __init_subclass__(cls, *, section: str | None = None, flag_prefix: str | None = None,
                          panel: str | None = None, **kwargs: Any) -> None:
        """``class FairPairOptions(Section, section="fairpair", flag_prefix="fairpair-", panel="FairPair")``."""
        super().__init_subclass__(**kwargs)
        for name, value in (("section", section), ("flag_prefix", flag_prefix), ("panel", panel)):
            if value is not None:
                setattr(cls, name, value)


def flag(name: str | None = None, *, short: str | None = None, sep: str | None = None, keep_empty: bool = False,
         metavar: str | None = None, panel: str | None = None, skip: bool = False) -> dict[str, Any]:
    """A field's flag where it differs from the generated one: ``Field(..., json_schema_extra=flag("--n"))``.

    ``name`` a flag name or a ``--on/--off`` pair; ``sep`` reads a list field from one value split
    at ``sep`` (``--axes ability,age``) instead of a repeatable flag; ``keep_empty`` keeps empty
    items; ``panel`` lists it under its own heading; ``skip`` gives the field no flag (set it with ``-S`` or YAML).
    """
    return {"flag": {"name": name, "short": short, "sep": sep, "keep_empty": keep_empty, "metavar": metavar,
                     "panel": panel, "skip": skip}}


#: one flag for the identity masking of every suite that scores generated text (a flag declared
#: identically on several fields sets them all)
IDENTITY_MASKING_FLAG = flag("--identity-masking/--no-identity-masking")
#: lm-evaluation-harness samples in place of model calls (holistic-likelihood and redditbias)
SAMPLES_FROM_LM_EVAL_FLAG = flag("--from-lm-eval", panel="lm-evaluation-harness")
LM_EVAL_TOKENIZER_FLAG = flag("--tokenizer", panel="lm-evaluation-harness")


def toxicity_label_field() -> Any:
    """The option naming the toxic label of a Hugging Face toxicity classifier, the same in every
    suite that scores toxicity with one."""
    return Field(None, description="Hugging Face classifier: the toxic label (default its last)")


#: the --model and --out flags of the training commands (debias, finetune, tune, downstream)
TRAINING_MODEL_FLAG = flag("--model", short="-m")
TRAINING_OUT_FLAG = flag("--out", short="-o")

#: the fields the training commands (debias, finetune, tune, downstream) declare alike: name ->
#: (default, lower bound: "gt" (greater than) or "ge" (at least) and the bound, help). "model" (the
#: model trained, --model/-m) has the default its command gives (the embedded model), "out" (--out/-o)
#: is required; the Trainer settings' defaults are biaslens.mitigation.training.TrainingConfig's (a
#: test checks they agree)
TRAINING_FIELDS: dict[str, tuple[Any, tuple[str, float] | None, str]] = {
    "model": (None, None, "the model to train"),
    "out": (..., None, "output model folder (re-run the same command to resume)"),
    "epochs": (2.0, ("gt", 0), "training epochs"),
    "batch_size": (8, ("ge", 1), "examples per step"),
    "grad_accum": (1, ("ge", 1), "gradient accumulation steps"),
    "learning_rate": (5e-5, ("gt", 0), "AdamW learning rate"),
    "max_steps": (-1, None, "stop after N optimizer steps (-1: the epochs decide)"),
    "save_steps": (50, ("ge", 1), "checkpoint every N steps (resume point)"),
    "device": ("cpu", None, "cpu, cuda, cuda:N, mps"),
    "seed": (0, None, "training seed"),
}
_TRAINING_FLAGS = {"model": TRAINING_MODEL_FLAG, "out": TRAINING_OUT_FLAG}


def training_field(name: str, default: Any = None, description: str | None = None) -> Any:
    """The field of a training command declared alike in all of them (:data:`TRAINING_FIELDS`): its
    flag, bound, default and help, unless the command gives its own default or help."""
    value, bound, text = TRAINING_FIELDS[name]
    kind, limit = bound or ("", None)
    return Field(value if default is None else default, gt=limit if kind == "gt" else None,
                 ge=limit if kind == "ge" else None, json_schema_extra=_TRAINING_FLAGS.get(name),
                 description=description or text)


@dataclass(frozen=True)
class FlagSpec:
    """One flag and the configuration fields it sets (usually one; a shared flag such as
    ``--no-identity-masking`` sets the same field in several sections)."""

    paths: tuple[tuple[str, ...], ...]
    decl: str  # "--fairpair-top-p" or "--use-cache/--no-cache"
    short: str | None
    kind: Any  # str, int, float, bool, Path, or a Literal of choices
    multiple: bool  # a repeatable flag (a list field without sep)
    sep: str | None
    keep_empty: bool
    default: Any  # the field's default, shown in the help
    help: str
    panel: str | None
    metavar: str | None

    @property
    def name(self) -> str:
        """The Python parameter name of the flag (unique per command)."""
        return "opt__" + "__".join(self.paths[0]).replace("-", "_")

    @property
    def flags(self) -> list[str]:
        """Every spelling of the flag, long and short."""
        return [*self.decl.split("/"), *([self.short] if self.short else [])]

    def parse(self, value: Any) -> Any:
        """The field value for a flag's value (a ``sep`` list split, a repeated flag as a list)."""
        if self.sep is not None and isinstance(value, str):
            return [s.strip() for s in value.split(self.sep) if s.strip() or self.keep_empty]
        return list(value) if self.multiple else value


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """(element type, is a list) of a field annotation; ``X | None`` counts as X; None for a
    type no flag can carry (a mapping)."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:  # e.g. str | list[str]: the first plain type
            args = [a for a in args if typing.get_origin(a) is None][:1] or args[:1]
        return _unwrap(args[0])
    if origin is list:
        element, _ = _unwrap(typing.get_args(annotation)[0])
        return element, True
    if origin is Literal or annotation in (str, int, float, bool, Path):
        return annotation, False
    return None, False


def _help(description: str | None, default: Any, required: bool = False) -> str:
    text = (description or "").strip()
    if required:
        return f"{text} [required]".strip()
    if "default" in text.lower() or default is None or default == [] or default == {}:
        return text
    shown = ("on" if default else "off") if isinstance(default, bool) else (
        ",".join(map(str, default)) if isinstance(default, list) else str(default))
    return f"{text} [default: {shown}]".strip()


def flag_specs(model: type[BaseModel], path: tuple[str, ...] = (), prefix: str | None = None,
               panel: str | None = None) -> list[FlagSpec]:
    """The flags of every field of ``model`` and its sections, in declaration order. Raises
    ValueError if two different fields would get the same flag."""
    prefix = getattr(model, "flag_prefix", "") if prefix is None else prefix
    panel = getattr(model, "panel", None) or panel
    specs: list[FlagSpec] = []
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        how: dict[str, Any] = extra.get("flag") or {}  # type: ignore[assignment]  # pydantic types it as JsonValue
        if how.get("skip"):
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            specs += flag_specs(annotation, (*path, name), None, panel)
            continue
        kind, is_list = _unwrap(annotation)
        if kind is None:
            continue
        decl = how.get("name") or f"--{prefix}{name.replace('_', '-')}"
        if kind is bool and "/" not in decl:
            decl = f"{decl}/--no-{decl[2:]}"
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        specs.append(FlagSpec(paths=((*path, name),), decl=decl, short=how.get("short"), kind=kind,
                              multiple=is_list and not how.get("sep"), sep=how.get("sep"),
                              keep_empty=bool(how.get("keep_empty")), default=default,
                              help=_help(field.description, default, field.is_required()), panel=how.get("panel") or panel, metavar=how.get("metavar")))
    return specs if path else _merge_shared(specs)


def _merge_shared(specs: list[FlagSpec]) -> list[FlagSpec]:
    """One flag per spelling: a flag declared identically on several fields sets them all."""
    by_decl: dict[str, FlagSpec] = {}
    seen: dict[str, str] = {}
    for s in specs:
        if s.decl in by_decl:
            first = by_decl[s.decl]
            if (first.kind, first.multiple, first.sep) != (s.kind, s.multiple, s.sep):
                raise ValueError(f"flag {s.decl} is declared for {'.'.join(first.paths[0])} and "
                                 f"{'.'.join(s.paths[0])} with different types")
            # one help per section where they say different things (--data-dir: RedditBias and BBQ)
            section = s.paths[0][0]
            helps = first.help if s.help in first.help or section in first.help else f"{first.help} | {section}: {s.help}"
            by_decl[s.decl] = FlagSpec(**{**first.__dict__, "paths": first.paths + s.paths, "panel": None,
                                          "help": helps})
            continue
        for spelling in s.flags:
            if spelling in seen:
                raise ValueError(f"flag {spelling} is generated for both {seen[spelling]} and {'.'.join(s.paths[0])}; "
                                 "name one with flag(...)")
            seen[spelling] = ".".join(s.paths[0])
        by_decl[s.decl] = s
    return list(by_decl.values())


def overrides_from_flags(specs: list[FlagSpec], values: dict[str, Any]) -> dict:
    """The nested settings of the flags that were given (``values`` by :attr:`FlagSpec.name`;
    None or an empty repeat list is "not given", so a YAML file's value stands)."""
    out: dict = {}
    for s in specs:
        value = values.get(s.name)
        if value is None or (s.multiple and not value) or (s.sep is not None and not value and not s.keep_empty):
            continue
        for path in s.paths:
            node = out
            for part in path[:-1]:
                node = node.setdefault(part, {})
            node[path[-1]] = s.parse(value)
    return out


class ConfigFile(BaseModel):
    """A configuration read from YAML, ``-S section.field=value`` and flags. Unknown fields are
    errors, with the closest field names."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides: Any) -> Self:
        """Read a YAML config (safely: no Python objects), then apply overrides."""
        from biaslens.fileio import load_yaml

        path = Path(path)
        data = load_yaml(path, ConfigError) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of settings at the top level, got {type(data).__name__}")
        return cls.validated(deep_merge(data, overrides), source=str(path))

    @classmethod
    def validated(cls, data: dict, source: str = "config") -> Self:
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(validation_messages(e, source, cls)) from None


#: pydantic's bound errors in plain words ("must be at least 1")
_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("greater than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}


def validation_messages(error: ValidationError, source: str, root: type[BaseModel]) -> str:
    """pydantic's errors as lines naming the source and the field: "FILE: field 'a.b': must be at least 1"."""
    return "\n".join(f"{source}: field '{'.'.join(str(p) for p in err['loc']) or '(top level)'}': "
                     f"{validation_error_text(err, root)}" for err in error.errors())


def validation_error_text(err: Any, root: type[BaseModel]) -> str:
    """pydantic's message, except for a bound, a missing field or an unknown field: say so (for an
    unknown field with the closest field names, as -S does)."""
    if err.get("type") in _BOUNDS:
        words, key = _BOUNDS[err["type"]]
        return f"must be {words} {err['ctx'][key]}, got {err['input']!r}"
    if err.get("type") == "missing":
        return "is required"
    if err.get("type") != "extra_forbidden":
        return err["msg"]
    import difflib

    *parents, name = [str(p) for p in err["loc"]]
    model: Any = root
    for part in parents:  # the section the unknown field sits in
        field = model.model_fields.get(part) if model is not None else None
        annotation = field.annotation if field is not None else None
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    close = difflib.get_close_matches(name, list(model.model_fields), n=3) if model is not None else []
    where = ".".join(parents) or configuration_name(root)
    hint = f"; did you mean {', '.join('.'.join([*parents, c]) for c in close)}?" if close else ""
    return f"{where} has no field {name!r}{hint}"


def configuration_name(root: type[BaseModel]) -> str:
    return "the run configuration" if root.__name__.startswith("RunConfig") else f"the {root.__name__} configuration"


def deep_merge(base: dict, extra: dict) -> dict:
    """``base`` with ``extra`` laid over it, section by section: nested mappings merge, any other
    value of ``extra`` replaces ``base``'s. Neither argument is changed.

    >>> deep_merge({"model": {"name": "m", "batch_size": 4}, "seed": 1}, {"model": {"batch_size": 8}})
    {'model': {'name': 'm', 'batch_size': 8}, 'seed': 1}
    """
    out = dict(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
