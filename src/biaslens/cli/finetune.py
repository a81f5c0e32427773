"""``biaslens finetune ...``: commands that produce a model folder every suite can use."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

finetune_app = typer.Typer(rich_markup_mode=None, help="Fine-tune models (community models for `biaslens run community`).",
                           no_args_is_help=True)


@finetune_app.command("community")
def finetune_community_cmd(
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Base causal LM: 'smollm2-135m' (embedded), a folder or a Hugging Face id."),
    data: Path = typer.Option(..., "--data", help="Posts and comments (CSV, TSV, JSONL or Parquet); with --comments, the posts file."),
    out: Path = typer.Option(..., "--out", "-o", help="Output model folder (re-run the same command to resume)."),
    comments: Optional[Path] = typer.Option(None, "--comments", help="Separate comments file, joined to --data on the post id."),
    title_column: Optional[str] = typer.Option(None, "--title-column", help="Post title column (default: title)."),
    text_column: Optional[str] = typer.Option(None, "--text-column", help="Post text column (default: text, selftext, body, ...)."),
    comment_column: Optional[str] = typer.Option(None, "--comment-column", help="Comment column (default: comment, body, ...)."),
    post_id_column: Optional[str] = typer.Option(None, "--post-id-column", help="Post id column of the posts file (default: post_id, id)."),
    comment_post_id_column: Optional[str] = typer.Option(None, "--comment-post-id-column", help="Comments file: column with the post's id (default: post_id, link_id)."),
    author_column: Optional[str] = typer.Option(None, "--author-column", help="Author column; its user names are removed from texts ('' = off) (default: author)."),
    community: Optional[str] = typer.Option(None, "--community", help="Name recorded with the model (default: the data file's name)."),
    separator: str = typer.Option("<|sep|>", "--separator", help="Token between post and comment, added to the tokenizer."),
    loss_on: str = typer.Option("all", "--loss-on", help="all: learn post and comment (paper); comment: the post is context only."),
    epochs: float = typer.Option(2.0, "--epochs", help="Training epochs (paper: 2; more made models ignore the prompt)."),
    max_length: int = typer.Option(128, "--max-length", help="Truncate examples to this many tokens (paper: 128)."),
    batch_size: int = typer.Option(8, "--batch-size"),
    grad_accum: int = typer.Option(1, "--grad-accum"),
    learning_rate: float = typer.Option(5e-5, "--learning-rate"),
    max_steps: int = typer.Option(-1, "--max-steps", help="Stop after N optimizer steps (-1: the epochs decide)."),
    save_steps: int = typer.Option(50, "--save-steps", help="Checkpoint every N steps (resume point)."),
    eval_fraction: float = typer.Option(0.0, "--eval-fraction", help="Hold out this share of posts for eval loss."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Use only the first N examples (quick trial)."),
    device: str = typer.Option("cpu", "--device", help="cpu, cuda, cuda:N, mps."),
    seed: int = typer.Option(0, "--seed"),
):
    """Fine-tune a causal LM on one community's posts and comments (Wald & Pfahler)."""
    from biaslens.cli.app import guard

    guard(_finetune_community, **locals())


def _finetune_community(**a) -> None:
    from biaslens.cli.app import console
    from biaslens.cli.output import results_console
    from biaslens.config import ConfigError
    from biaslens.datasets.community import Columns
    from biaslens.mitigation.community import finetune_community
    from biaslens.mitigation.training import TrainingConfig

    if a["loss_on"] not in ("all", "comment"):
        raise ConfigError(f"--loss-on {a['loss_on']!r}: choose all or comment")
    if not 0 <= a["eval_fraction"] < 1:
        raise ConfigError("--eval-fraction must be in [0, 1)")
    if a["epochs"] <= 0 or a["max_length"] < 8 or a["batch_size"] < 1:
        raise ConfigError("need --epochs > 0, --max-length >= 8 and --batch-size >= 1")
    cols = Columns(title=a["title_column"], text=a["text_column"], comment=a["comment_column"],
                   post_id=a["post_id_column"], comment_post_id=a["comment_post_id_column"], author=a["author_column"])
    cfg = TrainingConfig(epochs=a["epochs"], max_length=a["max_length"], batch_size=a["batch_size"],
                         grad_accum=a["grad_accum"], learning_rate=a["learning_rate"], max_steps=a["max_steps"],
                         save_steps=a["save_steps"], device=a["device"], seed=a["seed"])
    console.print(f"[bold]finetune community[/bold]: {a['model']} on {a['data']}"
                  + (f" + {a['comments']}" if a["comments"] else "") + f" -> {a['out']}")
    res = finetune_community(a["model"], a["data"], a["out"], comments=a["comments"], columns=cols, config=cfg,
                             separator=a["separator"], loss_on=a["loss_on"], eval_fraction=a["eval_fraction"],
                             limit=a["limit"], community=a["community"])
    c, r = res.data["counts"], res.data["removed"]
    console = results_console()  # from here on, the outcome: standard output
    console.print(f"data: {c.get('examples', 0):,} examples from {c.get('posts', 0):,} posts; skipped: "
                  f"{c.get('posts_without_comments', 0):,} posts without comments, "
                  f"{c.get('empty_comments', 0) + c.get('deleted_comments', 0):,} empty/deleted comments, "
                  f"{c.get('orphan_comments', 0):,} comments of unknown posts")
    console.print("removed: " + ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in r.items() if v) or "removed: nothing")
    tr = res.data.get("truncation") or {}
    console.print(f"truncated to {cfg.max_length} tokens: {tr.get('posts_truncated', 0):,} posts cut at their end "
                  f"(separator and comment kept), {tr.get('comments_truncated', 0):,} comments cut")
    t = res.training
    console.print(f"trained {t.steps} steps, train loss {t.train_loss:.3f}"
                  + (f", eval perplexity {t.eval_perplexity:.1f}" if t.eval_perplexity else "")
                  + (f" (resumed from {t.resumed_from})" if t.resumed_from else ""))
    console.print(f"model folder: [bold]{res.out}[/bold] (separator {res.separator!r}); "
                  f"compare it with: biaslens run community --community-model {res.out}")
