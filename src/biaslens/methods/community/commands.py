"""Community bias's commands: ``biaslens finetune community`` (a model fine-tuned on one community's
posts) and ``biaslens dataset community``; registered by the CLI from :data:`biaslens.registry.COMMANDS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    import pandas as pd

from biaslens.cli.options import generated_command, load_config
from biaslens.methods.community.options import FinetuneCommunityConfig
from biaslens.options import flag_specs

finetune_app = typer.Typer(rich_markup_mode=None, help="Fine-tune models (community models for `biaslens run community`).",
                           no_args_is_help=True)


#: the flags of `finetune community`: one per field of FinetuneCommunityConfig (biaslens.options)
FINETUNE_FLAGS = flag_specs(FinetuneCommunityConfig)


def finetune_community_cmd(**a):
    """Fine-tune a causal LM on one community's posts and comments (Wald & Pfahler)."""
    from biaslens.cli.common import guard

    guard(_finetune_community, a)


finetune_app.command("community")(generated_command(finetune_community_cmd, [], FINETUNE_FLAGS, "finetune",
                                                    example="-S epochs=1"))


def _finetune_community(values: dict) -> None:
    from biaslens.cli.common import console
    from biaslens.methods.community.dataset import Columns
    from biaslens.methods.community.mitigation import finetune_community
    from biaslens.mitigation.training import TrainingConfig

    a = load_config(FinetuneCommunityConfig, FINETUNE_FLAGS, values).model_dump()
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
    from biaslens.cli.output import results_console

    console = results_console()  # from here on, the outcome: standard output
    console.print(f"data: {c.get('examples', 0):,} examples from {c.get('posts', 0):,} posts; skipped: "
                  f"{c.get('posts_without_comments', 0):,} posts without comments, "
                  f"{c.get('empty_comments', 0) + c.get('deleted_comments', 0):,} empty/deleted comments, "
                  f"{c.get('orphan_comments', 0):,} comments of unknown posts")
    removed = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in r.items() if v)
    console.print(f"removed: {removed or 'nothing'}")
    tr = res.data.get("truncation") or {}
    console.print(f"truncated to {cfg.max_length} tokens: {tr.get('posts_truncated', 0):,} posts cut at their end "
                  f"(separator and comment kept), {tr.get('comments_truncated', 0):,} comments cut")
    t = res.training
    console.print(t.summary())
    console.print(f"model folder: [bold]{res.out}[/bold] (separator {res.separator!r}); "
                  f"compare it with: biaslens run community --community-model {res.out}")


def community_table(dimensions: list[str] | None = None) -> pd.DataFrame:
    """Every community-bias prompt (the paper's templates x demographics)."""
    from biaslens.methods.community.dataset import build_prompts

    return build_prompts(dimensions=dimensions)


def register(app: typer.Typer, dataset_app: typer.Typer) -> None:
    """The CLI's community-bias commands."""
    from biaslens.cli.export import table_command

    app.add_typer(finetune_app, name="finetune")
    table_command(dataset_app, "community", "Write the community-bias prompts (the paper's templates x demographics).",
                  community_table, hf_card="biaslens.methods.community.dataset.hf_card")
