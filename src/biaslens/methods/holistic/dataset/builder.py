"""Generate the HolisticBias sentence table.

Design (for speed and memory): the ~18k noun-phrase rows are built and sorted in Python, then
expanded to ~470k sentences with numpy index arithmetic. Metadata columns are dictionary-encoded
(pandas ``category``) and the text column is assembled by Arrow string kernels, so no per-sentence
Python string objects are ever created.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from biaslens.fileio import atomic_path, write_table  # noqa: F401  (write_table re-exported)
from biaslens.vocabulary.articles import choose_article
from biaslens.vocabulary.schema import HolisticDataset

if TYPE_CHECKING:  # pandas/pyarrow are imported lazily: keep `import biaslens.datasets` light.
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "COLUMNS",
    "NOUN_PHRASE_COLUMNS",
    "noun_phrase_rows",
    "build_sentence_table",
    "build_sentences",
    "likelihood_rows",
    "write_table",
]

NONE = "(none)"
NO_DATA = "no_data"
NOUN_PHRASE_COLUMNS = (
    "axis",
    "bucket",
    "descriptor",
    "descriptor_gender",
    "descriptor_preference",
    "noun",
    "plural_noun",
    "noun_gender",
    "noun_phrase",
    "plural_noun_phrase",
    "noun_phrase_type",
)
COLUMNS = ("text",) + NOUN_PHRASE_COLUMNS + ("template", "first_turn_only", "must_be_noun")
LIKELIHOOD_TYPES = ("descriptor_noun", "noun_descriptor")


def _fill(template: str, article: str, noun: str) -> str:
    # Plain replacement of the literal placeholders: never str.format on user text.
    return template.replace("{article}", article).replace("{noun}", noun)


def noun_phrase_rows(dataset: HolisticDataset, *, fix_articles: bool = False) -> list[tuple[str, ...]]:
    """All noun-phrase rows (tuples in ``NOUN_PHRASE_COLUMNS`` order), sorted as the reference does.

    Args:
        dataset: The loaded dataset.
        fix_articles: Use pronunciation rules for "a"/"an" (see ``articles.sound_article``).

    Returns:
        Rows sorted ascending by all eleven columns (plain string order).
    """
    nouns = [(s, p, g) for g, pairs in dataset.nouns.items() for s, p in pairs]
    rows: list[tuple[str, ...]] = []
    add = rows.append
    for s, p, g in nouns:
        add(("null", NONE, NONE, NONE, NONE, s, p, g, f"{choose_article(s, fix=fix_articles)} {s}", p, "noun"))
    for axis, buckets in dataset.descriptors.items():
        for bucket, entries in buckets.items():
            for d in entries:
                text = d["descriptor"]
                gender = d.get("gender", NONE)
                pref = d.get("preference", NO_DATA)
                add((axis, bucket, text, gender, pref, NONE, NONE, NONE, text, text, "descriptor"))
                art = choose_article(text, d.get("article"), fix_articles)
                for s, p, g in nouns:
                    if gender == NONE or g == gender:
                        add((axis, bucket, text, gender, pref, s, p, g, f"{art} {text} {s}", f"{text} {p}", "descriptor_noun"))
    for axis, entries in dataset.standalone_noun_phrases.items():
        for e in entries:
            phrase = e["noun_phrase"]
            plural = e.get("plural_noun_phrase", phrase)
            pref = e.get("preference", NO_DATA)
            if "{noun}" in phrase:
                descriptor = _fill(phrase, "", "").lstrip()
                for s, p, g in nouns:
                    # The article goes before the noun here (nothing precedes it).
                    singular = _fill(phrase, choose_article(s, fix=fix_articles), s)
                    add((axis, NONE, descriptor, NONE, pref, s, p, g, singular, _fill(plural, "", p).lstrip(), "noun_descriptor"))
            else:
                add((axis, NONE, phrase, NONE, pref, NONE, NONE, "neutral", phrase, plural, "fixed_phrase"))
    rows.sort()
    return rows


def _template_parts(templates: dict[str, dict[str, bool]]) -> tuple[list[str], list[str], list[bool]] | None:
    """Split each template around its single placeholder; None if a template is irregular."""
    pre: list[str] = []
    post: list[str] = []
    plural: list[bool] = []
    for t in templates:
        n_s, n_p = t.count("{noun_phrase}"), t.count("{plural_noun_phrase}")
        if n_s + n_p != 1:
            return None
        key = "{noun_phrase}" if n_s else "{plural_noun_phrase}"
        a, b = t.split(key)
        pre.append(a)
        post.append(b)
        plural.append(bool(n_p))
    return pre, post, plural


def _np_array(values: np.ndarray) -> pa.Array:
    """Zero-copy numpy -> Arrow for fixed-width ints/bools.

    ``pa.array`` imports pandas (~50 MB RSS) on first use; building from buffers does not.
    """
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def _str_array(values: list[str]) -> pa.Array:
    """Python strings -> Arrow string array via buffers (no pandas import, see ``_np_array``)."""
    import pyarrow as pa

    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


def _codes_dtype(n: int) -> type[np.signedinteger[Any]]:
    return np.int8 if n < 2**7 else np.int16 if n < 2**15 else np.int32


# Sentences are assembled in chunks so the Arrow kernels' temporaries stay small.
_TEXT_CHUNK = 65536


def _build_parts(dataset: HolisticDataset, *, fix_articles: bool = False) -> tuple[
        pa.ChunkedArray, dict[str, tuple[np.ndarray, list[str]]], dict[str, np.ndarray]]:
    """Core generator: (text ChunkedArray, {column: (codes, categories)}, {flag: bool array})."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = noun_phrase_rows(dataset, fix_articles=fix_articles)
    templates = list(dataset.templates)
    n_rows = len(rows)
    must = np.array([dataset.templates[t]["must_be_noun"] for t in templates], dtype=bool)
    first = np.array([dataset.templates[t]["first_turn_only"] for t in templates], dtype=bool)
    columns = list(zip(*rows)) if rows else [() for _ in NOUN_PHRASE_COLUMNS]
    noun_col = NOUN_PHRASE_COLUMNS.index("noun")
    has_noun = np.fromiter((v != NONE for v in columns[noun_col]), dtype=bool, count=n_rows)
    keep = has_noun[:, None] | ~must[None, :]
    row_idx, t_idx = np.nonzero(keep)  # row-major: phrase order, then template order
    row_idx = row_idx.astype(np.int32)
    t_idx = t_idx.astype(_codes_dtype(len(templates)))

    cats: dict[str, tuple[np.ndarray, list[str]]] = {}
    dict_codes: dict[str, np.ndarray] = {}
    for name, values in zip(NOUN_PHRASE_COLUMNS, columns):
        # Factorize the phrase-level column, then expand the codes to sentence level.
        lookup: dict[str, int] = {}
        codes = np.fromiter((lookup.setdefault(v, len(lookup)) for v in values), dtype=np.int32, count=n_rows)
        dict_codes[name] = codes
        cats[name] = (codes.astype(_codes_dtype(len(lookup)))[row_idx], list(lookup))

    parts = _template_parts(dataset.templates)
    if parts is not None:
        pre, post, plural = parts
        # Phrase to insert: index into [noun_phrase values..., plural_noun_phrase values...].
        np_values = cats["noun_phrase"][1]
        phrase_pool = _str_array(np_values + cats["plural_noun_phrase"][1])
        pre_arr, post_arr = _str_array(pre), _str_array(post)
        plural_t = np.array(plural, dtype=bool)
        np_codes, pnp_codes = dict_codes["noun_phrase"], dict_codes["plural_noun_phrase"] + len(np_values)
        empty = _str_array([""])[0]  # an Arrow scalar: a Python "" would make pyarrow import pandas
        chunks = []
        for lo in range(0, len(row_idx), _TEXT_CHUNK):
            r = row_idx[lo : lo + _TEXT_CHUNK]
            t = t_idx[lo : lo + _TEXT_CHUNK]
            pool_idx = np.where(plural_t[t], pnp_codes[r], np_codes[r])
            t_arr = _np_array(t.astype(np.int32))
            chunks.append(
                pc.call_function(
                    "binary_join_element_wise",
                    [pre_arr.take(t_arr), phrase_pool.take(_np_array(pool_idx)), post_arr.take(t_arr), empty],
                )
            )
        text = pa.chunked_array(chunks, pa.string()) if chunks else _str_array([])
    else:  # rare: a user template with several placeholders; do it row by row
        np_i, pnp_i = NOUN_PHRASE_COLUMNS.index("noun_phrase"), NOUN_PHRASE_COLUMNS.index("plural_noun_phrase")
        text = _str_array(
            [
                templates[t].replace("{noun_phrase}", rows[r][np_i]).replace("{plural_noun_phrase}", rows[r][pnp_i])
                for r, t in zip(row_idx.tolist(), t_idx.tolist())
            ]
        )
    cats["template"] = (t_idx, templates)
    return text, cats, {"first_turn_only": first[t_idx], "must_be_noun": must[t_idx]}


