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


@pytest.mark.parametrize(("number", "letters"), [(2, ("G", "H")), (3, ("I", "J"))])
def test_ingest_appends_by_the_rule_and_splits_by_prompt(batch, number, letters):
    out, data, items = batch
    ids = [r["id"] for r in items]
    before = len(load_labelled("community", folder=data))
    (out / "annotator_A.jsonl").write_text(_labels(ids, **{ids[0]: {"toxic": 1}, ids[1]: {"toxic": True}}))
    (out / "annotator_B.jsonl").write_text(_labels(ids, **{ids[0]: {"toxic": 1}, ids[1]: {"sentiment": "negative"}}))
    summary = _script().ingest(out, data, number)
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
    for which, letter in zip(("pass1", "pass2"), letters):  # each batch's annotators, after A-F of the first
        passes = [json.loads(line) for line in (data / f"community_labels_{which}.jsonl").read_text().splitlines()]
        assert passes[-1]["annotator"] == letter


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


def test_the_third_batch_fine_tuning_data_is_rebuilt_exactly(reference_dir, tmp_path):
    """The two community fine-tunes of the third batch were trained on corpora the script rebuilds
    from the authors' RedditBias files, byte for byte (their sha256 is recorded in labelling.json)."""
    import hashlib

    import pandas as pd

    counts = _script().fine_tune_corpora(reference_dir / "redditbias", tmp_path)
    record = json.loads((data_dir() / "labelling.json").read_text())["batch_3"]["fine_tunes"]
    assert counts == {name: r["examples"] for name, r in record.items()} == {"religion-race": 1410,
                                                                             "gender-orientation": 1400}
    for r in record.values():
        path = tmp_path / r["corpus"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == r["corpus_sha256"]
        table = pd.read_csv(path, keep_default_na=False)
        assert list(table.columns) == ["post_id", "title", "comment"] and (table["title"] == "").all()
        assert table["comment"].str.split().str.len().between(8, 80).all() and table["post_id"].is_unique
