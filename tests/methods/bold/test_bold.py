"""BOLD: the shipped prompts and their sample, the paper's sentiment shares and gender polarity,
bring-your-own continuations and their errors, the page-level gap tests and the noise floor in
seeded simulations, and a run on the fake model."""

import json

import numpy as np
import pandas as pd
import pytest

import biaslens
from biaslens.errors import ConfigError
from biaslens.methods.bold.dataset import DOMAINS, PAPER_PROMPT_COUNT, load_prompts, sample_prompts
from biaslens.methods.bold.metrics import gender_polarity, group_gaps, group_scores, permuted_max_gap


def test_shipped_prompts_are_the_papers(reference_dir):
    p = load_prompts()
    assert len(p) == PAPER_PROMPT_COUNT and tuple(dict.fromkeys(p["domain"])) == DOMAINS
    assert p["prompt_id"].is_unique
    ref = json.loads((reference_dir / "beyond" / "bold" / "gender_prompt.json").read_text())
    g = p[p["domain"] == "gender"]
    assert len(g) == sum(len(v) for pages in ref.values() for v in pages.values())
    first_group, pages = next(iter(ref.items()))
    page, prompts = next(iter(pages.items()))
    assert g.iloc[0][["group", "page", "prompt"]].tolist() == [first_group, page, prompts[0]]


def test_sample_is_stratified_by_domain_and_group_and_seeded():
    p = load_prompts()
    s = sample_prompts(p, 500, seed=0)
    assert 450 <= len(s) <= 520
    per_domain = s.groupby("domain").size()
    assert per_domain["gender"] == 100 and per_domain["race"] == 100  # 50 and 25 pages per group
    assert s.groupby(["domain", "group"])["page"].nunique().min() >= 1
    assert (s.groupby(["group", "page"]).size() == 1).all()  # one prompt per page: pages are the unit
    assert s.equals(sample_prompts(p, 500, seed=0)) and not s.equals(sample_prompts(p, 500, seed=1))


def test_paper_sentiment_thresholds_and_gender_polarity():
    df = pd.DataFrame({"model": "m", "domain": "gender", "group": ["a"] * 4, "page": list("pqrs"),
                       "prompt_id": range(4), "sentiment": [0.5, 0.49, -0.5, 0.0],
                       "gender_polarity": gender_polarity(["He is.", "She was; he was.", "Her work.", "Work."])})
    r = group_scores(df).iloc[0]
    assert (r["positive_share"], r["negative_share"]) == (0.25, 0.25)  # >= 0.5 and <= -0.5, as the paper
    assert (r["male_share"], r["female_share"]) == (0.25, 0.25)


def _bold_like(rng, groups, pages, shift=0.0, prompts_per_page=1.5):
    """Page effects (t(3)) and per-prompt VADER-like noise (a spike at 0, clipped to [-1, 1])."""
    rows = []
    for gi in range(groups):
        for p in range(pages):
            eff = 0.15 * rng.standard_t(3) + (shift if gi == 0 else 0.0)
            for i in range(1 + rng.poisson(prompts_per_page - 1)):
                y = 0.0 if rng.random() < 0.3 else np.clip(eff + 0.5 * rng.standard_normal(), -1, 1)
                rows.append(("m", "race", f"g{gi}", f"g{gi}p{p}", f"g{gi}p{p}/{i}", y))
    return pd.DataFrame(rows, columns=["model", "domain", "group", "page", "prompt_id", "sentiment"])


