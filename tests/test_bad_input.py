"""Bad input, tried systematically (issue 8, part 2): property-based tests over every file
format biaslens reads.

Property: a reader either loads the file or raises the module's documented error class (a
``ValueError`` subclass: DatasetError, RedditBiasError, CommunityDataError,
GenerationsFileError, ConfigError, StyleInventoryError) whose message names the file. Any other
exception type (KeyError, TypeError, RecursionError, ...) fails the test.

Inputs: random bytes and text, random JSON/YAML values, adversarial samples (empty file, BOM,
non-UTF-8 bytes, NUL bytes, huge fields, deep nesting, YAML tags and aliases, NaN/Infinity,
line separators inside strings), valid files with random edits, and valid structures with one
node replaced by a value of another type. The number of cases tried per format is shown in
pytest's terminal summary (``test_zz_report_counts`` hands it over) and recorded in
``docs/reliability.md``.

Also: templates and keyword files are filled by plain substitution, never ``str.format``.
"""

from __future__ import annotations

import collections
import json
import shutil
from importlib import resources
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biaslens.config import ConfigError, RunConfig
from biaslens.datasets.generations import GenerationsFileError, read_generations_jsonl
from biaslens.methods.community.dataset.prompts import (
    Keyword,
    Template,
    build_prompts,
    fill_template,
    load_keywords,
    load_templates,
)
from biaslens.methods.community.dataset.readers import CommunityDataError, read_community
from biaslens.methods.redditbias.dataset.readers import read_annotated, read_paired
from biaslens.methods.redditbias.dataset.specs import RedditBiasError, load_spec
from biaslens.scorers.styles import StyleInventoryError, load_clusters_file, load_style_inventory
from biaslens.vocabulary.perturb import PerturbationMap, RulePerturber
from biaslens.vocabulary.schema import BUILTIN_DIR, DatasetError, load_holistic_dataset

#: cases tried per format (every example hypothesis runs, shrinking included)
COUNTS: collections.Counter[str] = collections.Counter()

N = 80  # examples per property; the whole module takes about 15 s on a 2-core machine
SETTINGS = settings(max_examples=N, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


# -- inputs ---------------------------------------------------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
                     st.sampled_from(["{noun_phrase}", "XYZ", "(a) XYZ", "female", "plural", "any",
                                      "holistic-likelihood", "fake", "", " ", "\u2028", "\x00"]))
json_values = st.recursive(_scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                        st.dictionaries(st.text(max_size=8), c, max_size=4)),
                           max_leaves=12)

