"""Issue #41: the second labelling batch is ingested by the written rule (two blind language-model
annotators; agreed -> the label, a disagreement unresolved), split by prompt, and a bad label file
is refused naming its line."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from biaslens.scorers.labelled import UNRESOLVED, data_dir, load_labelled, split_of

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("label_more", ROOT / "scripts" / "label_more.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _item(task: str, i: int, prompt_id: str) -> dict:
    suite = "community" if task == "community" else "bold"
    row = {"id": f"{task[:3]}-new{i:012d}", "prompt": f"prompt {prompt_id}", "response": f"new reply {task} {i}",
           "suite": suite, "model": "smollm2-135m", "decoding": {"seed": 2}, "seed": 2, "sample_index": i,
           "prompt_id": prompt_id, "task": task, "split_unit": f"prompt:{suite}:{prompt_id}"}
    return row | ({"demographic": "rich", "dimension": "economic"} if task == "community" else {"group": "g"})


def _labels(ids, **kw) -> str:
    return "".join(json.dumps({"id": i, "toxic": 0, "sentiment": "neutral", "reply_type": "ok"} | kw.get(i, {})) + "\n"
                   for i in ids)


@pytest.fixture()
def batch(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(data_dir(), data)
    out = tmp_path / "batch"
    out.mkdir()
    items = [_item("community", i, f"p{i % 2}") for i in range(6)] + [_item("bold", 9, "b/x/0")]
    (out / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    return out, data, items


def test_ingest_appends_by_the_rule_and_splits_by_prompt(batch):
    out, data, items = batch
    ids = [r["id"] for r in items]
    before = len(load_labelled("community", folder=data))
    (out / "annotator_A.jsonl").write_text(_labels(ids, **{ids[0]: {"toxic": 1}, ids[1]: {"toxic": True}}))
    (out / "annotator_B.jsonl").write_text(_labels(ids, **{ids[0]: {"toxic": 1}, ids[1]: {"sentiment": "negative"}}))
    summary = _script().ingest(out, data)
    assert summary["community"]["n_items"] == 6 and summary["bold"]["n_items"] == 1
    assert summary["community"]["adjudication"]["toxic"] == {"agreed": 5, "majority_of_three": 0, "unresolved": 1}
    rows = {r["id"]: r for r in load_labelled("community", folder=data)}
    assert len(rows) == before + 6
    assert rows[ids[0]]["toxic"] is True and rows[ids[1]]["toxic"] == UNRESOLVED
    assert rows[ids[1]]["sentiment"] == UNRESOLVED and rows[ids[2]]["toxic"] is False
    # every reply to one prompt falls in the same half: the split is the prompt's
    for r in items[:6]:
        assert rows[r["id"]]["split"] == split_of(f"prompt:community:{r['prompt_id']}")
    (bold,) = [r for r in load_labelled("bold", folder=data) if r["id"] == ids[-1]]
    assert bold["toxic"] is False and bold["sentiment"] == "neutral"
    passes = [json.loads(line) for line in (data / "community_labels_pass1.jsonl").read_text().splitlines()]
    assert passes[-1]["annotator"] == "G"  # the batch's annotators, after A-F of the first


def test_a_bad_label_is_refused_with_its_line(batch, capsys):
    out, data, items = batch
    ids = [r["id"] for r in items]
    (out / "annotator_A.jsonl").write_text(_labels(ids, **{ids[2]: {"toxic": "maybe"}}))
    (out / "annotator_B.jsonl").write_text(_labels(ids))
    before = (data / "community_labels_final.jsonl").read_text()
    assert _script().main(["ingest", str(out), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "annotator_A.jsonl:3: field 'toxic' = 'maybe'" in err
    assert (data / "community_labels_final.jsonl").read_text() == before  # nothing written
