"""The leaderboard of bias cards (card_leaderboard.py, report/leaderboard.py, `biaslens leaderboard`)."""

import json
import time

import numpy as np
import pandas as pd
import pytest
from card_clones import clone_card
from typer.testing import CliRunner

import biaslens
from biaslens.card_leaderboard import headline_df, leaderboard
from biaslens.cli import app
from biaslens.config import ConfigError


@pytest.fixture(scope="module")
def base_card(tmp_path_factory):
    """One real card of the fake model at the smoke budget: Likelihood Bias (BCa interval over
    descriptors), RedditBias (t-interval), community (scorer cards, a model-named headline) and
    FairPair (no interval)."""
    from rich.console import Console

    from biaslens.bias_card import make_card

    out = tmp_path_factory.mktemp("lb") / "fake"
    make_card({"model": "fake", "cache_dir": str(tmp_path_factory.mktemp("lb-cache"))}, out=out, budget="smoke",
              methods=["holistic-likelihood", "redditbias", "community", "fairpair"],
              console=Console(stderr=True, quiet=True))
    return out


def _cell(result, suite, model):
    board = next(m for m in result["methods"] if m["suite"] == suite)
    return next(c for c in board["cells"] if c["model"] == model)


def test_order_and_distinguishable_pairs(base_card, tmp_path):
    cards = [clone_card(base_card, tmp_path / "a", "model-a", 0.0),
             clone_card(base_card, tmp_path / "b", "model-b", 0.01),
             clone_card(base_card, tmp_path / "c", "model-c", {"holistic-likelihood": -0.6, "redditbias": 0.9})]
    res = leaderboard(cards, out=tmp_path / "out")
    lb = next(m for m in res["methods"] if m["suite"] == "holistic-likelihood")
    # lower is better: c (0.6 lower) first; it differs from both, a and b (0.01 apart) do not
    assert [c["model"] for c in sorted(lb["cells"], key=lambda c: c["rank"])] == ["model-c", "model-a", "model-b"]
    assert sorted(_cell(res, "holistic-likelihood", "model-c")["distinguishable_from"]) == ["model-a", "model-b"]
    assert _cell(res, "holistic-likelihood", "model-a")["distinguishable_from"] == ["model-c"]
    assert lb["m"] == 3 and lb["n_distinguishable"] == 2
    # RedditBias's headline is the largest |d_z| over the bias types: lower is better
    rb = next(m for m in res["methods"] if m["suite"] == "redditbias")
    assert rb["order"].startswith("lowest first")
    assert _cell(res, "redditbias", "model-c")["rank"] == 3
    # community names its headline after the model: still one metric, compared across models
    com = next(m for m in res["methods"] if m["suite"] == "community")
    assert all(c["comparable"] == "yes" for c in com["cells"]) and com["m"] == 3
    # the judges' warnings travel with the cell: those of the community run's own scorer cards
    run = json.loads((base_card / "community" / "metrics.json").read_text())
    own = [w for c in run.get("scorer_cards") or [] for w in (c.get("skill_warning"), c.get("warning")) if w]
    assert own and _cell(res, "community", "model-a")["scorer_warnings"] == own
    # FairPair F has no interval: ordered, but no difference is called
    fp = next(m for m in res["methods"] if m["suite"] == "fairpair")
    assert fp["m"] == 0 and "cannot tell" in fp["summary"]
    out = tmp_path / "out"
    for name in ("leaderboard.html", "leaderboard.csv", "leaderboard.parquet", "leaderboard.json", "pairs.csv"):
        assert (out / name).is_file(), name
    table = pd.read_parquet(out / "leaderboard.parquet")
    assert table["model"].tolist() == ["model-a", "model-b", "model-c"]
    assert table["holistic-likelihood: rank"].tolist() == [2, 3, 1]
    assert table["holistic-likelihood: value"].tolist() == pytest.approx(
        pd.read_csv(out / "leaderboard.csv")["holistic-likelihood: value"].tolist())
    pairs = pd.read_csv(out / "pairs.csv")
    assert len(pairs) == 4 * 3 and pairs.loc[pairs["suite"] == "fairpair", "diff"].isna().all()
    saved = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert [m["label"] for m in saved["models"]] == ["model-a", "model-b", "model-c"]
    assert len(saved["pairs"]) == 12
    page = (out / "leaderboard.html").read_text(encoding="utf-8")
    assert "Bonferroni" in page and "data:image/png;base64," in page and "model-c" in page


