"""RedditBias bias specifications (T1, T2, A1, A2, target pairs; paper section 2.1, appendix A).

The five built-in specifications live in ``data/*.yaml``, transcribed from the paper's
appendix. Users add their own as YAML or JSON files with the same fields; they are
validated here and every error names the file and the field.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from biaslens.errors import DatasetError
from biaslens.options import validation_messages

BUILTIN_DIR = Path(__file__).with_name("data")
#: the paper's order (Figure 1)
BUILTIN_NAMES = ("religion1", "religion2", "race", "gender", "orientation")
_NAME_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


class RedditBiasError(DatasetError):
    """A RedditBias specification or data file is malformed; the message names file and field."""


Direction = Literal["to_dominant", "to_minoritized"]


def _default_directions() -> list[Direction]:
    return ["to_dominant"]


class BiasSpec(BaseModel):
    """One bias specification.

    Attributes:
        name: short id, e.g. ``religion1``; also the data folder name.
        minoritized: minoritized group name as used in file names (``jews``, ``black``).
        dominant: dominant group name as used in file names (``christians``, ``white``).
        T1, T2: target phrases of the minoritized / dominant group, paired by position.
        A1, A2: stereotypical (negative) attributes and their non-stereotypical counterparts;
            ``*`` is a wildcard for any word ending (``greed*``).
        target_pairs: (t1, t2) terms swapped to build counterfactuals. Surrounding spaces are
            kept: they matter to the reference-compatible substring swap.
        attribute_pairs: (a1, a2) terms for the attribute swap; default A1 and A2 paired by
            position when they have the same length.
        swap_directions: ``to_dominant`` (t1 -> t2) and/or ``to_minoritized`` (t2 -> t1). Both
            means t1 and t2 are *exchanged* within a phrase, as the authors did for race and
            religion; gender and orientation are swapped one way.
        reference_plain_if: reference mode: the authors' exceptions to the exchange, term ->
            strings; when one of them is in the phrase the pair is replaced one way only.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1)
    description: str = ""
    minoritized: str = Field(min_length=1)
    dominant: str = Field(min_length=1)
    T1: list[str] = Field(min_length=1)
    T2: list[str] = Field(min_length=1)
    A1: list[str] = Field(min_length=1)
    A2: list[str] = Field(min_length=1)
    target_pairs: list[tuple[str, str]] = Field(min_length=1)
    attribute_pairs: list[tuple[str, str]] | None = None
    swap_directions: list[Direction] = Field(default_factory=_default_directions, min_length=1)
    reference_plain_if: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("name", "minoritized", "dominant")
    @classmethod
    def _file_name_part(cls, v: str) -> str:
        # these name the data folder and files under --data-dir: no path may escape it
        if not _NAME_PART.fullmatch(v) or v.strip(".") == "":
            raise ValueError(f"{v!r} must be a plain name (letters, digits, '_', '-', '.'; no '/' or '..'): "
                             "it names the data folder and files under --data-dir")
        return v

    @field_validator("T1", "T2", "A1", "A2")
    @classmethod
    def _no_empty_terms(cls, v: list[str]) -> list[str]:
        for i, term in enumerate(v):
            if not str(term).strip():
                raise ValueError(f"entry {i} is empty")
        return [str(t) for t in v]

    @field_validator("target_pairs", "attribute_pairs")
    @classmethod
    def _no_empty_pairs(cls, v: list[tuple[str, str]] | None) -> list[tuple[str, str]] | None:
        for i, (a, b) in enumerate(v or []):
            if not a.strip() or not b.strip():
                raise ValueError(f"pair {i} has an empty term")
        return v

    @model_validator(mode="after")
    def _paired_lengths(self) -> BiasSpec:
        if len(self.T1) != len(self.T2):
            raise ValueError(f"T1 has {len(self.T1)} phrases but T2 has {len(self.T2)}; they are paired by position")
        return self

    @property
    def exchanges(self) -> bool:
        """Whether a swap exchanges t1 and t2 within a phrase (both directions listed)."""
        return len(set(self.swap_directions)) == 2

    def attribute_swap_pairs(self) -> list[tuple[str, str]]:
        """(a1, a2) pairs for the attribute swap (a1 may keep its ``*`` wildcard)."""
        if self.attribute_pairs is not None:
            pairs = self.attribute_pairs
        elif len(self.A1) == len(self.A2):
            pairs = list(zip(self.A1, self.A2))
        else:
            raise RedditBiasError(
                f"specification {self.name!r}: A1 ({len(self.A1)}) and A2 ({len(self.A2)}) differ in length, "
                "so attribute pairs cannot be inferred; add 'attribute_pairs' to the specification")
        return [(a, b.rstrip("*")) for a, b in pairs]

    def matches_attribute(self, word: str, which: Literal["A1", "A2"] = "A1") -> str | None:
        """The attribute of A1 (or A2) that ``word`` matches, honouring ``*`` wildcards, else None."""
        word = word.lower()
        patterns: list[str] = getattr(self, which)
        for pattern in patterns:
            if attribute_regex(pattern).fullmatch(word):
                return pattern
        return None

    def find_attributes(self, text: str, which: Literal["A1", "A2"] = "A1") -> list[str]:
        """Attributes of A1 (or A2) that occur in ``text`` as whole words (wildcards allowed)."""
        low = text.lower()
        return [p for p in getattr(self, which) if attribute_regex(p, whole_word=True).search(low)]


