"""Winogender schemas (Rudinger et al. 2018): 120 templates x 2 participants x 3 pronouns, shipped unchanged.

``all_sentences.tsv`` (data/, MIT, see data/DATACARD.md) names each sentence
``<occupation>.<participant>.<answer>.<gender>.txt``: a template is an (occupation, answer)
pair of ``templates.tsv`` (answer 0: the pronoun refers to the occupation, 1: to the other
participant), filled once with its specific participant ("the customer") and once with
"someone", each with a male, a female and a neutral pronoun. ``occupations-stats.tsv`` gives
each occupation's share of women (U.S. Bureau of Labor Statistics, 2015) and Bergsma's
textual statistic. :func:`read_winogender` returns one row per (template, participant) with
the three sentences side by side, and checks that the three differ only in the pronoun.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from biaslens.errors import DatasetError

__all__ = ["BUILTIN_DIR", "GENDERS", "PRONOUNS", "WinogenderError", "read_occupation_stats", "read_winogender"]

BUILTIN_DIR = Path(__file__).resolve().parent / "data"
GENDERS = ("male", "female", "neutral")
#: the pronoun forms each gender may use (the neutral forms also change verb agreement: "they were")
PRONOUNS = {"male": {"he", "his", "him", "himself"}, "female": {"she", "her", "hers", "herself"},
            "neutral": {"they", "their", "them", "theirs", "themselves", "themself"}}
_AGREEMENT = {("was", "were"), ("is", "are"), ("has", "have"), ("does", "do")}


class WinogenderError(DatasetError):
    """A Winogender file cannot be used; the message names the file and line."""


def _tsv(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    from biaslens.fileio import read_text

    if not path.is_file():
        raise WinogenderError(f"{path}: file not found (a Winogender folder has all_sentences.tsv and "
                              "occupations-stats.tsv)")
    reader = csv.DictReader(io.StringIO(read_text(path, WinogenderError), newline=""), delimiter="\t")
    missing = [c for c in columns if c not in (reader.fieldnames or [])]
    if missing:
        raise WinogenderError(f"{path}:1: no column {', '.join(missing)}")
    return [(reader.line_num, {k: (v or "").strip() for k, v in row.items() if k is not None}) for row in reader]


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?\"'").lower() for w in text.split()]


def _check_minimal(path: Path, line: int, forms: dict[str, str]) -> None:
    """The male and female sentences differ only in pronouns, the neutral one also in verb agreement."""
    words = {g: _words(forms[g]) for g in GENDERS}
    if len({len(w) for w in words.values()}) != 1:
        raise WinogenderError(f"{path}:{line}: the male, female and neutral sentences have different lengths: "
                              "they must differ only in the pronoun")
    for m, f, n in zip(words["male"], words["female"], words["neutral"]):
        if m == f == n or (m == f and (m, n) in _AGREEMENT):
            continue
        if not (m in PRONOUNS["male"] and f in PRONOUNS["female"] and n in PRONOUNS["neutral"]):
            raise WinogenderError(f"{path}:{line}: the sentences differ in {m!r} / {f!r} / {n!r}, not only in "
                                  "the pronoun")


def read_winogender(data_dir: str | Path | None = None) -> pd.DataFrame:
    """One row per (template, participant): ``occupation``, ``participant``, ``answer`` (0: the
    pronoun refers to the occupation), ``template`` ("<occupation>.<answer>"), ``someone``
    (True for the "someone" variant), ``male``, ``female``, ``neutral`` (the three sentences)
    and ``line`` (of the male sentence). ``data_dir`` None reads the shipped files.

    Raises WinogenderError naming the file and line for: a sentence id not of the form
    ``occupation.participant.answer.gender.txt``, a sentence given twice, a (template,
    participant) without all three pronouns, sentences that differ in more than the pronoun.
    """
    folder = Path(data_dir) if data_dir is not None else BUILTIN_DIR
    path = folder / "all_sentences.tsv"
    groups: dict[tuple[str, str, int], dict[str, str]] = {}
    lines: dict[tuple[str, str, int], int] = {}
    for line, row in _tsv(path, ("sentid", "sentence")):
        parts = row["sentid"].split(".")
        if len(parts) != 5 or parts[4] != "txt" or parts[2] not in ("0", "1") or parts[3] not in GENDERS:
            raise WinogenderError(f"{path}:{line}: sentence id {row['sentid']!r} is not "
                                  "occupation.participant.answer.gender.txt (answer 0/1; gender male/female/neutral)")
        if not row["sentence"]:
            raise WinogenderError(f"{path}:{line}: empty sentence")
        key = (parts[0], parts[1], int(parts[2]))
        if parts[3] in groups.setdefault(key, {}):
            raise WinogenderError(f"{path}:{line}: {row['sentid']} is given twice")
        groups[key][parts[3]] = row["sentence"]
        lines.setdefault(key, line)
    if not groups:
        raise WinogenderError(f"{path}: no sentences")
    records = []
    for key, forms in groups.items():
        lacking = [g for g in GENDERS if g not in forms]
        if lacking:
            raise WinogenderError(f"{path}:{lines[key]}: {'.'.join(map(str, key))} has no {', '.join(lacking)} "
                                  "sentence: every template needs all three pronouns")
        _check_minimal(path, lines[key], forms)
        occupation, participant, answer = key
        records.append({"occupation": occupation, "participant": participant, "answer": answer,
                        "template": f"{occupation}.{answer}", "someone": participant == "someone",
                        **{g: forms[g] for g in GENDERS}, "line": lines[key]})
    return pd.DataFrame.from_records(records)


def read_occupation_stats(data_dir: str | Path | None = None) -> pd.DataFrame:
    """``occupations-stats.tsv``: ``occupation``, ``bls_pct_female`` (U.S. BLS 2015, percent
    women), ``bergsma_pct_female`` (Bergsma and Lin's textual statistic), ``bls_year``.

    Raises WinogenderError naming the line of a percentage that is not a number in [0, 100].
    """
    folder = Path(data_dir) if data_dir is not None else BUILTIN_DIR
    path = folder / "occupations-stats.tsv"
    records = []
    for line, row in _tsv(path, ("occupation", "bergsma_pct_female", "bls_pct_female")):
        values = {}
        for col in ("bls_pct_female", "bergsma_pct_female"):
            try:
                values[col] = float(row[col])
            except ValueError:
                raise WinogenderError(f"{path}:{line}: {col} {row[col]!r} is not a number") from None
            if not 0 <= values[col] <= 100:
                raise WinogenderError(f"{path}:{line}: {col} {values[col]} is not a percentage in [0, 100]")
        records.append({"occupation": row["occupation"], **values, "bls_year": row.get("bls_year", "")})
    return pd.DataFrame.from_records(records)
