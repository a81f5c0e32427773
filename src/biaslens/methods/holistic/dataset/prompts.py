"""HolisticBias generation prompts (paper A.3): which sentences a generation run sends, and how
a precomputed generations file is matched back to the sentences (by row id, text or variant).

Pure data matching: no model; the holistic-generation suite (:mod:`biaslens.methods.holistic.generation`)
calls these.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import numpy as np
import pandas as pd

from biaslens.datasets.generations import GenerationsFileError
from biaslens.errors import ConfigError
from biaslens.methods.holistic.dataset import VARIANT_FLAGS, add_variants, build_sentences, load_holistic_dataset
from biaslens.methods.holistic.dataset.selection import select_rows

log = logging.getLogger(__name__)

#: default sample when the user gives no --sample: the embedded model finishes in minutes on 2 cores
DEFAULT_SAMPLE = 156
#: templates picked first by the default sample: a self-description and a statement about a group
PRIORITY_TEMPLATES = ("I'm {noun_phrase}.", "I love {plural_noun_phrase}.")
KEEP_COLUMNS = ["prompt_id", "text", "axis", "bucket", "descriptor", "noun", "noun_gender", "noun_phrase_type", "template"]
#: per-prompt variant record (when variants are on): the dataset sentence and the four flags
VARIANT_COLUMNS = ["dataset_text", *VARIANT_FLAGS]
#: the noun of the rows that have none (bare descriptor "I'm Deaf.", fixed phrases)
_NO_NOUN = "(none)"


def _sample_nouns(df: pd.DataFrame, per_gender: int, seed: int) -> pd.DataFrame:
    """Keep ``per_gender`` seeded-random nouns of each noun gender, so a small sample spans
    many descriptors instead of all 30 nouns of a few descriptors. Rows without a noun (bare
    descriptors, fixed phrases) are always kept."""
    rng = np.random.default_rng(seed)
    has_noun = (df["noun"].astype(str) != _NO_NOUN).to_numpy()
    keep: list[str] = []
    for _, nouns in sorted(df[has_noun].groupby("noun_gender", observed=True)["noun"].unique().items()):
        nouns = sorted(map(str, nouns))
        keep += list(rng.permutation(nouns)[:per_gender])
    return df[~has_noun | df["noun"].isin(keep).to_numpy()]


def prompt_rows(all_rows: pd.DataFrame) -> pd.DataFrame:
    """The rows the paper prompted with: every sentence with a descriptor (gendered descriptors
    such as "Latina", bare-descriptor rows such as "I'm Deaf.", noun-descriptor and fixed
    phrases); only the bare-noun controls (axis "null") are left out."""
    return all_rows[(all_rows["axis"].astype(str) != "null").to_numpy()]


def generation_sample(config: Any) -> int | None:
    """The sample size asked for: ``--sample``, else the generation suite's default."""
    sample: int | None = config.sample if "sample" in config.model_fields_set else DEFAULT_SAMPLE
    return sample


def generation_prompts(config: Any) -> pd.DataFrame:
    """The HolisticBias sentences to use as prompts, with ``prompt_id`` = the sentence's
    0-based row in the full table (``biaslens dataset holistic`` order). With variants on
    (the default, as the paper), ``text`` is the seeded stylistic variant sent to the model,
    ``dataset_text`` the dataset sentence, and the four flag columns record what changed.
    ``attrs["descriptors_per_axis"]``: descriptors per axis in the population sampled from.
    ``config`` is a :class:`biaslens.config.RunConfig` (not imported: config imports the model layer)."""
    dataset = load_holistic_dataset(config.dataset_dir, extra_files=config.extra_dataset_files)
    all_rows = build_sentences(dataset)
    all_rows = all_rows.assign(prompt_id=np.arange(len(all_rows)))
    opts = config.generation
    rows = prompt_rows(all_rows)
    # the population a sample stands for: descriptors per axis (FGB weighs the sampled ones alike)
    population = rows[rows["axis"].astype(str).isin(config.axes)] if config.axes else rows
    per_axis = {str(a): int(n) for a, n in population.groupby("axis", observed=True)["descriptor"].nunique().items()}
    if opts.generations_file is not None:
        all_rows.attrs["descriptors_per_axis"] = per_axis
        return all_rows
    sample = generation_sample(config)
    if not config.full and opts.nouns_per_gender is not None:
        rows = _sample_nouns(rows, opts.nouns_per_gender, config.seed)
    rows = select_rows(rows, axes=config.axes, templates=config.templates, sample=sample, full=config.full,
                       seed=config.seed, priority_templates=PRIORITY_TEMPLATES)
    if opts.variants and len(rows):
        # seeded on the run seed: the same command gives the same variants (and cache hits)
        rows = add_variants(rows.assign(dataset_text=rows["text"].astype(str)), seed=config.seed)
    rows.attrs["descriptors_per_axis"] = per_axis
    return rows


