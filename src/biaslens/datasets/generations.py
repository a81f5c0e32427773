"""Precomputed generations ("bring your own outputs"): JSONL files with one response
per line, so suites can evaluate models biaslens cannot run itself.

Each line is a JSON object with a response (``response``, or ``generation`` /
``completion`` / ``output`` / ``text``) and the prompt it answers (``prompt``, or an
id field such as ``prompt_id`` / ``id``). Extra fields are kept.
"""

from __future__ import annotations

import json
from pathlib import Path

RESPONSE_FIELDS = ("response", "generation", "completion", "output", "text")
PROMPT_FIELDS = ("prompt", "prompt_text", "input")
ID_FIELDS = ("prompt_id", "id", "item_id")


class GenerationsFileError(ValueError):
    """A generations file is malformed; the message names the file and line."""


def read_generations_jsonl(path: str | Path, *, max_line_chars: int = 1_000_000):
    """Read a JSONL file of generations into a DataFrame with columns ``prompt`` and/or
    ``prompt_id``, ``response``, ``sample_index`` (order of appearance per prompt) and any
    extra fields.

    Raises:
        GenerationsFileError: unreadable file, bad JSON, or a line without a response or prompt.
    """
    import pandas as pd

    from biaslens.fileio import read_text

    path = Path(path)
    text = read_text(path, GenerationsFileError)
    records = []
    counters: dict[str, int] = {}
    # split on "\n" only: str.splitlines() also splits at U+2028, U+0085, ... which JSON allows inside strings
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(line) > max_line_chars:
            raise GenerationsFileError(f"{path}:{lineno}: line longer than {max_line_chars:,} characters")
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise GenerationsFileError(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
        except RecursionError:
            raise GenerationsFileError(f"{path}:{lineno}: invalid JSON (nested too deeply)") from None
        if not isinstance(obj, dict):
            raise GenerationsFileError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        resp_field = next((f for f in RESPONSE_FIELDS if f in obj), None)
        if resp_field is None or not isinstance(obj[resp_field], str):
            raise GenerationsFileError(f"{path}:{lineno}: no string response field (one of {', '.join(RESPONSE_FIELDS)})")
        prompt_field = next((f for f in PROMPT_FIELDS if isinstance(obj.get(f), str)), None)
        id_field = next((f for f in ID_FIELDS if f in obj and obj[f] is not None), None)
        if prompt_field is None and id_field is None:
            raise GenerationsFileError(
                f"{path}:{lineno}: no prompt (one of {', '.join(PROMPT_FIELDS)}) or prompt id (one of {', '.join(ID_FIELDS)})")
        rec = {k: v for k, v in obj.items() if k not in (resp_field, prompt_field, id_field)}
        rec["response"] = obj[resp_field]
        if prompt_field:
            rec["prompt"] = obj[prompt_field]
        if id_field:
            rec["prompt_id"] = str(obj[id_field])
        key = rec["prompt_id"] if "prompt_id" in rec else rec["prompt"]
        rec["sample_index"] = counters.get(key, 0)
        counters[key] = rec["sample_index"] + 1
        rec["line"] = lineno
        records.append(rec)
    if not records:
        raise GenerationsFileError(f"{path}: no generations (the file is empty)")
    return pd.DataFrame.from_records(records)
