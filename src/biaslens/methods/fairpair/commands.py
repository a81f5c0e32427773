"""FairPair's command: ``biaslens dataset fairpair``; registered by the CLI from
:data:`biaslens.registry.COMMANDS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    import pandas as pd



def fairpair_table(occupations: list[str] | None = None) -> pd.DataFrame:
    """Every Common Sents prompt x with its perturbation p(x) (the paper's occupations and name pair)."""
    import pandas as pd

    from biaslens.methods.fairpair.dataset import build_prompts, select_occupations

    return pd.DataFrame([{"pair_id": p.pair_id, "occupation": p.occupation, "descriptor": p.descriptor,
                          "source_name": p.names.source, "target_name": p.names.target, "x": p.x, "px": p.px}
                         for p in build_prompts(select_occupations(occupations))])


def register(app: typer.Typer, dataset_app: typer.Typer) -> None:
    """The CLI's FairPair command."""

    from biaslens.cli.export import table_command

    table_command(dataset_app, "fairpair", "Write the FairPair Common Sents prompt pairs (the paper's 60 occupations).",
                  fairpair_table, hf_card="biaslens.methods.fairpair.dataset.hf_card")
