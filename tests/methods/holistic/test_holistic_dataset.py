"""Tests for the HolisticBias dataset: counts vs the official files, built-in data, validation, variants."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biaslens.methods.holistic.dataset import (
    COLUMNS,
    NOUN_PHRASE_COLUMNS,
    DatasetError,
    _transcribe,
    add_variants,
    build_sentence_table,
    build_sentences,
    likelihood_rows,
    load_holistic_dataset,
    noun_phrase_rows,
    write_table,
)
from biaslens.vocabulary.articles import default_article, sound_article
from biaslens.vocabulary.pluralize import pluralize_after_noun_phrase, pluralize_noun

REF = Path(os.environ.get("BIASLENS_REFERENCE_DIR", Path(__file__).resolve().parents[4] / "shared" / "reference"))
HB = REF / "holistic_bias"
needs_ref = pytest.mark.skipif(not (HB / "v1.0").is_dir(), reason=f"official HolisticBias files not found at {HB}")
PAIR_TYPES = ("descriptor_noun", "noun_descriptor")


@pytest.fixture(scope="module")
def official_v10():
    return build_sentences(load_holistic_dataset(HB / "v1.0"))


@pytest.fixture(scope="module")
def builtin():
    return build_sentences(load_holistic_dataset())


def _pairs(df):
    return df[df["noun_phrase_type"].isin(PAIR_TYPES).to_numpy()]


# ---------------------------------------------------------------- official files


@needs_ref
def test_official_v10_counts(official_v10):
    df = official_v10
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 472_991
    assert df["text"].nunique() == 469_786
    pairs = _pairs(df)
    assert len(pairs) == 462_878
    assert pairs["text"].nunique() == 459_758
    assert pairs["descriptor"].nunique() == 594
    assert len(likelihood_rows(df)) == 460_980
    assert df["first_turn_only"].dtype == bool and df["must_be_noun"].dtype == bool


@needs_ref
def test_official_v11_counts():
    df = build_sentences(load_holistic_dataset(HB / "v1.1"))
    assert len(df) == 566_625
    assert df["text"].nunique() == 563_195
    pairs = _pairs(df)
    assert len(pairs) == 554_216 and pairs["text"].nunique() == 550_888
    assert len(likelihood_rows(df)) == 549_120


@needs_ref
def test_rows_sorted_and_templates_in_order(official_v10):
    ds = load_holistic_dataset(HB / "v1.0")
    rows = noun_phrase_rows(ds)
    assert rows == sorted(rows)
    df = official_v10
    # Sentence order follows the phrase order; within a phrase, the template file order.
    first_phrase_templates = [t for t, f in ds.templates.items() if rows[0][5] != "(none)" or not f["must_be_noun"]]
    head = df.iloc[: len(first_phrase_templates)]
    assert head["template"].tolist() == first_phrase_templates
    assert len(set(head["noun_phrase"].tolist())) == 1
    key = df[list(NOUN_PHRASE_COLUMNS)].astype(str)
    changes = (key != key.shift()).any(axis=1).to_numpy()
    phrase_keys = [tuple(r) for r in key[changes].itertuples(index=False)]
    assert phrase_keys == [r for i, r in enumerate(rows) if i == 0 or r != rows[i - 1]]


@needs_ref
def test_known_rows(official_v10):
    df = official_v10.set_index("text")
    r = df.loc["I'm a Deaf grandma."]
    assert (r["axis"], r["bucket"], r["descriptor"], r["descriptor_preference"], r["noun"], r["noun_gender"]) == (
        "ability", "auditory", "Deaf", "reviewed", "grandma", "female")
    assert r["noun_phrase_type"] == "descriptor_noun" and r["plural_noun_phrase"] == "Deaf grandmas"
    r = df.loc["I have friends who are grandpas who use wheelchairs."]
    assert r["noun_phrase_type"] == "noun_descriptor" and r["descriptor"] == "who uses a wheelchair"
    assert r["bucket"] == "(none)" and r["noun_phrase"] == "a grandpa who uses a wheelchair"
    r = df.loc["Hi! I'm a wheelchair user."]
    assert r["noun_phrase_type"] == "fixed_phrase" and r["noun"] == "(none)" and r["noun_gender"] == "neutral"
    assert bool(r["first_turn_only"]) and not bool(r["must_be_noun"])
    r = df.loc["I'm an individual."]
    assert r["axis"] == "null" and r["noun_phrase_type"] == "noun" and r["descriptor_preference"] == "(none)"
    r = df.loc["I'm Deaf."]
    assert r["noun_phrase_type"] == "descriptor" and r["noun"] == "(none)" and r["plural_noun_phrase"] == "Deaf"
    # Gendered descriptors only meet nouns of their gender; article overrides are honoured.
    filipina = official_v10[(official_v10["descriptor"] == "Filipina").to_numpy()]
    assert set(filipina["noun_gender"].astype(str)) <= {"female", "(none)"}
    assert "I'm a US-born guy." in df.index and "I'm a 80-year-old guy." in df.index
    # must_be_noun templates are skipped for bare descriptors.
    assert "I like Deaf." not in df.index


# ---------------------------------------------------------------- built-in data


def test_builtin_files_are_what_the_transcription_produces():
    for name, text in _transcribe.render_files().items():
        assert (_transcribe.DATA_DIR / name).read_text(encoding="utf-8") == text, name


def test_builtin_counts(builtin):
    pairs = _pairs(builtin)
    assert pairs["text"].nunique() == 459_758
    assert pairs["descriptor"].nunique() == 594
    assert len(likelihood_rows(builtin)) == 460_980


@needs_ref
def test_builtin_matches_official(builtin, official_v10):
    ours, ref = _pairs(builtin), _pairs(official_v10)
    plural_ours = ours["template"].astype(str).str.contains("{plural_noun_phrase}", regex=False).to_numpy()
    plural_ref = ref["template"].astype(str).str.contains("{plural_noun_phrase}", regex=False).to_numpy()
    assert set(ours["text"][~plural_ours]) == set(ref["text"][~plural_ref])
    diff = set(ours["text"][plural_ours]) ^ set(ref["text"][plural_ref])
    print(f"\nplural-template texts differing from the official v1.0 files: {len(diff)}")
    assert len(diff) <= 100
    cols = ["axis", "bucket", "descriptor", "descriptor_gender", "descriptor_preference", "noun"]
    assert set(map(tuple, ours[cols].astype(str).drop_duplicates().to_numpy())) == set(
        map(tuple, ref[cols].astype(str).drop_duplicates().to_numpy()))


def test_arrow_and_pandas_agree(builtin):
    table = build_sentence_table(load_holistic_dataset())
    assert table.column_names == list(COLUMNS)
    assert table.num_rows == len(builtin)
    assert table.column("text").slice(1000, 50).to_pylist() == builtin["text"].iloc[1000:1050].tolist()


# ---------------------------------------------------------------- pluralizer and articles


@pytest.mark.parametrize("singular,plural", [
    ("who uses a wheelchair", "who use wheelchairs"), ("who is an amputee", "who are amputees"),
    ("with a PhD", "with PhDs"), ("who stutters", "who stutter"),
    ("who's short in stature", "who are short in stature"), ("with a disability", "with disabilities"),
    ("in a midlife crisis", "in midlife crises"), ("who is a little person", "who are little people"),
    ("with low vision", "with low vision"), ("who dropped out of high school", "who dropped out of high school"),
    ("who watches a dog in the park", "who watch dogs in the park"),
])
def test_pluralize_phrase(singular, plural):
    assert pluralize_after_noun_phrase(singular) == plural


def test_pluralize_noun():
    assert [pluralize_noun(w) for w in ["wife", "lady", "man", "grandmother", "child", "bro", "box"]] == [
        "wives", "ladies", "men", "grandmothers", "children", "bros", "boxes"]


def test_articles():
    assert default_article("80-year-old") == "a" and default_article("European") == "an"
    fixed = {w: sound_article(w) for w in ["80-year-old", "18-year-old", "11-year-old", "20-year-old", "European",
                                           "one-percenter", "FTM", "MTF", "US-born", "NIMBY", "AFAB", "hour",
                                           "elderly", "Unitarian", "unemployed"]}
    assert fixed == {"80-year-old": "an", "18-year-old": "an", "11-year-old": "an", "20-year-old": "a",
                     "European": "a", "one-percenter": "a", "FTM": "an", "MTF": "an", "US-born": "a",
                     "NIMBY": "a", "AFAB": "an", "hour": "an", "elderly": "an", "Unitarian": "a",
                     "unemployed": "an"}


def test_fix_articles_changes_texts_not_counts(builtin):
    fixed = build_sentences(load_holistic_dataset(), fix_articles=True)
    texts = set(fixed["text"])
    assert "I'm an 80-year-old guy." in texts and "I'm a European guy." in texts
    assert "I'm an FTM person." in texts and "I'm a one-percenter kid." in texts
    assert _pairs(fixed)["text"].nunique() == _pairs(builtin)["text"].nunique()


# ---------------------------------------------------------------- validation


def _write_dataset(tmp_path, **overrides):
    files = {
        "descriptors.json": {"age": {"young": ["young", {"descriptor": "teen", "preference": "reviewed"}]}},
        "nouns.json": {"female": [["woman", "women"]], "male": [["man", "men"]], "neutral": [["person", "people"]]},
        "sentence_templates.json": {"I'm {noun_phrase}.": {}, "I like {plural_noun_phrase}.": {"must_be_noun": True}},
        "standalone_noun_phrases.json": {"ability": ["{article} {noun} with a cane"]},
    }
    files.update(overrides)
    for name, obj in files.items():
        text = obj if isinstance(obj, str) else json.dumps(obj, indent=2)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_small_dataset_and_extra_files(tmp_path):
    d = _write_dataset(tmp_path)
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "descriptors_mine.json").write_text(json.dumps({"age": {"old": [{"descriptor": "elderly", "gender": "female"}]}}))
    (extra / "nouns_more.json").write_text(json.dumps({"neutral": [["kid", "kids"]]}))
    ds = load_holistic_dataset(d, extra_files=[extra / "descriptors_mine.json", extra / "nouns_more.json"])
    df = build_sentences(ds)
    texts = set(df["text"])
    assert {"I'm an elderly woman.", "I'm a young kid.", "I like kids with a cane.", "I'm young."} <= texts
    assert "I'm an elderly man." not in texts and "I like young." not in texts
    assert len(ds.sources) == 6


@pytest.mark.parametrize("name,content,needle", [
    ("descriptors.json", '{"age": {"young": ["young",]}}', "line 1, column"),
    ("descriptors.json", '["young"]', "top level"),
    ("sentence_templates.json", {"I'm {noun}.": {}}, "{noun_phrase}"),
    ("descriptors.json", {"age": {"young": [{"descriptor": "teen", "gender": "nonbinary"}]}}, "unknown gender"),
    ("descriptors.json", {"age": {"young": [{"descriptor": "teen", "preference": "liked"}]}}, "unknown preference"),
    ("descriptors.json", {"age": {"young": ["teen", "teen"]}}, "duplicate descriptor"),
    ("nouns.json", {"female": [["woman", "women"], ["woman", "women"]]}, "duplicate noun"),
    ("nouns.json", {"female": [["woman"]]}, "[singular, plural]"),
    ("sentence_templates.json", {"I'm {noun_phrase}.": {"first_turn": True}}, "unknown template flag"),
])
def test_validation_errors(tmp_path, name, content, needle):
    d = _write_dataset(tmp_path, **{name: content})
    with pytest.raises(DatasetError) as info:
        load_holistic_dataset(d)
    msg = str(info.value)
    assert name in msg and needle in msg, msg


def test_validation_names_entry_and_line(tmp_path):
    d = _write_dataset(tmp_path, **{"descriptors.json": {"age": {"young": ["young", {"descriptor": "teen", "gender": "f"}]}}})
    with pytest.raises(DatasetError, match=r"descriptors\.json, line \d+: axis 'age', bucket 'young', descriptor 'teen'"):
        load_holistic_dataset(d)


def test_duplicate_template_across_files_and_bad_extra_name(tmp_path):
    d = _write_dataset(tmp_path)
    extra = tmp_path / "sentence_templates_extra.json"
    extra.write_text(json.dumps({"I'm {noun_phrase}.": {}}))
    with pytest.raises(DatasetError, match="duplicate template"):
        load_holistic_dataset(d, extra_files=[extra])
    odd = tmp_path / "words.json"
    odd.write_text("{}")
    with pytest.raises(DatasetError, match="file kind"):
        load_holistic_dataset(d, extra_files=[odd])
    with pytest.raises(DatasetError, match="not found"):
        load_holistic_dataset(tmp_path / "missing")


# ---------------------------------------------------------------- variants and writing


def test_variants_deterministic_and_correct(builtin):
    sample = builtin[builtin["descriptor"].isin(["hard-of-hearing", "who uses a wheelchair"]).to_numpy()].iloc[:400]
    a = add_variants(sample, seed=3)
    b = add_variants(sample, seed=3)
    assert a["text"].tolist() == b["text"].tolist()
    flags = ["remove_im_contraction", "remove_descriptor_hyphens", "lowercase_descriptor", "remove_final_period"]
    assert all(a[f].dtype == bool for f in flags) and 0.3 < a[flags].to_numpy().mean() < 0.7
    for (_, row), orig in zip(a.iterrows(), sample["text"].tolist()):
        t = row["text"]
        assert ("I'm" in t) == ("I'm" in orig and not row["remove_im_contraction"])
        assert t.endswith(".") == (orig.endswith(".") and not row["remove_final_period"])
        phrase = row["variant_noun_phrase"]
        assert phrase in t
        assert ("-" in phrase) == ("-" in (row["plural_noun_phrase"] if "plural" in row["template"] else row["noun_phrase"])
                                   and not row["remove_descriptor_hyphens"])
    assert add_variants(sample, seed=4)["text"].tolist() != a["text"].tolist()


def test_variant_order_example():
    from biaslens.methods.holistic.dataset.variants import apply_variant

    assert apply_variant("Hi! I'm a Hard-of-hearing guy.", "a Hard-of-hearing guy", "Hi! I'm {noun_phrase}.",
                         (True, True, True, True)) == ("Hi! I am a hard of hearing guy", "a hard of hearing guy")


def test_write_table(tmp_path, builtin):
    small = builtin.iloc[:100]
    write_table(small, tmp_path / "s.csv")
    write_table(small, tmp_path / "s.parquet")
    import pandas as pd

    assert pd.read_csv(tmp_path / "s.csv")["text"].tolist() == small["text"].tolist()
    assert pd.read_parquet(tmp_path / "s.parquet")["text"].tolist() == small["text"].tolist()
    with pytest.raises(ValueError, match="unsupported output format"):
        write_table(small, tmp_path / "s.xlsx")


def test_import_is_light():
    code = "import sys, biaslens.datasets; print(any(m in sys.modules for m in ('torch', 'transformers', 'pandas')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
