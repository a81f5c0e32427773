"""biaslens's dataset tables in the Hugging Face ``datasets`` format: a ``save_to_disk`` folder
with typed features (ClassLabel for the categorical columns: axes, bias types, dimensions ...)
and a dataset card (README.md: source paper, license, version, columns, counts).

``datasets.load_from_disk(DIR)`` reads it back; decoded (ClassLabel ints -> names) it equals the
table ``biaslens dataset ... --out x.parquet`` writes (tests/test_ecosystem_hf.py checks it).
Needs the ``hfdatasets`` extra (``pip install 'biaslens[hfdatasets]'``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import ConfigError
from biaslens.fileio import write_atomic


@dataclass(frozen=True)
class Card:
    """What the dataset card says about one of biaslens's datasets."""

    name: str
    title: str
    paper: str
    source: str
    license: str
    version: str
    #: categorical columns stored as ClassLabel (their names in sorted order)
    class_labels: tuple[str, ...]
    columns: dict[str, str] = field(default_factory=dict)
    notes: str = ""


def require_datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ConfigError("--format hf needs the Hugging Face datasets package: pip install "
                          "'biaslens[hfdatasets]'") from None
    datasets.disable_progress_bars()  # one summary line is printed instead
    return datasets


def features_for(df: pd.DataFrame, card: Card) -> Any:
    """ClassLabel for the card's categorical columns (names sorted), Value for the rest."""
    datasets = require_datasets()
    feats = {}
    for col in df.columns:
        if col in card.class_labels:
            feats[col] = datasets.ClassLabel(names=sorted(df[col].astype(str).unique().tolist()))
        elif pd.api.types.is_bool_dtype(df[col]):
            feats[col] = datasets.Value("bool")
        elif pd.api.types.is_integer_dtype(df[col]):
            feats[col] = datasets.Value("int64")
        elif pd.api.types.is_float_dtype(df[col]):
            feats[col] = datasets.Value("float64")
        else:
            feats[col] = datasets.Value("string")
    return datasets.Features(feats)


def write_hf_dataset(df: pd.DataFrame, out: str | Path, card: Card, *, biaslens_version: str) -> Path:
    """``df`` as a ``save_to_disk`` folder with typed features and a README.md dataset card.
    Written to a temporary folder and renamed, so an interrupted export leaves no half folder."""
    datasets = require_datasets()
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out}: exists and is not an empty folder; choose a new folder")
    df = df.reset_index(drop=True)
    for col in card.class_labels:  # ClassLabel encodes strings
        df[col] = df[col].astype(str)
    features = features_for(df, card)
    ds = datasets.Dataset.from_pandas(df, features=features, preserve_index=False)
    ds.info.description = card.title
    ds.info.citation = card.paper
    ds.info.license = card.license
    tmp = out.with_name(out.name + ".tmp-export")
    shutil.rmtree(tmp, ignore_errors=True)
    ds.save_to_disk(str(tmp))
    write_atomic(tmp / "README.md", dataset_card(df, card, features, biaslens_version))
    if out.exists():
        out.rmdir()
    tmp.rename(out)
    return out


def dataset_card(df: pd.DataFrame, card: Card, features: Any, biaslens_version: str) -> str:
    """The README.md of the exported folder (Hugging Face dataset-card layout: YAML header, then prose)."""
    counts = "\n".join(f"| {col} | {k:,} |" for col, k in
                       ((c, df[c].nunique()) for c in card.class_labels if c in df.columns))
    rows = "\n".join(f"| `{c}` | {_feature_name(features[c])} | {card.columns.get(c, '')} |" for c in df.columns)
    by_first = df[card.class_labels[0]].value_counts().sort_index() if card.class_labels else pd.Series(dtype=int)
    per = "\n".join(f"| {k} | {v:,} |" for k, v in by_first.items())
    return f"""---
license: {_license_id(card.license)}
pretty_name: {card.title}
size_categories: [{_size_category(len(df))}]
tags: [bias, fairness, biaslens]
---

# {card.title}

- **Source paper:** {card.paper}
- **Source data:** {card.source}
- **License:** {card.license}
- **Version:** {card.version}; exported by biaslens {biaslens_version}
- **Rows:** {len(df):,}

{card.notes}

Load it with `datasets.load_from_disk("<this folder>")`. Categorical columns are `ClassLabel`
features: `ds.features["{card.class_labels[0]}"].int2str(...)` gives the names.

## Columns

| column | type | meaning |
| --- | --- | --- |
{rows}

## Counts

| categorical column | distinct values |
| --- | --- |
{counts}

| {card.class_labels[0]} | rows |
| --- | --- |
{per}
"""


def _feature_name(feature: Any) -> str:
    names = getattr(feature, "names", None)
    return f"ClassLabel ({len(names)} names)" if names is not None else f"Value({feature.dtype})"


def _license_id(text: str) -> str:
    return "cc-by-sa-4.0" if text.startswith("CC BY-SA 4.0") else "apache-2.0" if "Apache-2.0" in text else "other"


def _size_category(n: int) -> str:
    for bound, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < bound:
            return name
    return "1M<n<10M"


def decoded(ds: Any) -> pd.DataFrame:
    """A loaded dataset as a DataFrame with ClassLabel columns turned back into their names."""
    df: pd.DataFrame = ds.to_pandas()
    for col, feat in ds.features.items():
        if getattr(feat, "names", None) is not None:
            df[col] = [feat.names[i] for i in df[col]]
    return df
