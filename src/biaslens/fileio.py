"""Reading user files safely, and writing every file atomically.

Every reader of YAML/JSON configuration (run configs, bias specifications, templates,
mappings, style inventories) goes through here, so each gets the same guarantees:
UTF-8 checked with the failing line, YAML parsed with ``safe_load`` (no Python objects),
JSON/YAML position in the message, and deep nesting reported instead of crashing.

Every file biaslens writes (run folders, caches, verdicts, training records) goes through
:func:`write_atomic` or :func:`atomic_path`: a reader sees the old file or the new one, never
half of one, and a full disk is one error naming the file.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """A temporary name next to ``target`` for a writer to fill, renamed onto ``target`` when the
    block ends. On failure the temporary file is removed, and a full disk becomes one
    :class:`~biaslens.paths.NoSpaceLeft` naming ``target``."""
    from biaslens.paths import no_space_error

    target = Path(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        full = no_space_error(e, target)
        if full is not None:
            raise full from e
        raise


def move_aside(path: str | Path, target: str | Path) -> None:
    """Rename ``path`` to ``target`` (e.g. a damaged cache kept for inspection); a missing
    ``path`` is not an error (another process may have moved it already)."""
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, target)


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; returns the path."""
    path = Path(path)
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            tmp.write_bytes(data)
        else:
            tmp.write_text(data, encoding="utf-8")
    return path


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


def json_object_line(line: str, where: str, error: type[Exception]) -> dict[str, Any]:
    """One line of a JSONL file as a JSON object, or ``error("<where>: ...")`` saying what is
    wrong with it (``where`` names the file and line: ``"data.jsonl:12"``).

    >>> json_object_line('{"a": 1}', "f.jsonl:1", ValueError)
    {'a': 1}
    >>> json_object_line('[1]', "f.jsonl:2", ValueError)
    Traceback (most recent call last):
    ...
    ValueError: f.jsonl:2: expected a JSON object, got list
    """
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise error(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise error(f"{where}: invalid JSON (nested too deeply)") from None
    if not isinstance(obj, dict):
        raise error(f"{where}: expected a JSON object, got {type(obj).__name__}")
    return obj


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


def jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(path: Path, data: Any) -> None:
    """JSON (NaN written as null), atomically: a reader sees the old file or the new one."""
    write_atomic(path, json.dumps(jsonable(data), indent=2, ensure_ascii=False, allow_nan=False))


def write_table(df: pd.DataFrame | pa.Table, path: str | Path) -> Path:
    """Write a sentence table as CSV or Parquet, chosen by the file extension.

    Args:
        df: The table (pandas DataFrame or pyarrow Table).
        path: Destination ending in ``.csv``, ``.csv.gz`` or ``.parquet``/``.pq``.

    Returns:
        The path written.

    Raises:
        ValueError: Unsupported extension.
    """
    path = Path(path)
    name = path.name.lower()
    is_arrow = type(df).__module__.startswith("pyarrow")
    if name.endswith((".parquet", ".pq")):
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = df if is_arrow else pa.Table.from_pandas(df, preserve_index=False)
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)
    elif name.endswith((".csv", ".csv.gz")):
        import pandas as pd

        if not isinstance(df, pd.DataFrame):  # a pyarrow Table
            df = df.to_pandas()
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False, compression="gzip" if name.endswith(".gz") else None)
    else:
        raise ValueError(f"{path}: unsupported output format; use a .csv, .csv.gz or .parquet file name")
    return path