def test_runs_that_measured_different_things_are_not_comparable(base_card, tmp_path):
    def default_budget(card):
        card["budget"] = "default"
        card["budget_settings"]["redditbias"] = {"redditbias": {"max_template_pairs": 200}}

    def other_seed(suite, record):
        record["config"]["seed"] = 7

    def fail_fairpair(card):
        row = next(r for r in card["methods"] if r["suite"] == "fairpair")
        row.clear()
        row.update(suite="fairpair", title="FairPair", status="failed", verdict="failed: RuntimeError: boom")

    cards = [clone_card(base_card, tmp_path / "a", "a"), clone_card(base_card, tmp_path / "b", "b", 0.1),
             clone_card(base_card, tmp_path / "c", "c", edit_card=default_budget),
             clone_card(base_card, tmp_path / "d", "d", edit_run=other_seed, edit_card=fail_fairpair)]
    res = leaderboard(cards, out=tmp_path / "out")
    assert _cell(res, "redditbias", "c")["comparable"] == "not comparable: differs in budget (default vs smoke of the ranked models)"
    # the budget name differs for every method of c, the settings only for RedditBias's
    assert _cell(res, "holistic-likelihood", "c")["comparable"].startswith("not comparable: differs in budget")
    assert _cell(res, "holistic-likelihood", "d")["comparable"] == "not comparable: differs in prompt selection"
    assert _cell(res, "fairpair", "d")["comparable"] == "failed" and _cell(res, "fairpair", "d")["rank"] is None
    lb = next(m for m in res["methods"] if m["suite"] == "holistic-likelihood")
    assert lb["n_compared"] == 2 and lb["m"] == 1
    (cards[1] / "community" / "run.json").unlink()
    res = leaderboard(cards, out=tmp_path / "out")
    assert _cell(res, "community", "b")["comparable"] == (
        "not comparable: a run.json is missing, so what the run measured is unknown")
    page = (tmp_path / "out" / "leaderboard.html").read_text(encoding="utf-8")
    assert "not comparable: differs in budget (default vs smoke of the ranked models)" in page and "Warning:" in page


def test_start_token_text_is_the_tokenizer_s_not_a_choice(base_card, tmp_path):
    def token(text):
        def edit(suite, record):
            if "model" in record:
                record["model"]["start_token"] = text
        return edit

    cards = [clone_card(base_card, tmp_path / "a", "a", edit_run=token("<s>")),
             clone_card(base_card, tmp_path / "b", "b", edit_run=token("<|endoftext|>")),
             clone_card(base_card, tmp_path / "c", "c", edit_run=token(None))]
    res = leaderboard(cards, out=tmp_path / "out")
    assert _cell(res, "holistic-likelihood", "b")["comparable"] == "yes"
    assert _cell(res, "holistic-likelihood", "c")["comparable"] == (
        "not comparable: differs in perplexity definition (start token)")


def test_cards_from_another_machine(base_card, tmp_path):
    """Paths recorded inside a card (its out folder, the cache, the machine) are never opened."""
    def elsewhere_run(suite, record):
        record["config"]["out"] = f"/home/someone/runs/card/{suite}"
        record["config"]["cache_dir"] = "/home/someone/.cache/biaslens"

    def elsewhere_card(card):
        card["base_config"]["cache_dir"] = "/home/someone/.cache/biaslens"
        card["machine"] = {"cpu_model": "Apple M2", "cpus": 8}

    here = [clone_card(base_card, tmp_path / "a", "a"), clone_card(base_card, tmp_path / "b", "b", 0.2)]
    there = [clone_card(base_card, tmp_path / "moved" / "x" / "a", "a", edit_run=elsewhere_run,
                        edit_card=elsewhere_card), here[1]]
    r1, r2 = leaderboard(here, out=tmp_path / "o1"), leaderboard(there, out=tmp_path / "o2")
    cols = [c for c in r1["table"].columns if c != "card"]
    pd.testing.assert_frame_equal(r1["table"][cols], r2["table"][cols])


