"""Options of the ``winogender`` suite, read from the ``winogender:`` section of a run
configuration and as ``biaslens run winogender --winogender-...`` flags."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from biaslens.options import Section


class WinogenderOptions(Section, section="winogender", flag_prefix="winogender-", panel="Winogender"):
    """Options of the ``winogender`` suite (Rudinger et al. 2018)."""

    data_dir: Path | None = Field(None, description=(
        "your own copy of the Winogender data folder (all_sentences.tsv, occupations-stats.tsv) "
        "[default the shipped files]"))
    n_bootstrap: int = Field(2000, ge=100, description="bootstrap draws for the correlation's interval (occupations resampled, each with its templates)")
