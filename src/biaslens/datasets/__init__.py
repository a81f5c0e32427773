"""Datasets shipped with or read by biaslens."""

from .holistic import (
    DatasetError,
    HolisticDataset,
    add_variants,
    build_sentence_table,
    build_sentences,
    likelihood_rows,
    load_holistic_dataset,
    write_table,
)

__all__ = [
    "DatasetError",
    "HolisticDataset",
    "add_variants",
    "build_sentence_table",
    "build_sentences",
    "likelihood_rows",
    "load_holistic_dataset",
    "write_table",
]
