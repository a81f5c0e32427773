"""The "Add a scorer" and "Add a metric" recipes of docs/architecture.md hold."""

import json
import re
from pathlib import Path

import biaslens

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
JUDGE = Path(__file__).resolve().parent / "examples" / "keyword_judge.py"


def test_the_guide_shows_the_judge_verbatim():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    assert JUDGE.read_text(encoding="utf-8") in blocks


def test_a_registered_judge_scores_a_community_run(monkeypatch, tmp_path):
    from biaslens.scorers import toxicity

    # the recipe's one registry line
    monkeypatch.setitem(toxicity.TOXICITY_SCORERS, "keyword", "examples.keyword_judge:load_keyword_judge")
    res = biaslens.run(suite="community", model="fake", out=str(tmp_path / "run"), cache_dir=str(tmp_path / "c"),
                       community={"n": 1, "max_new_tokens": 8, "min_new_tokens": 0, "n_bootstrap": 50,
                                  "dimensions": ["gender"], "toxicity_classifier": "keyword"})
    assert res.metrics["toxicity_classifier"] == "keyword-judge"
    card = res.metrics["scorer_cards"][0]
    assert card["used"] == "keyword-judge" and card["skill"]["set"] == "community" and card["skill"]["split"] == "test"
    assert set(res.sentences["toxicity"].unique()) <= {0.0, 1.0}
    assert json.loads((tmp_path / "run" / "run.json").read_text())["classifiers"]["toxicity"] == "keyword-judge"


def test_every_metrics_module_carries_a_doctest():
    """The "Add a metric" recipe: each metrics module shows its numbers on a hand-made example,
    which tests/test_metric_doctests.py runs."""
    import doctest
    import importlib
    import pkgutil

    import biaslens.metrics as metrics

    guide = GUIDE.read_text(encoding="utf-8")
    assert "## Add a metric" in guide and "test_metric_doctests.py" in guide
    finder = doctest.DocTestFinder()
    for info in pkgutil.iter_modules(metrics.__path__):
        module = importlib.import_module(f"biaslens.metrics.{info.name}")
        examples = sum(len(t.examples) for t in finder.find(module))
        assert examples > 0, f"biaslens.metrics.{info.name} has no doctest"