def test_gap_tests_hold_their_level_and_the_noise_floor_is_calibrated():
    """Seeded simulation at the default sample's race domain (4 groups, 25 pages each) with several
    prompts per page: no group differs. Any pair significant after Holm, and the largest gap's
    simultaneous interval missing 0, stay near 5%; the permutation p of the largest gap is uniform."""
    rng = np.random.default_rng(7)
    any_holm, miss, perm_p = [], [], []
    for _ in range(150):
        df = _bold_like(rng, 4, 25)
        g = group_gaps(df, "sentiment")
        any_holm.append((g["p_holm"] < 0.05).any())
        r = g.loc[g["gap"].abs().idxmax()]
        miss.append(not r["ci_low_simultaneous"] <= 0 <= r["ci_high_simultaneous"])
        perm_p.append(permuted_max_gap(df, "sentiment", n_perm=99, seed=int(rng.integers(1 << 30)))["p_value"])
    assert np.mean(any_holm) <= 0.09 and np.mean(miss) <= 0.09, (np.mean(any_holm), np.mean(miss))
    assert 0.01 <= np.mean(np.array(perm_p) <= 0.05) <= 0.10
    # and with one group's pages shifted by 0.5 (about 80% power in a 40-replicate pilot), the gap is found
    found = [(lambda g: g.loc[g["gap"].abs().idxmax(), "p_holm"] < 0.05)(group_gaps(_bold_like(rng, 4, 25, 0.5),
                                                                                    "sentiment"))
             for _ in range(30)]
    assert np.mean(found) >= 0.6


def test_prompts_are_nested_in_pages_the_page_is_the_unit():
    """Ten prompts per page sharing the page's tone: treating prompts as independent would call the
    gap far more often than 5%; the page-level test does not."""
    rng = np.random.default_rng(3)
    page_level, prompt_level = [], []
    for _ in range(120):
        rows = []
        for gi in range(2):
            for p in range(12):
                eff = 0.4 * rng.standard_t(3)
                rows += [("m", "gender", f"g{gi}", f"g{gi}p{p}", f"g{gi}p{p}/{i}",
                          float(np.clip(eff + 0.2 * rng.standard_normal(), -1, 1))) for i in range(10)]
        g = group_gaps(pd.DataFrame(rows, columns=["model", "domain", "group", "page", "prompt_id", "sentiment"]))
        page_level.append(g["p_value"].iloc[0] < 0.05)
        prompt_level.append(g["p_value_prompt"].iloc[0] < 0.05)
    assert np.mean(page_level) <= 0.09 and np.mean(prompt_level) >= 0.3, (np.mean(page_level), np.mean(prompt_level))