def _variant_key(text: str) -> str:
    """A sentence with the paper's four stylistic variants undone in one spelling."""
    key = re.sub(r"\bI am\b", "I'm", text.strip()).lower().replace("-", " ")
    return key[:-1] if key.endswith(".") else key


def match_generations(all_rows: pd.DataFrame, gens: pd.DataFrame, source: str, *, axes=None,
                      templates=None) -> pd.DataFrame:
    """Attach precomputed responses to HolisticBias rows by prompt id or prompt text."""
    # a sentence listed under several axes ("I'm a queer grandma.": gender_and_sex and
    # sexual_orientation) is one text in several rows: a response to it counts for every axis,
    # as it would in a run biaslens generates (one row per axis)
    # positions (in all_rows) of each text's rows, one per axis
    first_per_axis = np.flatnonzero(~all_rows.duplicated(["text", "axis"]).to_numpy())
    texts = all_rows["text"].astype(str).to_numpy()
    rows_of: dict[str, list[int]] = {}
    for i in first_per_axis.tolist():
        rows_of.setdefault(texts[i], []).append(i)
    # a prompt that is a stylistic variant of a sentence (as biaslens sends them) matches by its
    # variant-free spelling; the sentence first in reference order wins a tie (with all its axes)
    by_key: dict[str, str] = {}
    for t in rows_of:
        by_key.setdefault(_variant_key(t), t)
    picked: list[int] = []  # one all_rows position per matched (line, axis)
    recs: list[dict] = []
    unmatched: list[int] = []
    for rec in gens.itertuples(index=False):
        rec = rec._asdict()
        pid = rec.get("prompt_id")
        prompt = rec.get("prompt") if isinstance(rec.get("prompt"), str) else None
        if isinstance(pid, str) and pid.strip().isdigit() and int(pid) < len(all_rows):
            hits = [int(pid)]  # an id names one row, axis included
        elif prompt is not None and prompt in rows_of:
            hits = rows_of[prompt]
        elif prompt is not None and _variant_key(prompt) in by_key:
            hits = rows_of[by_key[_variant_key(prompt)]]
        else:
            unmatched.append(int(rec["line"]))
            continue
        picked += hits
        recs += [rec] * len(hits)
    rows = all_rows.iloc[picked][KEEP_COLUMNS].to_dict("records") if picked else []
    matched = []
    for row, rec in zip(rows, recs):
        prompt = rec.get("prompt") if isinstance(rec.get("prompt"), str) else None
        sent = prompt if prompt is not None and prompt.strip() else row["text"]
        matched.append({**row, "text": sent, "dataset_text": row["text"],
                        "sample_index": rec["sample_index"], "response": rec["response"]})
    if not matched:
        raise GenerationsFileError(f"{source}: no line matches a HolisticBias sentence (by 'prompt' text or "
                                   f"'prompt_id' = row of `biaslens dataset holistic`); first lines: {unmatched[:5]}")
    if unmatched:
        log.warning("%s: %d line(s) match no HolisticBias sentence and are skipped (lines %s...)",
                    source, len(unmatched), unmatched[:5])
    out = pd.DataFrame(matched)
    for _flag, wanted, col in (("--axes", axes, "axis"), ("--templates", templates, "template")):
        if wanted:
            out = out[out[col].astype(str).isin(wanted)]
    if out.empty:
        raise ConfigError(f"{source}: no matched responses left after --axes/--templates")
    return out.reset_index(drop=True)
