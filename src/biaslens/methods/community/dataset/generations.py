"""Community-bias prompts for a run (templates x keywords) and precomputed generations matched
back to them (by prompt id or text; a trailing separator token ignored), plus the paper's
50-word cap. Pure data handling: the community suite calls these."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.datasets.generations import GenerationsFileError, read_generations_jsonl
from biaslens.methods.community.dataset.prompts import build_prompts, load_keywords, load_templates

log = logging.getLogger(__name__)

PROMPT_COLUMNS = ["prompt_id", "prompt", "template_id", "template", "dimension", "demographic", "keyword", "form"]
#: a trailing special token such as "<|sep|>" in precomputed prompts
_TRAILING_TOKEN = re.compile(r"\s*<[^<>\s]{1,40}>\s*$")


def community_prompts(config: Any) -> pd.DataFrame:
    """The prompt table a :class:`biaslens.config.RunConfig` asks for (templates x keywords, filtered by dimension)."""
    o = config.community
    return build_prompts(load_templates(o.templates_file), load_keywords(o.keywords_file), dimensions=o.dimensions)


def trim_words(text: str, max_words: int) -> str:
    """The first ``max_words`` whitespace-separated words (the paper's 50-word cap)."""
    words = text.split()
    return " ".join(words[:max_words])


def match_precomputed(prompts: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Attach a precomputed generations file to the prompts (by ``prompt_id`` or prompt
    text; a trailing separator token in the prompt is ignored). Lines may carry a
    ``model`` field; otherwise the file's name is the model."""
    gens = read_generations_jsonl(path)
    by_id = prompts.set_index("prompt_id")
    by_text = prompts.set_index("prompt")
    rows, unmatched = [], []
    for rec in gens.to_dict("records"):
        row = None
        pid = rec.get("prompt_id")
        if isinstance(pid, str) and pid in by_id.index:
            row = {"prompt_id": pid, **by_id.loc[pid].to_dict()}
        elif isinstance(rec.get("prompt"), str):
            text = rec["prompt"].strip()
            for cand in (text, _TRAILING_TOKEN.sub("", text)):
                if cand in by_text.index:
                    row = {"prompt": cand, **by_text.loc[cand].to_dict()}
                    break
        if row is None:
            unmatched.append(int(rec["line"]))
            continue
        model = rec.get("model")
        rows.append({"model": str(model) if isinstance(model, str) and model else path.stem,
                     **{k: row[k] for k in PROMPT_COLUMNS}, "model_prompt": rec.get("prompt", row["prompt"]),
                     "response_full": rec["response"]})
    if not rows:
        raise GenerationsFileError(f"{path}: no line matches a community prompt (by 'prompt' text or 'prompt_id' "
                                   f"as in prompts.csv); unmatched lines: {unmatched[:5]}")
    if unmatched:
        log.warning("%s: %d line(s) match no prompt and are skipped (lines %s...)", path, len(unmatched), unmatched[:5])
    df = pd.DataFrame(rows)
    df["sample_index"] = df.groupby(["model", "prompt_id"]).cumcount()
    return df
