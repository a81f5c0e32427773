"""Freeze the blind annotation passes of one real-output set into the repository (issue #24).

    python scripts/freeze_labels.py holistic --annot-dir BATCHES [--out src/biaslens/scorers/data/real_output]

BATCHES is the batch folder ``build_real_output.py --annot-dir`` wrote; each pass's label files
go in ``pass1/``, ``pass2/``, ``pass3/`` under it. Reads ``BATCHES/pass{1,2,3}/<set>_chunk_*.labels.jsonl``
(the language-model annotators' label files, one per batch),
writes one file per pass (``<set>_labels_pass{1,2,3}.jsonl``, lines in the order of
``<set>_unlabelled.jsonl``, every key the annotator wrote kept), the final labels by the
written rule (``<set>_labels_final.jsonl``, :func:`biaslens.scorers.labelled.adjudicate`) and
the agreement of passes 1 and 2 (``<set>_agreement.json``); prints the data card's markdown.
Deterministic: the same passes give byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from biaslens.scorers.labelled import (
    LABEL_FIELDS,
    LabelledSetError,
    adjudicate,
    agreement_report,
    data_dir,
    field_categories,
    load_items,
    load_labels,
)


def merge_pass(task: str, annot: Path, n: int, order: dict[str, int]) -> list[dict]:
    rows, seen = [], set()
    files = sorted((annot / f"pass{n}").glob(f"{task}_chunk_*.labels.jsonl"))
    if not files:
        raise LabelledSetError(f"{annot}/pass{n}: no {task}_chunk_*.labels.jsonl files")
    for path in files:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise LabelledSetError(f"{path}:{lineno}: invalid JSON ({e.msg})") from None
            if obj.get("id") not in order:
                raise LabelledSetError(f"{path}:{lineno}: id {obj.get('id')!r} is not in {task}_unlabelled.jsonl")
            if obj["id"] in seen:
                raise LabelledSetError(f"{path}:{lineno}: id {obj['id']!r} labelled twice in pass {n}")
            seen.add(obj["id"])
            rows.append(obj)
    return sorted(rows, key=lambda r: order[r["id"]])


def _jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def freeze(task: str, annot: Path, out: Path) -> dict:
    items = load_items(task, out)
    order = {it["id"]: i for i, it in enumerate(items)}
    for n in (1, 2, 3):
        rows = merge_pass(task, annot, n, order)
        if n < 3 and len(rows) != len(items):
            raise LabelledSetError(f"pass {n} of {task} labels {len(rows)} of {len(items)} items: not complete")
        (out / f"{task}_labels_pass{n}.jsonl").write_text(_jsonl(rows), encoding="utf-8")
    ids = set(order)
    passes = [load_labels(task, f"pass{n}", out, ids) for n in (1, 2, 3)]  # validates every value
    final, summary = adjudicate(task, *passes)
    (out / f"{task}_labels_final.jsonl").write_text(
        _jsonl([{"id": it["id"], **final[it["id"]]} for it in items]), encoding="utf-8")
    annotators = {f"pass{n}": sorted({str(r.get("annotator", "?"))
                                      for r in map(json.loads, (out / f"{task}_labels_pass{n}.jsonl")
                                                   .read_text(encoding="utf-8").splitlines())})
                  for n in (1, 2, 3)}
    counts = {split: {f: dict(sorted(Counter(str(final[it["id"]][f]) for it in items
                                             if split == "all" or it["split"] == split).items()))
                      for f in LABEL_FIELDS[task]} for split in ("all", "dev", "test")}
    record = {"task": task, "n_items": len(items), "n_pass3": len(passes[2]), "annotators": annotators,
              "adjudication": summary, "final_counts": counts, "agreement_pass1_pass2": agreement_report(task, out)}
    (out / f"{task}_agreement.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return record


def markdown(task: str, r: dict) -> str:
    lines = [f"### {task} ({r['n_items']} items; annotators: pass 1 {', '.join(r['annotators']['pass1'])}, "
             f"pass 2 {', '.join(r['annotators']['pass2'])}, pass 3 {', '.join(r['annotators']['pass3'])} "
             f"on {r['n_pass3']} items)", "",
             "| field | split | n | kappa (95% CI) | raw agreement | pass-1 counts | pass-2 counts |",
             "|---|---|---|---|---|---|---|"]
    for split, per in r["agreement_pass1_pass2"].items():
        for f, a in per.items():
            k = f"{a['kappa']:.3f} ({a['ci'][0]:.3f}-{a['ci'][1]:.3f})"
            if "linear_weighted" in a:
                w = a["linear_weighted"]
                k += f"; linear weighted {w['kappa']:.3f} ({w['ci'][0]:.3f}-{w['ci'][1]:.3f})"
            fmt = lambda c: ", ".join(f"{v} {n}" for v, n in c.items())  # noqa: E731
            lines.append(f"| {f} | {split} | {a['n']} | {k} | {a['raw_agreement']:.3f} | {fmt(a['counts_a'])} | "
                         f"{fmt(a['counts_b'])} |")
    lines += ["", "| field | agreed by passes 1-2 | settled by majority of three | unresolved |", "|---|---|---|---|"]
    lines += [f"| {f} | {s['agreed']} | {s['majority_of_three']} | {s['unresolved']} |"
              for f, s in r["adjudication"].items()]
    lines += ["", "| field | split | final label counts |", "|---|---|---|"]
    for split, per in r["final_counts"].items():
        for f, c in per.items():
            cats = [str(v) for v in field_categories(task, f)] + ["unresolved"]
            lines.append(f"| {f} | {split} | {', '.join(f'{v} {c[v]}' for v in cats if v in c)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("task", choices=sorted(LABEL_FIELDS))
    ap.add_argument("--annot-dir", type=Path, required=True, metavar="BATCHES",
                    help="the annotation batch folder, with each pass's label files in pass1/, pass2/, pass3/")
    ap.add_argument("--out", type=Path, default=data_dir())
    args = ap.parse_args(argv)
    try:
        record = freeze(args.task, args.annot_dir, args.out)
    except LabelledSetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(markdown(args.task, record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
