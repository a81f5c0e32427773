"""Readers for the official RedditBias files, and their discovery under ``--data-dir``.

``--data-dir`` is a RedditBias checkout (or a copy of its ``data/`` and ``text_files/``):

- ``data/<bias_type>/reddit_comments_<type>_<group>_processed_phrase_annotated.csv``
- ``data/<bias_type>/reddit_comments_<type>_<group>_biased_{test,valid}_reduced.csv`` (one file
  per group, row i of one is the counterfactual of row i of the other)
- ``data/<bias_type>/..._processed_phrase_biased_testset_neg_attr_reduced.csv`` and
  ``..._unbiased_testset_pos_attr_reduced.csv`` (attribute swap, paired the same way)
- ``text_files/<bias_type>/*.txt`` and ``text_files/humanref6k.txt``

Some official files are not valid UTF-8; undecodable bytes become U+FFFD rather than
failing, and labels other than 0/1 are counted and reported, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.methods.redditbias.dataset.specs import BiasSpec, RedditBiasError

LABEL_COLUMNS = ("bias_sent", "bias_phrase")
#: the phrase column of each file kind, first present wins
PHRASE_COLUMNS = ("comments_processed", "phrase")


def read_csv(path: str | Path) -> pd.DataFrame:
    """A CSV as strings-or-numbers, with a clear error naming the file."""
    path = Path(path)
    if not path.is_file():
        raise RedditBiasError(f"{path}: file not found")
    try:
        return pd.read_csv(path, encoding_errors="replace", keep_default_na=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as e:
        raise RedditBiasError(f"{path}: cannot parse as CSV: {e}") from None


def _phrase_column(df: pd.DataFrame, path: Path) -> str:
    for col in PHRASE_COLUMNS:
        if col in df.columns:
            return col
    raise RedditBiasError(f"{path}: no phrase column (expected one of {list(PHRASE_COLUMNS)}); "
                          f"columns are {list(map(str, df.columns))}")


# -- annotated phrases ----------------------------------------------------
@dataclass
class LabelReport:
    """How the values of one label column break down."""

    column: str
    ones: int = 0
    zeros: int = 0
    missing: int = 0
    #: every other value (e.g. "2", "biased?", "1 - context needed") with its count
    stray: dict[str, int] = field(default_factory=dict)

    @property
    def n_stray(self) -> int:
        return sum(self.stray.values())

    def as_dict(self) -> dict[str, Any]:
        return {"column": self.column, "ones": self.ones, "zeros": self.zeros, "missing": self.missing,
                "stray": dict(self.stray), "n_stray": self.n_stray}


def parse_labels(values: pd.Series, column: str) -> tuple[pd.Series, LabelReport]:
    """0/1 labels as a nullable Int8 series (anything else -> <NA>) plus a count of what was not."""
    report = LabelReport(column)
    parsed: list[Any] = []
    for v in values.tolist():
        if v is None or (isinstance(v, float) and np.isnan(v)):
            report.missing += 1
            parsed.append(pd.NA)
            continue
        s = str(v).strip()
        try:
            f = float(s)
        except ValueError:
            f = None
        if f == 1.0:
            report.ones += 1
            parsed.append(1)
        elif f == 0.0:
            report.zeros += 1
            parsed.append(0)
        elif s == "":
            report.missing += 1
            parsed.append(pd.NA)
        else:
            report.stray[s] = report.stray.get(s, 0) + 1
            parsed.append(pd.NA)
    return pd.Series(parsed, index=values.index, dtype="Int8"), report


@dataclass
class AnnotatedPhrases:
    """Annotated phrases with clean 0/1 labels (``<NA>`` where the file had none or a stray value)."""

    path: Path
    df: pd.DataFrame
    labels: dict[str, LabelReport]

    def summary(self) -> dict[str, Any]:
        return {"file": str(self.path), "rows": len(self.df), "labels": {k: v.as_dict() for k, v in self.labels.items()}}


def read_annotated(path: str | Path) -> AnnotatedPhrases:
    """Read a ``*_processed_phrase_annotated.csv`` file.

    Columns: ``phrase`` (the text), ``bias_sent``/``bias_phrase`` parsed to 0/1/<NA>; the raw
    label values are kept as ``<label>_raw``.
    """
    path = Path(path)
    df = read_csv(path)
    col = _phrase_column(df, path)
    df = df.rename(columns={col: "phrase"})
    df["phrase"] = df["phrase"].astype(object).fillna("").astype(str)
    reports: dict[str, LabelReport] = {}
    for label in LABEL_COLUMNS:
        if label not in df.columns:
            continue
        df[f"{label}_raw"] = df[label]
        df[label], reports[label] = parse_labels(df[label], label)
    return AnnotatedPhrases(path, df, reports)


# -- paired files ---------------------------------------------------------
def read_paired(first: str | Path, second: str | Path, *, perplexity_column: str | None = None) -> pd.DataFrame:
    """Pair row i of ``first`` with row i of ``second``.

    Returns a table with ``phrase`` (from ``first``), ``counterfactual`` (from ``second``),
    ``initial``/``replaced`` (the swapped terms, from ``second`` when it has them) and, with
    ``perplexity_column``, ``ppl_minoritized``/``ppl_dominant`` from that column of each file.

    Raises:
        RedditBiasError: the files differ in length, lack a column, or hold a non-numeric
            perplexity (naming the file, the column and the line).
    """
    first, second = Path(first), Path(second)
    a, b = read_csv(first), read_csv(second)
    if len(a) != len(b):
        raise RedditBiasError(f"paired files differ in length: {first} has {len(a)} rows, {second} has {len(b)}; "
                              "row i of one must be the counterfactual of row i of the other")
    out = pd.DataFrame({
        "phrase": a[_phrase_column(a, first)].astype(object).fillna("").astype(str).to_numpy(),
        "counterfactual": b[_phrase_column(b, second)].astype(object).fillna("").astype(str).to_numpy(),
    })
    for src, dst in (("initial_demo", "initial"), ("initial_attr", "initial"),
                     ("replaced_demo", "replaced"), ("replaced_attr", "replaced")):
        if src in b.columns:
            out[dst] = b[src].astype(object).fillna("").astype(str).to_numpy()
    for label in LABEL_COLUMNS:
        if label in a.columns:
            out[label] = parse_labels(a[label], label)[0].to_numpy()
    if perplexity_column:
        for df, path, dst in ((a, first, "ppl_minoritized"), (b, second, "ppl_dominant")):
            out[dst] = _numeric_column(df, path, perplexity_column)
    return out


def _numeric_column(df: pd.DataFrame, path: Path, column: str) -> np.ndarray:
    if column not in df.columns:
        raise RedditBiasError(f"{path}: no column {column!r}; columns are {list(map(str, df.columns))}")
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna() & df[column].notna()
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise RedditBiasError(f"{path}: line {i + 2}, column {column!r}: not a number: {df[column].iloc[i]!r}")
    return values.to_numpy(dtype=np.float64)


def read_lines(path: str | Path) -> list[str]:
    """Non-empty lines of a text file (train/valid/test text files, ``humanref6k.txt``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise RedditBiasError(f"{path}: cannot read: {e}") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


# -- discovery ------------------------------------------------------------
@dataclass
class BiasTypeFiles:
    """The official files found for one bias type (None when absent)."""

    bias_type: str
    folder: Path | None
    paired: tuple[Path, Path] | None = None
    attribute: tuple[Path, Path] | None = None
    annotated: Path | None = None
    text_files: dict[str, Path] = field(default_factory=dict)


def data_root(data_dir: str | Path) -> Path:
    """The folder holding ``<bias_type>/`` folders: ``data_dir/data`` in a checkout, else ``data_dir``."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise RedditBiasError(f"--data-dir {data_dir}: not a folder")
    return data_dir / "data" if (data_dir / "data").is_dir() else data_dir


def find_files(data_dir: str | Path, spec: BiasSpec, split: str = "test") -> BiasTypeFiles:
    """Locate the files of one bias type under ``data_dir`` (see the module docstring)."""
    root = data_root(data_dir)
    folder = root / spec.name
    found = BiasTypeFiles(spec.name, folder if folder.is_dir() else None)
    if found.folder is None:
        return found
    stem = f"reddit_comments_{spec.name}"
    minor = folder / f"{stem}_{spec.minoritized}_biased_{split}_reduced.csv"
    domin = folder / f"{stem}_{spec.dominant}_biased_{split}_reduced.csv"
    if minor.is_file() and domin.is_file():
        found.paired = (minor, domin)
    neg = folder / f"{stem}_{spec.minoritized}_processed_phrase_biased_testset_neg_attr_reduced.csv"
    pos = folder / f"{stem}_{spec.minoritized}_processed_phrase_unbiased_testset_pos_attr_reduced.csv"
    if neg.is_file() and pos.is_file():
        found.attribute = (neg, pos)
    ann = folder / f"{stem}_{spec.minoritized}_processed_phrase_annotated.csv"
    if ann.is_file():
        found.annotated = ann
    text_dir = root.parent / "text_files" / spec.name if root.name == "data" else Path(data_dir) / "text_files" / spec.name
    if text_dir.is_dir():
        found.text_files = {p.stem: p for p in sorted(text_dir.glob("*.txt"))}
    return found


def find_humanref(data_dir: str | Path) -> Path | None:
    """``humanref6k.txt`` under ``data_dir`` (``text_files/`` or the folder itself), else None."""
    data_dir = Path(data_dir)
    for candidate in (data_dir / "text_files" / "humanref6k.txt", data_dir / "humanref6k.txt",
                      data_dir.parent / "text_files" / "humanref6k.txt"):
        if candidate.is_file():
            return candidate
    return None
