"""The table of each dataset `biaslens dataset NAME` writes (Parquet, CSV or the Hugging Face
format): one function per dataset, so every format holds the same rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

DATASETS = ("holistic", "redditbias", "fairpair", "community")


def holistic_table(dataset_dir: Path | None = None, extra_files: list[Path] | None = None, *,
                   fix_articles: bool = False) -> pd.DataFrame:
    """Every HolisticBias sentence (the table `biaslens dataset holistic` writes)."""
    from biaslens.methods.holistic.dataset import build_sentence_table, load_holistic_dataset

    ds = load_holistic_dataset(dataset_dir, extra_files=list(extra_files or []))
    table: pd.DataFrame = build_sentence_table(ds, fix_articles=fix_articles).to_pandas()
    return table


def redditbias_table(bias_types: list[str] | None = None, *, max_pairs: int | None = 400, seed: int = 0) -> pd.DataFrame:
    """The spec-template phrase pairs of each bias type, as a run without --data-dir scores them."""
    from biaslens.methods.redditbias.dataset import resolve_specs, template_pairs

    specs = resolve_specs(bias_types, [])
    parts = [template_pairs(spec, max_pairs=max_pairs, seed=seed).assign(bias_type=name, view="target",
                                                                        source="templates")
             for name, spec in specs.items()]
    df = pd.concat(parts, ignore_index=True)
    return df[["bias_type", "view", "source"] + [c for c in df.columns if c not in ("bias_type", "view", "source")]]


def fairpair_table(occupations: list[str] | None = None) -> pd.DataFrame:
    """Every Common Sents prompt x with its perturbation p(x) (the paper's occupations and name pair)."""
    from biaslens.methods.fairpair.dataset import build_prompts, select_occupations

    return pd.DataFrame([{"pair_id": p.pair_id, "occupation": p.occupation, "descriptor": p.descriptor,
                          "source_name": p.names.source, "target_name": p.names.target, "x": p.x, "px": p.px}
                         for p in build_prompts(select_occupations(occupations))])


def community_table(dimensions: list[str] | None = None) -> pd.DataFrame:
    """Every community-bias prompt (the paper's templates x demographics)."""
    from biaslens.methods.community.dataset import build_prompts

    return build_prompts(dimensions=dimensions)
