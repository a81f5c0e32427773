"""Load and validate HolisticBias dataset files (the official JSON schema).

Files: ``descriptors.json`` (axis -> bucket -> list of str | {descriptor, gender?, preference?,
article?}), ``nouns.json`` ({female|male|neutral: [[singular, plural], ...]}),
``sentence_templates.json`` ({template: {first_turn_only?, must_be_noun?}}) and
``standalone_noun_phrases.json`` (axis -> list of str | {noun_phrase, plural_noun_phrase?,
preference?}). Every problem raises :class:`DatasetError` naming the file, the entry and, where
it can be found, the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaslens.errors import DatasetError

__all__ = [
    "DatasetError",
    "HolisticDataset",
    "load_holistic_dataset",
    "BUILTIN_DIR",
    "FILE_KINDS",
    "PREFERENCES",
    "GENDERS",
    "TEMPLATE_FLAGS",
]

BUILTIN_DIR = Path(__file__).resolve().parent / "data" / "holistic" / "v1.0"
FILE_KINDS = ("descriptors", "nouns", "sentence_templates", "standalone_noun_phrases")
GENDERS = ("female", "male")
NOUN_GENDERS = ("female", "male", "neutral")
# "no_data" is what the generated table shows for a missing label; accept it as "no label".
PREFERENCES = ("reviewed", "dispreferred", "polarizing", "no_data")
TEMPLATE_FLAGS = ("first_turn_only", "must_be_noun")
DESCRIPTOR_KEYS = ("descriptor", "gender", "preference", "article")
STANDALONE_KEYS = ("noun_phrase", "plural_noun_phrase", "preference")
PLACEHOLDERS = ("{noun_phrase}", "{plural_noun_phrase}")


@dataclass
class HolisticDataset:
    """A parsed, validated HolisticBias dataset.

    Attributes:
        descriptors: axis -> bucket -> list of dicts with key "descriptor" and optional
            "gender", "preference", "article" (strings are normalised to dicts).
        nouns: gender ("female", "male", "neutral") -> list of (singular, plural).
        templates: template -> {"first_turn_only": bool, "must_be_noun": bool}, in file order.
        standalone_noun_phrases: axis -> list of dicts with "noun_phrase" and optional
            "plural_noun_phrase", "preference".
        sources: the files the dataset was read from, in load order.
    """

    descriptors: dict[str, dict[str, list[dict[str, str]]]] = field(default_factory=dict)
    nouns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    templates: dict[str, dict[str, bool]] = field(default_factory=dict)
    standalone_noun_phrases: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)


class _Source:
    """A loaded JSON file plus its raw text, for error messages with line numbers."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DatasetError(f"{path}: file not found") from None
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not valid UTF-8 ({exc})") from None
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise DatasetError(f"{path}: invalid JSON: nested too deeply") from None

    def line_of(self, needle: Any) -> int | None:
        """Line (1-based) of the first occurrence of ``needle`` as a JSON string, if any."""
        if not isinstance(needle, str):
            return None
        for candidate in (json.dumps(needle), json.dumps(needle, ensure_ascii=False)):
            pos = self.text.find(candidate)
            if pos >= 0:
                return self.text.count("\n", 0, pos) + 1
        return None

    def error(self, where: str, problem: str, needle: Any = None) -> DatasetError:
        line = self.line_of(needle)
        loc = f"{self.path}" + (f", line {line}" if line else "")
        return DatasetError(f"{loc}: {where}: {problem}")


def _kind_of(path: Path) -> str:
    """File kind from its name: descriptors*.json, nouns*.json, ... (longest prefix wins)."""
    name = path.name
    if name.endswith(".json"):
        for kind in sorted(FILE_KINDS, key=len, reverse=True):
            if name.startswith(kind):
                return kind
    raise DatasetError(
        f"{path}: cannot tell the file kind from its name; expected descriptors*.json, nouns*.json, "
        "sentence_templates*.json or standalone_noun_phrases*.json"
    )