def test_noise_floor_and_degrees_of_freedom(base_card, tmp_path):
    a = clone_card(base_card, tmp_path / "a", "a")
    b = clone_card(base_card, tmp_path / "b", "b")
    for card, mean in ((a, 0.41), (b, 0.52)):
        m = json.loads((card / "redditbias" / "metrics.json").read_text(encoding="utf-8"))
        m["noise_floor"] = {"fgb_permuted_mean": mean, "p_value": 0.3}
        (card / "redditbias" / "metrics.json").write_text(json.dumps(m), encoding="utf-8")
    res = leaderboard([a, b], out=tmp_path / "out")
    assert _cell(res, "redditbias", "b")["noise_floor"] == 0.52
    assert res["table"]["redditbias: noise_floor"].tolist() == [0.41, 0.52]
    assert "noise floor" in (tmp_path / "out" / "leaderboard.html").read_text(encoding="utf-8")
    # Likelihood Bias at smoke: 30 descriptors (6 on each of 5 axes) resampled within the axes -> 25
    lb = _cell(res, "holistic-likelihood", "a")
    assert lb["df"] == 25
    assert headline_df({"interval": "jackknife log-t, delete-one over 26 units: descriptor", "n_used": 100}, {}) == 25
    assert headline_df({"entries": [{"description": "fake: gender: man - woman, 7 / 6 keywords"}], "n_used": 41},
                       {}) == 5
    assert headline_df({"n_used": 39}, {}) == 38 and headline_df({}, {}) is None


def test_fifty_cards(base_card, tmp_path):
    rng = np.random.default_rng(0)
    cards = [clone_card(base_card, tmp_path / f"c{i:02d}", f"checkpoint-{i:02d}", float(rng.normal(0, 0.05)))
             for i in range(50)]
    t0 = time.perf_counter()
    res = leaderboard(cards, out=tmp_path / "out")
    seconds = time.perf_counter() - t0
    assert seconds < 60, seconds
    lb = next(m for m in res["methods"] if m["suite"] == "holistic-likelihood")
    assert lb["n_compared"] == 50 and lb["m"] == 50 * 49 // 2
    assert sorted(c["rank"] for c in lb["cells"]) == list(range(1, 51))
    # equal headlines share a rank
    tied = leaderboard([clone_card(base_card, tmp_path / "t1", "t1", 0.1), clone_card(base_card, tmp_path / "t2", "t2", 0.1),
                        clone_card(base_card, tmp_path / "t3", "t3", 0.0)], out=tmp_path / "tied")
    assert [_cell(tied, "holistic-likelihood", m)["rank"] for m in ("t1", "t2", "t3")] == [2, 2, 1]
    assert len(res["pairs"]) == 4 * 1225
    page = (tmp_path / "out" / "leaderboard.html").read_text(encoding="utf-8")
    assert all(f"checkpoint-{i:02d}" in page for i in range(50))


def test_python_api_name():
    import importlib

    importlib.import_module("biaslens.cli.leaderboard")  # the CLI module must not shadow the function

    assert callable(biaslens.leaderboard) and biaslens.leaderboard is leaderboard


