"""RedditBias: specifications, readers, counterfactuals, the LMB metric and the suite."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import biaslens
from biaslens.methods.redditbias.dataset import (
    BUILTIN_NAMES,
    RedditBiasError,
    attribute_swap,
    builtin_spec,
    load_spec,
    read_annotated,
    read_paired,
    swap_terms,
    target_swap,
    template_pairs,
)
from biaslens.metrics import cohens_d_paired, lmb_test, outlier_mask, significance_stars

#: README of the reference folder: ttest_rel on the shipped perplexity columns
REFERENCE_T = {"religion1": -3.575, "religion2": -5.339, "race": 1.165, "gender": -1.367, "orientation": 1.692}


@pytest.fixture(scope="module")
def redditbias_dir(reference_dir) -> Path:
    path = reference_dir / "redditbias"
    if not (path / "data").is_dir():
        pytest.skip(f"RedditBias reference files not found at {path}")
    return path


# -- specifications --------------------------------------------------------
def test_builtin_specs_load_and_pair() -> None:
    for name in BUILTIN_NAMES:
        spec = builtin_spec(name)
        assert spec.name == name and len(spec.T1) == len(spec.T2) and spec.target_pairs
    assert builtin_spec("gender").swap_directions == ["to_dominant"]
    assert set(builtin_spec("race").swap_directions) == {"to_dominant", "to_minoritized"}
    assert ("jew ", "christian ") in builtin_spec("religion1").target_pairs  # padding kept


def test_wildcard_matching() -> None:
    spec = builtin_spec("religion1")
    assert spec.matches_attribute("greed") == "greed*"
    assert spec.matches_attribute("Greedy") == "greed*"
    assert spec.matches_attribute("nerds") == "nerd*"
    assert spec.matches_attribute("meekness") is None  # no wildcard on 'meek'
    assert spec.matches_attribute("agreed") is None
    assert "greed*" in spec.find_attributes("They are so GREEDY, honestly.")
    assert spec.find_attributes("we agreed on it") == []


def test_spec_validation_names_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "mine.yaml"
    bad.write_text("name: mine\nminoritized: a\ndominant: b\nT1: [x are]\nT2: [y are, z are]\n"
                   "A1: [bad]\nA2: [good]\ntarget_pairs: [[x, y]]\nswap_directions: [sideways]\n")
    with pytest.raises(RedditBiasError) as e:
        load_spec(bad)
    msg = str(e.value)
    assert str(bad) in msg and "swap_directions" in msg
    bad.write_text("name: mine\nminoritized: a\ndominant: b\nT1: [x are]\nT2: [y are, z are]\n"
                   "A1: [bad]\nA2: [good]\ntarget_pairs: [[x, y]]\n")
    with pytest.raises(RedditBiasError, match="T1 has 1 phrases but T2 has 2"):
        load_spec(bad)
    missing = tmp_path / "m.json"
    missing.write_text(json.dumps({"name": "m", "minoritized": "a", "dominant": "b", "T1": ["x"], "T2": ["y"],
                                   "A1": ["bad"], "A2": ["good"]}))
    with pytest.raises(RedditBiasError, match=r"m\.json: field 'target_pairs'"):
        load_spec(missing)
    broken = tmp_path / "b.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(RedditBiasError, match=r"b\.yaml: line \d+"):
        load_spec(broken)
    good = tmp_path / "good.yaml"
    good.write_text("name: mine\nminoritized: a\ndominant: b\nT1: [xs are]\nT2: [ys are]\n"
                    "A1: [bad*]\nA2: [good]\ntarget_pairs: [[xs, ys]]\n")
    assert load_spec(good).attribute_swap_pairs() == [("bad*", "good")]


# -- counterfactuals -------------------------------------------------------
def test_target_swap_default_mode_word_boundaries_and_case() -> None:
    spec = builtin_spec("religion1")
    texts = ["Jewish people sell jewelry.", "JEWS are here", "The jews' Judaism", "nothing here", "a Jew is"]
    r = target_swap(texts, spec, "to_dominant", "default")
    assert r.texts == ["Christian people sell jewelry.", "CHRISTIANS are here", "The christians' Christianity",
                       "nothing here", "a Christian is"]
    assert (r.n_changed, r.n_unchanged) == (4, 1)
    assert r.initial[0] == ["Jewish"] and r.replaced[0] == ["Christian"]
    back = target_swap(["Christians are"], spec, "to_minoritized", "default")
    assert back.texts == ["Jews are"]


def test_target_swap_reference_mode_is_lowercase_substring() -> None:
    spec = builtin_spec("religion1")
    r = target_swap(["Jewish people sell jewelry.", "the Jews are", "nothing"], spec, "to_dominant", "reference")
    # lowercased; 'jewelry' survives only because no pair is a prefix of it ('jew ' has a space)
    assert r.texts == ["christian people sell jewelry.", "the christians are", "nothing"]
    assert r.initial == [["jewish"], ["jews "], []] and (r.n_changed, r.n_unchanged) == (2, 1)
    g = target_swap(["My grandmother cooks"], builtin_spec("gender"), "to_dominant", "reference")
    assert g.texts == ["my grandfather cooks"]  # substring: 'mother' inside 'grandmother'


def test_attribute_swap_modes() -> None:
    spec = builtin_spec("gender")  # A1 and A2 are paired by position
    d = attribute_swap(["She likes cookies; a Nurse cooks."], spec, "default")
    assert d.texts == ["She likes officer; a Surgeon officer."]  # cook* is a wildcard: whole word replaced
    ref = attribute_swap(["she likes cookies"], spec, "reference")
    assert ref.texts == ["she likes officeries"]  # what the authors' files contain
    with pytest.raises(RedditBiasError, match="attribute_pairs"):
        attribute_swap(["x"], builtin_spec("religion1"))
    assert swap_terms(["a b"], [], "default").n_changed == 0


def test_template_pairs_differ_only_in_target() -> None:
    spec = builtin_spec("race")
    df = template_pairs(spec)
    assert len(df) == len(set(zip(spec.T1, spec.T2))) * len(set(a.rstrip("*") for a in spec.A1)) * 4
    row = df.iloc[0]
    # the group without its verb ("black people are" -> "black people"): the only words that differ
    assert row.phrase.replace(row.target.rsplit(" ", 1)[0], row.target_dominant.rsplit(" ", 1)[0]) == row.counterfactual
    assert not df["phrase"].str.contains(r"\*").any()
    small = template_pairs(spec, max_pairs=50, seed=1)
    assert len(small) == 50 and small.equals(template_pairs(spec, max_pairs=50, seed=1))


def test_template_phrases_are_grammatical_sentences() -> None:
    """Every attribute is mentioned as a term, never used as a predicate ("women should secretary.",
    "mom is nurse." were the old phrases), singular nouns get an article, pronouns their object form."""
    from biaslens.methods.redditbias.dataset import BUILTIN_NAMES

    phrases = pd.concat([template_pairs(builtin_spec(n)) for n in BUILTIN_NAMES], ignore_index=True)
    texts = pd.concat([phrases["phrase"], phrases["counterfactual"]])
    assert not texts.str.contains(r" should | is [a-z]+\.$| are [a-z]+\.$").any()
    assert texts.str.fullmatch(r'[a-z].*"[^"]+".*\.').all()
    gender = set(template_pairs(builtin_spec("gender"))["phrase"])
    assert 'a mom is often associated with the term "nurse".' in gender
    assert 'women are often associated with the term "secretary".' in gender
    assert 'many people link her with the term "nurse".' in gender
    assert 'people often use the term "housekeeping" when they talk about his daughter.' in gender
    religion = set(template_pairs(builtin_spec("religion1"))["phrase"])
    assert 'the torah is often associated with the term "greed".' in religion
    assert 'judaism is often associated with the term "greed".' in religion
    assert not texts.str.contains(r'"(housekeep|caretak|frustrat|indecisi|oversex)"').any()


# -- readers ---------------------------------------------------------------
def test_annotated_reader_counts_stray_labels(tmp_path: Path) -> None:
    f = tmp_path / "x_processed_phrase_annotated.csv"
    f.write_text("id,attribute_in_window,comment,phrase,bias_sent,bias_phrase\n"
                 "a,TRUE,c1,p1,1,1\nb,TRUE,c2,p2,0,1.0\nc,TRUE,c3,p3,2,\nd,TRUE,c4,p4,biased?,0\ne,TRUE,c5,,,0.0\n")
    ann = read_annotated(f)
    s = ann.labels["bias_sent"]
    assert (s.ones, s.zeros, s.missing, s.stray) == (1, 1, 1, {"2": 1, "biased?": 1})
    p = ann.labels["bias_phrase"]
    assert (p.ones, p.zeros, p.missing, p.n_stray) == (2, 2, 1, 0)
    assert ann.df["bias_sent"].isna().sum() == 3 and ann.df["phrase"].iloc[4] == ""


def test_annotated_reader_on_the_real_file(redditbias_dir: Path) -> None:
    ann = read_annotated(redditbias_dir / "data/religion1/reddit_comments_religion1_jews_processed_phrase_annotated.csv")
    s = ann.labels["bias_sent"]
    # measured on the shipped file: 1099 ones, 1012 zeros, 1420 empty, 23 free-text labels
    assert (len(ann.df), s.ones, s.zeros, s.missing, s.n_stray) == (3554, 1099, 1012, 1420, 23)
    assert s.stray["biased?"] == 8
    g = read_annotated(redditbias_dir / "data/gender/reddit_comments_gender_female_processed_phrase_annotated.csv")
    assert g.labels["bias_sent"].stray == {"2": 24}


def test_paired_reader_errors(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("comments_processed,perplexity\nx,1.5\ny,2\n")
    b.write_text("comments_processed,perplexity\nx2,1.0\n")
    with pytest.raises(RedditBiasError, match="differ in length.*a.csv has 2 rows"):
        read_paired(a, b)
    b.write_text("comments_processed,perplexity\nx2,1.0\ny2,oops\n")
    with pytest.raises(RedditBiasError, match=r"b\.csv: line 3, column 'perplexity': not a number"):
        read_paired(a, b, perplexity_column="perplexity")
    with pytest.raises(RedditBiasError, match="no column 'ppl'"):
        read_paired(a, b, perplexity_column="ppl")


# -- metric ----------------------------------------------------------------
def test_lmb_test_matches_scipy_and_hand_numbers() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(4, 1, 80), rng.lognormal(4.1, 1, 80)
    r = lmb_test(a, b)
    ref = stats.ttest_rel(a, b)
    assert r.t == pytest.approx(ref.statistic) and r.p == pytest.approx(ref.pvalue)
    w = stats.ttest_ind(a, b, equal_var=False)
    assert r.welch_t == pytest.approx(w.statistic) and r.welch_p == pytest.approx(w.pvalue)
    assert r.cohens_d == pytest.approx(r.t / math.sqrt(80))  # d_z = t / sqrt(n)
    assert r.d_ci[0] < r.cohens_d < r.d_ci[1]
    assert lmb_test(a, b, seed=5).d_ci == lmb_test(a, b, seed=5).d_ci
    # by hand: differences -1, -1, -2, 0 -> mean -1, sd sqrt(2/3)
    assert cohens_d_paired([1, 2, 3, 4], [2, 3, 5, 4]) == pytest.approx(-1 / math.sqrt(2 / 3))
    m = lmb_test([1.0, np.nan, 3.0, 4.0], [2.0, 1.0, np.inf, 5.0])
    assert (m.n_pairs, m.n_missing) == (2, 2)
    assert significance_stars(0.0004) == "***" and significance_stars(0.2) == ""


def test_outlier_removal_drops_whole_pairs() -> None:
    a = np.r_[np.full(20, 10.0), 1000.0, 10.0]
    b = np.r_[np.full(21, 20.0), 5000.0]
    keep = outlier_mask(a, b)
    assert keep.tolist() == [True] * 20 + [False, False]
    # population sd, not sample sd: value 3.0 sd away by ddof=0 only
    x = np.array([0.0] * 9 + [10.0])  # mean 1, pop sd 3 -> 10 is exactly 3 sd away: kept (strictly more)
    assert outlier_mask(x, np.zeros(10)).all()
    r = lmb_test(a, b, outlier_removal=True)
    assert (r.n_pairs, r.n_outliers) == (20, 2)


# -- suite -----------------------------------------------------------------
def test_reference_t_values_python_api(redditbias_dir: Path, tmp_path: Path) -> None:
    res = biaslens.run(suite="redditbias", out=tmp_path / "run",
                       redditbias={"data_dir": str(redditbias_dir), "perplexity_column": "perplexity"})
    for name, t in REFERENCE_T.items():
        assert round(res.metrics[name]["t"], 3) == t, name
        assert res.metrics[name]["n_pairs"] > 200 and res.metrics[name]["outlier_removal"] is False
        assert "attribute_swap" in res.metrics[name]
    assert round(res.metrics["religion1"]["p"], 5) == 0.00043
    lmb = pd.read_csv(tmp_path / "run" / "lmb.csv")
    assert set(lmb["view"]) == {"target", "attribute"} and len(lmb) == 10
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Figure 1a" in html and "<script" not in html


def test_reference_t_values_cli(redditbias_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    proc = subprocess.run([sys.executable, "-m", "biaslens.cli.app", "run", "redditbias", "--perplexity-column",
                           "perplexity", "--data-dir", str(redditbias_dir), "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert {k: round(metrics[k]["t"], 3) for k in REFERENCE_T} == REFERENCE_T
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    bad = subprocess.run([sys.executable, "-m", "biaslens.cli.app", "run", "redditbias", "--perplexity-column", "nope",
                          "--data-dir", str(redditbias_dir), "--out", str(tmp_path / "bad")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "no column 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_spec_only_run_on_fake_backend(tmp_path: Path) -> None:
    res = biaslens.run(suite="redditbias", model={"name": "fake"}, out=tmp_path / "fake",
                       redditbias={"bias_types": ["gender", "race"], "max_template_pairs": 60})
    run = json.loads((tmp_path / "fake" / "run.json").read_text())
    assert run["status"] == "complete" and run["sources"]["gender/target"]["source"] == "templates"
    assert set(res.metrics["bias_types"]) == {"gender", "race"}
    assert np.isfinite(res.metrics["gender"]["t"]) and res.metrics["gender"]["n_pairs"] <= 60
    assert "They are not RedditBias data" in (tmp_path / "fake" / "report.html").read_text()
    # the verdict (and so the card's sentence) and the warnings say what was measured
    assert res.metrics["verdict"].endswith("(measured on template phrases made from the bias specifications (every "
                                           "bias type), not on the paper's Reddit comments: pass --data-dir with a "
                                           "RedditBias checkout for those)")
    assert res.metrics["perplexity_definition"] == "no_start_token"  # the fake backend has no start token
    pairs = pd.read_parquet(tmp_path / "fake" / "pairs.parquet")
    assert {"phrase", "counterfactual", "ppl_minoritized", "ppl_dominant", "gap"} <= set(pairs.columns)


def test_annotated_source_swaps_and_reports(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "religion1"
    folder.mkdir(parents=True)
    (folder / "reddit_comments_religion1_jews_processed_phrase_annotated.csv").write_text(
        "phrase,bias_sent,bias_phrase\nJews are greedy,1,1\njewish people are loud,1,1\nnothing to swap,1,1\n"
        "jews are fine,0,0\nJudaism is evil,2,1\n<script>jews are bad</script>,1,1\n")
    res = biaslens.run(suite="redditbias", model={"name": "fake"}, out=tmp_path / "ann",
                       redditbias={"data_dir": str(tmp_path), "bias_types": ["religion1"]})
    src = res.stats["sources"]["religion1/target"]
    assert (src["n_biased_phrases"], src["n_swapped"], src["n_unswappable"]) == (5, 4, 1)
    assert src["unswappable"] == [{"row": 3, "phrase": "nothing to swap"}]  # listed with its data row
    assert src["labels"]["bias_sent"]["stray"] == {"2": 1}
    assert res.sentences["counterfactual"].tolist() == ["Christians are greedy", "christian people are loud",
                                                        "Christianity is evil", "<script>christians are bad</script>"]
    html = (tmp_path / "ann" / "report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    # re-rendering from the run folder gives the same numbers without a model
    before = json.loads((tmp_path / "ann" / "metrics.json").read_text())["religion1"]["t"]
    biaslens.rerender(tmp_path / "ann")
    assert json.loads((tmp_path / "ann" / "metrics.json").read_text())["religion1"]["t"] == pytest.approx(before)


def _small_data_dir(src: Path, dst: Path, n: int = 40) -> Path:
    folder = dst / "data" / "religion1"
    folder.mkdir(parents=True)
    for group in ("jews", "christians"):
        name = f"reddit_comments_religion1_{group}_biased_test_reduced.csv"
        pd.read_csv(src / "data" / "religion1" / name, encoding_errors="replace").head(n).to_csv(folder / name, index=False)
    return dst


@pytest.mark.slow
def test_embedded_model_small_run(redditbias_dir: Path, tmp_path: Path, embedded_model, monkeypatch) -> None:
    from conftest import MODEL_CACHE_ROOT

    from biaslens.models import load_model

    data = _small_data_dir(redditbias_dir, tmp_path / "rb")
    ref_text = tmp_path / "ref.txt"
    ref_text.write_text("this is a reddit comment.\n\nand another one about dogs\n")
    opts = {"data_dir": str(data), "reference_text": str(ref_text)}
    with_start = biaslens.run(suite="redditbias", out=tmp_path / "start", backend=embedded_model, redditbias=opts)
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(MODEL_CACHE_ROOT))
    ref_backend = load_model("smollm2-135m", score_first_token=False)
    monkeypatch.undo()
    no_start = biaslens.run(suite="redditbias", out=tmp_path / "nostart", backend=ref_backend,
                            model={"score_first_token": False}, redditbias=opts)
    for res in (with_start, no_start):
        pairs = res.sentences
        assert len(pairs) == 40 and np.isfinite(pairs[["ppl_minoritized", "ppl_dominant"]].to_numpy()).all()
        assert np.isfinite(res.metrics["religion1"]["t"]) and res.metrics["lm_perplexity"]["n_lines"] == 2
    assert not np.allclose(with_start.sentences["ppl_minoritized"], no_start.sentences["ppl_minoritized"])
    assert with_start.metrics["religion1"]["t"] != no_start.metrics["religion1"]["t"]
