"""BBQ (Parrish et al. 2022): the items, read from the shipped copy (6 of the 11 categories) or
from a clone of the authors' repository (``--data-dir``, all 11), validated line by line, with the
answer that counts as biased derived the way the authors' analysis scripts derive it.

Every item is one multiple-choice question: a context (ambiguous, or ambiguous plus a sentence
that disambiguates it), a negative or non-negative question, and three answers: two people of
different groups and an UNKNOWN answer. Each row of :func:`load_items` carries:

- ``target_loc``: the option that reflects the bias (:func:`biased_option`), or -1 where it
  cannot be determined (the authors' analysis drops those items too);
- ``unknown_loc``: the UNKNOWN option (``answer_info`` label ``unknown``);
- ``template``: ``<category>:<question_index>``, the unit the intervals resample (one template
  writes every item of its question, in both polarities and both context conditions);
- ``set_id``: the items sharing a template and the same three answers (two groups, both orders,
  both polarities, both contexts: 8 items), the unit a sample keeps whole;
- ``group``: the category as the paper reports it, with items whose individuals are named by a
  proper name (question_index > 25) in "<category> (names)".
"""

from __future__ import annotations

import gzip
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.errors import ConfigError
from biaslens.fileio import json_object_line

#: the 11 categories of the BBQ repository (data/<category>.jsonl)
ALL_CATEGORIES = ("Age", "Disability_status", "Gender_identity", "Nationality", "Physical_appearance",
                  "Race_ethnicity", "Race_x_SES", "Race_x_gender", "Religion", "SES", "Sexual_orientation")
#: the categories shipped inside biaslens (nyu-mll/BBQ at SOURCE_COMMIT, gzip-compressed)
SHIPPED_CATEGORIES = ("Age", "Disability_status", "Nationality", "Physical_appearance", "Religion",
                      "Sexual_orientation")
SOURCE = "nyu-mll/BBQ"
SOURCE_COMMIT = "bea11bd97d79217245b5871acd247b9d6eb24598"
#: categories whose biased answer needs two dimensions at once (race and gender / SES)
INTERSECTIONAL = ("Race_x_SES", "Race_x_gender")

_FIELDS: dict[str, type | tuple[type, ...]] = {
    "example_id": int, "question_index": (str, int), "question_polarity": str, "context_condition": str,
    "category": str, "answer_info": dict, "additional_metadata": dict, "context": str, "question": str,
    "ans0": str, "ans1": str, "ans2": str, "label": int}
COLUMNS = ["category", "group", "example_id", "question_index", "template", "set_id", "question_polarity",
           "context_condition", "context", "question", "ans0", "ans1", "ans2", "label", "target_loc",
           "unknown_loc", "info0", "info1", "info2", "stereotyped_groups"]


def _normalise_info(info: str) -> str:
    """The authors' normalisation of an answer's group label before matching it."""
    if info in ("man", "boy"):
        return "M"
    if info in ("woman", "girl"):
        return "F"
    return info.replace("M-", "", 1).replace("F-", "", 1)


def _normalise_groups(groups: list[str]) -> str:
    joined = ", ".join(groups)
    low = joined.lower()
    if low in ("man", "boy", "men"):
        return "M"
    if low in ("woman", "women", "girl", "girls"):
        return "F"
    if low in ("transgender women, transgender men", "transgender men", "transgender women",
               "transgender women, transgender men, trans"):
        return "trans"
    return {"low SES": "lowSES", "high SES": "highSES"}.get(joined, joined)


