"""Fine-tune one model per online community (Wald & Pfahler, section 3.2).

One training example = ``<start>`` + post title and text + separator token + one
comment; a post with k comments gives k examples. The separator is added to the
tokenizer and saved with the model; ``biaslens-training.json`` records it, so
``biaslens run community`` ends each prompt with it.

By default the LM loss covers the whole example, post included, as in the paper;
``loss_on="comment"`` makes the post context only (its tokens get no loss), which
spends the model's capacity on the community's replies.

Truncation to ``max_length`` tokens cuts the **post** (its end), never the separator or the
comment: cutting the whole text from the right would turn a long post with k comments into k
identical examples with neither separator nor comment. Only a comment that does not fit even
after the post is cut to ``MIN_POST_TOKENS`` is cut at its end. The counts go into
``biaslens-training.json`` (``description.truncation``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from biaslens.environment import applies_environment_policy
from biaslens.methods.community.dataset import Columns, CommunityData, read_community
from biaslens.mitigation.training import (
    TrainExample,
    TrainingConfig,
    TrainingResult,
    resolve_model_path,
    train_causal_lm,
)

log = logging.getLogger(__name__)

#: the separator token added between post and comment
DEFAULT_SEPARATOR = "<|sep|>"
TRAINING_RECORD = "biaslens-training.json"
#: tokens of the post kept when a comment is too long for the window (the comment is cut then)
MIN_POST_TOKENS = 16


@dataclass
class CommunityFinetuneResult:
    """What :func:`finetune_community` produced: the model folder, the training result and
    the data counts (read, cleaned, skipped)."""

    out: Path
    training: TrainingResult
    data: dict[str, Any]
    separator: str


def _tokenizer(model_path: str, separator: str):
    """The base model's tokenizer with the separator added as a special token, as training adds it."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    if separator not in tok.get_vocab():
        tok.add_special_tokens({"additional_special_tokens": [separator]})
    return tok


def _start_token(tokenizer) -> str | None:
    """The document-start token the HF backend puts before prompts, so training texts
    begin the same way generation prompts do."""
    from biaslens.models.tokenized import pick_start_token

    return pick_start_token(tokenizer)


def _n_tokens(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _cut(tokenizer, text: str, n: int) -> str:
    """The longest prefix of ``text`` made of its first ``n`` tokens (cut at a token boundary)."""
    if n <= 0:
        return ""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return text if n >= len(offsets) else text[: offsets[n - 1][1]]


def fit_example(tokenizer, start: str, post: str, separator: str, comment: str,
                max_length: int) -> tuple[str, str, bool, bool]:
    """Cut ``post`` (and, only when unavoidable, the end of ``comment``) so that
    ``start + post + separator + comment`` is at most ``max_length`` tokens.

    Returns ``(post, comment, post_cut, comment_cut)``. The separator and the comment's start are
    always kept: a comment longer than the window leaves ``MIN_POST_TOKENS`` of the post (fewer if
    the window is tiny) and loses its own end.
    """
    fixed = _n_tokens(tokenizer, start + separator) if start else _n_tokens(tokenizer, separator)
    n_post, n_comment = _n_tokens(tokenizer, post), _n_tokens(tokenizer, comment)
    budget = max_length - fixed
    if budget < 1:
        raise ValueError(f"max_length {max_length} leaves no room beside the start token and separator")
    if n_post + n_comment <= budget and _n_tokens(tokenizer, start + post + separator + comment) <= max_length:
        return post, comment, False, False
    keep_post = min(n_post, max(0, budget - n_comment))
    comment_cut = False
    if keep_post < min(n_post, MIN_POST_TOKENS):  # the comment alone (nearly) fills the window
        keep_post = min(n_post, MIN_POST_TOKENS, budget // 2)
        comment = _cut(tokenizer, comment, budget - keep_post)
        comment_cut = True
    new_post = _cut(tokenizer, post, keep_post)
    # tokens can merge across the joins: shorten further until the whole text fits
    while _n_tokens(tokenizer, start + new_post + separator + comment) > max_length:
        if keep_post > 0:
            keep_post -= 1
            new_post = _cut(tokenizer, post, keep_post)
        else:
            comment = _cut(tokenizer, comment, _n_tokens(tokenizer, comment) - 1)
            comment_cut = True
    return new_post, comment, new_post != post, comment_cut


def community_examples(data: CommunityData, *, separator: str = DEFAULT_SEPARATOR, start_token: str | None = None,
                       loss_on: Literal["all", "comment"] = "all", tokenizer=None,
                       max_length: int | None = None, counts: dict[str, int] | None = None) -> list[TrainExample]:
    """Training examples ``<start>post<sep>comment`` from cleaned pairs; with ``tokenizer`` and
    ``max_length`` each is fitted to the window by :func:`fit_example` (the post is cut, the
    separator and comment kept), and ``counts`` receives how many were cut."""
    out = []
    start = start_token or ""
    c = {"examples": 0, "posts_truncated": 0, "comments_truncated": 0, "posts_emptied": 0}
    for ex in data.examples:
        post, comment = ex.post, ex.comment
        if tokenizer is not None and max_length is not None:
            post, comment, post_cut, comment_cut = fit_example(tokenizer, start, post, separator, comment, max_length)
            c["posts_truncated"] += post_cut
            c["comments_truncated"] += comment_cut
            c["posts_emptied"] += post_cut and not post.strip()
        c["examples"] += 1
        prefix = f"{start}{post}{separator}"
        out.append(TrainExample(text=prefix + comment, prompt_chars=len(prefix) if loss_on == "comment" else 0))
    if counts is not None:
        counts.update(c)
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
        columns: column names (defaults: see :class:`~biaslens.methods.community.dataset.Columns`).
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
    tokenizer = _tokenizer(model_path, separator)
    start = _start_token(tokenizer)
    truncation: dict[str, int] = {}
    examples = community_examples(cd, separator=separator, start_token=start, loss_on=loss_on, tokenizer=tokenizer,
                                  max_length=cfg.max_length, counts=truncation)
    if truncation["posts_truncated"] or truncation["comments_truncated"]:
        log.info("truncation to %d tokens: %d of %d posts cut at their end (separator and comment kept), "
                 "%d comments cut", cfg.max_length, truncation["posts_truncated"], truncation["examples"],
                 truncation["comments_truncated"])
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
                   "truncation": {"max_length": cfg.max_length, "rule": "post cut at its end; separator and comment "
                                  f"kept (a comment is cut at its end only beyond max_length - {MIN_POST_TOKENS} "
                                  "post tokens)", **truncation},
                   "eval_fraction": eval_fraction}
    log.info("community fine-tuning: %d examples (%d eval) from %s", len(train), len(evals), ", ".join(cd.sources))
    result = train_causal_lm(model_path, train, out, config=cfg, eval_examples=evals or None,
                             add_special_tokens=[separator], description=description)
    return CommunityFinetuneResult(out=Path(out), training=result, data=cd.summary() | {"truncation": truncation},
                                   separator=separator)


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
