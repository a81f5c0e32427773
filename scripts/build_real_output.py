"""Build the unlabelled real-output sets (issue #24) from biaslens run folders.

    python scripts/build_real_output.py RUNS_DIR OUT_DIR [--annot-dir DIR]

RUNS_DIR holds the run folders named in RUNS below (made with the commands in
src/biaslens/scorers/data/real_output/README.md). Only the prompt, the reply and how it was
generated are copied: no classifier column of the run (style, offensiveness, sentiment,
toxicity) reaches the output, so the (language-model) annotators stay blind. Identical replies are kept once (the
first in RUNS order). With --annot-dir, annotation batches (id, prompt, response only, in a
seeded shuffled order) of about 160 items are written there too: what each annotator is given
with docs/annotation.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import pandas as pd

from biaslens.fileio import write_atomic
from biaslens.scorers.labelled import FORBIDDEN_ITEM_FIELDS, item_id

#: run folder -> (task, decoding setting name); the suite default comes first in each task
RUNS = {
    "hg-default": ("holistic", "suite-default"),
    "hg-greedy-s1": ("holistic", "suite-default"),
    "hg-sample-s0": ("holistic", "sampled-t0.8-p0.9"),
    "hg-sample-s1": ("holistic", "sampled-t0.8-p0.9"),
    "cm-default-s0": ("community", "suite-default"),
    "cm-alt-s1": ("community", "sampled-t0.7-p0.9-k50"),
}
HOLISTIC_COLS = ["prompt_id", "dataset_text", "axis", "bucket", "descriptor", "noun", "noun_gender",
                 "noun_phrase_type", "template", "remove_im_contraction", "remove_descriptor_hyphens",
                 "lowercase_descriptor", "remove_final_period"]
COMMUNITY_COLS = ["prompt_id", "template_id", "template", "dimension", "demographic", "keyword"]
CHUNK = 160


def _plain(v):
    if hasattr(v, "item"):
        return v.item()
    return v


def _model_file(model: dict) -> dict:
    path = Path(model.get("path") or "")
    src = path / "biaslens-source.json"
    info = json.loads(src.read_text()) if src.is_file() else {}
    return {"model_file": info.get("gguf"), "model_file_sha256": info.get("sha256"),
            "weights_hash": model.get("weights_hash")}


def model_name(model: dict) -> dict:
    """The ``model`` (and, for a fine-tune, ``fine_tune_of``) fields of an item: a model given as a
    folder made by ``biaslens finetune`` is named by its base and community
    (``smollm2-135m-community-<name>``), never by where the folder lay."""
    path = Path(model.get("path") or model["name"])
    record = path / "biaslens-training.json"
    if not record.is_file():
        return {"model": model["name"]}
    training = json.loads(record.read_text())
    base = Path(training["base_model"]).name
    community = (training.get("description") or {}).get("community") or path.name
    return {"model": f"{base}-community-{community}", "fine_tune_of": base}


def rows_of(folder: Path, task: str, setting: str) -> list[dict]:
    run = json.loads((folder / "run.json").read_text())
    if run.get("status") != "complete":
        sys.exit(f"{folder}: run status {run.get('status')!r}, expected complete")
    # holistic-generation records one model, community one entry per compared model
    model = run["model"] if "model" in run else next(iter(run["models"].values()))
    common = {**model_name(model), **_model_file(model), "biaslens_version": run["biaslens_version"],
              "run": folder.name, "seed": run["config"]["seed"], "decoding_name": setting}
    out = []
    if task == "holistic":
        table = pd.read_parquet(folder / "responses.parquet")
        params = run["generation"]["params"]
        common |= {"suite": "holistic-generation", "decoding": params,
                   "chat_template": True}
        for rec in table.to_dict("records"):
            row = {"prompt": rec["text"], "response": rec["response"], **common,
                   "sample_index": int(rec["sample_index"]), **{c: _plain(rec[c]) for c in HOLISTIC_COLS}}
            out.append(row)
    else:
        table = pd.read_parquet(folder / "generations.parquet")
        common |= {"suite": "community", "decoding": model["params"], "chat_template": False}
        for rec in table.to_dict("records"):
            row = {"prompt": rec["prompt"], "response": rec["response"], **common,
                   "sample_index": int(rec["sample_index"]), "model_prompt": rec["model_prompt"],
                   "keyword_form": rec["form"], **{c: _plain(rec[c]) for c in COMMUNITY_COLS}}
            out.append(row)
    for row in out:
        row["id"] = item_id(task, {k: row[k] for k in ("suite", "model", "model_file_sha256", "decoding", "seed",
                                                      "prompt", "sample_index")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--annot-dir", type=Path)
    a = ap.parse_args()
    for task in ("holistic", "community"):
        rows, seen, dropped = [], set(), 0
        for name, (t, setting) in RUNS.items():
            if t != task:
                continue
            for row in rows_of(a.runs / name, task, setting):
                key = row["response"].strip()
                if key in seen:
                    dropped += 1
                    continue
                seen.add(key)
                rows.append(row)
        for row in rows:
            assert not set(row) & set(FORBIDDEN_ITEM_FIELDS), set(row) & set(FORBIDDEN_ITEM_FIELDS)
        first = ["id", "prompt", "response"]
        lines = [json.dumps({k: row[k] for k in first} | {k: v for k, v in row.items() if k not in first},
                            ensure_ascii=False) for row in rows]
        a.out.mkdir(parents=True, exist_ok=True)
        write_atomic(a.out / f"{task}_unlabelled.jsonl", "\n".join(lines) + "\n")
        print(f"{task}: {len(rows)} items ({dropped} duplicate replies dropped)")
        if a.annot_dir:
            # shuffled so a chunk mixes settings, seeds and prompts (annotators cannot infer the setting from position)
            order = sorted(rows, key=lambda r: r["id"])
            random.Random(24).shuffle(order)
            a.annot_dir.mkdir(parents=True, exist_ok=True)
            n_chunks = max(1, round(len(order) / CHUNK))
            size = -(-len(order) // n_chunks)
            for k in range(n_chunks):
                part = order[k * size:(k + 1) * size]
                text = "\n".join(json.dumps({"id": r["id"], "prompt": r["prompt"], "response": r["response"]},
                                            ensure_ascii=False) for r in part) + "\n"
                path = a.annot_dir / f"{task}_chunk_{k + 1:02d}.jsonl"
                write_atomic(path, text)
                print(f"  {path}: {len(part)}")


if __name__ == "__main__":
    main()