def test_bold_run_on_the_fake_model(tmp_path, capsys):
    out = tmp_path / "run"
    res = biaslens.run(suite="bold", model="fake", out=str(out), cache_dir=str(tmp_path / "c"),
                       bold={"sample": 80, "max_new_tokens": 8, "n_permutations": 30, "domains": ["gender", "race"]})
    t = res.generations
    assert {"sentiment", "toxicity", "toxicity_masked", "toxicity_unmasked", "gender_polarity"} <= set(t.columns)
    assert t.groupby("domain")["page"].nunique().to_dict() == {"gender": 40, "race": 40}
    m = json.loads((out / "metrics.json").read_text())
    heads = {e["name"]: e for e in m["entries"]}
    assert list(heads) == ["largest_sentiment_gap", "largest_toxicity_gap"]
    tox = heads["largest_toxicity_gap"]
    assert tox["judge"] == m["classifiers"]["toxicity"] and tox["judge_has_skill"] in (True, False)
    # the skill is the scorer card's, read the way every surface reads it
    from biaslens.scorers.card import judge_has_skill

    card = next(c for c in m["scorer_cards"] if c.get("role") == "toxicity")
    # a gap between groups: the judge must also beat a score that knows only the group (issue #41),
    # measured per BOLD group on BOLD's own labelled continuations
    assert tox["judge_has_skill"] == judge_has_skill(card, at_threshold=False, compares_groups=True)
    assert card["measured_on"].endswith("not bold's own text") and card["groups_measured_on"] == "own_text"
    assert card["vs_group_prior"] == card["own_text"]["vs_group_prior"] and card["group_field"] == "group"
    assert card["group_warning"] is None or card["group_warning"] in m["warnings"]
    assert card["own_text"]["set"] == "bold" and card["own_text_verdict"].startswith("On bold's own text (")
    sent = next(c for c in m["scorer_cards"] if c.get("role") == "sentiment")
    assert sent["cutoff"] == 0.5 and "positive >= 0.5, negative <= -0.5" in sent["kind"]  # what BOLD counts
    assert heads["largest_sentiment_gap"]["judge"] == "vader"
    # beside the largest toxicity gap, the correction for the judge's errors per BOLD group, from BOLD's
    # own labelled test continuations (their toxic ones from the third batch's fine-tunes)
    import html

    sens = m["judge_sensitivity"]["fake"]
    assert len(sens["between"]) == 2 and sens["sentence"].startswith("fake: sensitivity of the toxicity gap to the judge (")
    assert sens["corrected"] is not None and sens["corrected_ci"] is not None and "reason" not in sens
    assert "corrected for them (Rogan-Gladen per BOLD group" in sens["sentence"]
    (lo, hi), (clo, chi) = sens["raw_ci"], sens["corrected_ci"]
    said = "the corrected interval includes 0 and the raw one does not" in sens["sentence"]
    assert said == (clo <= 0 <= chi and not lo <= 0 <= hi)
    a, b = sens["between"]
    assert sens["raw"] == pytest.approx(sens["run"][a][0] / sens["run"][a][1] - sens["run"][b][0] / sens["run"][b][1])
    terminal = capsys.readouterr()  # the run's console (the CLI sends the summary to standard output)
    assert sens["sentence"] in m["verdict"] and sens["sentence"] in " ".join((terminal.out + terminal.err).split())
    assert sens["sentence"] in html.unescape((out / "report.html").read_text())
    assert tox["reference_label"].startswith("permuted-group noise floor") and tox["level"] == pytest.approx(1 - 0.05 / 7)
    assert set(m["not_computed"]) == {"regard", "gender polarity (embedding)", "psycholinguistic norms"}
    run = json.loads((out / "run.json").read_text())
    assert run["generation"]["params"]["do_sample"] is True and run["generation"]["params"]["top_p"] == 0.9
    assert run["measured"]["selection"].startswith("sample 80")
    page = (out / "report.html").read_text()
    assert "regard classifier" in page and "Largest gaps" in page
    # every header a metric in the glossary or a label
    import html
    import re

    from biaslens.report.glossary import NOT_METRICS, lookup

    headers = {html.unescape(re.sub(r"<[^>]+>", "", h).strip()) for h in re.findall(r"<th[^>]*>(.*?)</th>", page, re.S)}
    assert len(headers) > 10
    assert not {h for h in headers if h and lookup(h) is None and h not in NOT_METRICS}
    (out / "report.html").unlink()
    biaslens.rerender(out)
    assert json.loads((out / "metrics.json").read_text()) == m


def test_bring_your_own_continuations(tmp_path):
    p = load_prompts(["gender"])
    rows = [{"prompt_id": pid, "response": "he was a good and kind man" if "actors" in pid else "she was awful"}
            for pid in p["prompt_id"].head(30).tolist() + p["prompt_id"].tail(30).tolist()]
    rows[0] = {"prompt": p["prompt"].iloc[0], "response": "he was great", "model": "mine"}
    (tmp_path / "gen.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    res = biaslens.run(suite="bold", out=str(tmp_path / "run"), bold={"generations_files": [str(tmp_path / "gen.jsonl")],
                                                                      "n_permutations": 20})
    assert set(res.generations["model"]) == {"gen", "mine"} and len(res.generations) == 60
    g = res.metrics["groups"]
    actors = next(r for r in g if r["group"] == "American_actors" and r["model"] == "gen")
    assert actors["male_share"] == 1.0 and actors["positive_share"] == 1.0
    (tmp_path / "bad.jsonl").write_text(json.dumps({"prompt_id": "gender/nobody/x/0", "response": "x"}) + "\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:1: matches no BOLD prompt"):
        biaslens.run(suite="bold", out=str(tmp_path / "run2"), bold={"generations_files": [str(tmp_path / "bad.jsonl")]})


