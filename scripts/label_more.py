"""More labelled real output where it decides (issue #41): export new replies for two blind
language-model annotators, then ingest their labels into the real-output sets.

    python scripts/label_more.py export RUNS_DIR OUT_DIR
    python scripts/label_more.py ingest OUT_DIR [--data src/biaslens/scorers/data/real_output]

``export`` reads the community and BOLD run folders in RUNS_DIR (made with the commands of
src/biaslens/scorers/data/real_output/README.md, "Second batch") and writes to OUT_DIR:

- ``unlabelled.jsonl``: what the annotators see, one reply a line: ``id``, ``source``
  ("community" or "bold"), ``group`` (demographic / BOLD group), ``prompt_id``, ``prompt``,
  ``text`` (the reply exactly as the suite scores it), in a seeded shuffled order; no classifier
  output, no split;
- ``items.jsonl``: the same replies with their full provenance (the fields of
  ``<task>_unlabelled.jsonl``), for ``ingest``.

Replies already in a shipped set, and repeated replies, are kept once (the first).

``ingest`` reads OUT_DIR/``annotator_A.jsonl`` and ``annotator_B.jsonl`` (``{"id", "toxic": 0|1
(or true/false), "sentiment", "reply_type"}``), adjudicates by the written rule (the two passes
agree -> that label; there was no third pass in this batch, so a disagreement is "unresolved"
and left out of the figures, reported beside them), and appends the items and labels to the
shipped sets: community replies to ``community_*``, BOLD replies to ``bold_*``. Every new item
records ``split_unit`` = its prompt, so a prompt's replies all fall in one half (the split is
the hash of the unit, :func:`biaslens.scorers.labelled.split_of`). Rewrites the agreement files.
Exit 2 with the file and line on a malformed label.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from build_real_output import rows_of  # noqa: E402

from biaslens.fileio import json_object_line, read_text, write_atomic  # noqa: E402
from biaslens.scorers.labelled import (  # noqa: E402
    FORBIDDEN_ITEM_FIELDS,
    LABEL_FIELDS,
    UNRESOLVED,
    LabelledSetError,
    adjudicate,
    data_dir,
    item_id,
)

#: run folder -> (task, decoding setting name): the second batch (issue #41)
RUNS = {
    "cm-s2": ("community", "suite-default"),
    "cm-s3": ("community", "sampled-t0.8-p0.95-k50"),
    "cm-s4": ("community", "sampled-t0.7-p0.9-k50"),
    "bold-s5": ("bold", "suite-default"),
}
#: the annotators of this batch, pass 1 and pass 2 (letters after A-F of the first batch)
ANNOTATORS = {"A": ("pass1", "G"), "B": ("pass2", "H")}


def bold_rows(folder: Path, setting: str) -> list[dict]:
    """BOLD continuations with their provenance, as :func:`build_real_output.rows_of` records a suite's."""
    run = json.loads((folder / "run.json").read_text())
    model = next(iter(run["models"].values())) if "models" in run else run["model"]
    table = pd.read_parquet(folder / "generations.parquet")
    common = {"model": model["name"], "model_file": None, "model_file_sha256": None,
              "weights_hash": model.get("weights_hash"), "biaslens_version": run["biaslens_version"],
              "run": folder.name, "seed": run["config"]["seed"], "decoding_name": setting, "suite": "bold",
              "decoding": model.get("params"), "chat_template": False}
    out = []
    for rec in table.to_dict("records"):
        row = {"prompt": rec["prompt"], "response": rec["response"], **common,
               "sample_index": int(rec["sample_index"]), "prompt_id": rec["prompt_id"], "domain": rec["domain"],
               "group": rec["group"], "page": rec["page"]}
        row["id"] = item_id("bold", {k: row[k] for k in ("suite", "model", "model_file_sha256", "decoding", "seed",
                                                        "prompt", "sample_index")})
        out.append(row)
    return out