def biased_option(category: str, polarity: str, infos: list[str], texts: list[str],
                  stereotyped_groups: list[str]) -> int:
    """The option whose answer reflects the targeted bias, or -1 where it cannot be determined.

    The rule of the authors' analysis (``analysis_scripts/BBQ_results_metadata.R``, which writes
    ``target_loc``), applied to the item's own ``additional_metadata.stereotyped_groups``: an
    option is the bias target when its ``answer_info`` group label (``man``/``boy`` read as M,
    ``woman``/``girl`` as F, an ``M-``/``F-`` prefix dropped) occurs, case-insensitively, in the
    stereotyped groups; in Age only an exact ``old``/``nonOld`` match counts; in Nationality the
    answer's text (the nationality) counts too; "African" does not match "African American"; any
    ``trans...`` label matches the transgender groups. An item with no target or more than one is
    undetermined (-1). For a negative question the target is the biased answer; for a non-negative
    question it is the other, non-UNKNOWN person (Parrish et al. 2022, section 5: "the bias target in
    negative contexts and the non-target in non-negative contexts").

    >>> biased_option("Religion", "neg", ["Jewish", "unknown", "Muslim"], ["Jewish", "Can't answer", "Muslim"],
    ...               ["Muslim"])
    2
    >>> biased_option("Religion", "nonneg", ["Jewish", "unknown", "Muslim"], ["Jewish", "Can't answer", "Muslim"],
    ...               ["Muslim"])
    0
    >>> biased_option("Age", "neg", ["nonOld", "old", "unknown"], ["22-year-old", "78-year-old", "Unknown"], ["old"])
    1
    """
    groups = _normalise_groups(stereotyped_groups)
    low = groups.lower()
    norm = [_normalise_info(i) for i in infos]
    hit = [int(n.lower() in low) for n in norm]
    if category == "Age":
        hit = [int(n == groups and n in ("old", "nonOld")) for n in norm]
    if category == "Nationality":
        hit = [1 if t.lower() in low else h for h, t in zip(hit, texts, strict=True)]
    hit = [0 if t == "African" and "african american" in low else h for h, t in zip(hit, texts, strict=True)]
    hit = [1 if groups == "trans" and n.startswith("trans") else h for h, n in zip(hit, norm, strict=True)]
    if sum(hit) != 1:
        return -1
    loc = hit.index(1)
    if polarity == "neg":
        return loc
    others = [i for i in range(3) if i != loc and norm[i] != "unknown"]
    return others[0] if others else -1


def shipped_path(category: str) -> Any:
    """The shipped, gzip-compressed copy of a category."""
    return resources.files("biaslens.methods.bbq.dataset").joinpath("data", f"{category}.jsonl.gz")


def _category_file(data_dir: Path, category: str) -> Path:
    for cand in (data_dir / "data" / f"{category}.jsonl", data_dir / f"{category}.jsonl"):
        if cand.is_file():
            return cand
    raise ConfigError(f"{data_dir}: no {category}.jsonl (expected a clone of {SOURCE}: data/<category>.jsonl)")


def data_categories(data_dir: Path | None) -> tuple[str, ...]:
    """The categories a source holds: the shipped six, or those of a BBQ clone (all 11 expected)."""
    if data_dir is None:
        return SHIPPED_CATEGORIES
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ConfigError(f"--data-dir {data_dir}: no such folder (expected a clone of {SOURCE})")
    found = tuple(c for c in ALL_CATEGORIES if (data_dir / "data" / f"{c}.jsonl").is_file()
                  or (data_dir / f"{c}.jsonl").is_file())
    missing = [c for c in ALL_CATEGORIES if c not in found]
    if missing:
        raise ConfigError(f"--data-dir {data_dir}: a clone of {SOURCE} has 11 categories; missing "
                          f"{', '.join(f'data/{c}.jsonl' for c in missing)}")
    return found


