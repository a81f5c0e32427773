"""RedditBias phrase pairs per bias type and view, from the source the options select: the shipped
paired files (or a precomputed perplexity column in them), the user's annotated phrases swapped
to the dominant group, or template phrases from the specification alone. No model is called.

Views: ``target`` compares phrases about the minoritized group with the same phrases about
the dominant group; ``attribute`` compares phrases with a stereotypical attribute with the
same phrases with its non-stereotypical counterpart (shipped attribute-swap files only).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.errors import ConfigError

from .counterfactual import target_swap
from .readers import find_files, read_annotated, read_paired
from .specs import BiasSpec, RedditBiasError
from .templates import template_pairs

log = logging.getLogger(__name__)

PAIR_COLUMNS = ["bias_type", "view", "source", "phrase", "counterfactual", "ppl_minoritized", "ppl_dominant", "gap"]


@dataclass
class View:
    """The phrase pairs of one bias type and view, before or after scoring."""

    bias_type: str
    view: str  # "target" | "attribute"
    source: str  # "shipped" | "precomputed" | "annotated" | "templates"
    pairs: pd.DataFrame
    outlier_removal: bool
    notes: dict[str, Any]

    @property
    def scored(self) -> bool:
        return "ppl_minoritized" in self.pairs.columns


def _outliers(setting: str, reduced: bool) -> bool:
    # The shipped *_reduced files already had outliers removed: never reduce them twice.
    return {"on": True, "off": False}.get(setting, not reduced)


def build_views(specs: dict[str, BiasSpec], opts: Any, *, seed: int = 0) -> list[View]:
    """Phrase pairs of every bias type, from the source the options select (see the module docstring).

    ``opts`` is the run configuration's ``redditbias`` section (``RedditBiasOptions``).
    """
    views: list[View] = []
    if opts.perplexity_column and not opts.data_dir:
        raise ConfigError("--perplexity-column needs --data-dir (the paired files that hold the column)")
    for name, spec in specs.items():
        if opts.data_dir is None:
            pairs = template_pairs(spec, max_pairs=opts.max_template_pairs, seed=seed)
            views.append(View(name, "target", "templates", pairs, _outliers(opts.outlier_removal, False),
                              {"n_template_pairs": len(pairs)}))
            continue
        files = find_files(opts.data_dir, spec, opts.split)
        col = opts.perplexity_column
        if files.paired is not None:
            pairs = read_paired(*files.paired, perplexity_column=col)
            views.append(View(name, "target", "precomputed" if col else "shipped", pairs,
                              _outliers(opts.outlier_removal, True),
                              {"files": [str(p) for p in files.paired]}))
        elif files.annotated is not None and not col:
            views.append(annotated_view(spec, files.annotated, opts))
        elif not opts.bias_types:
            # all bias types by default: use those the folder has, name the others
            log.warning("%s: no RedditBias files for bias type %r; skipped", opts.data_dir, name)
            continue
        else:
            where = files.folder or Path(opts.data_dir) / spec.name
            raise RedditBiasError(
                f"{where}: no paired files reddit_comments_{name}_{{{spec.minoritized},{spec.dominant}}}_biased_"
                f"{opts.split}_reduced.csv" + ("" if col else " and no *_processed_phrase_annotated.csv")
                + "; choose the bias types present with --bias-types")
        if files.attribute is not None:
            pairs = read_paired(*files.attribute, perplexity_column=col)
            views.append(View(name, "attribute", "precomputed" if col else "shipped", pairs,
                              _outliers(opts.outlier_removal, True), {"files": [str(p) for p in files.attribute]}))
    if not views:
        raise RedditBiasError(f"--data-dir {opts.data_dir}: no RedditBias files for any of {', '.join(specs)} "
                              "(expected data/<bias_type>/reddit_comments_<bias_type>_<group>_biased_"
                              f"{opts.split}_reduced.csv or *_processed_phrase_annotated.csv)")
    return views


def annotated_view(spec: BiasSpec, path: Path, opts: Any) -> View:
    """Phrases annotated as biased, swapped to the dominant group.

    Every biased phrase is accounted for: a phrase with no target term to swap cannot form a
    pair, so it is left out of the test but counted and listed (``notes["unswappable"]``,
    run.json ``sources`` and the report), never dropped silently.
    """
    ann = read_annotated(path)
    df = ann.df
    biased = df[df["bias_phrase"] == 1] if "bias_phrase" in df.columns else df
    phrases = biased["phrase"].tolist()
    rows = [int(i) + 1 for i in biased.index]  # data row, 1 = first after the header (quoted fields may span lines)
    swap = target_swap(phrases, spec, "to_dominant", opts.counterfactual_mode)
    source = [p.lower() if opts.counterfactual_mode == "reference" else p for p in phrases]
    pairs = pd.DataFrame({"phrase": source, "counterfactual": swap.texts,
                          "initial": [str(i) for i in swap.initial], "replaced": [str(r) for r in swap.replaced]})
    changed = [c and a != b for c, a, b in zip(swap.changed, source, swap.texts)]
    unswappable = [{"row": r, "phrase": p} for r, p, c in zip(rows, phrases, changed) if not c]
    pairs = pairs[changed].reset_index(drop=True)
    if unswappable:
        log.warning("%s: %d of %d biased phrases have no target term of %r to swap; listed in run.json sources "
                    "and the report, left out of the test", path, len(unswappable), len(phrases), spec.name)
    notes = {"file": str(path), "labels": ann.summary()["labels"], "n_biased_phrases": len(phrases),
             "n_swapped": len(pairs), "n_unswappable": len(unswappable), "unswappable": unswappable,
             "counterfactual_mode": opts.counterfactual_mode}
    return View(spec.name, "target", "annotated", pairs, _outliers(opts.outlier_removal, False), notes)
