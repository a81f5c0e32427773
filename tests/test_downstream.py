"""Downstream dialog tasks on small files in the MultiWOZ 2.0 and DSTC-7 formats written here."""

from __future__ import annotations

import json
import math

import pytest

from biaslens.methods.redditbias.downstream import (
    DownstreamDataError,
    distinct,
    entropy,
    f1_score,
    generation_metrics,
    read_dstc7,
    read_multiwoz,
    run_dst,
    run_generation,
)


def _multiwoz(path):
    def turn(text, state=None):
        return {"text": text, "metadata": state or {}}

    hotel = lambda area: {"hotel": {"semi": {"area": area, "stars": "not mentioned"}, "book": {"people": ""}}}  # noqa: E731
    data = {f"D{i}.json": {"goal": {}, "log": [turn("i need a hotel in the north"), turn("sure", hotel("north")),
                                              turn("actually the south please"), turn("ok", hotel("south"))]}
            for i in range(3)}
    data["D9.json"] = {"log": [turn("a hotel in the east"), turn("fine", hotel("east"))]}
    path.write_text(json.dumps(data))
    return path


def _dstc7(path, rows):
    path.write_text("".join(f"h\treddit\tc{i}\t1\t{c}\t{r}\n" for i, (c, r) in enumerate(rows)))
    return path


def test_multiwoz_reader_builds_positive_and_negative_slot_values(tmp_path):
    ex = read_multiwoz(_multiwoz(tmp_path / "data.json"), negatives_per_turn=1)
    pos = [e.text for e in ex if e.label == 1]
    assert "i need a hotel in the north hotel area north" in pos
    assert "sure actually the south please hotel area south" in pos  # previous system turn + user turn
    assert not any("not mentioned" in e.text for e in ex) and any(e.label == 0 for e in ex)
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(DownstreamDataError, match="MultiWOZ 2.0 format"):
        read_multiwoz(tmp_path / "bad.json")


def test_scores_by_hand():
    assert f1_score([1, 1, 0, 0], [1, 0, 1, 0]) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    hyps = [["a", "b", "a", "b"]]
    assert distinct(hyps, 2) == pytest.approx(2 / 3)  # ab, ba, ab
    assert entropy([["a", "b", "c", "d", "e"]], 4) == pytest.approx(math.log(2))  # two distinct 4-grams
    scores, skipped = generation_metrics(["the cat sat on the mat"], [["the cat sat on the mat", "a dog"]])
    assert scores["bleu_4"] == pytest.approx(1.0) and scores["nist_2"] > 0
    assert scores["meteor"] is not None or "meteor" in skipped


def test_dstc7_reader_and_errors(tmp_path):
    pairs = read_dstc7(_dstc7(tmp_path / "t.tsv", [("hi EOS how are you", "fine")]))
    assert pairs == [("hi how are you", "fine")]
    (tmp_path / "bad.tsv").write_text("only one column\n")
    with pytest.raises(DownstreamDataError, match="line 1"):
        read_dstc7(tmp_path / "bad.tsv")


def test_both_tasks_run_on_a_tiny_model(tmp_path, tiny_causal_lm):
    model = tiny_causal_lm(tmp_path / "m", "gpt2")
    mw = _multiwoz(tmp_path / "data.json")
    dst = run_dst(model, mw, mw, tmp_path / "dst", max_steps=2, batch_size=4)
    assert dst["suite"] == "downstream" and 0.0 <= dst["scores"]["f1"] <= 1.0
    assert dst["steps"] == 2 and dst["n_test"] == dst["n_train"] > 0
    rows = [("what is your favourite food EOS pizza", "i like pasta"), ("what is your favourite food EOS pizza", "soup")]
    f = _dstc7(tmp_path / "g.tsv", rows)
    gen = run_generation(model, f, f, tmp_path / "gen", max_steps=2, batch_size=2, max_new_tokens=5)
    assert gen["n_test_contexts"] == 1 and set(gen["scores"]) >= {"bleu_4", "nist_2", "meteor", "entropy_4", "dist_2"}
    assert json.loads((tmp_path / "gen" / "metrics.json").read_text())["task"] == "generation"