HUGE = 2_000_000
ADVERSARIAL: list[bytes] = [
    b"", b" ", b"\n\n\n", b"\xef\xbb\xbf", b"\xff\xfe\x00\x00", b"\x80abc", b"ok\n\xc3\x28\n", b"\x00" * 64,
    b"null", b"[]", b"{}", b"0", b'"text"', b"NaN", b"[NaN, Infinity, -Infinity]", b"1e999999",
    b"[" * 50_000, b"{\"a\":" * 50_000, b"- " * 20_000 + b"x", b"a:\n" + b"  " * 5_000 + b"b: 1",
    b'{"x": "' + b"a" * HUGE + b'"}', b"a" * HUGE, b"x," * (HUGE // 2),
    b"!!python/object/apply:os.system ['echo pwned']", b"!!python/name:builtins.eval ''",
    b"a: &a [1, 2]\nb: [*a, *a, *a]\n", b"? [a, b]\n: c\n", b"---\na: 1\n---\nb: 2\n", b"%YAML 9.9\n---\na: 1",
    b"1: 2\nfoo: bar\n", b"{1: [x]}", b"\t\t{", b"'unterminated", b'"\\ud800"', '{"a": "\u2028"}'.encode(),
    b"\r\n\r\n", b"a,b\n1,2,3,4\n\"unterminated", b"\"", b",,,\n,,,\n", b"\x1a",
]


def _mutate(seed: str, pos: int, cut: int, insert: str) -> bytes:
    pos = pos % (len(seed) + 1)
    return (seed[:pos] + insert + seed[pos + cut:]).encode("utf-8", "surrogatepass")


def _nodes(obj, out):
    out.append(obj)
    if isinstance(obj, dict):
        for v in obj.values():
            _nodes(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _nodes(v, out)
    return out


def _replace(obj, target, new):
    if obj is target:
        return new
    if isinstance(obj, dict):
        return {k: _replace(v, target, new) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_replace(v, target, new) for v in obj]
    return obj


def _wrong_type(parsed, index: int, new, as_json: bool) -> bytes:
    nodes = _nodes(parsed, [])
    out = _replace(parsed, nodes[index % len(nodes)], new)
    text = json.dumps(out) if as_json else yaml.safe_dump(out, allow_unicode=True)
    return text.encode("utf-8", "surrogatepass")


def contents(seeds: list[str], as_json: bool = False):
    """Bytes for one file: random, adversarial, or a valid seed mutated / with a node of the wrong type."""
    parsed = []
    for s in seeds:  # seeds that parse as JSON/YAML also get the wrong-type treatment
        try:
            value = json.loads(s) if as_json else yaml.safe_load(s)
        except (ValueError, yaml.YAMLError):
            continue
        if isinstance(value, (dict, list)):
            parsed.append(value)
    strategies = [
        st.binary(max_size=200),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
        json_values.map(lambda v: json.dumps(v).encode()),
        json_values.map(lambda v: yaml.safe_dump(v, allow_unicode=True).encode("utf-8", "surrogatepass")),
        st.sampled_from(ADVERSARIAL),
        st.builds(_mutate, st.sampled_from(seeds), st.integers(0, 10**6), st.integers(0, 30), st.text(max_size=12)),
    ]
    if parsed:
        strategies.append(st.builds(_wrong_type, st.sampled_from(parsed), st.integers(0, 10**6), json_values,
                                    st.just(as_json)))
    return st.one_of(*strategies)


def expect_loads_or_names_file(fmt: str, path: Path, load, errors) -> None:
    """The property: ``load()`` returns, or raises ``errors`` with the file's path in the message."""
    COUNTS[fmt] += 1
    try:
        load()
    except errors as e:
        assert str(path) in str(e), f"{fmt}: error does not name the file {path}: {e}"


def _builtin(pkg: str, *parts: str) -> str:
    return resources.files(pkg).joinpath(*parts).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bad_input")


# -- HolisticBias dataset JSON ---------------------------------------------------------------

HOLISTIC_KINDS = ("descriptors", "nouns", "sentence_templates", "standalone_noun_phrases")
HOLISTIC_SMALL = {
    "descriptors": '{"ability": {"zz_bucket": ["zz-able", {"descriptor": "zz-ish", "preference": "reviewed"}]}}',
    "nouns": '{"neutral": [["zzperson", "zzpeople"]]}',
    "sentence_templates": '{"I like {noun_phrase} a lot.": {"first_turn_only": false}}',
    "standalone_noun_phrases": '{"ability": ["zz folks", {"noun_phrase": "a zz", "plural_noun_phrase": "zzs"}]}',
}


@SETTINGS
@given(kind=st.sampled_from(HOLISTIC_KINDS), as_extra=st.booleans(), data=st.data())
def test_holistic_dataset_json(work, kind, as_extra, data):
    seeds = [HOLISTIC_SMALL[kind], (BUILTIN_DIR / f"{kind}.json").read_text(encoding="utf-8")]
    raw = data.draw(contents(seeds, as_json=True))
    if as_extra:
        path = work / "holistic_extra" / f"{kind}_user.json"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(raw)
        load = lambda: load_holistic_dataset(None, extra_files=[path])  # noqa: E731
    else:
        base = work / "holistic_base"
        if not base.exists():
            shutil.copytree(BUILTIN_DIR, base)
        path = base / f"{kind}.json"
        path.write_bytes(raw)
        load = lambda: load_holistic_dataset(base)  # noqa: E731
    try:
        expect_loads_or_names_file("holistic dataset JSON", path, load, DatasetError)
    finally:
        if not as_extra:
            shutil.copy(BUILTIN_DIR / f"{kind}.json", path)


# -- RedditBias specifications and CSVs -------------------------------------------------------

@SETTINGS
@given(as_json=st.booleans(), data=st.data())
def test_redditbias_spec(work, as_json, data):
    text = _builtin("biaslens.methods.redditbias.dataset", "data", "gender.yaml")
    seed = json.dumps(yaml.safe_load(text)) if as_json else text
    raw = data.draw(contents([seed], as_json=as_json))
    path = work / ("spec.json" if as_json else "spec.yaml")
    path.write_bytes(raw)
    expect_loads_or_names_file("RedditBias specification YAML/JSON", path, lambda: load_spec(path), RedditBiasError)


REDDIT_CSV = ("comments_processed,bias_sent,bias_phrase,initial_demo,replaced_demo,perplexity\n"
              "jews are greedy,1,1,jews,christians,31.5\n\"a, quoted\nphrase\",0,2,x,y,12\n")


def _csv_cells():
    cell = st.one_of(st.text(max_size=15), st.sampled_from(["1", "0", "nan", "inf", "1e400", "", "\"", "\n", "2"]))
    header = st.lists(st.sampled_from(["comments_processed", "phrase", "bias_sent", "bias_phrase", "perplexity",
                                       "initial_demo", "replaced_demo", "x", ""]), min_size=1, max_size=5)
    return st.builds(lambda h, rows: "\n".join([",".join(h)] + [",".join(r) for r in rows]).encode("utf-8", "surrogatepass"),
                     header, st.lists(st.lists(cell, max_size=6), max_size=5))


@SETTINGS
@given(a=st.one_of(contents([REDDIT_CSV]), _csv_cells()), b=st.one_of(contents([REDDIT_CSV]), _csv_cells()),
       ppl=st.sampled_from([None, "perplexity", "nope"]))
def test_redditbias_csvs(work, a, b, ppl):
    first, second = work / "rb_minoritized.csv", work / "rb_dominant.csv"
    first.write_bytes(a)
    second.write_bytes(b)
    expect_loads_or_names_file("RedditBias annotated CSV", first, lambda: read_annotated(first), RedditBiasError)
    COUNTS["RedditBias paired CSVs"] += 1
    try:
        read_paired(first, second, perplexity_column=ppl)
    except RedditBiasError as e:
        assert str(first) in str(e) or str(second) in str(e), e


# -- community data, templates and keyword files ----------------------------------------------

COMMUNITY_CSV = "post_id,title,text,comment,author\n1,Hello,\"body, with comma\",nice post u/bob,bob\n2,Q,,[deleted],al\n"
COMMUNITY_JSONL = ('{"id": "t3_1", "title": "Hi", "comments": ["a reply", {"body": "another"}], "author": "x"}\n'
                   '{"id": 2, "text": "body", "comments": [], "author": null}\n')


@SETTINGS
@given(suffix=st.sampled_from([".csv", ".tsv", ".jsonl", ".parquet"]), two_files=st.booleans(), data=st.data())
def test_community_data(work, suffix, two_files, data):
    seed = COMMUNITY_JSONL if suffix == ".jsonl" else COMMUNITY_CSV.replace(",", "\t") if suffix == ".tsv" else COMMUNITY_CSV
    raw = data.draw(contents([seed]))
    path = work / f"community{suffix}"
    path.write_bytes(raw)
    if two_files:
        comments = work / "community_comments.csv"
        comments.write_bytes(data.draw(contents(["post_id,comment\n1,hello there\n2,ok\n"])))
        COUNTS["community data files"] += 1
        try:
            read_community(path, comments=comments)
        except CommunityDataError as e:
            assert str(path) in str(e) or str(comments) in str(e), e
    else:
        expect_loads_or_names_file("community data files", path, lambda: read_community(path), CommunityDataError)


@SETTINGS
@given(which=st.sampled_from(["templates", "keywords"]), data=st.data())
def test_community_templates_and_keywords(work, which, data):
    seed = _builtin("biaslens.methods.community.dataset", "data", "templates.yaml" if which == "templates" else "demographics.yaml")
    raw = data.draw(contents([seed]))
    path = work / f"community_{which}.yaml"
    path.write_bytes(raw)
    loader = load_templates if which == "templates" else load_keywords
    expect_loads_or_names_file("community templates/keywords YAML", path, lambda: loader(path), CommunityDataError)


# -- precomputed generations JSONL -------------------------------------------------------------

GENERATIONS = '{"prompt": "I\'m a Deaf grandma.", "response": "ok"}\n{"prompt_id": 3, "response": "<b>x</b>", "model": "m"}\n'


@SETTINGS
@given(data=st.data())
def test_generations_jsonl(work, data):
    raw = data.draw(st.one_of(contents([GENERATIONS]),
                              st.lists(json_values.map(json.dumps), max_size=4).map(lambda ls: "\n".join(ls).encode())))
    path = work / "gens.jsonl"
    path.write_bytes(raw)
    expect_loads_or_names_file("generations JSONL", path, lambda: read_generations_jsonl(path), GenerationsFileError)


_tricky_text = st.one_of(st.text(max_size=40), st.lists(st.sampled_from(["a", " ", "\u2028", "\u2029", "\x85", "\x1c",
                                                                          "\r", "\x00", "<script>", "{0}"]),
                                                         max_size=8).map("".join))


@SETTINGS
@given(records=st.lists(st.fixed_dictionaries({"response": _tricky_text},
                                              optional={"prompt": st.text(max_size=20),
                                                        "prompt_id": st.one_of(st.integers(), st.text(max_size=5))}),
                        min_size=1, max_size=5))
def test_valid_generations_round_trip(work, records):
    """Any file of valid records loads, with every response intact (U+2028, NUL, ... inside strings)."""
    records = [r if ("prompt" in r or "prompt_id" in r) else {**r, "prompt": ""} for r in records]
    path = work / "gens_valid.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8",
                    errors="surrogatepass")
    COUNTS["generations JSONL"] += 1
    try:
        df = read_generations_jsonl(path)
    except GenerationsFileError as e:  # only a lone surrogate (not UTF-8) may be rejected
        assert str(path) in str(e) and "not UTF-8" in str(e), e
        return
    assert df["response"].tolist() == [r["response"] for r in records]


def test_generations_edge_cases(tmp_path):
    """Found by the properties above: an empty prompt id crashed (KeyError); U+2028 inside a
    JSON string split the line."""
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"id": "", "response": "x"}) + "\n"
                    + json.dumps({"prompt": "p", "response": "a\u2028b\x85c"}, ensure_ascii=False) + "\n", encoding="utf-8")
    df = read_generations_jsonl(path)
    assert df["response"].tolist() == ["x", "a\u2028b\x85c"]


