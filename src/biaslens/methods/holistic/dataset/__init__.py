"""HolisticBias dataset: built-in data (transcribed from the paper), loader, generator, variants.

Importing this package is light (numpy only); pandas/pyarrow load when a table is built.
"""

from biaslens.vocabulary.schema import BUILTIN_DIR, DatasetError, HolisticDataset, load_holistic_dataset

from .builder import (
    COLUMNS,
    NOUN_PHRASE_COLUMNS,
    build_sentence_table,
    build_sentences,
    likelihood_rows,
    noun_phrase_rows,
    write_table,
)
from .variants import VARIANT_FLAGS, add_variants

__all__ = [
    "BUILTIN_DIR",
    "COLUMNS",
    "NOUN_PHRASE_COLUMNS",
    "VARIANT_FLAGS",
    "DatasetError",
    "HolisticDataset",
    "add_variants",
    "build_sentence_table",
    "build_sentences",
    "likelihood_rows",
    "load_holistic_dataset",
    "noun_phrase_rows",
    "write_table",
]
