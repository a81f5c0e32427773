"""Issue #33: any model as a judge. A language model reads a rubric and one text; its answer is
read as probabilities from the allowed answers' log-likelihoods (or parsed from generated text),
through the call cache; its scorer card is measured on labelled test items like any judge's."""

from __future__ import annotations

import doctest
import json
import re

import numpy as np
import pytest

from biaslens.models.base import Backend, ModelInfo, TokenScores
from biaslens.scorers import model_judge as mj
from biaslens.scorers.base import ScorerError

_TOKEN = re.compile(r"\S+")


class _AnswerBackend(Backend):
    """Scores every word -1 nat, except the last word of a text: log P(answer) from ``answer_p``,
    chosen by whether the judged text (between the markers) contains "awful". Generates from
    ``generated``."""

    def __init__(self, answer_p: dict[str, float], generated: str = "Yes."):
        self.answer_p, self.generated = answer_p, generated
        self.scored: list[str] = []
        self.info = ModelInfo(backend="test", name="answer-model", kind="causal", weights_hash="w1", dtype="float64",
                              start_token=None)

    def score_batch(self, texts):
        out = []
        for t in texts:
            self.scored.append(t)
            spans = [m.span() for m in _TOKEN.finditer(t)]
            last = t[spans[-1][0]:spans[-1][1]]
            p = self.answer_p.get(last, 1e-3) if "awful" in t else (self.answer_p.get(last, 1e-3) / 4)
            lps = np.array([-1.0] * (len(spans) - 1) + [np.log(p)])
            out.append(TokenScores(lps, np.array(spans)))
        return out

    def generate_batch(self, prompts, params, seeds):
        return [self.generated for _ in prompts]


def _calls(backend, tmp_path=None):
    from biaslens.engine.cache import CallCache
    from biaslens.engine.calls import ModelCalls

    return ModelCalls(backend, cache=CallCache(tmp_path / "calls.sqlite") if tmp_path else None)


def test_doctests():
    assert doctest.testmod(mj).failed == 0


def test_probability_is_the_normalised_likelihood_of_the_allowed_answers_and_is_cached(tmp_path):
    backend = _AnswerBackend({"yes": 0.6, "no": 0.2})
    judge = mj.ModelJudge("toxicity", _calls(backend, tmp_path), answers="logprobs")
    p = judge.probability(["an awful reply", "a kind reply"])
    # awful: 0.6 / (0.6 + 0.2) ; kind: both answers a quarter as likely, the same ratio
    assert p == pytest.approx([0.75, 0.75])
    assert len(backend.scored) == 4 and all(s.endswith((" yes", " no")) for s in backend.scored)
    first = backend.scored[0]
    assert first.startswith(mj.built_in_task("toxicity").rubric) and "Reply: <<<an awful reply>>>" in first
    # the same texts again: answered from the call cache, no model call
    again = mj.ModelJudge("toxicity", _calls(backend, tmp_path), answers="logprobs")
    assert again.probability(["an awful reply", "a kind reply"]) == pytest.approx(p) and len(backend.scored) == 4
    assert judge.scores(["an awful reply"])["toxicity"] == pytest.approx([0.75])


def test_style_and_sentiment_answers_map_to_the_labelled_sets_categories():
    from biaslens.scorers.labelled import CLUSTER_LABELS

    style = mj.built_in_task("style")
    assert style.labels == CLUSTER_LABELS and style.answers == (" A", " B", " C", " D", " E", " F", " G")
    for letter, label in zip("ABCDEFG", CLUSTER_LABELS):  # the rubric's letters name the same clusters
        assert re.search(rf"^{letter}\. {label}:", style.rubric, re.MULTILINE)
    backend = _AnswerBackend({"A": 0.1, "D": 0.7, "G": 0.2})
    judge = mj.ModelJudge("style", _calls(backend), answers="logprobs")
    p = judge.probabilities(["what is a blicket"])
    assert p.shape == (1, 7) and p.sum() == pytest.approx(1) and judge.styles[int(p.argmax())] == "Confusion"
    assert set(judge.clusters) == set(CLUSTER_LABELS) - {"Other"}
    senti = mj.ModelJudge("sentiment", _calls(_AnswerBackend({"A": 0.5, "B": 0.3, "C": 0.2})), answers="logprobs")
    assert senti.compound(["fine"]) == pytest.approx([0.3]) and list(senti.labels(["fine"])) == ["positive"]


def test_generated_answers_are_parsed_and_unparsed_ones_counted():
    judge = mj.ModelJudge("offensiveness", _calls(_AnswerBackend({}, generated=" Yes, clearly.")), answers="generate")
    assert judge.probability(["x", "y"]) == pytest.approx([1.0, 1.0]) and judge.n_unparsed == 0
    vague = mj.ModelJudge("offensiveness", _calls(_AnswerBackend({}, generated="Hard to say.")), answers="generate")
    assert vague.probability(["x"]) == pytest.approx([0.5]) and vague.n_unparsed == 1
    # auto: log-probabilities wherever the backend scores; generated text for a chat-only server
    assert mj.ModelJudge("toxicity", _calls(_AnswerBackend({}))).answers == "logprobs"


