"""WinoBias (Zhao et al. 2018): pro- and anti-stereotyped twins of type 1 and type 2, shipped unchanged.

``{pro,anti}_stereotyped_type{1,2}.txt.{dev,test}`` (data/, MIT, see data/DATACARD.md): line
``i`` of a pro file and line ``i`` of its anti file are the same sentence with the pronoun of the
other gender (the authors' pairing, by line number), each line ``<id> <sentence>`` with the
coreferent mentions in brackets. Consecutive ids ``2k-1`` and ``2k`` are one schema: the same two
occupations and interaction, the pronoun referring to one occupation, then the other.
:func:`read_winobias` strips the brackets and returns one row per twin; twins that differ in more
than gendered pronouns (a handful in the published files: typos, a reworded ending) are kept, as
the authors' evaluation keeps them, and flagged ``minimal = False``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from biaslens.errors import DatasetError
from biaslens.text import shorten

__all__ = ["BUILTIN_DIR", "SPLITS", "TYPES", "WinoBiasError", "read_winobias", "strip_brackets"]

BUILTIN_DIR = Path(__file__).resolve().parent / "data"
TYPES = (1, 2)
SPLITS = ("dev", "test")
_GENDERED = {"he", "she", "his", "her", "him", "hers", "himself", "herself"}


class WinoBiasError(DatasetError):
    """A WinoBias file cannot be used; the message names the file and line."""


def strip_brackets(text: str) -> str:
    """The sentence without the coreference brackets, spaces as in the text.

    >>> strip_brackets("[The developer] argued with the designer because [he] did not like the design.")
    'The developer argued with the designer because he did not like the design.'
    >>> strip_brackets("The teacher asked the [ physician] about it.")
    'The teacher asked the physician about it.'
    """
    return " ".join(text.replace("[", " ").replace("]", " ").split())


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?\"'").lower() for w in text.split()]


def _minimal(pro: str, anti: str) -> bool:
    a, b = _words(pro), _words(anti)
    return len(a) == len(b) and all(x == y or (x in _GENDERED and y in _GENDERED) for x, y in zip(a, b))


def _read(path: Path) -> list[tuple[int, str]]:
    from biaslens.fileio import read_text

    if not path.is_file():
        raise WinoBiasError(f"{path}: file not found (a WinoBias folder has {{pro,anti}}_stereotyped_type{{1,2}}"
                            ".txt.{dev,test})")
    out = []
    for line, text in enumerate(read_text(path, WinoBiasError).splitlines(), start=1):
        if not text.strip():
            continue
        ident, _, sentence = text.strip().partition(" ")
        if not ident.isdigit() or not sentence.strip():
            raise WinoBiasError(f"{path}:{line}: expected '<id> <sentence>', got {shorten(text, 60)!r}")
        out.append((int(ident), sentence))
    if not out:
        raise WinoBiasError(f"{path}: no sentences")
    return out


def read_winobias(data_dir: str | Path | None = None, *, types: tuple[int, ...] = TYPES,
                  splits: tuple[str, ...] = SPLITS) -> pd.DataFrame:
    """One row per twin: ``type``, ``split``, ``id``, ``schema`` ("<type>.<split>.<k>", the two
    ids of a schema share it), ``pro``, ``anti`` (brackets stripped), ``referent`` (the bracketed
    occupation the pronoun refers to, in the pro sentence), ``minimal`` (the twins differ only in
    gendered pronouns) and ``line``. ``data_dir`` None reads the shipped files.

    Raises WinoBiasError naming the file and line for: a missing file, a line that is not
    ``<id> <sentence>``, pro and anti files whose ids differ line by line.
    """
    folder = Path(data_dir) if data_dir is not None else BUILTIN_DIR
    records = []
    for t in types:
        for split in splits:
            pro_path = folder / f"pro_stereotyped_type{t}.txt.{split}"
            anti_path = folder / f"anti_stereotyped_type{t}.txt.{split}"
            pro, anti = _read(pro_path), _read(anti_path)
            if len(pro) != len(anti):
                raise WinoBiasError(f"{anti_path}: {len(anti)} sentences, but {pro_path.name} has {len(pro)}: every "
                                    "pro-stereotyped sentence needs its anti-stereotyped twin")
            for n, ((pid, ptext), (aid, atext)) in enumerate(zip(pro, anti), start=1):
                if pid != aid:
                    raise WinoBiasError(f"{anti_path}:{n}: id {aid}, but line {n} of {pro_path.name} has id {pid}: "
                                        "the twins are paired by line")
                bracketed = re.findall(r"\[([^\]]*)\]", ptext)
                records.append({"type": t, "split": split, "id": pid, "schema": f"{t}.{split}.{(pid + 1) // 2}",
                                "pro": strip_brackets(ptext), "anti": strip_brackets(atext),
                                "referent": " ".join(bracketed[0].split()) if bracketed else "",
                                "minimal": _minimal(strip_brackets(ptext), strip_brackets(atext)), "line": n})
    return pd.DataFrame.from_records(records)
