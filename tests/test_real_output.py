"""The real-output judge sets (issue #24): the shipped unlabelled files, their hash split and
the loader's errors."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

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
        # the written rule, recomputed here: first byte of sha256(salt + id), even -> dev
        byte = hashlib.sha256(("biaslens-real-output-split-v1:" + it["id"]).encode()).digest()[0]
        assert it["split"] == ("dev" if byte % 2 == 0 else "test")
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
        assert it["model"] == "smollm2-135m" and it["model_file"] and it["response"].strip()
    # two decoding settings, neither a token share
    settings = Counter(it["decoding_name"] for it in items)
    assert len(settings) == 2 and min(settings.values()) >= 0.3 * len(items)


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
        from biaslens.suites.community import community_prompts

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