def test_a_one_page_group_leaves_the_other_pairs_their_intervals():
    """Atheism has one page in BOLD: its pairs have no page-level interval, every other pair keeps its own."""
    p = sample_prompts(load_prompts(), 500, seed=0)
    t = p.assign(model="m", sentiment=np.random.default_rng(0).normal(size=len(p)))
    g = group_gaps(t, "sentiment")
    no_interval = g[g["p_value"].isna()]
    assert len(g) == 247 and len(no_interval) == 6
    assert ((no_interval["group_a"] == "atheism") | (no_interval["group_b"] == "atheism")).all()


def _own_continuations(tmp_path, n=30):
    p = load_prompts(["gender"])
    rows = [{"prompt_id": pid, "response": "he was a good and kind man" if i % 2 else "she was an awful person"}
            for i, pid in enumerate(p["prompt_id"].head(n).tolist() + p["prompt_id"].tail(n).tolist())]
    (tmp_path / "gen.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return tmp_path / "gen.jsonl"


def test_regard_classifier_unavailable_offline_is_a_clear_error(tmp_path, monkeypatch):
    """The user asked for regard: a classifier that cannot be loaded (no network, no local copy) stops
    the run with an error naming the option and what to do, before any report claims regard."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_hf_home"))
    gen = _own_continuations(tmp_path)
    with pytest.raises(ConfigError, match=r"(?s)--bold-regard-classifier sasha/regardv3: regard is unavailable: .*"
                                          r"Download the classifier"):
        biaslens.run(suite="bold", out=str(tmp_path / "run"),
                     bold={"generations_files": [str(gen)], "regard_classifier": "sasha/regardv3", "n_permutations": 0})


class _StubRegard:
    """A regard classifier with the paper's labels: positive for 'good', negative for 'awful'."""

    labels = ("negative", "neutral", "positive", "other")

    def __init__(self, name, **_):
        self.name = name

    def probabilities(self, texts):
        out = np.full((len(texts), 4), 0.1)
        for i, t in enumerate(texts):
            out[i, 2 if "good" in t else 0 if "awful" in t else 1] = 0.7
        return out


def test_regard_through_a_named_classifier_with_its_scorer_card(tmp_path, monkeypatch):
    import biaslens.scorers.classifiers as classifiers

    monkeypatch.setattr(classifiers, "HFTextClassifier", _StubRegard)
    gen = _own_continuations(tmp_path)
    res = biaslens.run(suite="bold", out=str(tmp_path / "run"),
                       bold={"generations_files": [str(gen)], "regard_classifier": "stub/regard", "n_permutations": 0})
    t = res.generations
    assert np.allclose(t["regard"], np.where(t["response"].str.contains("good"), 0.6, -0.6))
    m = res.metrics
    card = next(c for c in m["scorer_cards"] if c.get("role") == "regard")
    assert card["used"] == "stub/regard" and card["skill"]["status"] == "not measured" and "identity_audit" in card
    head = next(e for e in m["entries"] if e["name"] == "largest_regard_gap")
    assert head["judge"] == "stub/regard" and head["judge_has_skill"] is False
    assert "regard" not in m["not_computed"] and m["classifiers"]["regard"] == "stub/regard"
    assert "the regard judge has NO MEASURED SKILL" in m["verdict"]


def test_cannot_tell_says_the_budget_and_the_size_that_would_tell():
    """A 'cannot tell' BOLD sentence states the gap the budget can detect and the pages per group
    that would detect the material gap (detectable / sqrt(pages) scaling)."""
    from biaslens.methods.bold.suite import _size_that_would_tell

    r = {"n_pages_a": 20, "n_pages_b": 16, "domain": "x", "group_a": "a", "group_b": "b"}
    text = _size_that_would_tell(r, 0.3, 0.1)
    assert "about 180 pages per group (this run: 20 / 16)" in text  # 20 x (0.3 / 0.1)^2
    assert _size_that_would_tell(r, 0.08, 0.1) == ""
    # the docs' embedded run: communism - democracy, 9 / 9 pages, detects 0.94: BOLD has too few pages
    small = {"n_pages_a": 9, "n_pages_b": 9, "domain": "political_ideology", "group_a": "communism",
             "group_b": "democracy"}
    assert "more than BOLD has for this pair" in _size_that_would_tell(small, 0.94, 0.1)
