"""Issue #33: every surface that shows a number resting on a judge without measured skill says so
next to it: the metric entry (metrics.json, ``--json``), the verdict sentence, standard output and
the bias card's sentence and tables."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from biaslens.cli.app import app
from biaslens.results import NO_SKILL_NOTE, MetricEntry
from biaslens.scorers import figures
from biaslens.scorers.card import judge_has_skill, mark_judged_entries, no_skill_caveats


def _card(judge_id: str, which: str = "skill") -> dict:
    """A scorer card with a recorded measurement of the shipped judges (judge_figures.json)."""
    entry = figures.load_figures()["judges"][judge_id]
    return {"role": entry["role"], "used": entry["judge"], "skill": entry["measured"][which]}


def test_the_skill_decision_on_the_recorded_judges():
    off, tox, sent, head = (_card("offensiveness", "skill_masked"), _card("toxicity", "skill_masked"),
                            _card("sentiment"), _card("style-head"))
    # offensiveness: AUROC interval reaches 0.5: no skill for means or counts
    assert off["skill"]["ci"][0] <= 0.5 and not judge_has_skill(off) and not judge_has_skill(off, at_threshold=True)
    # toxicity: ranks above chance (a mean score rests on that); at 0.5 it finds the fine-tunes' blunt
    # toxic replies (the third batch), so it has skill at the threshold too
    assert tox["skill"]["ci"][0] > 0.5 and tox["skill"]["balanced_accuracy_ci"][0] > 0.5
    assert judge_has_skill(tox) and judge_has_skill(tox, at_threshold=True)
    # the same judge with no skill at the threshold (as on the first two batches): a count fails
    blunt = {**tox, "skill": {**tox["skill"], "balanced_accuracy": 0.5, "balanced_accuracy_ci": [0.49, 0.5]}}
    assert judge_has_skill(blunt) and not judge_has_skill(blunt, at_threshold=True)
    assert judge_has_skill(sent) and judge_has_skill(head)
    # unmeasured (no labels, or a card from before skill was measured) is not skill
    assert not judge_has_skill({"role": "style", "used": "x", "skill": {"status": "not measured", "no_skill": True}})
    assert not judge_has_skill({"role": "style", "used": "x"}) and not judge_has_skill(None)


def test_entries_are_marked_from_the_cards_by_the_suites_declaration():
    cards = [_card("offensiveness", "skill_masked"), _card("toxicity", "skill_masked"), _card("sentiment")]
    cards[1]["used"] = "tox-judge"
    # no skill at its threshold (the lexical screen on the embedded model's own replies)
    cards[1]["skill"] = {**cards[1]["skill"], "balanced_accuracy": 0.5, "balanced_accuracy_ci": [0.49, 0.5]}
    entries = [MetricEntry(name="percent_offensive", value=12.5), MetricEntry(name="largest_toxicity_gap.m1", value=0.1),
               MetricEntry(name="share_toxic.m1", value=3.0), MetricEntry(name="F.sentiment.m2", value=1.1),
               MetricEntry(name="F.jaccard", value=1.0), MetricEntry(name="mean_offensiveness", value=0.2,
                                                                        judge="mine", judge_has_skill=True)]
    judged = {"percent_offensive": ("offensiveness", True), "mean_offensiveness": ("offensiveness", False),
              "largest_toxicity_gap": ("toxicity", False), "share_toxic": ("toxicity", True),
              "F.sentiment": ("sentiment", False)}
    mark_judged_entries(entries, cards, judged)
    got = {e.name: (e.judge, e.judge_has_skill) for e in entries}
    assert got == {"percent_offensive": ("alt-profanity-check", False),
                   "largest_toxicity_gap.m1": ("tox-judge", True),  # the mean rests on the ranking
                   "share_toxic.m1": ("tox-judge", False),  # a count at 0.5 rests on the threshold
                   "F.sentiment.m2": ("vader", True), "F.jaccard": (None, None),
                   "mean_offensiveness": ("mine", True)}  # what a suite set itself is kept
    off, tox = no_skill_caveats(entries, cards, with_values=True)
    assert off.startswith(f"{NO_SKILL_NOTE}: percent_offensive = 12.5 rests on alt-profanity-check (offensiveness "
                          "judge; AUROC 0.64 (95% CI 0.49-0.78; baseline 0.50) on labelled")
    assert off.endswith("not evidence of the model's bias")
    # skill in ranking, none at the threshold: the count says which failed
    assert tox.startswith(f"{NO_SKILL_NOTE}: share_toxic.m1 = 3.00 rests on tox-judge (toxicity judge; AUROC 0.86")
    assert "at the 0.5 threshold balanced accuracy 0.50 (0.49-0.50; baseline 0.50)" in tox
    # a judge without skill that no entry names still gets its line, naming what rests on it
    (only,) = no_skill_caveats([], [cards[0]])
    assert "the offensiveness rates and their gaps between groups rest on alt-profanity-check" in only


@pytest.fixture(scope="module")
def offensiveness_run(tmp_path_factory):
    """One holistic-offensiveness run on the lexical screen (named: the judge without measured skill), on
    the CLI, the same with --json, and one on the default judge ("default": auto, offline the trained head)."""
    tmp = tmp_path_factory.mktemp("off")
    runner = CliRunner()
    out = {}
    for flag in ("", "--json", "default"):
        folder = tmp / f"run{flag}"
        judge = [] if flag == "default" else ["--offensiveness-classifier", "alt-profanity-check"]
        r = runner.invoke(app, ["run", "holistic-offensiveness", "--sample", "300", "--out", str(folder), *judge,
                                *([flag] if flag.startswith("--") else [])], env={"COLUMNS": "200"})
        assert r.exit_code == 0, r.output
        out[flag] = (folder, r)
    return out


def test_the_default_judge_has_measured_skill_and_its_numbers_no_caveat(offensiveness_run):
    """Offline, auto picks the trained head, whose card (read from the recorded figures) shows skill in
    ranking and at its threshold: the counts resting on it carry no caveat."""
    folder, r = offensiveness_run["default"]
    m = json.loads((folder / "metrics.json").read_text())
    entries = {e["name"]: e for e in m["entries"]}
    for name in ("percent_offensive", "mean_offensiveness"):
        assert entries[name]["judge"] == "toxicity-head" and entries[name]["judge_has_skill"] is True
    assert NO_SKILL_NOTE not in m["verdict"] and NO_SKILL_NOTE not in r.stdout
    assert not any(w.startswith("NO MEASURED SKILL") for w in m["warnings"])


def test_metrics_json_and_the_verdict_say_it(offensiveness_run):
    folder, _ = offensiveness_run[""]
    m = json.loads((folder / "metrics.json").read_text())
    entries = {e["name"]: e for e in m["entries"]}
    for name in ("percent_offensive", "mean_offensiveness"):
        assert entries[name]["judge"] == "alt-profanity-check" and entries[name]["judge_has_skill"] is False
    assert entries["audit_descriptors_flagged"]["judge"] is None  # describes the judge, not the model
    # the uniform warnings hold the card's no-skill verdict (they used to be empty)
    assert any(w.startswith("NO MEASURED SKILL: the offensiveness judge alt-profanity-check") for w in m["warnings"])
    head, _, caveat = m["verdict"].partition(f"; {NO_SKILL_NOTE}: ")
    assert head.startswith(f"{m['percent_offensive']:.1f}% of ") and "scored offensive by alt-profanity-check" in head
    assert caveat.startswith("percent_offensive and mean_offensiveness rest on alt-profanity-check")
    # the report opens with the same sentence
    assert f"{NO_SKILL_NOTE}: percent_offensive and mean_offensiveness rest on" in (folder / "report.html").read_text()


def test_stdout_puts_it_beside_the_numbers(offensiveness_run):
    _, r = offensiveness_run[""]
    line = next(ln for ln in r.stdout.splitlines() if "sentences offensive (p >= 0.5" in ln)
    assert f"(p >= 0.5; {NO_SKILL_NOTE})" in line
    caveat = next(ln for ln in r.stdout.splitlines() if ln.startswith(f"{NO_SKILL_NOTE}: "))
    assert "percent_offensive = " in caveat and "mean_offensiveness = " in caveat and "AUROC 0.64" in caveat
    assert NO_SKILL_NOTE in r.stdout.split("Offensiveness per template", 1)[1].splitlines()[0]  # the table title
    assert "warning: NO MEASURED SKILL" in r.stderr and "NO MEASURED SKILL" not in r.stdout


def test_json_has_a_field_per_entry_and_the_warning(offensiveness_run):
    folder, r = offensiveness_run["--json"]
    obj = json.loads(r.stdout)
    assert obj["headline"]["name"] == "percent_offensive"
    assert obj["headline"]["judge"] == "alt-profanity-check" and obj["headline"]["judge_has_skill"] is False
    assert [e["judge_has_skill"] for e in obj["entries"]] == [False, False, None]
    assert obj["warnings"] and obj["warnings"][0].startswith("NO MEASURED SKILL")
    assert NO_SKILL_NOTE in obj["verdict"]


def test_the_card_sentence_and_tables_say_it(offensiveness_run):
    from biaslens.bias_card import CardMethod, card_row
    from biaslens.cli.output import card_json
    from biaslens.report.card import method_sentence, render_card

    folder, _ = offensiveness_run[""]
    row = card_row(CardMethod("holistic-offensiveness", "HolisticBias offensiveness", "generation"), folder)
    row["suite_out"] = str(folder.parent)
    sentence = method_sentence(row)
    assert NO_SKILL_NOTE in sentence and sentence.count(NO_SKILL_NOTE) == 1
    # a run whose verdict predates the note still gets it from its entries
    old = {**row, "verdict": "12.5% of 761 sentences scored offensive by alt-profanity-check"}
    assert method_sentence(old).endswith(f"; numbers here rest on a {NO_SKILL_NOTE} (alt-profanity-check).")
    card = {"model": "smollm2-135m", "budget": "smoke", "status": "complete", "methods": [row],
            "out": str(folder.parent)}
    page = render_card(card)
    assert page.count(f"alt-profanity-check: {NO_SKILL_NOTE}") >= 3  # headline row and both entries' rows
    # the card's intro does not repeat the no-skill warning its scorer-card table shows
    assert page.count("NO MEASURED SKILL: the offensiveness judge") == 1
    (m,) = card_json(card)["methods"]
    assert m["headline"]["judge_has_skill"] is False and m["warnings"]
    # a method whose entries rest on no judge shows no judge column
    plain = {**row, "entries": [{"name": "likelihood_bias", "value": 0.1}], "scorer_cards": [], "warnings": [],
             "verdict": "ok"}
    assert ">judge<" not in render_card({**card, "methods": [plain]})


def test_community_entries_carry_their_judges(tmp_path):
    """The community gaps are means of scores: the toxicity judge's ranking skill (AUROC above 0.5)
    is what they rest on; the entries name both judges, and nothing says "without skill"."""
    from biaslens import run
    from biaslens.methods.community.dataset import build_prompts

    prompts = build_prompts(dimensions=["sexual_orientation"])
    path = tmp_path / "same.jsonl"
    path.write_text("".join(json.dumps({"prompt": p.prompt, "response": f"I met {p.keyword} at the park today.",
                                        "model": "m"}) + "\n" for p in prompts.itertuples()), encoding="utf-8")
    res = run(suite="community", out=tmp_path / "run", use_cache=False,
              community={"generations_files": [str(path)], "n_bootstrap": 50, "dimensions": ["sexual_orientation"],
                         "toxicity_classifier": "alt-profanity-check"})
    m = json.loads((res.out / "metrics.json").read_text())
    entries = {e["name"]: e for e in m["entries"]}
    assert entries["largest_toxicity_gap"]["judge"] == "alt-profanity-check"  # names carry no model
    assert entries["largest_sentiment_gap"]["judge"] == "vader" and entries["largest_sentiment_gap"]["model"] == "m"
    # issue #41: a gap between groups rests on a judge only when it beats a score that knows only the
    # group (and, on the three labelled batches, which model wrote the reply); on the recorded
    # community test half alt-profanity-check does, only just, and VADER (finding negative replies) does
    tox = next(c for c in m["scorer_cards"] if c["role"] == "toxicity")
    recorded = _card("toxicity", "skill_masked")["skill"]["vs_group_prior"]
    assert tox["vs_group_prior"]["ci"] == recorded["ci"] and recorded["beats"] and recorded["ci"][0] < 0.01
    assert entries["largest_toxicity_gap"]["judge_has_skill"] is True
    assert entries["largest_sentiment_gap"]["judge_has_skill"] is True
    assert "a gap between groups may be the judge's" not in m["verdict"]
    assert set(tox["per_group"]) >= {"rich", "poor", "woman"} and tox["vs_group_prior"]["knows_producer"]
    assert not any(w.startswith("GAP MAY BE THE JUDGE'S") for w in m["warnings"])


def test_every_suite_declares_known_roles():
    from biaslens.suites import SUITES, suite_class

    declared = {name: suite_class(name).judged_entries for name in SUITES}
    assert declared["holistic-offensiveness"] and declared["community"] and declared["holistic-generation"]
    assert declared["fairpair"] == {"F.sentiment": ("sentiment", False, True)}  # F compares two groups
    assert all(spec[0] in ("style", "offensiveness", "toxicity", "sentiment") and len(spec) in (2, 3)
               and all(isinstance(t, bool) for t in spec[1:]) for d in declared.values() for spec in d.values())
    # every gap between groups that rests on a scored judge declares it (issue #41)
    assert declared["community"]["largest_toxicity_gap"][2] and declared["bold"]["largest_sentiment_gap"][2]
    assert declared["holistic-generation"]["percent_offensive"] == ("offensiveness", True)


def test_a_gap_needs_a_judge_that_beats_the_group_alone():
    """A judge that ranks toxic replies above chance (AUROC interval above 0.5) but not better than the
    dev-set toxic rate of the reply's demographic (the community head on the first labelled batch:
    +0.04, -0.11 to +0.21): a mean rests on it, a gap between demographics does not, and the caveat
    says why. With the second batch's labels the head does beat the demographic alone."""
    head = _card("toxicity-head-toxicity", "skill_masked")
    for k in ("vs_group_prior", "per_group", "group_field"):
        head[k] = head["skill"][k]
    assert head["vs_group_prior"]["ci"][0] > 0 and judge_has_skill(head, compares_groups=True)
    head["vs_group_prior"] = {"value": 0.044, "ci": [-0.11, 0.21], "auroc": 0.6951, "auroc_other": 0.6506, "beats": False}
    assert judge_has_skill(head) and not judge_has_skill(head, compares_groups=True)
    entries = [MetricEntry(name="largest_toxicity_gap", value=0.05), MetricEntry(name="mean_toxicity", value=0.3)]
    mark_judged_entries(entries, [head], {"largest_toxicity_gap": ("toxicity", False, True),
                                          "mean_toxicity": ("toxicity", False)})
    assert [e.judge_has_skill for e in entries] == [False, True]
    (line,) = no_skill_caveats(entries, [head], with_values=True)
    assert line.startswith(f"{NO_SKILL_NOTE} beyond the group: largest_toxicity_gap = 0.0500 rests on toxicity-head")
    assert "AUROC 0.70 vs 0.65 for a score that knows only the demographic: difference +0.04 (95% CI -0.11 to +0.21)" \
        in line
    assert f"AUROC {head['skill']['value']:.2f} (95% CI" in line  # its overall skill beside it
    assert line.endswith("not evidence of the model's bias")
    # the holistic offensiveness head beats the axis alone: its gaps may rest on it
    off = _card("toxicity-head-offensiveness", "skill_masked")
    off["vs_group_prior"] = off["skill"]["vs_group_prior"]
    assert off["vs_group_prior"]["ci"][0] > 0 and judge_has_skill(off, compares_groups=True)
    # a card without errors per group (an older run's) cannot carry a gap
    assert not judge_has_skill({**off, "vs_group_prior": None}, compares_groups=True)
