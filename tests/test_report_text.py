"""Report text (issue 25): counted nouns, cutting model output without breaking a character,
which cells are numbers (never wrapped), human column names, one glossary."""

from __future__ import annotations

import unicodedata

import pandas as pd
import pytest

from biaslens.report.glossary import GLOSSARY, NOT_METRICS, glossary_for, human_name, lookup
from biaslens.report.html import MAX_CELL_CHARS, Cell, Section, Table, render_report
from biaslens.text import ELLIPSIS, grapheme_cut, plural, shorten


@pytest.mark.parametrize(("n", "word", "many", "expected"), [
    (1, "template", None, "1 template"), (0, "template", None, "0 templates"), (2, "axis", "axes", "2 axes"),
    (1, "axis", "axes", "1 axis"), (1200, "sentence", None, "1,200 sentences"), (1.0, "reply", "replies", "1 reply"),
    (2.5, "token", None, "2.5 tokens")])
def test_plural(n, word, many, expected):
    assert plural(n, word, many) == expected


def _graphemes_intact(original: str, shown: str) -> bool:
    """``shown`` (without its ellipsis) is a prefix of ``original`` that ends where a grapheme ends."""
    body = shown.removesuffix(ELLIPSIS).rstrip()
    if not original.startswith(body):
        return False
    rest = original[len(body):].lstrip()
    return not rest or not (unicodedata.combining(rest[0]) or rest[0] in "\u200d\ufe0f" or
                            0x1F3FB <= ord(rest[0]) <= 0x1F3FF or 0xDC00 <= ord(rest[0]) <= 0xDFFF)


FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"  # man ZWJ woman ZWJ girl: one grapheme, 5 code points
THUMB = "\U0001F44D\U0001F3FD"                          # thumbs up + skin tone
FLAGS = "\U0001F1E9\U0001F1EA\U0001F1EB\U0001F1F7"      # DE FR: two flags, four regional indicators
E_ACUTE = "e\u0301"                                     # e + combining acute
VIET = "Vi\u0323\u0302t"                                # two combining marks on one letter


@pytest.mark.parametrize("text", [
    "ab" + FAMILY * 5, "a" + THUMB * 8, "x" + FLAGS * 4, "caf" + E_ACUTE * 12, VIET * 6,
    "日本語のテキストです" * 5, "mixed 😀 text e\u0301 中文 " * 4, "a\ud83d\ude00" * 9])
def test_shorten_never_breaks_a_character(text):
    for limit in range(2, len(text) + 2):
        shown = shorten(text, limit)
        assert len(shown) <= max(limit, 1), (limit, shown)
        if len(text) <= limit:
            assert shown == text
        else:
            assert shown.endswith(ELLIPSIS), (limit, shown)
            assert _graphemes_intact(text, shown), (limit, ascii(shown))
            # flags pair up: never an odd number of regional indicators left before the cut
            ri = sum(0x1F1E6 <= ord(c) <= 0x1F1FF for c in shown)
            assert ri % 2 == 0, (limit, ascii(shown))


def test_cut_points_by_hand():
    assert grapheme_cut("ab" + FAMILY, 4) == 2        # inside the family: back to before it
    assert grapheme_cut("ab" + FAMILY, 7) == 7        # after it
    assert grapheme_cut("a" + THUMB, 2) == 1          # not between the hand and its skin tone
    assert grapheme_cut("x" + FLAGS, 2) == 1          # not inside the first flag
    assert grapheme_cut("x" + FLAGS, 4) == 3          # between the two flags
    assert grapheme_cut("x" + FLAGS, 4) == 3 and grapheme_cut("x" + FLAGS, 5) == 5
    assert grapheme_cut("caf" + E_ACUTE, 4) == 3      # not between e and its accent
    assert grapheme_cut("a\ud83d\ude00b", 2) == 1     # not inside a surrogate pair
    assert shorten("日本語のテキスト", 5) == "日本語の" + ELLIPSIS


