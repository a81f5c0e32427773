"""Turn the paper transcription (`_paper.py`) into the built-in JSON files (official schema).

Run ``python -m biaslens.methods.holistic.dataset._transcribe`` to regenerate ``data/v1.0/``; the test
suite checks that the shipped files equal what this module produces.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from biaslens.fileio import write_atomic
from biaslens.vocabulary.pluralize import pluralize_after_noun_phrase, pluralize_noun

from . import _paper

DATA_DIR = Path(__file__).resolve().parents[3] / "vocabulary" / "data" / "holistic" / "v1.0"

_AXES = {
    "Ability": "ability",
    "Age": "age",
    "Body type": "body_type",
    "Characteristics": "characteristics",
    "Cultural": "cultural",
    "Gender and sex": "gender_and_sex",
    "Nationality": "nationality",
    "Nonce": "nonce",
    "Political ideologies": "political_ideologies",
    "Race and ethnicity": "race_ethnicity",
    "Religion": "religion",
    "Sexual orientation": "sexual_orientation",
    "Socioeconomic class": "socioeconomic_class",
}
_LABELS = {
    "Reviewed, not labeled:": "reviewed",
    "Labeled dispreferred:": "dispreferred",
    "Labeled polarizing/debated:": "polarizing",
}
_GENDERS = {"F": "female", "M": "male"}
AFTER_THE_NOUN = "after_the_noun"


def parse_table5(text: str = _paper.TABLE5) -> list[tuple[str, str, str, str | None, str | None]]:
    """Parse Table 5 into (axis, bucket, descriptor, gender, preference) tuples in paper order."""
    rows = []
    axis = None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        preference = None
        for label, value in _LABELS.items():
            if label in line:
                head, line = line.split(label, 1)
                preference = value
                if head.strip():
                    axis = _AXES[head.strip()]
                break
        else:
            for name in sorted(_AXES, key=len, reverse=True):
                if line.startswith(name + " "):
                    axis, line = _AXES[name], line[len(name) + 1 :]
                    break
        if axis is None:
            raise ValueError(f"Table 5 line before any axis: {line!r}")
        parts = re.split(r"\[(\w+)\]", line.strip())
        segments = [("all", parts[0])] if parts[0].strip() else []
        segments += list(zip(parts[1::2], parts[2::2]))
        for bucket, terms in segments:
            for term in terms.split(","):
                term = term.strip().rstrip(";").strip()
                if not term:
                    continue
                gender = None
                m = re.fullmatch(r"(.*) \(([FM])\)", term)
                if m:
                    term, gender = m.group(1), _GENDERS[m.group(2)]
                rows.append((axis, bucket, term, gender, preference))
    return rows


def article_override(descriptor: str) -> str | None:
    """Article for descriptors whose leading vowel letter is read as a consonant sound.

    The generator's default rule ("an" before a/e/i/o/u) would give "an US-born"/"an Unitarian";
    the released dataset overrides exactly this "you"-sounding U (initialism "US", prefix "Uni").
    Other rule mistakes ("an European") are kept as in the release (see ``fix_articles``).
    """
    if re.match(r"(U[A-Z]|[Uu]ni)", descriptor):
        return "a"
    return None


def build_json_data() -> dict[str, Any]:
    """Return the four built-in files as Python objects, keyed by file name."""
    descriptors: dict[str, dict[str, list[Any]]] = {}
    standalone: dict[str, list[Any]] = {}
    for axis, bucket, term, gender, preference in parse_table5():
        if bucket == AFTER_THE_NOUN:
            singular = "{article} {noun} " + term
            plural = "{article} {noun} " + pluralize_after_noun_phrase(term)
            entry: dict[str, Any] = {"noun_phrase": singular}
            if plural != singular:
                entry["plural_noun_phrase"] = plural
            if preference:
                entry["preference"] = preference
            standalone.setdefault(axis, []).append(entry if len(entry) > 1 else singular)
            continue
        obj: dict[str, Any] = {"descriptor": term}
        if gender:
            obj["gender"] = gender
        if preference:
            obj["preference"] = preference
        article = article_override(term)
        if article:
            obj["article"] = article
        descriptors.setdefault(axis, {}).setdefault(bucket, []).append(obj if len(obj) > 1 else term)
    nouns = {
        gender: [[n, pluralize_noun(n)] for n in (s.strip() for s in words.split(","))]
        for gender, words in _paper.NOUNS.items()
    }
    templates = {t: dict(flags) for t, flags in _paper.TEMPLATES}
    return {
        "descriptors.json": descriptors,
        "nouns.json": nouns,
        "sentence_templates.json": templates,
        "standalone_noun_phrases.json": standalone,
    }


def _dump(obj: Any, indent: int = 0) -> str:
    """JSON with one leaf entry per line (readable diffs, like the official files)."""
    pad = " " * indent
    if isinstance(obj, dict) and any(isinstance(v, (dict, list)) and v for v in obj.values()):
        items = [f'{pad}    {json.dumps(k, ensure_ascii=False)}: {_dump(v, indent + 4).lstrip()}' for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj) or (
        isinstance(obj, list) and len(obj) > 2
    ):
        items = [f"{pad}    {json.dumps(v, ensure_ascii=False)}" for v in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(obj, ensure_ascii=False)


def render_files() -> dict[str, str]:
    """Return the text of each built-in file."""
    return {name: _dump(obj) + "\n" for name, obj in build_json_data().items()}


def write_files(out_dir: Path = DATA_DIR) -> None:
    """(Re)write the built-in data files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in render_files().items():
        write_atomic(out_dir / name, text)


if __name__ == "__main__":
    write_files()