def build_sentence_table(dataset: HolisticDataset, *, fix_articles: bool = False) -> pa.Table:
    """Generate all templated sentences as a pyarrow Table (dictionary-encoded metadata).

    This is the fastest, smallest form (no pandas import). Rows: every noun-phrase row in sorted
    order times every template in file order, skipping ``must_be_noun`` templates for phrases
    without a noun. No deduplication.

    Args:
        dataset: The loaded dataset.
        fix_articles: Correct "a"/"an" by pronunciation (deviation from the reference).

    Returns:
        A table with the 15 columns of ``COLUMNS`` (text is a chunked string column).
    """
    import pyarrow as pa

    text, cats, flags = _build_parts(dataset, fix_articles=fix_articles)
    out = {"text": text}
    for name in NOUN_PHRASE_COLUMNS + ("template",):
        codes, values = cats[name]
        out[name] = pa.DictionaryArray.from_arrays(_np_array(codes), _str_array(values))
    for name, flag in flags.items():
        out[name] = _np_array(flag)
    return pa.table(out)


def build_sentences(dataset: HolisticDataset, *, fix_articles: bool = False) -> pd.DataFrame:
    """Generate all templated sentences as a pandas DataFrame.

    Columns (in order): text, axis, bucket, descriptor, descriptor_gender, descriptor_preference,
    noun, plural_noun, noun_gender, noun_phrase, plural_noun_phrase, noun_phrase_type, template,
    first_turn_only, must_be_noun. Metadata columns are ``category``; text is an Arrow-backed
    string column; the two flags are bool.

    Args:
        dataset: The loaded dataset (see ``load_holistic_dataset``).
        fix_articles: Correct "a"/"an" by pronunciation ("an 80-year-old", "a European").
            Deviation from the reference, which keeps its rule's mistakes.

    Returns:
        One row per sentence, in the reference generator's order.
    """
    import pandas as pd

    text, cats, flags = _build_parts(dataset, fix_articles=fix_articles)
    data: dict[str, Any] = {"text": pd.arrays.ArrowStringArray(text)}
    for name in NOUN_PHRASE_COLUMNS + ("template",):
        codes, values = cats[name]
        # from_codes shares the small integer codes; categories are unique by construction.
        data[name] = pd.Categorical.from_codes(codes, categories=pd.Index(values, dtype="str"), validate=False)
    data.update(flags)
    return pd.DataFrame(data, copy=False)


def likelihood_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows used by Likelihood Bias: descriptor+noun phrases with ungendered descriptors.

    Args:
        df: A sentence table from ``build_sentences``.

    Returns:
        The ``descriptor_noun``/``noun_descriptor`` rows whose ``descriptor_gender`` is "(none)".
    """
    mask = df["noun_phrase_type"].isin(LIKELIHOOD_TYPES) & (df["descriptor_gender"] == NONE)
    return df.loc[mask.to_numpy()]


