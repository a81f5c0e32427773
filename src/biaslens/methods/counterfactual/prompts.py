"""The user's prompts: a text file (one prompt a line), JSONL, CSV or Parquet with a ``prompt`` field
(other fields are kept). Bad input is a :class:`biaslens.errors.ConfigError` naming the file and
line: an empty file, a binary file, a record without a prompt."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from biaslens.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

#: the shipped example (docs/counterfactual.md's worked example; data/README.md is its data card)
EXAMPLE = "example_prompts.txt"


def example_path() -> Path:
    """The shipped example prompt file."""
    return Path(str(resources.files("biaslens.methods.counterfactual").joinpath(f"data/{EXAMPLE}")))


def _kind(path: Path, head: bytes) -> str:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")) or head.startswith(b"PAR1"):
        return "parquet"
    if name.endswith((".csv", ".tsv", ".csv.gz")):
        return "csv"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    return "text"


def read_prompts(path: str | Path) -> pd.DataFrame:
    """``prompt_id`` (``p<line>``, or the file's own ``prompt_id``), ``prompt``, ``line`` and any other
    fields of the file, in file order. Blank lines of a text file are skipped.

    Raises:
        ConfigError: no such file, an empty file, a binary file, a record without a string prompt.
    """
    import pandas as pd

    from biaslens.datasets.generations import GenerationsFileError, jsonl_rows, table_rows
    from biaslens.fileio import read_text

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the prompts: {e.strerror or e}") from None
    if not raw.strip():
        raise ConfigError(f"{path}: the prompts file is empty")
    kind = _kind(path, raw[:4])
    if kind != "parquet" and b"\x00" in raw:
        line = raw[:raw.index(b"\x00")].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: a binary file (NUL byte), not prompts; give a text, JSONL, CSV or Parquet "
                          "file")
    records: list[dict] = []
    if kind == "text":
        for lineno, text in enumerate(read_text(path, ConfigError).split("\n"), start=1):
            if text.strip():
                records.append({"prompt": text.rstrip("\r"), "line": lineno})
    else:
        try:
            rows = jsonl_rows(path, 1_000_000) if kind == "jsonl" else table_rows(path, kind)
            for where, lineno, obj in rows:
                if not isinstance(obj, dict) or not isinstance(obj.get("prompt"), str) or not obj["prompt"].strip():
                    raise ConfigError(f"{where}: no 'prompt' field with text (fields: "
                                      f"{', '.join(map(str, obj)) if isinstance(obj, dict) else type(obj).__name__})")
                records.append({**{str(k): v for k, v in obj.items()}, "line": lineno})
        except GenerationsFileError as e:
            raise ConfigError(str(e)) from None
    if not records:
        raise ConfigError(f"{path}: no prompts in the file")
    table = pd.DataFrame.from_records(records)
    if "prompt_id" in table:
        ids = table["prompt_id"].astype(str)
        dup = ids[ids.duplicated()]
        if len(dup):
            first = table.loc[dup.index[0], "line"]
            raise ConfigError(f"{path}:{first}: prompt_id {dup.iloc[0]!r} repeats an earlier one")
        table["prompt_id"] = ids
    else:
        table.insert(0, "prompt_id", [f"p{n}" for n in table["line"]])
    return table[["prompt_id", "prompt", "line", *[c for c in table.columns if c not in ("prompt_id", "prompt", "line")]]]