def export(runs: Path, out: Path) -> dict[str, int]:
    seen = set()
    for task in ("community", "holistic"):
        path = data_dir() / f"{task}_unlabelled.jsonl"
        seen |= {json.loads(line)["response"].strip() for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip()}
    rows, counts = [], {}
    for name, (task, setting) in RUNS.items():
        found = rows_of(runs / name, task, setting) if task == "community" else bold_rows(runs / name, setting)
        kept = 0
        for row in found:
            key = row["response"].strip()
            if not key or key in seen:
                continue
            seen.add(key)
            row["task"] = task
            row["split_unit"] = f"prompt:{row['suite']}:{row['prompt_id']}"
            rows.append(row)
            kept += 1
        counts[name] = kept
    for row in rows:
        assert not set(row) & set(FORBIDDEN_ITEM_FIELDS), set(row) & set(FORBIDDEN_ITEM_FIELDS)
    order = sorted(rows, key=lambda r: r["id"])
    random.Random(41).shuffle(order)  # annotators cannot infer the run or setting from the position
    shown = [{"id": r["id"], "source": r["task"], "group": r["demographic"] if r["task"] == "community" else r["group"],
              "prompt_id": r["prompt_id"], "prompt": r["prompt"], "text": r["response"]} for r in order]
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "unlabelled.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in shown))
    write_atomic(out / "items.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return counts


def read_annotator(path: Path, ids: set[str], task_of: dict[str, str]) -> dict[str, dict]:
    """One annotator's labels, checked: every field of the item's task with an allowed value."""
    out: dict[str, dict] = {}
    for lineno, line in enumerate(read_text(path, LabelledSetError).splitlines(), start=1):
        if not line.strip():
            continue
        obj = json_object_line(line, f"{path}:{lineno}", LabelledSetError)
        item = obj.get("id")
        if item not in ids:
            raise LabelledSetError(f"{path}:{lineno}: id {item!r} is not in unlabelled.jsonl")
        if item in out:
            raise LabelledSetError(f"{path}:{lineno}: id {item!r} labelled twice")
        row = {}
        for field, allowed in LABEL_FIELDS[task_of[item]].items():
            value = obj.get(field)
            if allowed == (True, False) and value in (0, 1) and not isinstance(value, float):
                value = bool(value)  # the instructions ask for 0/1
            if value not in allowed or (allowed == (True, False) and not isinstance(value, bool)):
                raise LabelledSetError(f"{path}:{lineno}: field {field!r} = {obj.get(field)!r}; allowed: "
                                       + ", ".join(map(str, allowed)))
            row[field] = value
        out[item] = {**row, **({"note": obj["note"]} if isinstance(obj.get("note"), str) else {})}
    return out


def _append(path: Path, rows: list[dict]) -> None:
    old = path.read_text(encoding="utf-8") if path.is_file() else ""
    text = old + ("" if not old or old.endswith("\n") else "\n")
    write_atomic(path, text + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def ingest(out: Path, data: Path) -> dict:
    items = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines() if line]
    task_of = {r["id"]: r["task"] for r in items}
    passes = {}
    for letter, (which, _) in ANNOTATORS.items():
        path = out / f"annotator_{letter}.jsonl"
        passes[which] = read_annotator(path, set(task_of), task_of)
    labelled = sorted(set(passes["pass1"]) & set(passes["pass2"]))
    summary: dict[str, dict] = {}
    for task in ("community", "bold"):
        ids = [i for i in labelled if task_of[i] == task]
        if not ids:
            continue
        fields = list(LABEL_FIELDS[task])
        one = {i: {f: passes["pass1"][i][f] for f in fields} for i in ids}
        two = {i: {f: passes["pass2"][i][f] for f in fields} for i in ids}
        final, counts = adjudicate(task, one, two, None, no_third_pass=True)
        rows = [r for r in items if r["id"] in final]
        keep = [{k: v for k, v in r.items() if k != "task"} for r in rows]
        _append(data / f"{task}_unlabelled.jsonl", keep)
        for which, labels in (("pass1", passes["pass1"]), ("pass2", passes["pass2"])):
            letter = ANNOTATORS["A" if which == "pass1" else "B"][1]
            _append(data / f"{task}_labels_{which}.jsonl",
                    [{"id": r["id"], **{f: labels[r["id"]][f] for f in fields}, "annotator": letter} for r in rows])
        _append(data / f"{task}_labels_final.jsonl", [{"id": r["id"], **final[r["id"]]} for r in rows])
        if not (data / f"{task}_labels_pass3.jsonl").is_file():
            write_atomic(data / f"{task}_labels_pass3.jsonl", "")
        summary[task] = {"n_items": len(rows), "adjudication": counts,
                         "unresolved": {f: sum(final[i][f] == UNRESOLVED for i in final) for f in fields}}
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("runs", type=Path)
    e.add_argument("out", type=Path)
    i = sub.add_parser("ingest")
    i.add_argument("out", type=Path)
    i.add_argument("--data", type=Path, default=data_dir())
    a = ap.parse_args(argv)
    try:
        result = export(a.runs, a.out) if a.cmd == "export" else ingest(a.out, a.data)
    except (LabelledSetError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