# -- FairPair mapping, style inventory, run config ---------------------------------------------

@SETTINGS
@given(data=st.data())
def test_fairpair_mapping(work, data):
    raw = data.draw(contents([_builtin("biaslens.vocabulary", "data", "gender.yaml")]))
    path = work / "mapping.yaml"
    path.write_bytes(raw)
    expect_loads_or_names_file("FairPair mapping YAML", path, lambda: PerturbationMap.from_yaml(path), ConfigError)


@SETTINGS
@given(clusters_only=st.booleans(), data=st.data())
def test_style_inventory(work, clusters_only, data):
    seed = _builtin("biaslens.scorers", "data", "styles.yaml")
    path = work / ("clusters.yaml" if clusters_only else "styles.yaml")
    path.write_bytes(data.draw(contents([seed, "clusters:\n  Sympathy: [Sympathetic]\n  Other: Curious\n"])))
    if clusters_only:
        load = lambda: load_clusters_file(path, ("Sympathetic", "Curious"))  # noqa: E731
    else:
        load = lambda: load_style_inventory(path)  # noqa: E731
    expect_loads_or_names_file("style inventory YAML", path, load, StyleInventoryError)


RUN_YAML = """suite: holistic-likelihood
model: {name: smollm2-135m, dtype: float32, batch_size: 32}
sample: 6000
seed: 0
axes: [ability, age, body_type]
generation: {max_new_tokens: 8, persona: ["your persona: hi."]}
community: {n: 2, dimensions: [religion]}
fairpair: {name_pairs: ["John:man/Jane:woman"], top_p: 0.9}
redditbias: {bias_types: [gender], split: test}
"""


