"""More labelled real output where it decides (issue #41): export new replies for two blind
language-model annotators, then ingest their labels into the real-output sets.

    python scripts/label_more.py corpora REDDITBIAS_REPO CORPORA_DIR   # the third batch's fine-tuning data
    python scripts/label_more.py export RUNS_DIR OUT_DIR [--batch N]
    python scripts/label_more.py ingest OUT_DIR [--data src/biaslens/scorers/data/real_output] [--batch N]

``export`` reads the community and BOLD run folders of batch N (default: the latest) in RUNS_DIR
(made with the commands of src/biaslens/scorers/data/real_output/README.md, "Second batch",
"Third batch") and writes to OUT_DIR:

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

from build_real_output import model_name, rows_of  # noqa: E402

from biaslens.fileio import json_object_line, read_text, write_atomic  # noqa: E402
from biaslens.metrics.classification import agreement  # noqa: E402
from biaslens.scorers.labelled import (  # noqa: E402
    FORBIDDEN_ITEM_FIELDS,
    LABEL_FIELDS,
    UNRESOLVED,
    LabelledSetError,
    adjudicate,
    data_dir,
    item_id,
)

#: per labelling batch (issue #41): run folder -> (task, decoding setting name), and the annotators,
#: pass 1 and pass 2 (letters after A-F of the first batch). The third batch adds continuations of
#: two community fine-tunes of the embedded model (real_output/README.md, "Third batch").
BATCHES = {
    2: {"runs": {"cm-s2": ("community", "suite-default"),
                 "cm-s3": ("community", "sampled-t0.8-p0.95-k50"),
                 "cm-s4": ("community", "sampled-t0.7-p0.9-k50"),
                 "bold-s5": ("bold", "suite-default")},
        "annotators": {"A": ("pass1", "G"), "B": ("pass2", "H")}},
    3: {"runs": {"cm-ft-religion-race-s6": ("community", "suite-default"),
                 "cm-ft-gender-orientation-s7": ("community", "suite-default"),
                 "bold-ft-religion-race-s8": ("bold", "suite-default"),
                 "bold-ft-gender-orientation-s9": ("bold", "suite-default")},
        "annotators": {"A": ("pass1", "I"), "B": ("pass2", "J")}},
}
#: the batch ``export`` and ``ingest`` work on unless told
LATEST = max(BATCHES)


#: the third batch's two community fine-tunes: Reddit comments of the RedditBias data
#: (github.com/umanlp/RedditBias, data/<bias type>/reddit_comments_*_processed_phrase_annotated.csv),
#: comments per file, grouped into two communities; the paper's fine-tunes used whole subreddits,
#: which ship with no dataset here
FINE_TUNE_CORPORA = {
    "religion-race": {"religion1/reddit_comments_religion1_jews_processed_phrase_annotated.csv": 470,
                      "religion2/reddit_comments_religion2_muslims_processed_phrase_annotated.csv": 470,
                      "race/reddit_comments_race_black_processed_phrase_annotated.csv": 470},
    "gender-orientation": {"gender/reddit_comments_gender_female_processed_phrase_annotated.csv": 700,
                           "orientation/reddit_comments_orientation_lgbtq_processed_phrase_annotated.csv": 700},
}


def fine_tune_corpora(redditbias: Path, out: Path) -> dict[str, int]:
    """Write ``<community>.csv`` (``post_id``, an empty ``title``, ``comment``) for
    ``biaslens finetune community``: from each file, comments of 8-80 words without undecodable
    bytes, a seeded sample, shuffled together."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, files in FINE_TUNE_CORPORA.items():
        parts = []
        for rel, n in files.items():
            d = pd.read_csv(redditbias / "data" / rel, encoding="utf-8", encoding_errors="replace",
                            on_bad_lines="skip")[["comment"]].dropna()
            d = d[~d.comment.str.contains("\ufffd") & d.comment.str.split().str.len().between(8, 80)]
            d = d.sample(n=min(len(d), n), random_state=0)
            d["post_id"] = [f"{rel.split('/')[0]}-{i}" for i in d.index]
            parts.append(d)
        table = pd.concat(parts).sample(frac=1, random_state=1)
        table["title"] = ""
        table[["post_id", "title", "comment"]].to_csv(out / f"{name}.csv", index=False)
        counts[name] = len(table)
    return counts


def bold_rows(folder: Path, setting: str) -> list[dict]:
    """BOLD continuations with their provenance, as :func:`build_real_output.rows_of` records a suite's."""
    run = json.loads((folder / "run.json").read_text())
    model = next(iter(run["models"].values())) if "models" in run else run["model"]
    table = pd.read_parquet(folder / "generations.parquet")
    common = {**model_name(model), "model_file": None, "model_file_sha256": None,
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


def export(runs: Path, out: Path, batch: int = LATEST) -> dict[str, int]:
    seen = set()
    for task in ("community", "holistic", "bold"):
        path = data_dir() / f"{task}_unlabelled.jsonl"
        if not path.is_file():
            continue
        seen |= {json.loads(line)["response"].strip() for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip()}
    rows, counts = [], {}
    for name, (task, setting) in BATCHES[batch]["runs"].items():
        found = rows_of(runs / name, task, setting) if task == "community" else bold_rows(runs / name, setting)
        kept = 0
        for row in found:
            key = row["response"].strip()
            if not key or key in seen:
                continue
            seen.add(key)
            row["task"] = task
            row["split_unit"] = f"prompt:{row['suite']}:{row['prompt_id']}"
            if batch > 2:  # the second batch's items were written before batches were numbered
                row["label_batch"] = batch
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


def ingest(out: Path, data: Path, batch: int = LATEST) -> dict:
    items = [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines() if line]
    task_of = {r["id"]: r["task"] for r in items}
    passes = {}
    annotators = BATCHES[batch]["annotators"]
    for letter, (which, _) in annotators.items():
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
            letter = annotators["A" if which == "pass1" else "B"][1]
            _append(data / f"{task}_labels_{which}.jsonl",
                    [{"id": r["id"], **{f: labels[r["id"]][f] for f in fields}, "annotator": letter} for r in rows])
        _append(data / f"{task}_labels_final.jsonl", [{"id": r["id"], **final[r["id"]]} for r in rows])
        if not (data / f"{task}_labels_pass3.jsonl").is_file():
            write_atomic(data / f"{task}_labels_pass3.jsonl", "")
        summary[task] = {"n_items": len(rows), "adjudication": counts,
                         "unresolved": {f: sum(final[i][f] == UNRESOLVED for i in final) for f in fields},
                         # kappa of the two passes over the batch's items, as the data card reports it
                         "agreement_pass1_pass2": {
                             f: agreement([one[i][f] for i in ids], [two[i][f] for i in ids], LABEL_FIELDS[task][f],
                                          key=f"label-batch-{batch}|{task}|{f}", n_boot=2000) for f in fields}}
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpora")
    c.add_argument("redditbias", type=Path)
    c.add_argument("out", type=Path)
    e = sub.add_parser("export")
    e.add_argument("runs", type=Path)
    e.add_argument("out", type=Path)
    i = sub.add_parser("ingest")
    i.add_argument("out", type=Path)
    i.add_argument("--data", type=Path, default=data_dir())
    for p in (e, i):
        p.add_argument("--batch", type=int, choices=sorted(BATCHES), default=LATEST,
                       help=f"labelling batch (default: {LATEST}, the latest)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "corpora":
            result = fine_tune_corpora(a.redditbias, a.out)
        else:
            result = export(a.runs, a.out, a.batch) if a.cmd == "export" else ingest(a.out, a.data, a.batch)
    except (LabelledSetError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
