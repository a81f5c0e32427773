"""The words of every report's tables: human column names for machine ones (``ci_low`` ->
"95% CI, low") and the glossary, one or two plain sentences per metric with its ideal value.

The words are data, kept beside what shows them: ``report/words.yaml`` holds the words every
method's pages share (intervals, tests, the scorer cards, the card), and each method's folder its
own ``words.yaml`` (its column headers, its metrics' entries, its labels). A registered method's
file is found from its registry line (the folder of its suite's module) without importing the
method. One source for every page: :class:`~biaslens.report.html.Table` shows :func:`human_name`
of each column (the CSV/Parquet files keep the machine names), and each page ends with
:func:`glossary_for` the names it shows. A name a page shows is either a metric with a glossary
entry (directly or through a pattern) or a label/count (:data:`NOT_METRICS`); the browser test
checks that every report's names are one or the other."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from biaslens.registry import SUITES

#: the words every method's pages share
PLATFORM_WORDS = Path(__file__).with_name("words.yaml")
#: a method's own words, in its folder
WORDS_FILE = "words.yaml"


@dataclass(frozen=True)
class Entry:
    name: str
    text: str
    ideal: str


@dataclass
class Words:
    """One or more words files merged: machine column name -> header; metric (as shown) -> (what it
    is, its ideal value); shown-name patterns (regular expression, case-insensitive, whole name) ->
    glossary key, the first match winning; names that are labels, counts, settings or text."""

    columns: dict[str, str] = field(default_factory=dict)
    glossary: dict[str, tuple[str, str]] = field(default_factory=dict)
    patterns: list[tuple[str, str]] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    #: where each column and glossary name was declared, to name both files when two disagree
    origin: dict[str, Path] = field(default_factory=dict)

    def add(self, path: Path) -> None:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        unknown = set(raw) - {"columns", "glossary", "patterns", "labels"}
        if not isinstance(raw, dict) or unknown:
            raise ValueError(f"{path}: a words file has the sections columns, glossary, patterns and labels; "
                             f"found {sorted(unknown) if isinstance(raw, dict) else type(raw).__name__}")
        for machine, header in (raw.get("columns") or {}).items():
            self._put(path, "columns", str(machine), _text(path, f"columns.{machine}", header))
        for name, entry in (raw.get("glossary") or {}).items():
            if not isinstance(entry, dict) or set(entry) != {"what", "ideal"}:
                raise ValueError(f"{path}: glossary.{name}: needs exactly 'what' (one or two plain sentences) and "
                                 "'ideal' (the value that means no bias)")
            self._put(path, "glossary", str(name), (_text(path, f"glossary.{name}.what", entry["what"]),
                                                    _text(path, f"glossary.{name}.ideal", entry["ideal"])))
        for i, pair in enumerate(raw.get("patterns") or []):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError(f"{path}: patterns[{i}]: expected [regular expression, glossary name]")
            try:
                re.compile(pair[0])
            except re.error as e:
                raise ValueError(f"{path}: patterns[{i}]: {pair[0]!r} is not a regular expression ({e})") from None
            self.patterns.append((str(pair[0]), str(pair[1])))
        self.labels |= {str(x) for x in raw.get("labels") or []}

    def _put(self, path: Path, section: str, name: str, value: Any) -> None:
        table: dict[str, Any] = getattr(self, section)
        if name in table and table[name] != value:
            raise ValueError(f"{section}.{name}: {self.origin[section + name]} and {path} give it different words; "
                             "one name has one meaning on every page")
        table[name] = value
        self.origin[section + name] = path

    def check(self) -> None:
        """Every pattern leads to an entry (a pattern naming no entry would leave a metric unexplained)."""
        missing = sorted({k for _, k in self.patterns} - set(self.glossary))
        if missing:
            raise ValueError(f"words files {sorted({str(p) for p in self.origin.values()})}: patterns lead to "
                             f"names with no glossary entry: {missing}")


def _text(path: Path, where: str, value: Any) -> str:
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise ValueError(f"{path}: {where}: expected text, found {type(value).__name__}")
    return str(value)


def method_words_files(suites: dict[str, str] | None = None) -> list[Path]:
    """Each registered method's ``words.yaml``, in registry order, once each: the folder of the
    package that holds its suite's module (``biaslens.methods.bbq.suite:Bbq`` ->
    ``methods/bbq/words.yaml``), found without importing the method."""
    out: list[Path] = []
    for line in (SUITES if suites is None else suites).values():
        package = line.split(":")[0].rpartition(".")[0]
        spec = importlib.util.find_spec(package) if package else None
        for folder in (spec.submodule_search_locations or []) if spec else []:
            path = Path(folder) / WORDS_FILE
            if path.is_file() and path not in out:
                out.append(path)
    return out


_merged: dict[tuple[str, ...], Words] = {}


def words() -> Words:
    """Every registered method's words and the platform's, merged (again when the registry changes).
    The methods' files come first, so their patterns are tried before the platform's: a method's
    own names are the more particular."""
    key = tuple(SUITES.values())
    if key not in _merged:
        merged = Words()
        for path in [*method_words_files(), PLATFORM_WORDS]:
            merged.add(path)
        merged.labels |= set(SUITES)  # the card's budget table names each method
        merged.check()
        _merged.clear()
        _merged[key] = merged
    return _merged[key]


def __getattr__(name: str) -> Any:
    # the merged tables under their old names (read when asked, so importing this module reads no file)
    tables = {"COLUMN_NAMES": "columns", "GLOSSARY": "glossary", "PATTERNS": "patterns", "NOT_METRICS": "labels"}
    if name in tables:
        return getattr(words(), tables[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def human_name(name: object) -> str:
    """The header a reader sees for a column: its words-file header, else the name with its
    underscores as spaces ("dropped_B_ambiguous_reference" -> "dropped, B: ambiguous reference",
    "n_foo" -> "foo")."""
    s = str(name)
    columns = words().columns
    if s in columns:
        return columns[s]
    s = re.sub(r"^n_(?=[a-z])", "", s)
    s = re.sub(r"(?<=[a-z])_([AB])_", r", \1: ", s)  # the FairPair sets inside a name
    s = re.sub(r"(?<=[a-z])_([AB])$", r", \1", s)
    # paper symbols (V_A, S_mean) keep their underscore: only lower-case words are joined by spaces
    return re.sub(r"(?<=[a-z0-9])_(?=[a-z0-9])", " ", s)


def lookup(shown: str) -> str | None:
    """The glossary key of a name as shown, or None (a label, or a name without an entry)."""
    key = str(shown).strip()
    w = words()
    folded = {k.casefold(): k for k in w.glossary}
    if key.casefold() in folded:
        return folded[key.casefold()]
    for pattern, k in w.patterns:
        if re.fullmatch(pattern, key, flags=re.IGNORECASE):
            return k
    return None


def glossary_for(names) -> list[Entry]:
    """The entries of the metrics among ``names`` (as shown on a page), in page order, once each."""
    keys = dict.fromkeys(k for k in map(lookup, names) if k is not None)
    glossary = words().glossary
    return [Entry(k, *glossary[k]) for k in keys]