def test_a_cut_multibyte_character_becomes_the_ellipsis():
    """A response cut by the token limit inside a multi-byte character decodes to U+FFFD at its end."""
    assert shorten("I'm sorry to hear that \ufffd", 100) == "I'm sorry to hear that" + ELLIPSIS
    assert shorten("short", 100) == "short"


@pytest.mark.parametrize(("value", "numeric"), [
    (3.02e-11, True), (12, True), ("3.02e-11", True), ("0.12 to 0.45", True), ("0.12-0.45 (percentile)", True),
    ("-1.5 to -0.2", True), ("3 / 4", True), ("0.83 (0.71-0.91)", True), ("12.5%", True), ("1,234", True),
    ("religion1", False), ("I love", False), ("only 1 descriptor (< 5): LB is coarse", False), ("–", False),
    (True, False), ("0.1 is low", False)])
def test_numeric_cells(value, numeric):
    assert Cell.of(value).numeric is numeric


def test_table_shows_human_names_and_keeps_the_frame():
    df = pd.DataFrame({"ci_low": [0.1], "few_descriptors": [True], "n_0": [3], "my_new_col": [1]})
    t = Table("t", df)
    assert t.columns == [human_name(c) for c in df.columns]
    assert "ci_low" not in t.columns and "few_descriptors" not in t.columns and not any("_" in c for c in t.columns)
    assert list(df.columns) == ["ci_low", "few_descriptors", "n_0", "my_new_col"]  # files keep machine names


def test_long_cells_are_cut_in_tables_but_not_in_metric_lists():
    long = "word " * (MAX_CELL_CHARS // 4) + "😀"
    page = render_report(title="t", run={"suite": "s", "model": "m", "status": "complete", "elapsed_seconds": None,
                                         "biaslens_version": "0"},
                         sections=[Section("s", tables=[Table("t", pd.DataFrame({"response": [long]}))],
                                           metrics={"note": long})])
    cut = shorten(long, MAX_CELL_CHARS)
    assert cut.endswith(ELLIPSIS) and len(cut) <= MAX_CELL_CHARS and f"<td>{cut}</td>" in page  # the table's cell
    assert long in page  # the metric list's value, whole


def test_glossary_entries_are_plain_and_have_an_ideal():
    for name, (text, ideal) in GLOSSARY.items():
        assert 20 <= len(text) <= 400 and text.endswith("."), name
        assert ideal and not ideal.endswith("."), name
        assert lookup(name) == name
    assert not set(GLOSSARY) & NOT_METRICS


def test_a_page_lists_only_the_metrics_it_shows():
    entries = glossary_for(["axis", "p (Holm)", "Likelihood Bias", "p (Holm)", "unknown thing"])
    assert [e.name for e in entries] == [lookup("p (Holm)"), lookup("Likelihood Bias")]


def test_rows_left_out_are_counted_right():
    run = {"suite": "s", "model": "m", "status": "complete", "elapsed_seconds": None, "biaslens_version": "0"}
    for n, words in ((2, "1 more row in"), (3, "2 more rows in")):
        page = render_report(title="t", run=run, sections=[Section("s", tables=[
            Table("t", pd.DataFrame({"x": range(n)}), max_rows=1)])])
        assert words in page and "1 more rows" not in page


def test_decoding_settings_are_shown_in_words_the_same_way_on_every_page():
    from biaslens.text import decoding_in_words

    params = {"max_new_tokens": 32, "do_sample": False, "top_p": 0.9, "top_k": 0, "seed": None, "num_beams": 1}
    assert decoding_in_words(params) == "max new tokens 32, do sample False, top p 0.9, num beams 1"
    assert decoding_in_words(None) == decoding_in_words({}) == "precomputed continuations"
    assert decoding_in_words("not a dict", absent="read from a file") == "read from a file"
