"""Reading user files safely, with errors that name the file, line and column.

Every reader of YAML/JSON configuration (run configs, bias specifications, templates,
mappings, style inventories) goes through here, so each gets the same guarantees:
UTF-8 checked with the failing line, YAML parsed with ``safe_load`` (no Python objects),
JSON/YAML position in the message, and deep nesting reported instead of crashing.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_text(path: str | Path, error: type[Exception]) -> str:
    """The file as UTF-8 text (a leading byte-order mark is dropped), or
    ``error("<path>[:line]: ...")``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        start = e.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        line = raw[:start].count(b"\n") + 1
        raise error(f"{path}:{line}: not UTF-8 text (byte {start}); re-save the file as UTF-8") from None


def parse_yaml(text: str, source: str, error: type[Exception], *, json_ok: bool = False) -> object:
    """``yaml.safe_load`` (or ``json.loads`` when ``json_ok`` and the source ends in .json)
    with the position of a syntax error in the message."""
    import yaml

    try:
        if json_ok and source.lower().endswith(".json"):
            return json.loads(text)
        return yaml.safe_load(text)
    except json.JSONDecodeError as e:
        raise error(f"{source}: line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
        raise error(f"{source}:{where} invalid YAML: {getattr(e, 'problem', e)}") from None
    except RecursionError:
        raise error(f"{source}: invalid file: nested too deeply") from None


def load_yaml(path: str | Path, error: type[Exception], *, json_ok: bool = False) -> object:
    """Read and parse a YAML (or, with ``json_ok``, JSON) file; see :func:`parse_yaml`."""
    return parse_yaml(read_text(path, error), str(path), error, json_ok=json_ok)