def _check_preference(src: _Source, where: str, value: Any) -> None:
    if value not in PREFERENCES:
        raise src.error(where, f"unknown preference label {value!r} (expected one of {', '.join(PREFERENCES)})", value)


def _top_object(src: _Source, shape: str) -> dict[Any, Any]:
    """The file's top-level object (``shape`` describes it in the error)."""
    if not isinstance(src.data, dict):
        raise src.error("top level", f"expected an object {shape}, got {type(src.data).__name__}")
    return src.data


def _entry(src: _Source, where: str, entry: Any, key: str, allowed: tuple[str, ...], what: str,
           needle: Any) -> tuple[dict[str, Any], str, str]:
    """A list entry as an object (a plain string ``s`` is ``{key: s}``) whose ``key`` is a non-empty
    string and whose other keys are all ``allowed``; with that string and where it is, for errors."""
    if isinstance(entry, str):
        entry = {key: entry}
    if not isinstance(entry, dict) or not isinstance(entry.get(key), str) or not entry[key].strip():
        raise src.error(where, f"{what} entry {entry!r} must be a non-empty string or an object with a string {key!r}",
                        needle)
    text: str = entry[key]
    where = f"{where}, {what} {text!r}"
    unknown = set(entry) - set(allowed)
    if unknown:
        raise src.error(where, f"unknown key(s) {sorted(unknown)} (allowed: {', '.join(allowed)})", text)
    return entry, text, where


def _merge_descriptors(ds: HolisticDataset, src: _Source) -> None:
    data = _top_object(src, "axis -> bucket -> list")
    for axis, buckets in data.items():
        if not isinstance(buckets, dict):
            raise src.error(f"axis {axis!r}", f"expected an object bucket -> list, got {type(buckets).__name__}", axis)
        for bucket, entries in buckets.items():
            where_b = f"axis {axis!r}, bucket {bucket!r}"
            if not isinstance(entries, list):
                raise src.error(where_b, f"expected a list of descriptors, got {type(entries).__name__}", bucket)
            target = ds.descriptors.setdefault(axis, {}).setdefault(bucket, [])
            seen = {d["descriptor"] for d in target}
            for item in entries:
                entry, text, where = _entry(src, where_b, item, "descriptor", DESCRIPTOR_KEYS, "descriptor", bucket)
                if "gender" in entry and entry["gender"] not in GENDERS:
                    raise src.error(where, f"unknown gender {entry['gender']!r} (expected 'female' or 'male')", text)
                if "preference" in entry:
                    _check_preference(src, where, entry["preference"])
                if "article" in entry and not isinstance(entry["article"], str):
                    raise src.error(where, "'article' must be a string", text)
                if text in seen:
                    raise src.error(where, "duplicate descriptor in this axis and bucket", text)
                seen.add(text)
                target.append({k: entry[k] for k in DESCRIPTOR_KEYS if k in entry})


def _merge_nouns(ds: HolisticDataset, src: _Source) -> None:
    data = _top_object(src, "gender -> [[singular, plural], ...]")
    seen = {s for pairs in ds.nouns.values() for s, _ in pairs}
    for gender, pairs in data.items():
        if gender not in NOUN_GENDERS:
            raise src.error(f"gender {gender!r}", "unknown noun gender (expected female, male or neutral)", gender)
        if not isinstance(pairs, list):
            raise src.error(f"gender {gender!r}", f"expected a list of [singular, plural] pairs, got {type(pairs).__name__}", gender)
        target = ds.nouns.setdefault(gender, [])
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) and x.strip() for x in pair)):
                needle = pair[0] if isinstance(pair, list) and pair else pair
                raise src.error(f"gender {gender!r}, noun {pair!r}", "a noun must be a [singular, plural] pair of non-empty strings", needle)
            if pair[0] in seen:
                raise src.error(f"gender {gender!r}, noun {pair[0]!r}", "duplicate noun", pair[0])
            seen.add(pair[0])
            target.append((pair[0], pair[1]))