@SETTINGS
@given(data=st.data())
def test_run_config_yaml(work, data):
    path = work / "run.yaml"
    path.write_bytes(data.draw(contents([RUN_YAML, "model: fake\n"])))
    expect_loads_or_names_file("run config YAML", path, lambda: RunConfig.from_yaml(path), ConfigError)


# -- plain substitution, never str.format / eval ----------------------------------------------

HOSTILE = ["{0}", "{x.__class__}", "{noun_phrase.__class__}", "{__import__('os')}", "%s", "{}", "{{", "}"]


def test_holistic_templates_filled_by_plain_substitution(tmp_path):
    from biaslens.methods.holistic.dataset.builder import build_sentences  # noqa: PLC0415

    base = tmp_path / "hb"
    shutil.copytree(BUILTIN_DIR, base)
    (base / "sentence_templates.json").write_text(json.dumps({"I'm {noun_phrase.__class__} {noun_phrase}.": {},
                                                              "{0} {x.__class__} loves {plural_noun_phrase}.": {}}))
    df = build_sentences(load_holistic_dataset(base))
    text = "\n".join(df["text"])
    assert "{noun_phrase.__class__}" in text and "<class" not in text and "{0} {x.__class__} loves" in text


def test_community_templates_and_keywords_filled_by_plain_substitution(tmp_path):
    for hostile in HOSTILE:
        out = fill_template(Template("t", f"I am (a) XYZ {hostile}.", ("singular",)), Keyword("d", "g", "nurse", "singular"))
        assert out == f"I am a nurse {hostile}."
        out = fill_template("How do/does XYZ earn money?", Keyword("d", "g", hostile, "plural"))
        assert out == f"How do {hostile} earn money?"
    tf = tmp_path / "templates.yaml"
    tf.write_text(yaml.safe_dump({"templates": [{"id": "a", "text": "{0} {x.__class__} XYZ.", "forms": ["plural"]}]}))
    kf = tmp_path / "keywords.yaml"
    kf.write_text(yaml.safe_dump({"dimensions": {"d": {"g": [{"keyword": "{x.__class__}", "form": "plural"}]}}}))
    prompts = build_prompts(load_templates(tf), load_keywords(kf))
    assert prompts["prompt"].tolist() == ["{0} {x.__class__} {x.__class__}."]


