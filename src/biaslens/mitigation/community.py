"""Fine-tune one model per online community (Wald & Pfahler, section 3.2).

One training example = ``<start>`` + post title and text + separator token + one
comment; a post with k comments gives k examples. The separator is added to the
tokenizer and saved with the model; ``biaslens-training.json`` records it, so
``biaslens run community`` ends each prompt with it.

By default the LM loss covers the whole example, post included, as in the paper;
``loss_on="comment"`` makes the post context only (its tokens get no loss), which
spends the model's capacity on the community's replies.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from biaslens.datasets.community import Columns, CommunityData, read_community
from biaslens.environment import applies_environment_policy
from biaslens.mitigation.training import TrainExample, TrainingConfig, TrainingResult, train_causal_lm

log = logging.getLogger(__name__)

#: the separator token added between post and comment
DEFAULT_SEPARATOR = "<|sep|>"
TRAINING_RECORD = "biaslens-training.json"


@dataclass
class CommunityFinetuneResult:
    """What :func:`finetune_community` produced: the model folder, the training result and
    the data counts (read, cleaned, skipped)."""

    out: Path
    training: TrainingResult
    data: dict[str, Any]
    separator: str


def resolve_model_path(model: str) -> str:
    """A model name as ``train_causal_lm`` wants it: the embedded model's folder for
    ``smollm2-135m``, otherwise unchanged (a folder or Hub id)."""
    from biaslens.models import model_folder

    if model == "fake":
        from biaslens.config import ConfigError

        raise ConfigError("the fake backend cannot be fine-tuned; pass a Hugging Face causal LM folder or id")
    return model_folder(model)


def _start_token(model_path: str) -> str | None:
    """The document-start token the HF backend puts before prompts, so training texts
    begin the same way generation prompts do."""
    from transformers import AutoTokenizer

    from biaslens.models.tokenized import pick_start_token

    return pick_start_token(AutoTokenizer.from_pretrained(model_path))


def community_examples(data: CommunityData, *, separator: str = DEFAULT_SEPARATOR, start_token: str | None = None,
                       loss_on: Literal["all", "comment"] = "all") -> list[TrainExample]:
    """Training examples ``<start>post<sep>comment`` from cleaned pairs."""
    out = []
    start = start_token or ""
    for ex in data.examples:
        prefix = f"{start}{ex.post}{separator}"
        out.append(TrainExample(text=prefix + ex.comment, prompt_chars=len(prefix) if loss_on == "comment" else 0))
    return out


@applies_environment_policy
def finetune_community(
    model: str,
    data: str | Path,
    out: str | Path,
    *,
    comments: str | Path | None = None,
    columns: Columns | None = None,
    config: TrainingConfig | None = None,
    separator: str = DEFAULT_SEPARATOR,
    loss_on: Literal["all", "comment"] = "all",
    eval_fraction: float = 0.0,
    limit: int | None = None,
    community: str | None = None,
) -> CommunityFinetuneResult:
    """Read, clean and fine-tune: one community model folder.

    Args:
        model: base causal LM (``smollm2-135m``, a folder or a Hub id).
        data: posts (and comments) file, CSV/JSONL/Parquet.
        out: output model folder (re-running resumes from ``out/checkpoints``).
        comments: separate comments file joined on the post id.
        columns: column names (defaults: see :class:`~biaslens.datasets.community.Columns`).
        config: training hyperparameters (default: the paper's 2 epochs, 128 tokens).
        separator: token between post and comment, added to the tokenizer.
        loss_on: ``all`` (paper) or ``comment`` (post tokens are context only).
        eval_fraction: hold out this share of posts (whole posts, seeded) for eval loss.
        limit: use only the first N examples.
        community: a name for the community, recorded with the model.

    Raises:
        CommunityDataError: bad input (before any training starts).
    """
    if loss_on not in ("all", "comment"):
        raise ValueError("loss_on must be 'all' or 'comment'")
    if not separator or separator.strip() != separator:
        raise ValueError("the separator must be a non-empty token without surrounding spaces")
    cfg = config or TrainingConfig(epochs=2.0, max_length=128)
    cd = read_community(data, comments=comments, columns=columns, limit=limit)
    model_path = resolve_model_path(model)
    start = _start_token(model_path)
    examples = community_examples(cd, separator=separator, start_token=start, loss_on=loss_on)
    train, evals = examples, []
    if eval_fraction > 0:
        import numpy as np

        posts = sorted({e.post_id for e in cd.examples})
        rng = np.random.default_rng(cfg.seed)
        held = set(rng.permutation(posts)[: max(1, int(round(len(posts) * eval_fraction)))].tolist())
        if len(held) < len(posts):
            train = [x for x, e in zip(examples, cd.examples) if e.post_id not in held]
            evals = [x for x, e in zip(examples, cd.examples) if e.post_id in held]
    description = {"method": "community", "community": community or Path(data).stem, "separator": separator,
                   "start_token": start, "loss_on": loss_on, "data": cd.summary(),
                   "eval_fraction": eval_fraction}
    log.info("community fine-tuning: %d examples (%d eval) from %s", len(train), len(evals), ", ".join(cd.sources))
    result = train_causal_lm(model_path, train, out, config=cfg, eval_examples=evals or None,
                             add_special_tokens=[separator], description=description)
    return CommunityFinetuneResult(out=Path(out), training=result, data=cd.summary(), separator=separator)


def community_separator(model_dir: str | Path) -> str | None:
    """The separator a community model folder was trained with (None for other models).

    Read from ``biaslens-training.json`` (``description.separator``, written by
    :func:`finetune_community`); a folder fine-tuned elsewhere can declare it the same way.
    """
    path = Path(model_dir) / TRAINING_RECORD
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.warning("%s: unreadable; the model is treated as a base model (no separator)", path)
        return None
    desc = record.get("description") or {}
    sep = desc.get("separator") if isinstance(desc, dict) else None
    return sep if isinstance(sep, str) and sep else None