@lru_cache(maxsize=4096)
def attribute_regex(pattern: str, whole_word: bool = False) -> re.Pattern[str]:
    """Regex of an attribute: ``greed*`` matches greed, greedy, greediness (one word ending).

    >>> bool(attribute_regex("greed*").fullmatch("greedy"))
    True
    """
    body = re.escape(pattern.lower().rstrip("*"))
    if pattern.endswith("*"):
        body += r"[\w'-]*"
    return re.compile(rf"(?<!\w){body}(?!\w)" if whole_word else body)


def _read_mapping(path: Path) -> dict[str, Any]:
    from biaslens.fileio import load_yaml

    data = load_yaml(path, RedditBiasError, json_ok=True)
    if not isinstance(data, dict):
        raise RedditBiasError(f"{path}: expected a mapping of specification fields, got {type(data).__name__}")
    return data


def load_spec(path: str | Path) -> BiasSpec:
    """Read and validate one specification file (YAML or JSON).

    Raises:
        RedditBiasError: naming the file and each invalid field.
    """
    path = Path(path)
    data = _read_mapping(path)
    try:
        return BiasSpec.model_validate(data)
    except ValidationError as e:
        raise RedditBiasError(validation_messages(e, str(path), BiasSpec)) from None


@cache
def builtin_spec(name: str) -> BiasSpec:
    """One of the five built-in specifications by name."""
    if name not in BUILTIN_NAMES:
        raise RedditBiasError(f"unknown bias type {name!r}; built in: {', '.join(BUILTIN_NAMES)}")
    return load_spec(BUILTIN_DIR / f"{name}.yaml")


def builtin_specs() -> dict[str, BiasSpec]:
    """All built-in specifications in the paper's order."""
    return {n: builtin_spec(n) for n in BUILTIN_NAMES}


def resolve_specs(names: list[str] | None = None, extra_files: list[Path] | None = None) -> dict[str, BiasSpec]:
    """Built-in specifications (all, or those named) plus user files; a user file replaces a
    built-in of the same name."""
    specs = builtin_specs()
    for f in extra_files or []:
        spec = load_spec(f)
        specs[spec.name] = spec
    if names:
        unknown = [n for n in names if n not in specs]
        if unknown:
            raise RedditBiasError(f"unknown bias type(s) {unknown}; choose from {', '.join(specs)}")
        specs = {n: specs[n] for n in names}
    return specs