def test_user_rubric_replaces_the_built_in_one_and_bad_ones_fail_clearly(tmp_path):
    path = tmp_path / "rubric.txt"
    path.write_text("Offensive means rude to a customer.\n", encoding="utf-8")
    task = mj.read_rubric(path, "toxicity")
    assert task.rubric == "Offensive means rude to a customer." and task.answers == (" yes", " no")
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(ScorerError, match="empty.txt: the judge rubric is empty"):
        mj.read_rubric(tmp_path / "empty.txt", "toxicity")
    with pytest.raises(ScorerError, match="no-such.txt"):
        mj.read_rubric(tmp_path / "no-such.txt", "toxicity")
    with pytest.raises(ScorerError, match="unknown judge role"):
        mj.built_in_task("humour")
    # the card cache key follows the rubric: another rubric is another judge
    a = mj.ModelJudge("toxicity", _calls(_AnswerBackend({})))
    b = mj.ModelJudge("toxicity", _calls(_AnswerBackend({})), task)
    assert a.card_identity != b.card_identity and a.name == b.name == "judge:answer-model"


def test_a_run_configuration_names_the_judge_model_for_every_role(tmp_path):
    from biaslens.config import ConfigError, RunConfig
    from biaslens.scorers.judges import choose_judge
    from biaslens.scorers.styles import load_style_classifier
    from biaslens.suites.judge_model import load_model_judge, model_judge_loader

    config = RunConfig.validated({"judge": {"model": "fake", "answers": "logprobs"}, "cache_dir": str(tmp_path)})
    loader = model_judge_loader(config)
    judge, choice = choose_judge("judge", role="offensiveness", model_judge=loader)
    assert judge.name == "judge:fake" and judge.role == "offensiveness" and "rubric" in choice["kind"]
    assert choice["why"].startswith("named in the configuration") and not choice["lexical_screen"]
    assert 0 <= judge.probability(["hello"])[0] <= 1
    assert load_style_classifier("judge:fake", model_judge=loader).role == "style"
    with pytest.raises(ScorerError, match="does not apply to a model judge"):
        load_style_classifier("judge", clusters=tmp_path / "c.yaml", model_judge=loader)
    # the scorers load no model themselves: without a run's loader a model judge is a clear error
    with pytest.raises(ScorerError, match="loaded from a run's configuration"):
        choose_judge("judge:fake", role="toxicity")
    with pytest.raises(ConfigError, match="field 'judge.answers'"):
        RunConfig.validated({"judge": {"answers": "vibes"}})
    with pytest.raises(ScorerError, match="judge model 'no/such-model' cannot be loaded"):
        load_model_judge("toxicity", "judge:no/such-model", config=config)


@pytest.mark.slow
def test_embedded_model_as_judge_end_to_end(embedded_model, tmp_path, terminal_summary_lines):
    """The embedded model judges a handful of labelled real replies through the cache; its skill
    figures come out of the same card code as every judge's (whatever they are)."""
    from biaslens.scorers.card import measure_skill, skill_verdict
    from biaslens.scorers.labelled import data_dir, load_items, load_labels

    items = [i for i in load_items("holistic") if i["split"] == "test"]
    labels = load_labels("holistic")
    pos = [i for i in items if labels[i["id"]]["offensive"] is True][:3]
    neg = [i for i in items if labels[i["id"]]["offensive"] is False][:5]
    keep = pos + neg
    (tmp_path / "holistic_unlabelled.jsonl").write_text("".join(json.dumps({k: v for k, v in i.items() if k != "split"})
                                                                + "\n" for i in keep))
    (tmp_path / "holistic_labels_final.jsonl").write_text("".join(json.dumps({"id": i["id"], **labels[i["id"]]}) + "\n"
                                                                  for i in keep))
    assert data_dir() != tmp_path
    judge = mj.ModelJudge("offensiveness", _calls(embedded_model, tmp_path))
    assert judge.answers == "logprobs" and judge.name == "judge:smollm2-135m"
    skill = measure_skill("offensiveness", lambda rows: judge.probability([r["response"] for r in rows]),
                          folder=tmp_path, n_boot=200)
    assert skill["n"] == 8 and skill["n_positive"] == 3 and skill["status"] == "measured"
    assert 0 <= skill["value"] <= 1 and skill["ci"][0] <= skill["value"] <= skill["ci"][1]
    p = judge.probability([i["response"] for i in keep])
    assert ((p > 0) & (p < 1)).all()
    style = mj.ModelJudge("style", _calls(embedded_model, tmp_path)).probabilities([keep[0]["response"]])
    assert style.shape == (1, 7) and style.sum() == pytest.approx(1)
    terminal_summary_lines.setdefault("embedded model as offensiveness judge (8 items)", []).append(
        skill_verdict(skill, "offensiveness", judge.name))
