"""CrowS-Pairs (Nangia et al. 2020): 1,508 sentence pairs over 9 bias types.

``crows_pairs.csv`` (data/, CC BY-SA 4.0, see data/DATACARD.md) is the authors'
``crows_pairs_anonymized.csv`` with the columns a run reads, every pair in the authors' order and
words: one pair per row, the authors' index, ``sent_more`` (the more stereotyping sentence), ``sent_less``, ``stereo_antistereo``
(``stereo``: ``sent_more`` demonstrates a stereotype of the disadvantaged group; ``antistereo``:
``sent_less`` violates one) and ``bias_type``. :func:`read_crows_pairs` reads it, or a user's
copy in the same format, and names the file and line of anything it cannot use.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from biaslens.errors import DatasetError

__all__ = ["BUILTIN_FILE", "BIAS_TYPES", "CrowsPairsError", "read_crows_pairs"]

BUILTIN_FILE = Path(__file__).resolve().parent / "data" / "crows_pairs.csv"
#: the nine bias types of the paper, in its Table 1 order
BIAS_TYPES = ("race-color", "gender", "socioeconomic", "nationality", "religion", "age", "sexual-orientation",
              "physical-appearance", "disability")
_REQUIRED = ("sent_more", "sent_less", "stereo_antistereo", "bias_type")


class CrowsPairsError(DatasetError):
    """A CrowS-Pairs file cannot be used; the message names the file and line."""


def read_crows_pairs(path: str | Path | None = None) -> pd.DataFrame:
    """One row per pair: ``pair`` (the file's own row number, from 0), ``sent_more``,
    ``sent_less``, ``stereo_antistereo``, ``bias_type`` and ``line`` (the file line the
    record ends on). ``path`` None reads the shipped file.

    Raises CrowsPairsError naming the file and line for: a missing column, an empty sentence,
    a direction other than stereo/antistereo, an empty bias type, a pair whose two sentences
    are the same text.
    """
    from biaslens.fileio import read_text

    path = Path(path) if path is not None else BUILTIN_FILE
    if path.is_dir():
        raise CrowsPairsError(f"{path}: is a folder; pass the CSV file (crows_pairs_anonymized.csv)")
    reader = csv.DictReader(io.StringIO(read_text(path, CrowsPairsError), newline=""))
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise CrowsPairsError(f"{path}:1: no column {', '.join(missing)} (the CrowS-Pairs CSV has "
                              f"{', '.join(_REQUIRED)})")
    records = []
    try:
        for i, row in enumerate(reader):
            records.append(_record(path, reader.line_num, i, row))
    except csv.Error as e:
        raise CrowsPairsError(f"{path}:{reader.line_num}: not valid CSV ({e})") from None
    if not records:
        raise CrowsPairsError(f"{path}: no pairs")
    return pd.DataFrame.from_records(records)


def _record(path: Path, line: int, i: int, row: dict[str, str | None]) -> dict[str, object]:
    def field(name: str) -> str:
        return (row.get(name) or "").strip()

    more, less, direction, bias_type = (field(c) for c in _REQUIRED)
    where = f"{path}:{line}"
    if not more or not less:
        raise CrowsPairsError(f"{where}: empty {'sent_more' if not more else 'sent_less'}")
    if more == less:
        raise CrowsPairsError(f"{where}: sent_more and sent_less are the same text: not a pair")
    if direction not in ("stereo", "antistereo"):
        raise CrowsPairsError(f"{where}: stereo_antistereo is {direction!r}; expected 'stereo' or 'antistereo'")
    if not bias_type:
        raise CrowsPairsError(f"{where}: empty bias_type")
    if bias_type not in BIAS_TYPES:  # a misspelt type would drop out of the per-type table unnoticed
        raise CrowsPairsError(f"{where}: bias_type is {bias_type!r}; expected one of {', '.join(BIAS_TYPES)}")
    index = str(row.get("") or "").strip()  # the file's unnamed index column, where it has one
    pair = int(index) if index.isdigit() else i
    return {"pair": pair, "sent_more": more, "sent_less": less, "stereo_antistereo": direction,
            "bias_type": bias_type, "line": line}