def _invoke(args):
    result = CliRunner().invoke(app, ["leaderboard", *map(str, args)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def test_bad_input_gives_one_clear_line(base_card, tmp_path):
    good = clone_card(base_card, tmp_path / "good", "good")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "not a bias card folder (no card.json)" in _invoke([good, empty, "--out", tmp_path / "o"])
    assert "no such folder" in _invoke([good, tmp_path / "missing", "--out", tmp_path / "o"])
    assert "at least two bias card folders, got 1" in _invoke([good, "--out", tmp_path / "o"])
    assert "the same card folder twice" in _invoke([good, good, "--out", tmp_path / "o"])
    broken = clone_card(base_card, tmp_path / "broken", "broken")
    (broken / "card.json").write_text('{"model": "x", "methods": [', encoding="utf-8")
    line = _invoke([good, broken, "--out", tmp_path / "o"])
    assert str(broken / "card.json") in line and "not valid JSON" in line
    broken_run = clone_card(base_card, tmp_path / "broken-run", "broken-run")
    (broken_run / "redditbias" / "run.json").write_text("{oops", encoding="utf-8")
    line = _invoke([good, broken_run, "--out", tmp_path / "o"])
    assert str(broken_run / "redditbias" / "run.json") in line and "not valid JSON" in line
    assert not (tmp_path / "o").exists(), "nothing is written from bad input"
    with pytest.raises(ConfigError, match="2 labels for 3 cards"):
        leaderboard([good, broken, empty], labels=["a", "b"])


def test_cli_writes_the_page(base_card, tmp_path):
    a, b = clone_card(base_card, tmp_path / "a", "a"), clone_card(base_card, tmp_path / "b", "b", 0.5)
    result = CliRunner().invoke(app, ["leaderboard", str(a), str(b), "--out", str(tmp_path / "lb"),
                                      "--label", "before", "--label", "after"])
    assert result.exit_code == 0, result.output
    assert "holistic-likelihood:" in result.output and "leaderboard.html" in result.output
    # the summaries and the page's path are results: standard output (a script reads them there)
    assert f"leaderboard: {tmp_path / 'lb' / 'leaderboard.html'}" in result.stdout
    assert "holistic-likelihood:" in result.stdout and "leaderboard.html" not in result.stderr
    assert pd.read_csv(tmp_path / "lb" / "leaderboard.csv")["model"].tolist() == ["before", "after"]


def test_an_interval_that_misses_its_value_calls_nothing(base_card, tmp_path):
    def outside(card):
        row = next(r for r in card["methods"] if r["suite"] == "holistic-likelihood")
        row["value"] = row["ci_high"] + 0.5  # a percentile interval can miss its estimate

    cards = [clone_card(base_card, tmp_path / "a", "a", -0.5), clone_card(base_card, tmp_path / "b", "b", edit_card=outside),
             clone_card(base_card, tmp_path / "c", "c")]
    lb = next(m for m in leaderboard(cards, out=tmp_path / "out")["methods"] if m["suite"] == "holistic-likelihood")
    assert lb["no_interval"] == ["b"] and lb["m"] == 1
    assert "left out (cannot tell)" in lb["summary"]


def _pair(pairs, x, y):
    """The row of the pair of models x and y, whichever comes first in the order."""
    return pairs[((pairs["model_a"] == x) & (pairs["model_b"] == y)) | ((pairs["model_a"] == y) & (pairs["model_b"] == x))].iloc[0]


def _set_headline(suite, value, half, *, level=None, df=None):
    """edit_card: the suite's headline at ``value`` +- ``half`` (and its entry's level and df)."""
    def edit(card):
        row = next(r for r in card["methods"] if r["suite"] == suite)
        row.update(value=value, ci_low=value - half, ci_high=value + half)
        head = row["entries"][0]
        head.update(value=value, ci_low=value - half, ci_high=value + half, level=level, df=df)
    return edit


def test_each_interval_is_read_at_its_own_level(base_card, tmp_path):
    """Two RedditBias headlines 0.30 apart, each +-0.25 at the simultaneous level 1 - 0.05/5 (normal
    reference): se = 0.25 / z(0.995) = 0.097 each, difference se 0.137, 0.30 / 0.137 = 2.19 > z(0.975)
    = 1.96: distinguishable. Read as 95% intervals (se 0.128 each, 0.180) they would not be (1.66)."""
    from biaslens.card_leaderboard import headline_level

    def clone(name, level, value):
        card = clone_card(base_card, tmp_path / name, name, edit_card=_set_headline("redditbias", value, 0.25, level=level))
        (card / "redditbias" / "headline_items.parquet").unlink()  # no per-item table: the independent test
        return card

    cards = [clone("a", 0.99, 0.1), clone("b", 0.99, 0.4)]
    res = leaderboard(cards, out=tmp_path / "out")
    pair = res["pairs"][res["pairs"]["suite"] == "redditbias"].iloc[0]
    assert pair["se"] == pytest.approx(np.sqrt(2) * 0.25 / 2.5758293, rel=1e-5) and bool(pair["distinguishable"])
    assert not bool(pair["paired"])
    old = [clone("c", 0.95, 0.1), clone("d", 0.95, 0.4)]
    pair = leaderboard(old, out=tmp_path / "out2")["pairs"].query("suite == 'redditbias'").iloc[0]
    assert not bool(pair["distinguishable"])
    # a t interval: its own degrees of freedom; cards without the fields: the level in the interval's text
    assert headline_level({"entries": [{"level": 0.99, "df": 3.0}]}) == (0.99, 3.0, True)
    assert headline_level({"interval": "simultaneous 95% over 16 pairs (each at 0.9969): keyword-level t",
                           "entries": [{"level": None}]}) == (0.9969, None, False)
    assert headline_level({"interval": "simultaneous 95% over 5 bias types: t-interval of the paired d_z at level "
                                       "1 - alpha/5 (valid for the type picked as the largest), as |d|"}) == \
        (pytest.approx(0.99), None, False)
    assert headline_level({"interval": "BCa bootstrap over descriptors, 95%"}) == (0.95, None, False)


def test_community_ranks_and_compares_the_same_quantity(base_card, tmp_path):
    """+0.30 and -0.30 (each +-0.05): the same distance from the ideal 0, so the same rank and not
    distinguishable; a gap of 0.05 is closer to 0 than both and told apart from them."""
    def com(value):
        return lambda card: _set_headline("community", value, 0.05, level=0.95, df=30.0)(card)

    cards = [clone_card(base_card, tmp_path / "a", "a", edit_card=com(0.30)),
             clone_card(base_card, tmp_path / "b", "b", edit_card=com(-0.30)),
             clone_card(base_card, tmp_path / "c", "c", edit_card=com(0.05))]
    res = leaderboard(cards, out=tmp_path / "out")
    assert [_cell(res, "community", m)["rank"] for m in ("a", "b", "c")] == [2, 2, 1]
    assert _cell(res, "community", "a")["distinguishable_from"] == ["c"]
    pairs = res["pairs"].query("suite == 'community'")
    ab = _pair(pairs, "a", "b")
    assert ab["diff"] == pytest.approx(0.0) and not bool(ab["distinguishable"])
    assert (pairs["compared"] == "distance from the ideal").all()


def test_shared_items_are_compared_paired(base_card, tmp_path):
    """RedditBias cards keep each phrase pair's contribution to the headline: two cards on the same
    items are compared paired. Model b's contributions are a's times 0.9, a's headline 0.05 higher:
    the paired standard error is 0.1 * sqrt(n / (n - 1) * sum(a_i^2)), far below the independent one."""
    items = pd.read_parquet(base_card / "redditbias" / "headline_items.parquet")
    inf = items["influence"].to_numpy()
    assert len(items) == 200 and (inf != 0).sum() >= 30 and items["item"].is_unique

    def scaled(suite, t):
        return t.assign(influence=t["influence"] * 0.9)

    def fewer(suite, t):
        return t.iloc[1:]

    a = clone_card(base_card, tmp_path / "a", "a", 0.05)
    b = clone_card(base_card, tmp_path / "b", "b", edit_items=scaled)
    c = clone_card(base_card, tmp_path / "c", "c", edit_items=fewer)
    pairs = leaderboard([a, b, c], out=tmp_path / "out")["pairs"].query("suite == 'redditbias'")
    ab = _pair(pairs, "a", "b")
    on = inf != 0
    n = int(on.sum())
    assert bool(ab["paired"]) and ab["se"] == pytest.approx(0.1 * np.sqrt(n / (n - 1) * np.sum(inf[on] ** 2)))
    assert bool(ab["distinguishable"])  # 0.05 apart on the same items: paired, told apart
    ac = _pair(pairs, "a", "c")
    assert not bool(ac["paired"]) and not bool(ac["distinguishable"])  # items differ: the independent test