def _read_lines(category: str, data_dir: Path | None) -> tuple[str, list[str]]:
    if data_dir is None:
        where = f"biaslens/methods/bbq/dataset/data/{category}.jsonl.gz"
        with shipped_path(category).open("rb") as f:
            return where, gzip.decompress(f.read()).decode("utf-8").split("\n")
    path = _category_file(Path(data_dir), category)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        line = path.read_bytes()[: e.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read ({e.strerror or e})") from None
    return str(path), text.split("\n")


def _validated(where: str, lineno: int, line: str, category: str) -> dict[str, Any]:
    """One item, or a ConfigError naming the file, line and field."""
    at = f"{where}:{lineno}"
    obj = json_object_line(line, at, ConfigError)
    for name, kind in _FIELDS.items():
        if name not in obj:
            raise ConfigError(f"{at}: field '{name}' is missing")
        if not isinstance(obj[name], kind) or isinstance(obj[name], bool):
            raise ConfigError(f"{at}: field '{name}' has type {type(obj[name]).__name__}")
    if obj["category"] != category:
        raise ConfigError(f"{at}: field 'category' is {obj['category']!r} in the file of {category}")
    if obj["question_polarity"] not in ("neg", "nonneg"):
        raise ConfigError(f"{at}: field 'question_polarity' must be neg or nonneg, got {obj['question_polarity']!r}")
    if obj["context_condition"] not in ("ambig", "disambig"):
        raise ConfigError(f"{at}: field 'context_condition' must be ambig or disambig, got "
                          f"{obj['context_condition']!r}")
    if obj["label"] not in (0, 1, 2):
        raise ConfigError(f"{at}: field 'label' must be 0, 1 or 2, got {obj['label']!r}")
    info = obj["answer_info"]
    for k in ("ans0", "ans1", "ans2"):
        pair = info.get(k)
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise ConfigError(f"{at}: field 'answer_info.{k}' must be [text, group label]")
    groups = obj["additional_metadata"].get("stereotyped_groups")
    if not (isinstance(groups, list) and all(isinstance(g, str) for g in groups)):
        raise ConfigError(f"{at}: field 'additional_metadata.stereotyped_groups' must be a list of strings")
    if sum(info[f"ans{i}"][1] == "unknown" for i in range(3)) != 1:
        raise ConfigError(f"{at}: field 'answer_info': exactly one answer must be labelled 'unknown'")
    return obj


def read_category(category: str, data_dir: Path | None = None) -> pd.DataFrame:
    """Every item of one category, validated, as rows of :data:`COLUMNS`."""
    where, lines = _read_lines(category, data_dir)
    rows: list[dict[str, Any]] = []
    seen: dict[int, int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj = _validated(where, lineno, line, category)
        if obj["example_id"] in seen:
            raise ConfigError(f"{where}:{lineno}: example_id {obj['example_id']} repeats line {seen[obj['example_id']]}")
        seen[obj["example_id"]] = lineno
        info = obj["answer_info"]
        infos = [info[f"ans{i}"][1] for i in range(3)]
        texts = [info[f"ans{i}"][0] for i in range(3)]
        qi = str(obj["question_index"])
        named = qi.isdigit() and int(qi) > 25 and category not in INTERSECTIONAL
        groups = obj["additional_metadata"]["stereotyped_groups"]
        rows.append({
            "category": category, "group": f"{category} (names)" if named else category,
            "example_id": obj["example_id"], "question_index": qi, "template": f"{category}:{qi}",
            "set_id": f"{category}:{qi}:" + "|".join(sorted(obj[f"ans{i}"] for i in range(3))),
            "question_polarity": obj["question_polarity"], "context_condition": obj["context_condition"],
            "context": obj["context"], "question": obj["question"], "ans0": obj["ans0"], "ans1": obj["ans1"],
            "ans2": obj["ans2"], "label": obj["label"],
            "target_loc": biased_option(category, obj["question_polarity"], infos, texts, groups),
            "unknown_loc": infos.index("unknown"), "info0": infos[0], "info1": infos[1], "info2": infos[2],
            "stereotyped_groups": ", ".join(groups)})
    if not rows:
        raise ConfigError(f"{where}: no items")
    return pd.DataFrame(rows, columns=COLUMNS)


def load_items(data_dir: Path | None = None, categories: list[str] | tuple[str, ...] | None = None) -> pd.DataFrame:
    """The items of ``categories`` (default: every category of the source), shipped or from a clone."""
    available = data_categories(data_dir)
    chosen = list(categories or available)
    for c in chosen:
        if c not in available:
            where = "the shipped copy" if data_dir is None else str(data_dir)
            hint = (" (the other five need a clone of the BBQ repository: --data-dir)" if data_dir is None
                    and c in ALL_CATEGORIES else "")
            raise ConfigError(f"bbq categories: {c!r} is not in {where}; choose from {', '.join(available)}{hint}")
    return pd.concat([read_category(c, data_dir) for c in chosen], ignore_index=True)


def sample_items(items: pd.DataFrame, per_category: int, seed: int = 0) -> pd.DataFrame:
    """About ``per_category`` items of each category, in whole sets (:data:`set_id`), spread over
    the templates: the sets of each template are shuffled (seeded) and taken round-robin across
    the templates until the category has enough, so every template stays in the sample (the
    intervals resample templates) and a set's two polarities and two contexts stay together."""
    rng = np.random.default_rng(seed)
    keep: list[str] = []
    for _, cat in items.groupby("category", sort=False):
        queues = []
        for _, tmpl in cat.groupby("template", sort=False):
            sets = list(dict.fromkeys(tmpl["set_id"]))
            queues.append([sets[i] for i in rng.permutation(len(sets))])
        sizes = cat.groupby("set_id", sort=False).size()
        taken, depth = 0, 0
        while taken < per_category and any(depth < len(q) for q in queues):
            for q in queues:
                if depth < len(q) and taken < per_category:
                    keep.append(q[depth])
                    taken += int(sizes[q[depth]])
            depth += 1
    return items[items["set_id"].isin(set(keep))].reset_index(drop=True)
