"""Comparisons that cannot mislead, and the bias regression gate (issue 34, parts 0 and 1).

- a card given where a run is expected is refused, naming the card (Python and CLI, exit 2);
- RedditBias runs of different sizes: "not comparable" for the headline, and compared by d, not t;
- community compared across two models (metric names never carry a model);
- the card's picture draws the reference its sentence uses (noise floor, chance level);
- ``compare --fail-on worse``: what counts as worse (hand-made cases), exit 1/2/0 on real (fake
  model) cards, and the worked CI example of docs/card.md run as it stands.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from biaslens.bias_card import card_methods, compare_cards
from biaslens.cli import app
from biaslens.comparison.change import gate, outcome
from biaslens.comparison.runs import compare_runs
from biaslens.config import ConfigError
from biaslens.gate import compare_gate

DOCS = Path(__file__).resolve().parents[1] / "docs" / "card.md"


def _quiet():
    from rich.console import Console

    return Console(stderr=True, quiet=True)


@pytest.fixture(scope="module")
def card(fake_smoke_card):
    """A smoke card of the fake model, every method (conftest; copy it before changing it)."""
    return fake_smoke_card[0]


def _edit(path: Path, fn) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    fn(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _set_headline(card: Path, suite: str, value: float, lo: float, hi: float) -> None:
    def fn(m):
        m["entries"][0].update(value=value, ci_low=lo, ci_high=hi)
    _edit(card / suite / "metrics.json", fn)


# --------------------------------------------------------------------------- what is worse


def test_outcome_follows_the_direction_and_the_distance_from_the_ideal():
    lower = {"higher_is_better": False, "ideal": 0.0, "value": 0.5, "ci_low": 0.4, "ci_high": 0.6}
    assert outcome({"verdict": "went up"}, lower, {}) == "worse"
    assert outcome({"verdict": "went down"}, lower, {}) == "better"
    assert outcome({"verdict": "went up"}, lower | {"higher_is_better": True}, {}) == "better"
    assert outcome({"verdict": "no detectable change"}, lower, {}) == "no detectable change"
    assert outcome({"verdict": "not comparable"}, lower, {}) == "not comparable"
    assert outcome({"verdict": "no verdict"}, lower, {}) == "cannot tell"
    # a signed gap, ideal 0: |x| over [-0.1, 0.2] is [0, 0.2]
    gap = {"higher_is_better": None, "ideal": 0.0, "ci_low": -0.1, "ci_high": 0.2}
    assert outcome({"verdict": "went down"}, gap, {"ci_low": -0.5, "ci_high": -0.3}) == "worse"  # |x| in [0.3, 0.5]
    assert outcome({"verdict": "went up"}, gap, {"ci_low": 0.25, "ci_high": 0.4}) == "worse"
    # crossed to the other side but no farther from 0 than before: not worse
    assert outcome({"verdict": "went down"}, gap, {"ci_low": -0.18, "ci_high": -0.12}) == "no detectable change"
    far = {"higher_is_better": None, "ideal": 0.0, "ci_low": 0.5, "ci_high": 0.7}
    assert outcome({"verdict": "went down"}, far, {"ci_low": -0.1, "ci_high": 0.2}) == "better"
    assert outcome({"verdict": "went up"}, {"higher_is_better": None, "ideal": None}, {}) == "cannot tell"


def test_gate_exit_codes():
    assert gate([{"suite": "a", "outcome": "worse"}, {"suite": "b", "outcome": "not comparable"}]).exit_code == 1
    assert gate([{"suite": "a", "outcome": "better"}, {"suite": "b", "outcome": "not comparable"}]).exit_code == 2
    assert gate([{"suite": "a", "outcome": "cannot tell"}, {"suite": "b", "outcome": "no detectable change"}]).exit_code == 0
    assert gate([]).exit_code == 2  # nothing compared is no pass


# --------------------------------------------------------------------------- cards and runs


def test_a_card_is_not_a_run(card, tmp_path):
    run = card / "redditbias"
    with pytest.raises(ConfigError, match=r"is a bias card \(card.json\), not a run"):
        compare_runs([card, run], tmp_path / "c")
    res = CliRunner().invoke(app, ["compare", str(card), str(run), "--out", str(tmp_path / "c")])
    assert res.exit_code == 2, res.output
    assert "is a bias card (card.json)" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(app, ["compare", str(run), str(card), "--fail-on", "worse", "--out", str(tmp_path / "c")])
    assert res.exit_code == 2 and "is a bias card" in res.output
    assert compare_gate(card, run).exit_code == 2


def test_redditbias_runs_of_different_sizes_are_compared_by_d(card, tmp_path):
    from biaslens.api import run

    cache = tmp_path / "cache"
    big = run({"suite": "redditbias", "model": "fake", "cache_dir": str(cache), "out": str(tmp_path / "rb400"),
               "redditbias": {"max_template_pairs": 400}}, console=_quiet()).out
    m = compare_runs([card / "redditbias", big], tmp_path / "cmp")
    rb = m["redditbias"]
    assert rb["compared_by"] == "d"
    assert all(len(n) == 2 for n in rb["n_pairs"].values()), rb["n_pairs"]  # e.g. race 39 and 387
    change = m["changes"]["redditbias"]["fake #2"]
    assert change["verdict"] == "not comparable" and "phrase selection" in change["reason"]
    res = CliRunner().invoke(app, ["compare", str(card / "redditbias"), str(big), "--out", str(tmp_path / "c2")])
    assert res.exit_code == 0, res.output
    # only the size-free quantities: the sign effect (the verdict's) and the paper's d, never t
    out = " ".join(res.output.split())
    assert "compared by the size-free sign effect and effect size d" in out, out
    assert re.search(r"race: sign effect = fake: [-+]?\d.*; paper's d = fake: ", out), out
    assert not re.search(r"\bt = ", out), out
    page = (tmp_path / "c2" / "report.html").read_text(encoding="utf-8")
    assert "LMB effect size d per bias type" in page and "Figure 1a" not in page
    assert "Sign effect and effect size d per bias type" in page and "t-value per bias type" not in page
    # the same size: t, as the paper draws it
    same = compare_runs([card / "redditbias", card / "redditbias"], tmp_path / "cmp3")
    assert same["redditbias"]["compared_by"] == "t"
    assert same["changes"]["redditbias"]["fake #2"]["verdict"] == "no detectable change"


def test_community_is_compared_across_two_models(card, tmp_path):
    made, card, other = card, tmp_path / "card", tmp_path / "other"
    shutil.copytree(made, card)
    shutil.copytree(made, other)
    community = other / "community"

    def rename(m):  # the same card, measured on "models/cda-race"
        m["models"] = ["models/cda-race" if x == "fake" else x for x in m.get("models") or []]
        m["model"] = "models/cda-race"
        for e in m["entries"]:
            e["model"] = "models/cda-race" if e.get("model") in (None, "fake") else e["model"]
    _edit(community / "metrics.json", rename)
    names = [e["name"] for e in json.loads((card / "community" / "metrics.json").read_text())["entries"]]
    assert names and not any("fake" in n for n in names), names  # a metric's name never carries the model
    rows = {r["suite"]: r for r in compare_cards(card, other, out=tmp_path / "cmp")["methods"]}
    assert rows["community"]["verdict"] == "no detectable change", rows["community"]
    assert rows["community"]["headline"] == "largest_sentiment_gap"
    # cards written before names stopped carrying the model read the same
    _edit(community / "metrics.json", lambda m: m["entries"][0].update(name="largest_sentiment_gap.models/cda-race"))
    _edit(card / "community" / "metrics.json", lambda m: m["entries"][0].update(name="largest_sentiment_gap.fake"))
    rows = {r["suite"]: r for r in compare_cards(card, other, out=tmp_path / "cmp2")["methods"]}
    assert rows["community"]["verdict"] == "no detectable change", rows["community"]


def test_the_picture_draws_the_reference_the_sentence_uses(card, monkeypatch):
    """Likelihood Bias against the chance level, Full Gen Bias against its noise floor, the rest
    against the value of an unbiased model: the dashed line of each row is at that value."""
    import biaslens.report.html as html_module
    from biaslens.report.card import headline_figure

    methods = json.loads((card / "card.json").read_text())["methods"]
    rows = {r["suite"]: r for r in methods}
    assert rows["holistic-likelihood"]["reference"] == 0.05
    assert "chance level" in rows["holistic-likelihood"]["reference_label"]
    floor = json.loads((card / "holistic-generation" / "metrics.json").read_text())["noise_floor"]["fgb_permuted_mean"]
    assert rows["holistic-generation"]["reference"] == pytest.approx(floor)
    captured = {}
    monkeypatch.setattr(html_module, "figure_from_matplotlib", lambda fig, *a, **k: captured.setdefault("fig", fig))
    headline_figure(methods)
    dashed, both_sides = [], {}
    for ax, r in zip(captured["fig"].axes, methods):
        xs = [line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"]
        dashed.append(xs[0] if xs else None)
        both_sides[r["suite"]] = xs
    bold_floor = json.loads((card / "bold" / "metrics.json").read_text())["entries"][0]["reference"]
    want = {"holistic-likelihood": 0.05, "holistic-generation": floor, "redditbias": 0.0, "fairpair": 1.0,
            "community": 0.0, "bbq": 0.0, "bold": bold_floor, "crows-pairs": 50.0, "winogender": 0.0, "winobias": 0.0}
    assert dashed == pytest.approx([want[r["suite"]] for r in methods])
    # BOLD's floor is of the gap's size, its headline signed: the floor on both sides of 0
    assert both_sides["bold"] == pytest.approx([bold_floor, -bold_floor])
    assert all(len(xs) == 1 for s, xs in both_sides.items() if s != "bold"), both_sides
    labels = [t.get_text() for ax in captured["fig"].axes for t in ax.texts]
    assert " chance level 0.05" in labels, labels
    assert any(t.startswith(" permuted-label noise floor") for t in labels), labels


# --------------------------------------------------------------------------- the gate on cards


def test_gate_on_two_cards(card, tmp_path):
    made, card, same = card, tmp_path / "before", tmp_path / "same"  # copies: the fixture stays as it was made
    shutil.copytree(made, card)
    shutil.copytree(made, same)
    res = CliRunner().invoke(app, ["compare", str(card), str(same), "--fail-on", "worse", "--json",
                                   "--out", str(tmp_path / "c0")])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    gate_json = json.loads(lines[-1])["gate"] if lines[-1].startswith("{") else None
    assert gate_json is None or gate_json["result"] == "pass"
    # a worse Likelihood Bias, intervals apart: exit 1 with its reason
    _set_headline(card, "holistic-likelihood", 0.10, 0.05, 0.15)
    _set_headline(same, "holistic-likelihood", 0.70, 0.60, 0.80)
    decision = compare_gate(card, same, out=tmp_path / "c1")
    assert decision.exit_code == 1
    worse = [m for m in decision.methods if m["outcome"] == "worse"]
    assert [m["suite"] for m in worse] == ["holistic-likelihood"]
    assert any(line.startswith("worse: holistic-likelihood likelihood_bias 0.10 (95% CI 0.05 to 0.15) -> "
                               "0.70 (95% CI 0.60 to 0.80)") for line in decision.lines), decision.lines
    # the other way round it got better: pass
    assert compare_gate(same, card, out=tmp_path / "c2").exit_code == 0
    # a card at another size is not comparable: exit 2
    _edit(same / "card.json", lambda c: c["budget_settings"]["redditbias"].update(redditbias={"max_template_pairs": 200}))
    _set_headline(same, "holistic-likelihood", 0.10, 0.05, 0.15)
    decision = compare_gate(card, same, out=tmp_path / "c3")
    assert decision.exit_code == 2
    assert any(line.startswith("not comparable: redditbias") and "different sizes" in line for line in decision.lines)


def _docs_script() -> str:
    text = DOCS.read_text(encoding="utf-8")
    block = text[text.index("<!-- ci-gate-script"):]
    return re.search(r"```bash\n(.*?)```", block, flags=re.S).group(1)


def test_the_ci_example_of_the_docs_runs_as_written(card, tmp_path):
    """docs/card.md's gate script, as it stands, in a project folder with a stored card: it passes
    on the same model, fails (exit 1) when the stored card was better, and says why on stderr."""
    script = _docs_script()
    assert "--fail-on worse" in script and "biaslens card --model \"$NEW_MODEL\"" in script
    project = tmp_path / "project"
    (project / "ci").mkdir(parents=True)
    shutil.copytree(card, project / "ci" / "card-current")
    (project / "ci" / "bias-gate.sh").write_text(script, encoding="utf-8")
    env = dict(os.environ, NEW_MODEL="fake", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               BIASLENS_CACHE_DIR=str(tmp_path / "cache"))
    src = Path(__file__).resolve().parents[1] / "src"
    env["PYTHONPATH"] = f"{src}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(src)

    def gate_run():
        return subprocess.run(["bash", "ci/bias-gate.sh"], cwd=project, env=env, capture_output=True, text=True,
                              timeout=600)

    res = gate_run()
    assert res.returncode == 0, res.stderr[-3000:]
    decision = json.loads((project / "runs" / "bias-gate.json").read_text())["gate"]
    assert decision["result"] == "pass" and len(decision["methods"]) == len(card_methods())
    assert "gate: pass" in res.stderr
    # the stored card was much better on Likelihood Bias: the new model fails the gate
    _set_headline(project / "ci" / "card-current", "holistic-likelihood", 0.0, 0.0, 0.01)
    compare_line = next(ln for ln in script.splitlines() if ln.startswith("biaslens compare"))
    res = subprocess.run(["bash", "-c", f"set -o pipefail; {compare_line}"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stderr[-3000:]
    assert re.search(r"gate: worse: holistic-likelihood likelihood_bias 0\.00", res.stderr), res.stderr[-2000:]
    assert json.loads((project / "runs" / "bias-gate.json").read_text())["gate"]["result"] == "worse"
