"""The real-output judge sets (issue #24): the shipped unlabelled files, their hash split and
the loader's errors."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from biaslens.scorers.labelled import (
    CLUSTER_LABELS,
    FORBIDDEN_ITEM_FIELDS,
    LabelledSetError,
    item_id,
    load_items,
    load_labelled,
    load_labels,
    split_of,
)

PROVENANCE = ("suite", "model", "model_file_sha256", "decoding", "seed", "prompt", "sample_index")


@pytest.fixture(scope="module", params=["holistic", "community"])
def shipped(request):
    return request.param, load_items(request.param)


def test_split_is_the_hash_split(shipped):
    task, items = shipped
    for it in items:
        # the written rule, recomputed here: first byte of sha256(salt + id), even -> dev; the second
        # batch (issue #41) hashes its split unit (the prompt) instead, so a prompt's replies share a half
        unit = it.get("split_unit") or it["id"]
        byte = hashlib.sha256(("biaslens-real-output-split-v1:" + unit).encode()).digest()[0]
        assert it["split"] == ("dev" if byte % 2 == 0 else "test")
    by_prompt: dict[str, set] = {}
    for it in items:
        if it.get("split_unit"):
            by_prompt.setdefault(it["split_unit"], set()).add(it["split"])
    assert all(len(s) == 1 for s in by_prompt.values())
    n_dev = sum(it["split"] == "dev" for it in items)
    # about half: |dev share - 0.5| within 4 binomial standard deviations
    assert abs(n_dev - len(items) / 2) <= 4 * (len(items) / 4) ** 0.5


def test_split_of_known_values():
    assert split_of("hol-0000000000000000") == split_of("hol-0000000000000000")
    shares = Counter(split_of(f"x{i}") for i in range(4000))
    assert set(shares) == {"dev", "test"} and abs(shares["dev"] - 2000) < 4 * 32


def test_ids_are_the_provenance_hash(shipped):
    task, items = shipped
    for it in items:
        assert it["id"] == item_id(task, {k: it[k] for k in PROVENANCE})
        assert it["id"].startswith(task[:3] + "-")


def test_files_are_blind_deduplicated_and_large_enough(shipped):
    task, items = shipped
    assert len(items) >= 640
    assert len({it["response"].strip() for it in items}) == len(items)
    for it in items:
        assert not set(it) & set(FORBIDDEN_ITEM_FIELDS) - {"split"}
        assert it["response"].strip()
        if it.get("fine_tune_of"):  # the third batch: a community fine-tune, named by its base and community
            assert it["fine_tune_of"] == "smollm2-135m" and it["label_batch"] == 3
            assert it["model"].startswith("smollm2-135m-community-reddit-") and "/" not in it["model"]
        else:
            assert it["model"] == "smollm2-135m" and it["model_file"]
    # the embedded model's replies: two decoding settings (three with the community set's second
    # batch), none a token share (the third batch's fine-tunes use the suite's default)
    settings = Counter(it["decoding_name"] for it in items if not it.get("fine_tune_of"))
    assert len(settings) in (2, 3) and min(settings.values()) >= 0.15 * settings.total()


def test_coverage_of_the_suites_designs(shipped):
    task, items = shipped
    if task == "holistic":
        assert len({it["axis"] for it in items}) == 13
        assert len({it["descriptor"] for it in items}) >= 80
        assert len({it["template"] for it in items}) >= 3
    else:
        assert len({it["demographic"] for it in items}) == 15
        assert len({it["template_id"] for it in items}) == 6
        # every prompt of the suite's default design (templates x keywords of 15 demographics)
        from biaslens.config import RunConfig
        from biaslens.methods.community.dataset.generations import community_prompts

        assert {it["prompt"] for it in items} == set(community_prompts(RunConfig())["prompt"])


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture()
def tiny(tmp_path):
    items = [{"id": f"hol-{i}", "prompt": "I'm tall.", "response": f"reply {i}", "suite": "holistic-generation",
              "model": "m", "decoding": {}, "seed": 0, "sample_index": i} for i in range(3)]
    _write(tmp_path / "holistic_unlabelled.jsonl", items)
    return tmp_path


def _label(i, **kw):
    return {"id": f"hol-{i}", "cluster": "Care", "offensive": False, "reply_type": "ok"} | kw


def test_labels_join_and_filter_by_split(tiny):
    _write(tiny / "holistic_labels_final.jsonl", [_label(0), _label(1, cluster="Other"), _label(2, offensive=True)])
    rows = load_labelled("holistic", folder=tiny)
    assert [r["cluster"] for r in rows] == ["Care", "Other", "Care"]
    assert [r["offensive"] for r in rows] == [False, False, True]
    dev = load_labelled("holistic", split="dev", folder=tiny)
    assert [r["id"] for r in dev] == [r["id"] for r in rows if split_of(r["id"]) == "dev"]
    assert set(CLUSTER_LABELS) == {"Sympathy", "Envy", "Curiosity", "Confusion", "Hate", "Care", "Other"}


@pytest.mark.parametrize("lines, which, message", [
    ([_label(0), _label(1, cluster="Warm")], "pass1", "holistic_labels_pass1.jsonl:2: field 'cluster' = 'Warm'"),
    ([_label(0, offensive="no")], "pass2", ":1: field 'offensive' = 'no'; allowed: true, false"),
    ([{"id": "hol-0", "cluster": "Care", "offensive": False}], "pass1", ":1: missing field 'reply_type'"),
    ([_label(0), _label(0)], "final", ":2: id 'hol-0' labelled twice"),
    ([_label(7)], "final", ":1: id 'hol-7' is not in holistic_unlabelled.jsonl"),
    (["{not json"], "final", ":1: invalid JSON"),
    ([_label(0, cluster="unresolved")], "pass1", "field 'cluster' = 'unresolved'"),
])
def test_bad_label_files_name_file_and_line(tiny, lines, which, message):
    _write(tiny / f"holistic_labels_{which}.jsonl", lines)
    with pytest.raises(LabelledSetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_labels("holistic", which, folder=tiny, ids={"hol-0", "hol-1", "hol-2"})


def test_final_may_be_unresolved_but_every_item_needs_a_label(tiny):
    _write(tiny / "holistic_labels_final.jsonl", [_label(0, cluster="unresolved"), _label(1)])
    with pytest.raises(LabelledSetError, match=r"1 item\(s\) of holistic_unlabelled.jsonl have no label"):
        load_labelled("holistic", folder=tiny)
    with pytest.raises(LabelledSetError, match="no such label file"):
        load_labels("holistic", "pass2", folder=tiny)


def test_unlabelled_file_must_stay_blind(tmp_path):
    row = {"id": "hol-0", "prompt": "p", "response": "r", "suite": "s", "model": "m", "decoding": {}, "seed": 0,
           "sample_index": 0, "offensiveness": 0.9}
    _write(tmp_path / "holistic_unlabelled.jsonl", [row])
    with pytest.raises(LabelledSetError, match=r"holistic_unlabelled.jsonl:1: field\(s\) offensiveness"):
        load_items("holistic", tmp_path)
    clean = {k: v for k, v in row.items() if k != "offensiveness"}
    _write(tmp_path / "holistic_unlabelled.jsonl", [clean, clean | {"id": "hol-1"}])
    with pytest.raises(LabelledSetError, match=":2: duplicate response"):
        load_items("holistic", tmp_path)


# -- freezing the passes and the written adjudication rule (docs/annotation.md) -------------

def test_adjudication_rule_agreement_then_majority_of_three_else_unresolved():
    from biaslens.scorers.labelled import adjudicate

    p1 = {"a": _label(0), "b": _label(1, cluster="Hate"), "c": _label(2, cluster="Hate"), "d": _label(3, offensive=True)}
    p2 = {"a": _label(0), "b": _label(1, cluster="Envy"), "c": _label(2, cluster="Envy"), "d": _label(3)}
    p3 = {"a": _label(0, cluster="Hate"),  # a filler item: passes 1-2 agree, the third pass does not count
          "b": _label(1, cluster="Envy"), "c": _label(2, cluster="Other"), "d": _label(3, offensive=True)}
    final, summary = adjudicate("holistic", p1, p2, p3)
    assert [final[i]["cluster"] for i in "abcd"] == ["Care", "Envy", "unresolved", "Care"]
    assert final["d"]["offensive"] is True
    assert summary["cluster"] == {"agreed": 2, "majority_of_three": 1, "unresolved": 1}
    assert summary["offensive"] == {"agreed": 3, "majority_of_three": 1, "unresolved": 0}
    del p3["b"]
    with pytest.raises(LabelledSetError, match="'b' has a disagreement on 'cluster' but no third-pass label"):
        adjudicate("holistic", p1, p2, p3)


def _freeze_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("freeze_labels", Path(__file__).parents[1] / "scripts" /
                                                  "freeze_labels.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_freeze_script_merges_chunks_keeps_annotator_and_applies_the_rule(tiny, tmp_path_factory):
    annot = tmp_path_factory.mktemp("annot")
    for n, rows in {1: [[_label(0, annotator="A"), _label(1, annotator="A")], [_label(2, annotator="A")]],
                    2: [[_label(2, annotator="B", cluster="Hate")], [_label(0, annotator="B"), _label(1, annotator="B")]],
                    3: [[_label(2, annotator="E", cluster="Hate"), _label(0, annotator="E")]]}.items():
        (annot / f"pass{n}").mkdir()
        for c, chunk in enumerate(rows, start=1):
            _write(annot / f"pass{n}" / f"holistic_chunk_0{c}.labels.jsonl", chunk)
    record = _freeze_script().freeze("holistic", annot, tiny)
    one = [json.loads(x) for x in (tiny / "holistic_labels_pass1.jsonl").read_text().splitlines()]
    assert [r["id"] for r in one] == ["hol-0", "hol-1", "hol-2"] and {r["annotator"] for r in one} == {"A"}
    final = load_labels("holistic", "final", folder=tiny)
    assert final["hol-2"]["cluster"] == "Hate" and final["hol-0"]["cluster"] == "Care"
    assert record["adjudication"]["cluster"] == {"agreed": 2, "majority_of_three": 1, "unresolved": 0}
    assert record["annotators"] == {"pass1": ["A"], "pass2": ["B"], "pass3": ["E"]}
    assert record["agreement_pass1_pass2"]["all"]["cluster"]["raw_agreement"] == pytest.approx(2 / 3)
    (annot / "pass2" / "holistic_chunk_01.labels.jsonl").unlink()
    with pytest.raises(LabelledSetError, match="pass 2 of holistic labels 2 of 3 items: not complete"):
        _freeze_script().freeze("holistic", annot, tiny)


#: items per later labelling batch (issue #41), from labelling.json: batch 2 the embedded model's
#: continuations, batch 3 its two community fine-tunes'
_LATER_BATCHES = {"community": {2: 2170, 3: 1240}, "bold": {2: 300, 3: 781}}


@pytest.mark.parametrize("task", ["holistic", "community", "bold"])
def test_shipped_final_labels_are_the_rule_applied_to_the_shipped_passes(task):
    from biaslens.scorers.labelled import adjudicate, data_dir

    if not (data_dir() / f"{task}_labels_final.jsonl").is_file():
        pytest.skip(f"{task} labels not frozen yet")
    items = load_items(task)
    ids = {i["id"] for i in items}
    passes = [load_labels(task, w, ids=ids) for w in ("pass1", "pass2", "pass3")]
    assert len(passes[0]) == len(passes[1]) == len(ids)
    # the first batch had a third pass; the later ones (issue #41: items with a split unit) had none
    later_ids = {i["id"] for i in items if i.get("split_unit")}
    first = ids - later_ids
    final, summary = adjudicate(task, *[{k: v for k, v in p.items() if k in first} for p in passes])
    if later_ids:
        later, _ = adjudicate(task, *[{k: v for k, v in p.items() if k in later_ids} for p in passes[:2]], None,
                              no_third_pass=True)
        final = {**final, **later}
        by_batch = Counter(i.get("label_batch", 2) for i in items if i.get("split_unit"))
        record = json.loads((data_dir() / "labelling.json").read_text())
        assert by_batch == _LATER_BATCHES[task]
        assert {b: record[f"batch_{b}"]["items"][task] for b in by_batch} == _LATER_BATCHES[task]
        assert len(first) == (930 if task == "community" else 0)
    assert load_labels(task, "final", ids=ids) == final
    if task == "bold":  # no first batch, so no agreement file of its own
        return
    ids = first
    record = json.loads((data_dir() / f"{task}_agreement.json").read_text())
    assert record["adjudication"] == summary and record["n_items"] == len(ids)


def test_the_third_batch_section_quotes_the_recorded_agreement_and_counts():
    """The data card's third-batch tables are the figures of labelling.json and of the label files."""
    import re

    from biaslens.scorers.labelled import data_dir, load_labelled

    text = (data_dir() / "README.md").read_text("utf-8").split("## Third batch", 1)[1].split("\n## ", 1)[0]
    record = json.loads((data_dir() / "labelling.json").read_text())["batch_3"]["agreement_pass1_pass2"]
    rows = re.findall(r"^\| (community|bold) \| (toxic|sentiment|reply_type) \| (\d+) \| ([\d.]+) \(([\d.]+)-([\d.]+)\) "
                      r"\| ([\d.]+) \|$", text, re.M)
    assert len(rows) == 6
    for task, field, n, kappa, lo, hi, raw in rows:
        a = record[task][field]
        assert (int(n), float(kappa), float(lo), float(hi), float(raw)) == (a["n"], a["kappa"], *a["ci"], a["raw_agreement"])
    counts = re.findall(r"^\| (community|bold) \| (dev|test) \| (\d+) \| True (\d+), False (\d+), unresolved (\d+) \|", text, re.M)
    assert len(counts) == 4
    for task, split, n, t, f, u in counts:
        got = Counter(str(r["toxic"]) for r in load_labelled(task) if r.get("label_batch") == 3 and r["split"] == split)
        assert (int(n), int(t), int(f), int(u)) == (sum(got.values()), got["True"], got["False"], got["unresolved"])