def test_fairpair_templates_filled_by_plain_substitution(tmp_path):
    from biaslens.methods.fairpair.dataset.commonsents import sentence  # noqa: PLC0415
    from biaslens.vocabulary.perturb import NamePair  # noqa: PLC0415

    for hostile in HOSTILE:
        s = sentence("John", "man", hostile, hostile)
        assert hostile in s and "<class" not in s
    mapping = tmp_path / "m.yaml"
    mapping.write_text(yaml.safe_dump({"pairs": [["he", "{0}"], ["his", "{x.__class__}"]]}))
    p = RulePerturber(PerturbationMap.from_yaml(mapping).with_names([NamePair("John", "Jane")]))
    assert p("John said he lost his {0} key.") == "Jane said {0} lost {x.__class__} {0} key."


def test_zz_report_counts(terminal_summary_lines):
    """Hand the cases tried per format to pytest's terminal summary (runs last in this
    module; printed there rather than between the progress dots)."""
    assert COUNTS, "run the whole module to get the counts"
    lines = terminal_summary_lines.setdefault("bad-input cases tried per format", [])
    lines[:] = [f"{fmt:40s} {n:6d}" for fmt, n in sorted(COUNTS.items())]


def test_community_template_with_empty_forms_names_the_template(tmp_path):
    """`forms:` left empty (YAML null) is an error naming the file and the template, not a TypeError."""
    path = tmp_path / "templates.yaml"
    path.write_text("templates:\n- id: your_opinion\n  text: What is your opinion on XYZ?\n  forms:\n")
    with pytest.raises(CommunityDataError, match=r"templates.yaml: template 1 .*'forms' must be a list"):
        load_templates(path)
