"""Commands whose flags are generated from a pydantic configuration (``biaslens.options``):
every field becomes a flag (name, type, default and help from the field), and each command
also takes ``--config FILE.yaml`` and ``-S section.field=value``. Flags override the file and
``-S`` overrides both."""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Optional

import typer
from typer.core import TyperCommand

from biaslens.options import FlagSpec


class GroupedOptions(TyperCommand):
    """``--help`` lists the options under their sections' headings (a suite's options together)."""

    def format_options(self, ctx, formatter) -> None:
        groups: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and param.param_type_name == "option":
                groups.setdefault(getattr(param, "rich_help_panel", None) or "Options", []).append(record)
        for title, rows in groups.items():
            with formatter.section(title):
                formatter.write_dl(rows)


def config_parameters(specs: list[FlagSpec], what: str, example: str) -> list[inspect.Parameter]:
    """``--config``, ``-S`` and one typer option per flag spec, as keyword-only parameters."""
    kw = inspect.Parameter.KEYWORD_ONLY
    key = "section.field" if any(len(p) > 1 for s in specs for p in s.paths) else "field"
    params = [
        inspect.Parameter("config", kw, annotation=Optional[Path], default=typer.Option(
            None, "--config", "-c", help=f"YAML file with any {what} field; flags override it.")),
        inspect.Parameter("set_", kw, annotation=Optional[list[str]], default=typer.Option(
            None, "--set", "-S", metavar=f"{key.upper()}=VALUE",
            help=f"Any {what} field as {key}=value (YAML value), e.g. {example}; repeatable; applied last.")),
    ]
    for s in specs:
        kind, metavar = s.kind, s.metavar
        if typing.get_origin(kind) is Literal:  # choices shown as <a|b>; pydantic checks the value and names the flag
            kind, metavar = str, metavar or f"<{'|'.join(map(str, typing.get_args(kind)))}>"
        if s.sep is not None:  # a separated list is one string on the command line
            kind = str
        annotation = Optional[list[kind]] if s.multiple else Optional[kind]  # type: ignore[valid-type]  # built at run time
        decls = [s.decl, *([s.short] if s.short else [])]
        params.append(inspect.Parameter(s.name, kw, annotation=annotation, default=typer.Option(
            None, *decls, help=s.help, metavar=metavar, rich_help_panel=s.panel, show_default=False)))
    return params


def generated_command(fn: Callable[..., Any], leading: list[inspect.Parameter], specs: list[FlagSpec],
                      what: str, example: str = "-S fairpair.temperature=0.8") -> Callable[..., Any]:
    """``fn`` with the signature typer reads: ``leading`` parameters (arguments, CLI-only flags)
    then :func:`config_parameters`. ``fn`` takes them all as keywords."""
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in leading] + config_parameters(specs, what, example)
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return fn


def load_config(model: Any, specs: list[FlagSpec], values: dict[str, Any], base: dict | None = None) -> Any:
    """The configuration from ``--config``, the flags given and ``-S``, in that order of
    precedence (lowest first); ``base`` holds settings from arguments. An invalid flag value is
    reported under the flag the user typed."""
    from biaslens.config import ConfigError, deep_merge, dotted_overrides
    from biaslens.options import overrides_from_flags

    overrides = deep_merge(deep_merge(base or {}, overrides_from_flags(specs, values)),
                           dotted_overrides(values.get("set_") or [], model))
    if values.get("config"):
        return model.from_yaml(values["config"], **overrides)
    try:
        return model.validated(overrides, source="flags")
    except ConfigError as e:
        raise ConfigError(name_flags(str(e), specs)) from None


def name_flags(message: str, specs: list[FlagSpec]) -> str:
    """'flags: field 'fairpair.perturber': ...' -> '--fairpair-perturber: ...': an invalid value
    is reported under the flag the user typed, not the configuration's internal field."""
    by_path = {".".join(p): s.flags[0] for s in specs for p in s.paths}

    def flag(m: re.Match) -> str:
        path = m.group(1)
        while path not in by_path and re.search(r"\.\d+$", path):  # 'winobias.types.0': an item of a list flag
            path = path.rsplit(".", 1)[0]
        return by_path.get(path, m.group(0))

    return re.sub(r"^flags: field '([\w.]+)'", flag, message, flags=re.M)