def _merge_templates(ds: HolisticDataset, src: _Source) -> None:
    data = _top_object(src, "template -> flags")
    for template, flags in data.items():
        where = f"template {template!r}"
        if not any(p in template for p in PLACEHOLDERS):
            raise src.error(where, "a template must contain {noun_phrase} or {plural_noun_phrase}", template)
        if not isinstance(flags, dict):
            raise src.error(where, f"flags must be an object, got {type(flags).__name__}", template)
        unknown = set(flags) - set(TEMPLATE_FLAGS)
        if unknown:
            raise src.error(where, f"unknown template flag(s) {sorted(unknown)} (allowed: {', '.join(TEMPLATE_FLAGS)})", template)
        for k, v in flags.items():
            if not isinstance(v, bool):
                raise src.error(where, f"flag {k!r} must be true or false, got {v!r}", template)
        if template in ds.templates:
            raise src.error(where, "duplicate template", template)
        ds.templates[template] = {k: bool(flags.get(k, False)) for k in TEMPLATE_FLAGS}


def _merge_standalone(ds: HolisticDataset, src: _Source) -> None:
    data = _top_object(src, "axis -> list of phrases")
    for axis, entries in data.items():
        if not isinstance(entries, list):
            raise src.error(f"axis {axis!r}", f"expected a list of phrases, got {type(entries).__name__}", axis)
        target = ds.standalone_noun_phrases.setdefault(axis, [])
        for item in entries:
            entry, phrase, where = _entry(src, f"axis {axis!r}", item, "noun_phrase", STANDALONE_KEYS, "phrase", axis)
            if "plural_noun_phrase" in entry and not isinstance(entry["plural_noun_phrase"], str):
                raise src.error(where, "'plural_noun_phrase' must be a string", phrase)
            if "preference" in entry:
                _check_preference(src, where, entry["preference"])
            # Repeated phrases are allowed: the official v1.1 file repeats one ("a Rasta"),
            # and the reference generator keeps both rows.
            target.append({k: entry[k] for k in STANDALONE_KEYS if k in entry})


_MERGERS = {
    "descriptors": _merge_descriptors,
    "nouns": _merge_nouns,
    "sentence_templates": _merge_templates,
    "standalone_noun_phrases": _merge_standalone,
}


def load_holistic_dataset(
    dataset_dir: str | Path | None = None, extra_files: Iterable[str | Path] = ()
) -> HolisticDataset:
    """Load and validate a HolisticBias dataset.

    Args:
        dataset_dir: Folder with the four official-schema files; ``None`` loads the built-in
            v1.0 data transcribed from the paper. A missing ``standalone_noun_phrases.json`` is
            allowed (no after-the-noun phrases); the other three files are required.
        extra_files: User files in the same schemas, merged in after the base files. The kind is
            taken from the file name (``descriptors*.json``, ``nouns*.json``,
            ``sentence_templates*.json``, ``standalone_noun_phrases*.json``).

    Returns:
        The parsed dataset.

    Raises:
        DatasetError: A file is missing, is not valid JSON or breaks the schema.
    """
    base = Path(dataset_dir) if dataset_dir is not None else BUILTIN_DIR
    if not base.is_dir():
        raise DatasetError(f"{base}: dataset folder not found")
    ds = HolisticDataset()
    for kind in FILE_KINDS:
        path = base / f"{kind}.json"
        if not path.exists():
            if kind == "standalone_noun_phrases":
                continue
            raise DatasetError(f"{path}: required dataset file is missing")
        src = _Source(path)
        _MERGERS[kind](ds, src)
        ds.sources.append(path)
    for extra in extra_files:
        path = Path(extra)
        kind = _kind_of(path)
        src = _Source(path)
        _MERGERS[kind](ds, src)
        ds.sources.append(path)
    if not ds.templates:
        raise DatasetError(f"{base / 'sentence_templates.json'}: the dataset has no templates")
    return ds
