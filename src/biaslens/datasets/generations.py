"""Precomputed generations ("bring your own outputs"): JSONL, CSV or Parquet files with one
response per line or row, so suites can evaluate models biaslens cannot run itself.

Each line (row) is a JSON object (has columns) with a response (``response``, or ``generation`` /
``completion`` / ``output`` / ``text``) and the prompt it answers (``prompt``, or an
id field such as ``prompt_id`` / ``id``). Extra fields are kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported when a file is read: keep `import biaslens.datasets` light
    import pandas as pd

#: one record of a generations file: (where, for messages; line or row number; the record)
_Row = tuple[str, int, Any]

RESPONSE_FIELDS = ("response", "generation", "completion", "output", "text")
PROMPT_FIELDS = ("prompt", "prompt_text", "input")
ID_FIELDS = ("prompt_id", "id", "item_id")


class GenerationsFileError(ValueError):
    """A generations file is malformed; the message names the file and line."""

    kind = "bad_input"


def read_generations_jsonl(path: str | Path, *, max_line_chars: int = 1_000_000) -> pd.DataFrame:
    """Read a generations file into a DataFrame with columns ``prompt`` and/or ``prompt_id``,
    ``response``, ``sample_index`` (order of appearance per prompt), ``line`` and any extra fields.

    JSONL (one JSON object per line), CSV (``.csv``, ``.tsv``) or Parquet (``.parquet``, ``.pq``,
    or a file starting with Parquet's magic bytes), with the same fields as columns.

    Raises:
        GenerationsFileError: unreadable file, bad JSON/CSV/Parquet, or a record without a response or prompt.
    """
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz", ".tsv")):
        return _from_records(path, table_rows(path, "csv"))
    if name.endswith((".parquet", ".pq")) or _starts_with(path, b"PAR1"):
        return _from_records(path, table_rows(path, "parquet"))
    return _from_records(path, jsonl_rows(path, max_line_chars))


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False  # the reader below names the problem


def _looks_like_csv(line: str) -> bool:
    """A header row naming a response field, separated by commas or tabs."""
    for sep in (",", "\t"):
        cells = [c.strip().strip('"').lower() for c in line.split(sep)]
        if len(cells) > 1 and any(c in RESPONSE_FIELDS for c in cells):
            return True
    return False


def jsonl_rows(path: Path, max_line_chars: int) -> Iterator[_Row]:
    """The JSON records of a JSONL file as (where, line number, record), blank lines skipped; a
    malformed line is a GenerationsFileError naming the file and line."""
    from biaslens.fileio import json_object_line, read_text

    text = read_text(path, GenerationsFileError)
    # split on "\n" only: str.splitlines() also splits at U+2028, U+0085, ... which JSON allows inside strings
    first = True
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(line) > max_line_chars:
            raise GenerationsFileError(f"{path}:{lineno}: line longer than {max_line_chars:,} characters")
        if first and _looks_like_csv(line):
            try:
                json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                raise GenerationsFileError(
                    f"{path}: expected JSONL (one JSON object per line), got what looks like CSV; "
                    "name the file .csv to read it as CSV") from None
        first = False
        yield f"{path}:{lineno}", lineno, json_object_line(line, f"{path}:{lineno}", GenerationsFileError)


def table_rows(path: Path, kind: str) -> Iterator[_Row]:
    """The rows of a CSV or Parquet file as (where, row number, record); empty cells are missing."""
    import pandas as pd

    try:
        if kind == "csv":
            sep = "\t" if path.name.lower().endswith(".tsv") else ","
            # all text: a prompt id "007" stays "007"; empty cells are "" (missing, below)
            df = pd.read_csv(path, dtype=str, keep_default_na=False, sep=sep)
        else:
            df = pd.read_parquet(path)
            df = df.astype(object).where(df.notna(), None)
    except FileNotFoundError:
        raise GenerationsFileError(f"{path}: no such file") from None
    except Exception as e:  # noqa: BLE001 - pandas/pyarrow raise many types for a malformed file
        raise GenerationsFileError(f"{path}: cannot read as {kind.upper() if kind == 'csv' else 'Parquet'} "
                                   f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    lines = _csv_lines(path, sep) if kind == "csv" else None
    for i, obj in enumerate(df.to_dict("records"), start=1):
        given = {str(k): v for k, v in obj.items() if v is not None and v != ""}
        if not any(f in given for f in RESPONSE_FIELDS):  # an empty response is a response, if it is the only one
            empty = next((f for f in RESPONSE_FIELDS if obj.get(f) == ""), None)
            if empty:
                given[empty] = ""
        if lines is not None and i <= len(lines):  # the file's line, which an editor shows
            yield f"{path}:{lines[i - 1]}", lines[i - 1], given
        else:
            yield f"{path}: row {i}", i, given


def _csv_lines(path: Path, sep: str) -> list[int]:
    """The line each data record of a CSV file starts on (the header is line 1; a quoted cell may
    span lines, blank lines are skipped as pandas skips them)."""
    import csv

    starts, prev = [], 0
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f, delimiter=sep)
        for row in reader:
            if row:
                starts.append(prev + 1)
            prev = reader.line_num
    return starts[1:]


def _from_records(path: Path, rows: Iterable[_Row]) -> pd.DataFrame:
    import pandas as pd

    records = []
    counters: dict[str, int] = {}
    for where, lineno, obj in rows:
        if not isinstance(obj, dict):
            raise GenerationsFileError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        resp_field = next((f for f in RESPONSE_FIELDS if f in obj), None)
        if resp_field is None or not isinstance(obj[resp_field], str):
            raise GenerationsFileError(f"{where}: no string response field (one of {', '.join(RESPONSE_FIELDS)})")
        prompt_field = next((f for f in PROMPT_FIELDS if isinstance(obj.get(f), str)), None)
        id_field = next((f for f in ID_FIELDS if f in obj and obj[f] is not None), None)
        if prompt_field is None and id_field is None:
            raise GenerationsFileError(
                f"{where}: no prompt (one of {', '.join(PROMPT_FIELDS)}) or prompt id (one of {', '.join(ID_FIELDS)})")
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
